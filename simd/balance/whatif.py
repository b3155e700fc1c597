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

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from simd.balance.comparison import INTERVALS, MACHINES, compare, plan_comparison
from simd.balance.grid_loop import run_grid_loop
from simd.cost import CostModel
from simd.machine import Machine

__all__ = [
    "FACTORS",
    "KINDS",
    "Sweep",
    "SweepPoint",
    "factor_label",
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
    """The speed-ups of a sweep, by kind, factor and balancer."""

    workload: str
    machine: str
    processors: str
    kinds: tuple[str, ...]
    factors: tuple[float, ...]
    balancers: tuple[str, ...]
    points: list[SweepPoint] = field(default_factory=list)

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

    def table(self) -> str:
        """Speed-up over no balancing, one line per kind and balancer, one column per factor."""
        cols = " ".join(f"{factor_label(f):>6}" for f in self.factors)
        lines = [
            f"{self.workload} on {self.processors} {self.machine}: speed-up over no balancing "
            "as one kind of instruction costs a factor of the preset's",
            f"{'kind':<12} {'balancer':<18} {cols}  pays up to",
        ]
        for kind in self.kinds:
            for b in self.balancers:
                vals = " ".join(f"{s:>6.2f}" for s in self.curve(kind, b))
                up = self.pays_up_to(kind, b)
                pays = "never" if up is None else factor_label(up)
                lines.append(f"{kind:<12} {b:<18} {vals}  {pays}")
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
    kinds = tuple(dict.fromkeys([kinds] if isinstance(kinds, str) else kinds))
    for kind in kinds:
        _kinds(kind)
    factors = tuple(float(f) for f in factors)
    if not kinds or not factors:
        raise ValueError("a sweep needs at least one kind and one factor")
    preset = sweep_preset(machine)
    plan = plan_comparison(workload, name=name, processors=processors, machines=[machine])
    counts, shape = plan.counts, plan.shape
    base = _machine(shape, preset, backend).cost
    if counts.ndim == 2:
        every = tuple(dict.fromkeys(every))
        balancers = tuple(f"scan-directed/{k}" for k in every)
        run = _GridSweep(counts, shape, base, task_cost, backend, progress)
        points = run.points(kinds, factors, every)
    else:
        balancers = LOOP_SWEEP
        points = []
        runs: dict[CostModel, list[tuple[float, float, int]]] = {}  # by the costs alone
        for kind in kinds:
            for f in factors:
                cost = scaled_cost(base, kind, f)
                same = replace(cost, name="")  # factor 1 of every kind, a cost that is 0, ...
                if same not in runs:
                    if progress is not None:
                        progress(f"{name}: {kind} x{f:g}")
                    runs[same] = _loop_runs(counts, name, shape, cost, task_cost, backend)
                balanced = zip(LOOP_SWEEP, runs[same], strict=True)
                points += [SweepPoint(kind, f, b, *run) for b, run in balanced]
    return Sweep(name, machine, "x".join(map(str, shape)), kinds, factors, balancers, points)


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


def _loop_runs(counts, name, shape, cost, task_cost, backend) -> list[tuple[float, float, int]]:
    """The balancers of a 1-D sweep on one scaled preset, in the order of ``LOOP_SWEEP``:
    each one's model seconds, those without balancing, and its decisions."""
    c = compare(
        counts,
        name=name,
        processors=shape[0],
        machines=[cost],
        balancers=LOOP_SWEEP,
        task_cost=task_cost,
        backend=backend,
    )
    none = c.find("none").model_seconds
    return [(c.find(b).model_seconds, none, c.find(b).decisions) for b in LOOP_SWEEP]


class _GridSweep:
    """The mesh's runs of a sweep: each measured with the preset and with each kind's
    constants at zero; the points follow by linearity (the runs' decisions do not depend
    on the costs)."""

    def __init__(self, counts, shape, base, task_cost, backend, progress):
        self.counts, self.shape, self.base = counts, shape, base
        self.task_cost, self.backend, self.progress = task_cost, backend, progress

    def seconds(self, cost: CostModel, every: int) -> float:
        m = _machine(self.shape, cost, self.backend)
        res = run_grid_loop(
            self.counts, machine=m, every=every, task_cost=self.task_cost, check_locality=False
        )
        return cost.seconds(res.cycles["total"])

    def parts(self, every: int, kinds: tuple[str, ...]) -> dict[str, float]:
        """The run's seconds with the preset (key ``""``) and each kind's share of them."""
        if self.progress is not None:
            self.progress(f"mesh balanced every {every}" if every else "mesh without balancing")
        whole = self.seconds(self.base, every)
        out = {"": whole}
        for kind in kinds:
            out[kind] = whole - self.seconds(scaled_cost(self.base, kind, 0.0), every)
        return out

    def points(self, kinds, factors, every) -> list[SweepPoint]:
        parts = {k: self.parts(k, kinds) for k in (0, *every)}
        points = []
        for kind in kinds:
            for f in factors:
                none = parts[0][""] + (f - 1.0) * parts[0][kind]
                for k in every:
                    t = parts[k][""] + (f - 1.0) * parts[k][kind]
                    points.append(SweepPoint(kind, f, f"scan-directed/{k}", t, none, 0))
        return points
