"""The hardware what-if: where balancing starts to pay as scans, shifts and the router get
cheaper or dearer.

Biagioni & Prins (1991) call "quantifying the advantage of hardware-assisted scans or
shifts" "a very important next step" of their work, since the MasPar MP-1 ran both over its
mesh, their time was lowest balancing every five or so iterations and their implementation
was "too slow to produce significant improvements". :func:`sweep` answers it on
the model clock: it scales the constants of one kind of instruction of a cost preset
(:data:`KINDS`: a scan's local and network terms, a mesh shift, the router's terms) by each
of ``factors`` (1/16 to 16 by default) and measures the speed-up of each balancer over no
balancing at every point. Kinds joined by ``+`` (``scan+shift``) scale together.

A 1-D workload runs the loops of Ahrens & Hansen (1995): the cost-effective loop (whose
decisions follow the costs: it balances less as balancing gets dearer) and balance-always,
each point a run of its own. A 2-D workload runs the mesh balanced every ``k`` iterations
(Biagioni & Prins' scan-directed balancing): those runs decide nothing from the costs, so
the model time of a run is linear in each kind's constants and is measured once with the
preset and once with each kind's constants at zero; every point of the sweep is then exact
arithmetic on those runs (a test checks it against a run at the scaled costs).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from simd.balance.balancer_runs import RunSpec, loop_run
from simd.balance.comparison import INTERVALS, MACHINES, Job, plan_comparison
from simd.balance.grid_loop import run_grid_loop
from simd.cost import CostModel
from simd.machine import Machine

__all__ = [
    "FACTORS",
    "KINDS",
    "Sweep",
    "SweepPlan",
    "SweepPoint",
    "factor_label",
    "plan_sweep",
    "scaled_cost",
    "sweep",
    "sweep_preset",
]

#: The constants of each kind of instruction (:class:`simd.cost.CostModel`'s fields).
KINDS = {
    "scan": ("scan_per_vp", "network_per_level", "scan_per_active"),
    "shift": ("shift_per_vp",),
    "router": ("router_per_vp", "router_latency_per_level", "router_per_active"),
}
#: 1/16 to 16 times the preset's, by factors of two.
FACTORS = tuple(2.0**e for e in range(-4, 5))
#: The balancers a sweep compares with no balancing, for a 1-D workload.
LOOP_SWEEP = ("cost-effective", "balance-always")


def _kinds(kind: str) -> tuple[str, ...]:
    parts = tuple(k.strip() for k in kind.split("+"))
    for k in parts:
        if k not in KINDS:
            raise ValueError(
                f"unknown instruction kind {k!r}; choose from {', '.join(KINDS)} (or join them "
                "with +, as scan+shift)"
            )
    return parts


def scaled_cost(cost: CostModel, kind: str, factor: float) -> CostModel:
    """``cost`` with the constants of ``kind`` (``"scan"``, ``"shift"``, ``"router"`` or
    several joined by ``+``) times ``factor``; its name says so.

    Examples
    --------
    >>> c = scaled_cost(CostModel.mp1(4096), "shift", 0.25)
    >>> c.name, c.shift_per_vp, c.scan_per_vp
    ('MP-1/4096 shift x0.25', 9.0, 16.0)
    """
    if not (math.isfinite(factor) and factor >= 0):
        raise ValueError(f"a cost factor must be a finite number >= 0, got {factor!r}")
    fields: dict[str, Any] = {}
    for k in _kinds(kind):
        for name in KINDS[k]:
            fields[name] = getattr(cost, name) * factor
    return replace(cost, name=f"{cost.name} {kind} x{factor:g}", **fields)


@dataclass(frozen=True)
class SweepPoint:
    """One balancer at one cost factor of one kind."""

    kind: str
    factor: float
    balancer: str
    seconds: float
    baseline_seconds: float
    decisions: int

    @property
    def speedup(self) -> float:
        """No balancing's model time over this balancer's."""
        return self.baseline_seconds / self.seconds if self.seconds > 0 else math.inf


@dataclass
class Sweep:
    """The speed-ups of a sweep, by kind, factor and balancer; ``flat`` says why a row does
    not move: ``(kind, balancer) -> reason``."""

    workload: str
    machine: str
    processors: str
    kinds: tuple[str, ...]
    factors: tuple[float, ...]
    balancers: tuple[str, ...]
    points: list[SweepPoint] = field(default_factory=list)
    flat: dict[tuple[str, str], str] = field(default_factory=dict)

    def curve(self, kind: str, balancer: str) -> list[float]:
        """The speed-ups of ``balancer`` over :attr:`factors` when ``kind`` is scaled."""
        found = {
            p.factor: p.speedup for p in self.points if (p.kind, p.balancer) == (kind, balancer)
        }
        return [found[f] for f in self.factors]

    def pays_up_to(self, kind: str, balancer: str) -> float | None:
        """The largest factor at which ``balancer`` still beats no balancing (speed-up
        above 1), or None where it never does."""
        paying = [
            f for f, s in zip(self.factors, self.curve(kind, balancer), strict=True) if s > 1.0
        ]
        return max(paying) if paying else None

    def best(self, kind: str, factor: float) -> tuple[str, float]:
        """The fastest balancer at ``factor`` of ``kind`` and its speed-up (``none`` and 1.0
        where no balancer beats not balancing)."""
        pts = [p for p in self.points if p.kind == kind and p.factor == factor]
        top = max(pts, key=lambda p: p.speedup)
        return (top.balancer, top.speedup) if top.speedup > 1.0 else ("none", 1.0)

    def title(self) -> str:
        return (
            f"{self.workload} on {self.processors} {self.machine}: speed-up over no balancing "
            "as one kind of instruction costs a factor of the preset's"
        )

    def header(self) -> str:
        cols = " ".join(f"{factor_label(f):>6}" for f in self.factors)
        return f"{'kind':<12} {'balancer':<18} {cols}  pays up to  note"

    def rows(self, kind: str) -> list[str]:
        """The table's lines of one kind: per balancer its speed-ups, the largest factor at
        which it pays, and why it does not move if it does not."""
        lines = []
        for b in self.balancers:
            vals = " ".join(f"{s:>6.2f}" for s in self.curve(kind, b))
            up = self.pays_up_to(kind, b)
            pays = "never" if up is None else factor_label(up)
            note = (
                f"the same at every factor: {self.flat[kind, b]}" if (kind, b) in self.flat else ""
            )
            decided = any(p.decisions for p in self.points if (p.kind, p.balancer) == (kind, b))
            if not note and b == "cost-effective" and not decided:
                note = "never redistributes: its estimate of balancing's cost exceeds the gain"
            lines.append(f"{kind:<12} {b:<18} {vals}  {pays:<10}  {note}".rstrip())
        return lines

    def table(self) -> str:
        """Speed-up over no balancing, one line per kind and balancer, one column per factor."""
        lines = [self.title(), self.header()]
        for kind in self.kinds:
            lines += self.rows(kind)
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "workload": self.workload,
            "machine": self.machine,
            "processors": self.processors,
            "kinds": list(self.kinds),
            "factors": list(self.factors),
            "balancers": list(self.balancers),
            "speedup": {
                kind: {b: self.curve(kind, b) for b in self.balancers} for kind in self.kinds
            },
            "pays_up_to": {
                kind: {b: self.pays_up_to(kind, b) for b in self.balancers} for kind in self.kinds
            },
            "best": {kind: [list(self.best(kind, f)) for f in self.factors] for kind in self.kinds},
            "flat": {f"{kind}/{b}": why for (kind, b), why in self.flat.items()},
        }


def factor_label(f: float) -> str:
    """How the tables and pictures write a cost factor.

    >>> factor_label(0.25), factor_label(1.0), factor_label(16.0)
    ('1/4', '1', '16')
    """
    return f"1/{1 / f:g}" if f < 1 else f"{f:g}"


def sweep(  # noqa: PLR0913 (the public signature: every option by keyword)
    workload: Any,
    *,
    name: str = "workload",
    processors: int | tuple[int, int] | None = None,
    machine: str = "mp1",
    kinds: Iterable[str] = ("scan", "shift", "router"),
    factors: Iterable[float] = FACTORS,
    every: Iterable[int] = INTERVALS,
    task_cost: float = 32.0,
    backend: str = "numpy",
    progress: Callable[[str], None] | None = None,
) -> Sweep:
    """Speed-ups of balancing over none as each kind of instruction gets cheaper or dearer.

    Parameters
    ----------
    workload : array_like
        1-D (the loops: cost-effective and balance-always) or 2-D (the mesh: scan-directed
        every ``k`` of ``every``); see :func:`~simd.balance.comparison.compare`.
    name, processors, task_cost, backend
        As for :func:`~simd.balance.comparison.compare`.
    machine : str
        The cost preset scaled: a model-clock machine of :data:`MACHINES`.
    kinds : iterable of str
        Kinds of :data:`KINDS` to scale, one at a time; ``"scan+shift"`` scales both.
    factors : iterable of float
        The factors, default :data:`FACTORS` (1/16 to 16).
    every : iterable of int
        The mesh's balancing intervals.
    progress : callable(str), optional
        Called with a line before each run.

    Returns
    -------
    Sweep

    Examples
    --------
    Balancing a hot spot every 5 iterations on the MP-1's mesh does not pay at the
    preset's costs, and pays when scans and shifts are 16 times cheaper:

    >>> from simd.balance.workloads import generate
    >>> hot = generate("hotspot", (64, 64), mean=8, param=0.15)
    >>> s = sweep(hot, processors=(16, 16), kinds=["scan+shift"], factors=[1 / 16, 1, 16],
    ...           every=[5])
    >>> [round(x, 2) for x in s.curve("scan+shift", "scan-directed/5")]
    [1.47, 0.96, 0.29]
    >>> s.pays_up_to("scan+shift", "scan-directed/5")
    0.0625
    """
    plan = plan_sweep(
        workload,
        name=name,
        processors=processors,
        machine=machine,
        kinds=kinds,
        factors=factors,
        every=every,
        task_cost=task_cost,
        backend=backend,
    )

    def results(jobs: list[Job]) -> list[Any]:
        out = []
        for job in jobs:
            if progress is not None:
                progress(job.label)
            out.append(job.run(None))
        return out

    first = results(plan.first_jobs())
    second = results(plan.second_jobs(first))
    return plan.sweep(first, second)


def plan_sweep(  # noqa: PLR0913 (every option of sweep by keyword)
    workload: Any,
    *,
    name: str = "workload",
    processors: int | tuple[int, int] | None = None,
    machine: str = "mp1",
    kinds: Iterable[str] = ("scan", "shift", "router"),
    factors: Iterable[float] = FACTORS,
    every: Iterable[int] = INTERVALS,
    task_cost: float = 32.0,
    backend: str = "numpy",
) -> SweepPlan:
    """Check :func:`sweep`'s options without running anything (``ValueError`` in one
    line); the plan then makes the runs, in two rounds of independent jobs
    (:meth:`SweepPlan.first_jobs`, :meth:`SweepPlan.second_jobs`).

    >>> plan = plan_sweep([4, 0, 1, 3], machine="cm5_calibrated", kinds=["shift"])
    >>> plan.flat_by_preset("shift")
    True
    """
    kinds = tuple(dict.fromkeys([kinds] if isinstance(kinds, str) else kinds))
    for kind in kinds:
        _kinds(kind)
    factors = tuple(float(f) for f in factors)
    if not kinds or not factors:
        raise ValueError("a sweep needs at least one kind and one factor")
    for f in factors:
        if not (math.isfinite(f) and f >= 0):
            raise ValueError(f"a cost factor must be a finite number >= 0, got {f!r}")
    preset = sweep_preset(machine)
    plan = plan_comparison(workload, name=name, processors=processors, machines=[machine],
                           task_cost=task_cost)  # fmt: skip
    base = _machine(plan.shape, preset, backend).cost
    every = tuple(dict.fromkeys(every)) if plan.counts.ndim == 2 else ()
    return SweepPlan(plan.counts, name, plan.shape, machine, base, kinds, factors, every,
                     task_cost, backend)  # fmt: skip


def sweep_preset(machine: str) -> str:
    """The cost preset of ``machine``, a name of :data:`~simd.balance.comparison.MACHINES`
    on the model clock (``ValueError`` in one line otherwise).

    >>> sweep_preset("mp1")
    'mp1'
    """
    if machine not in MACHINES:
        raise ValueError(f"unknown machine {machine!r}; choose from {', '.join(MACHINES)}")
    preset, clock = MACHINES[machine]
    if clock != "model":
        raise ValueError(f"the what-if scales the model clock's costs; {machine!r} is a wall clock")
    return preset


def _machine(shape: tuple[int, ...], cost: Any, backend: str) -> Machine:
    return Machine(pes=shape[0] if len(shape) == 1 else shape, backend=backend, cost=cost)


@dataclass(frozen=True)
class SweepPlan:
    """The runs of a sweep (see :func:`plan_sweep`).

    A run that takes no decision from the costs (the mesh's, and every run's share of a
    kind it issues no instruction of) is linear in each kind's constants: measured with
    the preset and with the kind's constants at zero, every factor follows. The loops'
    cost-effective runs decide from the costs, so a kind that moves them is run at every
    factor; a kind that does not (the runs at zero equal the preset's) is the same at
    every factor, and the table says why.
    """

    counts: np.ndarray
    name: str
    shape: tuple[int, ...]
    machine: str
    base: CostModel
    kinds: tuple[str, ...]
    factors: tuple[float, ...]
    every: tuple[int, ...]
    task_cost: float
    backend: str

    @property
    def grid(self) -> bool:
        return self.counts.ndim == 2

    @property
    def balancers(self) -> tuple[str, ...]:
        """The balancers in the table (no balancing is the speed-ups' baseline)."""
        if self.grid:
            return tuple(f"scan-directed/{k}" for k in self.every)
        return LOOP_SWEEP

    @property
    def runs(self) -> tuple[str | int, ...]:
        """The runs a point needs: the loops' balancers and none, or the mesh's intervals
        and 0 (never balanced)."""
        return (0, *self.every) if self.grid else ("none", *LOOP_SWEEP)

    def flat_by_preset(self, kind: str) -> bool:
        """Whether the preset charges nothing for ``kind`` (so no factor changes it)."""
        return all(getattr(self.base, f) == 0 for k in _kinds(kind) for f in KINDS[k])

    def first_jobs(self) -> list[Job]:
        """Every run with the preset, and with each kind's constants at zero."""
        jobs = []
        for r in self.runs:
            jobs.append(self._job(r, "", 1.0))
            for kind in self.kinds:
                if not self.flat_by_preset(kind):
                    jobs.append(self._job(r, kind, 0.0))
        return jobs

    def second_jobs(self, first: list[Any]) -> list[Job]:
        """The loops' runs at every factor of each kind that moves them (none for the mesh,
        whose points follow from the first round)."""
        if self.grid:
            return []
        found = dict(first)
        jobs, seen = [], set()
        for kind in self.kinds:
            for r in self.runs:
                if self._flat(found, r, kind):
                    continue
                for f in self.factors:
                    cost = replace(scaled_cost(self.base, kind, f), name="")
                    if f != 1.0 and (r, cost) not in seen:  # one run per set of costs
                        seen.add((r, cost))
                        jobs.append(self._job(r, kind, f))
        return jobs

    def _flat(self, found, run, kind) -> bool:
        return self.flat_by_preset(kind) or found[run, kind, 0.0][0] == found[run, "", 1.0][0]

    def _job(self, run, kind, factor) -> Job:
        what = (
            "mesh " + (f"balanced every {run}" if run else "never balanced") if self.grid else run
        )
        label = f"{self.name}: {what}" + (f", {kind} x{factor:g}" if kind else "")
        weight = 0.05 + 2e-7 * float(self.counts.sum())
        return Job(label, weight, functools.partial(self._point, run, kind, factor))

    def _point(self, run, kind, factor, report=None) -> tuple:
        """``((run, kind, factor), (model seconds, decisions))``."""
        cost = self.base if not kind else scaled_cost(self.base, kind, factor)
        m = _machine(self.shape, cost, self.backend)
        if self.grid:
            res = run_grid_loop(self.counts, machine=m, every=run, task_cost=self.task_cost,
                                check_locality=False)  # fmt: skip
            return (run, kind, factor), (cost.seconds(res.cycles["total"]), 0)
        spec = RunSpec(self.counts, self.name, self.processors, self.machine, "model", run,
                       self.task_cost, None, False)  # fmt: skip
        r = loop_run(spec, m)
        return (run, kind, factor), (r.model_seconds, r.decisions)

    @property
    def processors(self) -> str:
        return "x".join(map(str, self.shape))

    def describe(self) -> str:
        """The table's title and header, before any run."""
        empty = Sweep(self.name, self.machine, self.processors, self.kinds, self.factors,
                      self.balancers)  # fmt: skip
        return empty.title() + "\n" + empty.header()

    def sweep(self, first: list[Any], second: list[Any]) -> Sweep:
        """The sweep from both rounds' results."""
        found = dict(first) | dict(second)
        out = Sweep(self.name, self.machine, self.processors, self.kinds, self.factors,
                    self.balancers)  # fmt: skip
        for kind in self.kinds:
            for r in self.runs:
                if self._flat(found, r, kind):
                    why = (f"the preset charges nothing for {kind}" if self.flat_by_preset(kind)
                           else f"no {kind} in these runs")  # fmt: skip
                    if r != self.runs[0]:
                        out.flat[kind, self._shown(r)] = why
            for f in self.factors:
                none = self._seconds(found, self.runs[0], kind, f)
                for r in self.runs[1:]:
                    t, decisions = self._seconds(found, r, kind, f), found[r, "", 1.0][1]
                    if not self.grid and not self._flat(found, r, kind) and f != 1.0:
                        decisions = self._lookup(found, r, kind, f)[1]
                    out.points.append(SweepPoint(kind, f, self._shown(r), t, none, decisions))
        # a flat balancer's row moves if no balancing's does: only both flat is a flat row
        for kind, b in list(out.flat):
            if not self._flat(found, self.runs[0], kind):
                del out.flat[kind, b]
        return out

    def _shown(self, run) -> str:
        return f"scan-directed/{run}" if self.grid else run

    def _lookup(self, found, run, kind, factor):
        if factor == 1.0:
            return found[run, "", 1.0]
        if (run, kind, factor) in found:
            return found[run, kind, factor]
        cost = replace(scaled_cost(self.base, kind, factor), name="")
        for (r, k, f), value in found.items():  # the same costs, reached by another kind
            if r == run and k and replace(scaled_cost(self.base, k, f), name="") == cost:
                return value
        raise KeyError((run, kind, factor))

    def _seconds(self, found, run, kind, factor) -> float:
        """The run's model seconds at ``factor`` of ``kind``: measured, or by linearity
        (the mesh, and a kind a run does not move)."""
        whole = found[run, "", 1.0][0]
        if self.flat_by_preset(kind):
            return whole
        share = whole - found[run, kind, 0.0][0]
        if self.grid or share == 0.0:
            return whole + (factor - 1.0) * share
        return self._lookup(found, run, kind, factor)[0]
