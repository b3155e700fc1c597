"""Which balancing pays on a workload, on which machine, and by how much.

:func:`compare` runs one workload under every balancer asked for on every machine asked
for, and returns a :class:`Comparison`: one :class:`BalancerRun` per (machine, balancer)
with its iterations, model and wall time, speed-up over no balancing on the same machine,
time spent balancing and decisions taken, and per iteration the active processors and the
cumulative time.

A 1-D workload (tasks per processor, or per datum with several data per processor) runs as
the balanced loop of Ahrens & Hansen (1995) (:func:`simd.balance.run_loop`):

``none``
    Figure 1: ``MAX(workload)`` iterations, one task of every datum with work left each.
``cost-effective``
    Figure 2: redistribute when the savings exceed the cost overestimate in iterations
    (measured online by the loop unless a calibration is stored for it).
``balance-always``
    Figure 2 with a cost taken as zero: redistribute whenever anything can be saved.
``expand``
    Every task at once, by a scan and a load-balancing search.

A 2-D workload (a grid of counts for the mesh) runs as a grid computation on the mesh
(:func:`simd.balance.grid_loop.run_grid_loop`):

``none``
    The hierarchical decomposition, never balanced.
``scan-directed``
    Biagioni & Prins' (1991) Scan Directed Load Balancing every ``k`` iterations, one run
    per ``k`` of ``every`` (named ``scan-directed/k``), the Locality Property checked.

Machines (:data:`MACHINES`): the idealised and the calibrated CM-5 and the MasPar MP-1
(model clock; :mod:`simd.cost`), and ``wall``: the wall clock of the backend at hand, on
which the cost-effective loops also take their decisions. Other programs add baselines of
their own (the MIMD policies of ``simd-emu bench balance``) through ``baselines``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simd.balance.balancer_runs import BalancerRun, Baseline, RunSpec, grid_run, loop_run
from simd.balance.workloads import check_workload
from simd.cost import CostModel
from simd.machine import Machine
from simd.mesh import squarest_shape

__all__ = [
    "GRID_BALANCERS",
    "INTERVALS",
    "LOOP_BALANCERS",
    "MACHINES",
    "Baseline",
    "BalancerRun",
    "Comparison",
    "Job",
    "Plan",
    "RunOptions",
    "RunTable",
    "compare",
    "mesh_shape",
    "plan_comparison",
    "with_speedups",
]

#: The balancers of a 1-D workload (loops) and of a 2-D one (the mesh), by name.
LOOP_BALANCERS = ("none", "cost-effective", "balance-always", "expand")
GRID_BALANCERS = ("none", "scan-directed")
#: Balancing intervals of the mesh: 1, 2 and 5 as in Biagioni & Prins' Figures 8 to 10
#: ("every iteration ..., every other iteration, every fifth iteration, and so on"); 10 and
#: 20 are ours, continuing their "and so on".
INTERVALS = (1, 2, 5, 10, 20)
#: Machines by name: (cost preset of ``simd.Machine``, clock the runs are timed and decide
#: with). ``wall``'s model time is the default preset's (CM-5 for 1-D, MP-1 for a mesh).
MACHINES = {
    "cm5": ("cm5", "model"),
    "cm5_calibrated": ("cm5_calibrated", "model"),
    "mp1": ("mp1", "model"),
    "wall": (None, "wall"),
}


@dataclass
class Comparison:
    """The runs of :func:`compare`, with a table and plain data for JSON."""

    runs: list[BalancerRun]
    layout: RunTable | None = None

    def __iter__(self):
        return iter(self.runs)

    def __len__(self) -> int:
        return len(self.runs)

    def find(self, balancer: str, machine: str | None = None) -> BalancerRun:
        """The run of ``balancer`` (on ``machine``, default the first that has one)."""
        for r in self.runs:
            if r.balancer == balancer and machine in (None, r.machine):
                return r
        raise KeyError(f"no run of {balancer!r}" + (f" on {machine!r}" if machine else ""))

    def table(self) -> str:
        """One line per run: iterations, model and wall time, speed-up, the share of the
        time spent balancing, decisions.

        Examples
        --------
        >>> print(compare([6, 0, 0, 2], balancers=["none", "expand"]).table())
        ... # doctest: +ELLIPSIS
        workload  processors  machine  balancer  iterations     model s  ...
        workload           4  cm5      none               6  ...
        workload           4  cm5      expand             1  ...
        """
        layout = self.layout or RunTable.fitting(self.runs)
        return "\n".join([layout.header(), *(layout.row(r) for r in self.runs)])

    def to_dict(self) -> dict[str, Any]:
        """Per balancer and machine: ``iterations``, ``model_seconds`` and the rest."""
        return {"runs": [r.to_dict() for r in self.runs]}


@dataclass(frozen=True)
class RunTable:
    """The table of runs, its columns as wide as the plan's names and the numbers need, so
    that each row can be printed as soon as its run is done."""

    widths: tuple[int, ...]

    HEADER = ("workload", "processors", "machine", "balancer", "iterations", "model s",
              "wall s", "speed-up", "balancing", "decisions", "note")  # fmt: skip
    #: the numbers' columns are at least this wide
    NUMBER = 10

    @classmethod
    def fitting(cls, runs: Iterable[BalancerRun]) -> RunTable:
        runs = list(runs)
        names = [[r.workload, r.processors, r.machine, r.balancer] for r in runs]
        return cls.of(*(list(col) for col in zip(*names, strict=True)) if names else [[]] * 4)

    @classmethod
    def of(cls, workloads, processors, machines, balancers) -> RunTable:
        """The layout for runs of these names."""
        texts = (workloads, processors, machines, balancers)
        widths = [max([len(h), *map(len, t)]) for h, t in zip(cls.HEADER, texts, strict=False)]
        widths += [max(len(h), cls.NUMBER) for h in cls.HEADER[4:10]]
        return cls(tuple(widths))

    def _line(self, cells: tuple[str, ...]) -> str:
        out = [c.ljust(w) if i in (0, 2, 3) else c.rjust(w)
               for i, (c, w) in enumerate(zip(cells[:-1], self.widths, strict=True))]  # fmt: skip
        return ("  ".join(out) + "  " + cells[-1]).rstrip()

    def header(self) -> str:
        return self._line(self.HEADER)

    def row(self, r: BalancerRun) -> str:
        return self._line((
            r.workload,
            r.processors,
            r.machine,
            r.balancer,
            "-" if r.iterations is None else str(r.iterations),
            f"{r.model_seconds:.4g}",
            f"{r.wall_seconds:.3g}",
            "-" if r.speedup is None else f"{r.speedup:.2f}x",
            f"{r.balancing_seconds / r.time if r.time > 0 else 0.0:.0%}",
            str(r.decisions),
            _note(r),
        ))  # fmt: skip


def _note(r: BalancerRun) -> str:
    notes = []
    if r.locality is not None:
        notes.append("locality " + ("held" if r.locality else "BROKEN"))
    if r.detail.get("overestimate") is not None:
        notes.append(f"cost estimate {r.detail['overestimate']:.3g} iterations")
    if r.clock == "simulated":
        notes.append("simulated MIMD seconds")
    return ", ".join(notes)


def mesh_shape(processors: int | Sequence[int]) -> tuple[int, int]:
    """The mesh of ``processors`` PEs: the most nearly square ``(rows, cols)``, or the
    shape given.

    >>> mesh_shape(4096), mesh_shape(512), mesh_shape((8, 16))
    ((64, 64), (16, 32), (8, 16))
    """
    if not isinstance(processors, int | np.integer):
        rows, cols = (int(p) for p in processors)
        return rows, cols
    return squarest_shape(processors)


def compare(  # noqa: PLR0913 (the public signature: every option by keyword)
    workload: Any,
    *,
    name: str = "workload",
    processors: int | tuple[int, int] | None = None,
    machines: Iterable[str | CostModel] = ("cm5",),
    balancers: Iterable[str] | None = None,
    every: Iterable[int] = INTERVALS,
    task_cost: float = 32.0,
    overestimate: float | None = None,
    backend: str = "numpy",
    baselines: Iterable[Baseline] = (),
    verify: bool = False,
    progress: Callable[[str], None] | None = None,
) -> Comparison:
    """Run ``workload`` under every balancer on every machine; see the module docstring.

    Parameters
    ----------
    workload : array_like
        Tasks per processor (1-D; per datum when there are more data than processors),
        or a 2-D grid of counts for the mesh (:mod:`simd.balance.workloads`).
    name : str
        The workload's name in the results.
    processors : int or (int, int), optional
        The machine's processors: for a 1-D workload a number (default one per entry), for
        a 2-D one a mesh or a number made into the most nearly square mesh (default the
        MP-1's 64 x 64, or the grid's own shape where it is smaller).
    machines : iterable of str or CostModel
        Names of :data:`MACHINES`, or cost models of your own (:class:`simd.cost.CostModel`,
        on the model clock).
    balancers : iterable of str, optional
        Of :data:`LOOP_BALANCERS` (1-D) or :data:`GRID_BALANCERS` (2-D); default all.
        ``none`` always runs: the speed-ups are over it.
    every : iterable of int
        The mesh's balancing intervals.
    task_cost : float
        Model operations per task (the renderer's scan-conversion task is 32).
    overestimate : float, optional
        The cost-effective loop's cost of a redistribution in iterations; default: a
        stored calibration, else measured as the loop runs (no decision before its first
        iteration is measured).
    backend : str
        The machines' array backend.
    baselines : iterable of Baseline
        Balancers of other programs, run once each (1-D workloads).
    verify : bool
        Check that every task ran exactly once (a tally kept off both clocks) and raise
        ``AssertionError`` otherwise.
    progress : callable(str), optional
        Called with a line before each run.

    Returns
    -------
    Comparison

    Examples
    --------
    The worked example of Ahrens & Hansen (1995, section 2.3): 100 iterations without
    balancing, 20 after one redistribution.

    >>> c = compare([100, 19, 0, 0, 0, 0, 0], name="example", task_cost=1e4,
    ...             overestimate=5, balancers=["none", "cost-effective"])
    >>> [(r.balancer, r.iterations, r.decisions) for r in c]
    [('none', 100, 0), ('cost-effective', 20, 1)]
    >>> print(f"{c.find('cost-effective').speedup:.1f}x faster")
    4.8x faster
    """
    plan = plan_comparison(
        workload,
        name=name,
        processors=processors,
        machines=machines,
        balancers=balancers,
        every=every,
        task_cost=task_cost,
        overestimate=overestimate,
        backend=backend,
        baselines=baselines,
        verify=verify,
    )
    runs = []
    for job in plan.jobs():
        if progress is not None:
            progress(job.label)
        runs.append(job.run(None))
    with_speedups(runs)
    return Comparison(runs, plan.table())


@dataclass(frozen=True)
class Job:
    """One run of a plan: its label, about how many seconds it takes (``weight``, for a
    progress bar's estimate) and ``run(report)``, which makes it (``report``, if given, is
    called with the fraction done as it goes)."""

    label: str
    weight: float
    run: Callable[[Callable[[float], None] | None], BalancerRun]


@dataclass(frozen=True)
class Plan:
    """The runs :func:`compare` will make, its options checked (see :func:`plan_comparison`).

    Attributes
    ----------
    counts : numpy.ndarray
        The checked workload.
    shape : tuple of int
        The machine's processors, ``(P,)`` or the mesh ``(R, C)``.
    machines : list of (str, cost, str)
        Each machine's label, cost preset or model, and clock.
    balancers : list of str
        ``none`` first.
    intervals : tuple of int
        The mesh's balancing intervals (empty without scan-directed balancing).
    baselines : list of Baseline
    name : str
        The workload's name.
    options : RunOptions
        The task's cost, the cost-effective loop's overestimate, the backend, whether to
        verify.
    """

    counts: np.ndarray
    shape: tuple[int, ...]
    machines: list[tuple[str, Any, str]]
    balancers: list[str]
    intervals: tuple[int, ...]
    baselines: list[Any]
    name: str = "workload"
    options: RunOptions = field(default_factory=lambda: RunOptions())

    @property
    def processors(self) -> str:
        """The processors as the results name them: ``"512"`` or ``"64x64"``."""
        return "x".join(map(str, self.shape))

    @property
    def runs(self) -> int:
        """How many runs the comparison makes."""
        per_machine = sum(
            len(self.intervals) if b == "scan-directed" else 1 for b in self.balancers
        )
        return per_machine * len(self.machines) + len(self.baselines)

    def jobs(self) -> list[Job]:
        """The runs, in the table's order (no balancing first on each machine): each
        independent of the others, so that they may be made anywhere (MPI ranks)."""
        counts, grid = self.counts, self.counts.ndim == 2
        o = self.options
        weight = 0.05 + 2e-7 * float(counts.sum())
        out = []
        warmed: set[str] = set()
        for machine_name, cost, clock in self.machines:
            for balancer in self.balancers:
                for k in self.intervals if balancer == "scan-directed" else (None,):
                    shown = balancer if k is None else f"scan-directed/{k}"
                    spec = RunSpec(counts, self.name, self.processors, machine_name, clock,
                                   shown, o.task_cost, o.overestimate, o.verify)  # fmt: skip
                    run = functools.partial(self._simd_run, spec, cost, k, grid, warmed)
                    out.append(Job(f"{self.name} on {self.processors} {machine_name}: {shown}",
                                   weight, run))  # fmt: skip
        for baseline in self.baselines:
            run = functools.partial(self._baseline_run, baseline)
            out.append(Job(f"{self.name} on {self.processors} {baseline.machine}: "
                           f"{baseline.name}", baseline.expected_seconds(counts),
                           run))  # fmt: skip
        return out

    def _simd_run(self, spec, cost, k, grid, warmed, report) -> BalancerRun:
        if spec.clock == "wall" and "wall" not in warmed:
            _warm_up(self.counts, self.balancers, self.intervals, self.options.backend)
            warmed.add("wall")
        machine = _machine(cost, self.shape, self.options.backend)
        return grid_run(spec, machine, k) if grid else loop_run(spec, machine)

    def _baseline_run(self, baseline, report) -> BalancerRun:
        return baseline.run(self.counts, self.shape[0], self.name, progress=report)

    def table(self) -> RunTable:
        """The layout of this comparison's table."""
        names = [label for label, _, _ in self.machines]
        names += [b.machine for b in self.baselines]
        balancers = [b if b != "scan-directed" else f"scan-directed/{k}"
                     for b in self.balancers for k in (self.intervals or (0,))]  # fmt: skip
        balancers += [b.name for b in self.baselines]
        return RunTable.of([self.name], [self.processors], names, balancers)


@dataclass(frozen=True)
class RunOptions:
    """What every run of a comparison shares: the task's cost in model operations, the
    cost-effective loop's overestimate (None: measured), the backend, whether to verify."""

    task_cost: float = 32.0
    overestimate: float | None = None
    backend: str = "numpy"
    verify: bool = False


def with_speedups(runs: list[BalancerRun]) -> list[BalancerRun]:
    """Each run's speed-up over ``none`` of its workload, processors and machine (which
    comes before it)."""
    base: dict[tuple[str, str, str], float] = {}
    for r in runs:
        key = (r.workload, r.processors, r.machine)
        if r.balancer == "none":
            base[key] = r.time
        t0 = base.get(key)
        if t0 is not None and r.time > 0:
            r.speedup = t0 / r.time
    return runs


def plan_comparison(  # noqa: PLR0913 (every option of compare by keyword)
    workload: Any,
    *,
    name: str = "workload",
    processors: int | tuple[int, int] | None = None,
    machines: Iterable[str | CostModel] = ("cm5",),
    balancers: Iterable[str] | None = None,
    every: Iterable[int] = INTERVALS,
    task_cost: float = 32.0,
    overestimate: float | None = None,
    backend: str = "numpy",
    baselines: Iterable[Baseline] = (),
    verify: bool = False,
) -> Plan:
    """Check :func:`compare`'s options without running anything (``ValueError`` in one
    line), so that a program can refuse bad ones before any work; the plan then makes the
    runs (:meth:`Plan.jobs`).

    >>> plan = plan_comparison([[1, 2], [3, 4]], processors=(2, 2), machines=["mp1"])
    >>> plan.balancers, plan.intervals, plan.runs
    (['none', 'scan-directed'], (1, 2, 5, 10, 20), 6)
    """
    counts = check_workload(workload, what=name)
    grid = counts.ndim == 2
    chosen = _balancers(balancers, GRID_BALANCERS if grid else LOOP_BALANCERS, grid)
    shape = _processors(counts, processors)
    intervals = _intervals(every) if "scan-directed" in chosen else ()
    baselines = list(baselines)
    if grid and baselines:
        raise ValueError(f"{baselines[0].name} takes a 1-D workload (tasks per processor)")
    for option, value in (("task_cost", task_cost), ("overestimate", overestimate)):
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise ValueError(f"{option} must be a finite number >= 0, got {value!r}")
    options = RunOptions(task_cost, overestimate, backend, verify)
    return Plan(counts, shape, _machines(machines), chosen, intervals, baselines, name, options)


# --------------------------------------------------------------------------------------
# Options
# --------------------------------------------------------------------------------------


def _balancers(balancers: Iterable[str] | None, known: tuple[str, ...], grid: bool) -> list[str]:
    chosen = list(known) if balancers is None else list(dict.fromkeys(balancers))
    for b in chosen:
        if b not in known:
            other = LOOP_BALANCERS if grid else GRID_BALANCERS
            if b in other:
                kind = "a 2-D grid (the mesh)" if grid else "a 1-D workload (the loops)"
                raise ValueError(
                    f"balancer {b!r} does not run {kind}; choose from {', '.join(known)}"
                )
            raise ValueError(f"unknown balancer {b!r}; choose from {', '.join(known)}")
    return ["none"] + [b for b in chosen if b != "none"]


def _machines(machines: Iterable[str | CostModel]) -> list[tuple[str, Any, str]]:
    """``(label, cost, clock)`` of every machine: a name of :data:`MACHINES` or a cost model."""
    given = [machines] if isinstance(machines, str | CostModel) else list(machines)
    if not given:
        raise ValueError(f"no machine given; choose from {', '.join(MACHINES)}")
    out = []
    for spec in given:
        if isinstance(spec, CostModel):
            out.append((spec.name, spec, "model"))
        elif spec in MACHINES:
            out.append((spec, *MACHINES[spec]))
        else:
            raise ValueError(f"unknown machine {spec!r}; choose from {', '.join(MACHINES)}")
    labels = [label for label, _, _ in out]
    return [m for i, m in enumerate(out) if m[0] not in labels[:i]]


def _intervals(every: Iterable[int]) -> tuple[int, ...]:
    out = tuple(dict.fromkeys(every))
    if not out or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in out):
        raise ValueError(f"every must list balancing intervals of at least 1, got {out}")
    return out


