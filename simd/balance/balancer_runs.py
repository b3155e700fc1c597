"""One run of one balancer on one machine: its record (:class:`BalancerRun`) and the runs
:func:`~simd.balance.comparison.compare` makes of a 1-D workload (the loops of Ahrens & Hansen 1995,
through :func:`simd.balance.run_loop`) and of a 2-D one (the mesh, through
:func:`simd.balance.grid_loop.run_grid_loop`).

With ``verify`` a run checks that every task ran exactly once: the loops' (datum, task)
pairs are tallied off both clocks, the mesh's point-iterations counted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from simd.balance.cost_effective import (
    PHASE_DECISION,
    PHASE_EXPANSION,
    PHASE_INFORMATION,
    PHASE_REDISTRIBUTION,
    run_loop,
)
from simd.balance.grid_loop import run_grid_loop
from simd.machine import Machine

__all__ = [
    "BALANCING_PHASES",
    "LOOP_NAME",
    "BalancerRun",
    "Baseline",
    "RunSpec",
    "grid_run",
    "loop_run",
]

#: The loop's name: the machine phase around it and the key of stored calibrations.
LOOP_NAME = "bench-balance"
#: The phases of a loop that balance rather than run tasks.
BALANCING_PHASES = (PHASE_INFORMATION, PHASE_DECISION, PHASE_REDISTRIBUTION, PHASE_EXPANSION)


@dataclass
class BalancerRun:
    """One balancer on one machine.

    Attributes
    ----------
    workload, machine, balancer : str
        What ran where.
    processors : str
        ``"512"``, or the mesh ``"64x64"``.
    clock : str
        What ``time`` is: ``"model"`` (the emulated machine's seconds), ``"wall"`` (this
        host's) or ``"simulated"`` (a simulated MIMD machine's seconds).
    iterations : int or None
        Solution iterations (None where a run has none, as in a MIMD simulation).
    model_seconds, wall_seconds : float
        The run on the model clock (or the simulated machine's) and on the wall clock.
    balancing_seconds : float
        Of ``time``, what went to balancing.
    decisions : int
        Redistributions (loops), balancing steps that moved data (mesh), migrations (MIMD).
    tasks : int
        Tasks run; equals the workload's total.
    speedup : float or None
        No balancing's ``time`` on the same machine over this run's.
    active : list of int
        Per iteration, the processors at work.
    cumulative : list of float
        Seconds (on ``clock``) from the start until each iteration's tasks begin (after
        that iteration's balancing), then the total.
    locality : bool or None
        Scan-directed runs: whether the Locality Property held throughout.
    detail : dict
        Anything else worth keeping (the cost overestimate in use, migrations, ...).
    """

    workload: str
    processors: str
    machine: str
    balancer: str
    clock: str
    iterations: int | None
    model_seconds: float
    wall_seconds: float
    balancing_seconds: float
    decisions: int
    tasks: int
    speedup: float | None = None
    active: list[int] = field(default_factory=list)
    cumulative: list[float] = field(default_factory=list)
    locality: bool | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def time(self) -> float:
        """The run's time on its own clock (what the speed-up compares)."""
        return self.wall_seconds if self.clock == "wall" else self.model_seconds

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return dict(self.__dict__)


class Baseline(Protocol):
    """A balancer from another program (the MIMD policies): it names itself and its
    machine, says about how long it takes, and runs a 1-D workload on ``processors``
    processors, calling ``progress`` (if given) with the fraction done as it goes."""

    name: str
    machine: str

    def expected_seconds(self, counts: np.ndarray) -> float: ...

    def run(
        self,
        counts: np.ndarray,
        processors: int,
        workload: str,
        progress: Callable[[float], None] | None = None,
    ) -> BalancerRun: ...


@dataclass(frozen=True)
class RunSpec:
    """One run to make: the workload, where it runs, the balancer and the options every
    run of a comparison shares."""

    counts: np.ndarray
    workload: str
    processors: str
    machine: str
    clock: str
    balancer: str
    task_cost: float
    overestimate: float | None
    verify: bool

    def run(self, **kw: Any) -> BalancerRun:
        return BalancerRun(
            workload=self.workload,
            processors=self.processors,
            machine=self.machine,
            balancer=self.balancer,
            clock=self.clock,
            **kw,
        )


#: run_loop's options per loop balancer.
_LOOP_OPTIONS = {
    "none": {"form": "original"},
    "cost-effective": {"form": "cost-effective"},
    "balance-always": {"form": "cost-effective", "overestimate": 0.0},
    "expand": {"form": "expand"},
}


def loop_run(spec: RunSpec, m: Machine) -> BalancerRun:
    """A 1-D workload through :func:`run_loop` in the balancer's form."""
    clock = spec.clock
    tally = _Tally(spec.counts) if spec.verify else None
    active: list[int] = []
    marks: list[float] = []
    start, t0 = m.clock, time.perf_counter()

    def body(items: Any, tasks: Any) -> None:
        active.append(int(items.size))
        marks.append(m.clock - start if clock == "model" else time.perf_counter() - t0)
        if tally is not None:
            tally.add(m.asnumpy(items), m.asnumpy(tasks))

    options = dict(_LOOP_OPTIONS[spec.balancer])
    if spec.balancer == "cost-effective":
        options["overestimate"] = spec.overestimate
    res = run_loop(
        spec.counts,
        body,
        machine=m,
        clock=clock,
        name=LOOP_NAME,
        task_cost=spec.task_cost,
        warn=False,
        **options,
    )
    if tally is not None:
        tally.check(spec.balancer)
    seconds = m.cost.seconds
    balancing = [res.stats[p] for p in BALANCING_PHASES if p in res.stats]
    if clock == "model":
        marks = [seconds(c) for c in marks] + [seconds(res.cycles)]
        spent = seconds(sum(t.cycles for t in balancing))
    else:
        marks.append(res.wall)
        spent = sum(t.wall for t in balancing)
    detail = {
        "form": res.form,
        "cost_model": m.cost.name,
        "vps": res.vps,
        "phases": {
            name: seconds(t.cycles) if clock == "model" else t.wall for name, t in res.stats.items()
        },
    }
    if res.form == "cost-effective":
        detail["overestimate"] = res.overestimate
        detail["overestimate_source"] = res.overestimate_source
        detail["events"] = [dict(e.__dict__) for e in res.events]
    return spec.run(
        iterations=res.iterations,
        model_seconds=seconds(res.cycles),
        wall_seconds=res.wall,
        balancing_seconds=spent,
        decisions=res.decisions,
        tasks=int(sum(active)),
        active=active,
        cumulative=marks,
        detail=detail,
    )


def grid_run(spec: RunSpec, m: Machine, every: int | None) -> BalancerRun:
    """A 2-D workload through :func:`run_grid_loop`, balanced every ``every``."""
    clock = spec.clock
    res = run_grid_loop(spec.counts, machine=m, every=every or 0, task_cost=spec.task_cost)
    if spec.verify and res.tasks_run != int(spec.counts.sum()):
        raise AssertionError(
            f"{spec.balancer}: ran {res.tasks_run} point-iterations of {int(spec.counts.sum())}"
        )
    seconds = m.cost.seconds
    if clock == "model":
        spent = seconds(res.cycles["balancing"])
        marks = [seconds(c) for c in res.cumulative]
    else:
        spent = res.wall["balancing"]
        marks = [res.wall["total"]]
    return spec.run(
        iterations=res.iterations,
        model_seconds=seconds(res.cycles["total"]),
        wall_seconds=res.wall["total"],
        balancing_seconds=spent,
        decisions=res.moved,
        tasks=res.tasks_run,
        active=res.active,
        cumulative=marks,
        locality=res.locality if every else None,
        detail={"cost_model": m.cost.name, "every": every or 0, "steps": res.balance_steps},
    )


class _Tally:
    """Which (datum, task) pairs a loop ran, to check each ran exactly once."""

    def __init__(self, counts: np.ndarray) -> None:
        self.counts = counts
        self.offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        self.seen = np.zeros(int(counts.sum()), dtype=np.int64)

    def add(self, items: np.ndarray, tasks: np.ndarray) -> None:
        items = items.astype(np.int64)
        tasks = tasks.astype(np.int64)
        if tasks.size and (tasks.min() < 0 or np.any(tasks >= self.counts[items])):
            raise AssertionError("a task index beyond its datum's count ran")
        np.add.at(self.seen, self.offsets[items] + tasks, 1)

    def check(self, balancer: str) -> None:
        lost = int((self.seen == 0).sum())
        twice = int((self.seen > 1).sum())
        if lost or twice:
            raise AssertionError(f"{balancer}: {lost} task(s) never ran, {twice} ran twice or more")
