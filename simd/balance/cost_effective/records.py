"""The records of a balanced loop: phase names, per-phase timings, the loop's result."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from simd.stats import PhaseRecord

__all__ = [
    "CLOCKS",
    "PHASE_DECISION",
    "PHASE_EXPANSION",
    "PHASE_INFORMATION",
    "PHASE_REDISTRIBUTION",
    "PHASE_SOLUTION",
    "BalanceEvent",
    "CostOverestimateWarning",
    "LoopResult",
    "PhaseTiming",
    "check_clock",
]

#: Phase names, as in the paper (Figure 2, Table 4).
PHASE_INFORMATION = "information gathering"
PHASE_DECISION = "decision"
PHASE_REDISTRIBUTION = "redistribution"
PHASE_SOLUTION = "solution"
#: The scan and load-balancing search of the ``expand`` form.
PHASE_EXPANSION = "expansion"

#: Clocks a loop can decide with: the machine's model cycles or the host's wall seconds.
CLOCKS = ("model", "wall")


def check_clock(clock: str) -> None:
    """Raise ValueError unless ``clock`` is one of :data:`CLOCKS`."""
    if clock not in CLOCKS:
        raise ValueError(f"clock must be 'model' or 'wall', got {clock!r}")


class CostOverestimateWarning(RuntimeWarning):
    """The measured cost of a balancing step exceeded the cost overestimate in use.

    Ahrens & Hansen (1995), section 4.1: "the load balancing algorithm outputs a warning message for
    the user if the actual costs of any iteration exceeds the overestimated cost value".
    Recalibrate (:func:`calibrate`) or pass a larger ``overestimate``.
    """


# --------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------


@dataclass
class PhaseTiming:
    """The executions of one phase of a loop, one :class:`~simd.PhaseRecord` each.

    ``cycles`` and ``wall`` are totals (model cycles, wall seconds); the per-execution
    samples are in ``cycle_samples`` and ``wall_samples`` and summarised by
    :meth:`summary`, as in Table 4 of Ahrens & Hansen (1995). On a GPU the wall samples are read
    from CUDA events when first asked for.
    """

    records: list[PhaseRecord] = field(default_factory=list)

    @property
    def calls(self) -> int:
        """Number of executions of the phase."""
        return len(self.records)

    @property
    def cycle_samples(self) -> list[float]:
        """Model cycles of each execution."""
        return [r.cycles for r in self.records]

    @property
    def wall_samples(self) -> list[float]:
        """Wall seconds of each execution."""
        return [r.wall for r in self.records]

    @property
    def cycles(self) -> float:
        """Total model cycles."""
        return float(sum(self.cycle_samples))

    @property
    def wall(self) -> float:
        """Total wall seconds."""
        return float(sum(self.wall_samples))

    def samples(self, clock: str = "model") -> list[float]:
        """The per-execution samples of ``clock`` ("model" or "wall")."""
        check_clock(clock)
        return self.cycle_samples if clock == "model" else self.wall_samples

    def summary(self, clock: str = "model") -> dict[str, float]:
        """Minimum, maximum and average per execution (NaN when it never ran)."""
        s = self.samples(clock)
        if not s:
            return {"min": math.nan, "max": math.nan, "mean": math.nan}
        return {"min": float(min(s)), "max": float(max(s)), "mean": float(sum(s) / len(s))}


@dataclass
class BalanceEvent:
    """One redistribution of the cost-effective loop."""

    iteration: int
    savings: int
    overestimate: float
    measured_cost: float
    max_before: int
    max_after: int


@dataclass
class LoopResult:
    """What a balanced loop did.

    Attributes
    ----------
    form : str
        The loop form.
    name : str
        The loop's name (e.g. ``"scan-conversion"``), also the enclosing machine phase.
    iterations : int
        Solution-phase executions (chunks for ``expand``).
    max_workload, mean_workload : int, float
        Of the input workload (mean over all data, zeros included; Table 1 of Ahrens & Hansen
        (1995)).
    total_tasks : int
        Sum of the workload; the body saw exactly these (item, task) pairs.
    decisions : int
        Redistributions taken (cost-effective form).
    stats : dict of str to PhaseTiming
        Per phase of this loop: model cycles and wall seconds, per execution.
    record : simd.PhaseRecord
        The whole loop (the machine phase named ``name``); ``cycles`` and ``wall`` are its
        model cycles and wall seconds.
    clock : str
        Clock the decisions were taken with.
    overestimate : float or None
        Cost overestimate in iterations in use at the end (cost-effective form).
    overestimate_source : str or None
        "given", "stored" or "online".
    events : list of BalanceEvent
        The redistributions.
    vps : int
        Size of the VP set, ``len(workload)``.
    """

    form: str
    name: str
    iterations: int
    max_workload: int
    mean_workload: float
    total_tasks: int
    decisions: int
    stats: dict[str, PhaseTiming]
    clock: str
    record: PhaseRecord = field(default_factory=lambda: PhaseRecord(""))
    overestimate: float | None = None
    overestimate_source: str | None = None
    events: list[BalanceEvent] = field(default_factory=list)
    vps: int = 0

    @property
    def cycles(self) -> float:
        """The whole loop on the model clock."""
        return self.record.cycles

    @property
    def wall(self) -> float:
        """The whole loop on the wall clock (seconds)."""
        return self.record.wall

    def time(self, clock: str = "model") -> float:
        """Total time of the loop on ``clock`` (cycles or seconds)."""
        check_clock(clock)
        return self.cycles if clock == "model" else self.wall

    def cost_in_iterations(self, clock: str = "model") -> float | None:
        """Ahrens & Hansen (1995) section 2.1 for this run: (max info + max redis) / min solution.

        None when no redistribution happened (nothing to measure).
        """
        redis = self.stats.get(PHASE_REDISTRIBUTION)
        soln = self.stats.get(PHASE_SOLUTION)
        if redis is None or redis.calls == 0 or soln is None or soln.calls == 0:
            return None
        info = self.stats.get(PHASE_INFORMATION)
        info_max = info.summary(clock)["max"] if info is not None and info.calls else 0.0
        smin = soln.summary(clock)["min"]
        if smin <= 0:
            return math.inf
        return (info_max + redis.summary(clock)["max"]) / smin

    def table(self, clock: str = "model") -> str:
        """Per-phase minimum, maximum and average time per execution, as Table 4 of Ahrens &
        Hansen (1995).

        Examples
        --------
        >>> from simd import Machine
        >>> from simd.balance import run_loop
        >>> res = run_loop([9, 0, 0, 0], None, machine=Machine(pes=4, backend="numpy"),
        ...                overestimate=2.0, task_cost=2000)
        >>> print(res.table())
        scan-conversion (cost-effective): 3 iterations, 1 balancing decision(s), model cycles
        phase                        calls          min          max      average
        information gathering            1          661          661          661
        decision                         1            0            0            0
        redistribution                   1         1084         1084         1084
        solution                         3         2003         2003         2003
        """
        check_clock(clock)
        unit = "model cycles" if clock == "model" else "wall seconds"
        lines = [
            f"{self.name} ({self.form}): {self.iterations} iterations, {self.decisions} "
            f"balancing decision(s), {unit}",
            f"{'phase':<24s} {'calls':>9s} {'min':>12s} {'max':>12s} {'average':>12s}",
        ]
        for name, t in self.stats.items():
            if not t.calls:
                continue
            sm = t.summary(clock)
            lines.append(
                f"{name:<24s} {t.calls:>9d} {sm['min']:>12.6g} {sm['max']:>12.6g} "
                f"{sm['mean']:>12.6g}"
            )
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "form": self.form,
            "name": self.name,
            "iterations": self.iterations,
            "max_workload": self.max_workload,
            "mean_workload": self.mean_workload,
            "total_tasks": self.total_tasks,
            "decisions": self.decisions,
            "cycles": self.cycles,
            "wall": self.wall,
            "clock": self.clock,
            "overestimate": self.overestimate,
            "overestimate_source": self.overestimate_source,
            "phases": {
                name: {
                    "calls": t.calls,
                    "cycles": t.cycles,
                    "wall": t.wall,
                    "cycles_summary": t.summary("model"),
                    "wall_summary": t.summary("wall"),
                }
                for name, t in self.stats.items()
            },
            "events": [e.__dict__ for e in self.events],
            "vps": self.vps,
        }