def _processors(counts: np.ndarray, processors: Any) -> tuple[int, ...]:
    """The machine's PE shape for ``counts``: ``(P,)`` or a mesh ``(R, C)``."""
    if counts.ndim == 1:
        if processors is None:
            return (int(counts.size),)
        if isinstance(processors, bool) or not isinstance(processors, int | np.integer):
            raise ValueError(f"a 1-D workload runs on a number of processors, got {processors!r}")
        if processors < 1:
            raise ValueError(f"processors must be at least 1, got {processors}")
        return (int(processors),)
    if processors is None:
        shape = (min(64, counts.shape[0]), min(64, counts.shape[1]))
    else:
        shape = mesh_shape(processors)
    if min(shape) < 1:
        raise ValueError(f"the mesh must have at least one PE per axis, got {shape}")
    if shape[0] > counts.shape[0] or shape[1] > counts.shape[1]:
        raise ValueError(
            f"a mesh of {shape[0]}x{shape[1]} PEs is larger than the grid "
            f"{counts.shape[0]}x{counts.shape[1]}: every PE must hold at least one point"
        )
    return shape


def _machine(cost: Any, shape: tuple[int, ...], backend: str) -> Machine:
    pes = shape[0] if len(shape) == 1 else shape
    return Machine(pes=pes, backend=backend, cost=cost)


def _warm_up(counts: np.ndarray, balancers: list[str], intervals: tuple, backend: str) -> None:
    """Every balancer once on a corner of the workload, so that no wall-clock run pays for
    the first compilation of a kernel (the runs' kernels are compiled per backend and
    dtype, not per size)."""
    if counts.ndim == 1:
        small, pes = np.minimum(counts[:16], 4), min(4, counts.size)
    else:
        small = np.minimum(counts[:4, :4], 4)
        pes = (min(2, small.shape[0]), min(2, small.shape[1]))
    for balancer in balancers:
        for k in intervals[:1] if balancer == "scan-directed" else (None,):
            spec = RunSpec(small, "warm-up", "", "wall", "wall", balancer, 1.0, None, False)
            m = Machine(pes=pes, backend=backend)
            if counts.ndim == 2:
                grid_run(spec, m, k)
            else:
                loop_run(spec, m)
