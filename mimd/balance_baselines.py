"""The MIMD policies as baselines of ``simd-emu bench balance``.

A workload of tasks per processor runs on the simulated message-passing machine of Barker
& Chrisochoides, their cluster (:meth:`mimd.Network.cluster`), with the same
number of processors: every task takes ``task_seconds`` on a node, and processor ``i``
starts with the tasks of its data (datum ``d`` of ``n`` lies on processor ``d * P // n``,
the block layout of the SIMD machine's virtual processors; with one datum per processor,
processor ``i`` holds ``workload[i]`` tasks). The farmer holds every task by definition.
Each policy (:data:`mimd.POLICIES`) then balances as it does, and no balancing (``none``)
is the baseline of the speed-ups, as on every SIMD machine.

:class:`MimdBaseline` follows :class:`simd.balance.comparison.Baseline`, so that
:func:`~simd.balance.comparison.compare` runs it beside the SIMD balancers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from simd.balance.comparison import BalancerRun

from .network import Network
from .policies import POLICIES, Policy
from .simulator import simulate

__all__ = ["MACHINE", "TASK_SECONDS", "MimdBaseline", "baselines", "check_memory"]

#: How the tables name the simulated machine.
MACHINE = "cluster"
#: Seconds of one task on a node: coarse enough that a message (0.1 ms to start, our
#: cluster's assumption) costs a hundredth of a task (the paper gives no task times).
TASK_SECONDS = 1e-2
#: About how many seconds of this host each policy takes a task (an AMD EPYC core, the
#: worst of a Zipf and a hot-spot workload at 1,024 and 4,096 processors): the progress
#: bar's estimate before the runs tell it better.
SECONDS_PER_TASK = {
    "none": 3e-6,
    "farmer": 6e-6,
    "gradient": 3e-6,
    "extended-gradient": 1e-6,
    "diffusion": 4e-5,
    "work-stealing": 1e-4,
}


@dataclass(frozen=True)
class MimdBaseline:
    """One MIMD policy on the cluster, as a baseline of :func:`~simd.balance.comparison.compare`.

    Examples
    --------
    >>> from mimd.policies import WorkStealing
    >>> run = MimdBaseline(WorkStealing()).run(np.array([8, 0, 0, 0]), 4, "example")
    >>> run.balancer, run.machine, run.tasks, run.decisions > 0
    ('work-stealing', 'cluster', 8, True)
    """

    policy: Policy
    task_seconds: float = TASK_SECONDS
    machine: str = MACHINE

    @property
    def name(self) -> str:
        return self.policy.name

    def expected_seconds(self, counts: np.ndarray) -> float:
        """About how long the simulation takes on this host."""
        return 0.05 + SECONDS_PER_TASK.get(self.name, 1e-4) * float(np.sum(counts))

    def run(self, counts: np.ndarray, processors: int, workload: str, progress=None) -> BalancerRun:
        """Simulate ``counts`` (tasks per datum) on ``processors`` processors;
        ``progress``, if given, is called with the fraction of the tasks done."""
        counts = np.asarray(counts, dtype=np.int64)
        total = int(counts.sum())
        datum_pe = (np.arange(counts.size, dtype=np.int64) * processors) // counts.size
        owners = np.repeat(datum_pe, counts)
        network = Network.cluster(processors)
        res = simulate(
            np.full(total, self.task_seconds),
            self.policy,
            network=network,
            placement=owners,
            progress=progress,
        )
        if not np.all(res.runs == 1):
            raise AssertionError(f"{self.name}: a task did not run exactly once")
        active, marks = _busy(res.start, res.finish, self.task_seconds, res.makespan)
        return BalancerRun(
            workload=workload,
            processors=str(processors),
            machine=self.machine,
            balancer=self.name,
            clock="simulated",
            iterations=None,
            model_seconds=res.makespan,
            wall_seconds=res.wall,
            balancing_seconds=float(res.overhead.mean()) if res.overhead.size else 0.0,
            decisions=res.migrations,
            tasks=int(res.runs.sum()),
            active=active,
            cumulative=marks,
            detail={
                "work_seconds": res.work,
                "utilisation": res.utilisation,
                "messages": res.messages,
                "task_seconds": self.task_seconds,
                "events": res.events,
            },
        )


def _busy(start: Any, finish: Any, step: float, makespan: float) -> tuple[list[int], list[float]]:
    """Processors running a task at the middle of every ``step`` of the run (one processor
    runs one task at a time), and the steps' start times then the makespan."""
    steps = int(np.ceil(makespan / step - 1e-9)) if makespan > 0 else 0
    t = (np.arange(steps) + 0.5) * step
    started = np.searchsorted(np.sort(start), t, side="right")
    ended = np.searchsorted(np.sort(finish), t, side="right")
    marks = [float(x) for x in np.arange(steps) * step] + [float(makespan)]
    return (started - ended).tolist(), marks


def baselines(names: list[str] | None = None, task_seconds: float = TASK_SECONDS) -> list:
    """The MIMD baselines by name (default every policy of :data:`mimd.POLICIES`), no
    balancing first.

    >>> [b.name for b in baselines(["diffusion"])]
    ['none', 'diffusion']
    """
    names = list(POLICIES) if names is None else list(names)
    for name in names:
        if name not in POLICIES:
            raise ValueError(f"unknown MIMD policy {name!r}; choose from {', '.join(POLICIES)}")
    if not task_seconds > 0:
        raise ValueError(f"a task's time must be above 0 seconds, got {task_seconds!r}")
    ordered = ["none"] + [n for n in dict.fromkeys(names) if n != "none"]
    return [MimdBaseline(POLICIES[n](), task_seconds) for n in ordered]


def check_memory(tasks: int, processors: int, workload: str, available: int | None = None) -> None:
    """Refuse, in one line before any run, a workload whose MIMD simulation would not fit in
    this host's free memory (``available`` bytes; default what the system says)."""
    from .simulator import memory_needed

    need = memory_needed(tasks, processors)
    free = _free_memory() if available is None else available
    if free is not None and need > free:
        raise ValueError(
            f"{workload}: the MIMD simulation of {tasks:,} tasks needs about "
            f"{need / 1e9:.1f} GB, more than the {free / 1e9:.1f} GB free here; leave the "
            "MIMD baselines out (--balancers none,cost-effective,balance-always,expand) "
            "or give fewer tasks (--mean)"
        )


def _free_memory() -> int | None:
    """Bytes of memory free for a new job (Linux's MemAvailable), or None if unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None
