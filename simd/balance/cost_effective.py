"""Cost-effective data-parallel load balancing (Ahrens & Hansen, seed 000).

A *balanced loop* runs a collection of independent tasks: problem datum ``i`` has
``workload[i]`` tasks, numbered ``0 .. workload[i] - 1``, and every task may run in any
order. One virtual processor (VP) holds one datum, so the VP set has ``len(workload)``
elements. Three forms of the loop are provided, all running the same *solution phase*
(the caller's ``body``):

``"original"``
    The loop of Figure 1 of the paper: iteration ``i`` runs task ``i`` on every VP whose
    workload exceeds ``i``, ``MAX(workload)`` iterations.
``"cost-effective"``
    The loop of Figure 2: each iteration runs the *information gathering* phase (the trial
    workload of section 2.3), the *decision* phase (savings in iterations against the
    overestimated cost in iterations, section 2.1) and, when balancing pays, the
    *redistribution* phase (section 2.3.1: a send to block heads through scan pointers,
    segmented copy-scans, a segmented add-scan renumbering task indices), then the
    solution phase on every VP with work left.
``"expand"``
    The flattened form a GPU program would use: an exclusive add-scan of the workload and
    a load-balancing search (a send of each datum's number to its first task followed by a
    max-scan, the SIMD form of moderngpu's ``transform_lbs``) give every task its datum;
    all tasks then run at once, in chunks of at most ``chunk`` tasks.

Everything runs on the machine's instructions (``scan``, ``send``, ``get``, ``count``,
``reduce``), inside ``machine.phase`` blocks named as in the paper, so ``machine.stats``
gives Table 4 of the paper in form. Elementwise work done with plain array operations is
charged to the model clock with ``machine.charge``.

The cost overestimate
---------------------
The decision compares the *savings* ``MAX(workload) - MAX(new_workload)`` with the *cost*
in iterations ``(time_info + time_redis) / time_soln``, which must never be
underestimated. ``overestimate`` is resolved in this order:

1. a number given by the caller;
2. a stored calibration (:func:`calibrate`, the procedure of section 2.1: the longest
   information gathering time plus the longest redistribution time over the shortest
   solution time, the largest over a set of runs, plus a constant). Calibrations live in a
   JSON file keyed by loop name, clock and machine preset (the cost model's name, e.g.
   ``CM-5/512``; for the wall clock also the backend and host). The user file
   (``overestimates.json`` in :func:`cache_dir`: ``$SIMD_EMU_CACHE_DIR``, else
   ``$XDG_CACHE_HOME/simd-emu``, else ``~/.cache/simd-emu``) is searched before the file shipped
   with the package (``simd/balance/overestimates.json``). An entry records the smallest
   VP ratio it was calibrated at and is only used at that VP ratio or above, because the
   cost in iterations falls as the VP ratio grows (the network terms of scans and sends
   are amortised over more VPs);
3. otherwise an *online* estimate: ``f * (longest information gathering seen + longest
   redistribution seen) / shortest solution seen + 2`` with ``f`` 1.5 on the model clock
   and 2 on the (noisier) wall clock, where the redistribution time before the first one
   is measured by a dry run on a scratch machine of the same kind.

A :class:`CostOverestimateWarning` is issued when the measured cost of an iteration that
redistributed exceeds the overestimate in use (the paper's warning, section 4.1).

Until the first redistribution every processor works on the same task index, so the
cost-effective loop runs (and is charged) as Figure 1 with a front-end index; the arrays
``workload`` and ``parallel_index`` of Figure 2 are materialised at the first
redistribution.

Refinements over the paper, on by default (``prune=True``), that never change a decision:

* the savings of a redistribution are at most ``MAX(workload) - 1``, and the front end
  knows ``MAX(workload)`` (the first gathering computes it, and without redistribution it
  falls by exactly one per iteration), so while ``MAX(workload) - 1 <= overestimate`` the
  gathering is skipped (for the rest of the loop, as MAX only falls);
* the gathering stops after step 1, 2 or 3 of section 2.3 as soon as a lower bound of
  ``MAX(new_workload)`` computed from the scalars gathered so far shows that the savings
  cannot exceed the overestimate (:func:`gather_information`).

On balanced data the cost-effective loop thus costs the original loop plus one or two
cheap reductions per iteration at most. ``prune=False`` runs the loop of Figure 2
literally: all five steps of the gathering and a decision in every iteration. With the
online estimate no decision is taken before one solution iteration has been measured.

References
----------
.. [1] J. P. Ahrens and C. D. Hansen, "Cost-Effective Data-Parallel Load Balancing",
   University of Washington TR 95-04-02, 1995 (seed 000).
.. [2] S. Baxter, moderngpu 2.0, "transform_lbs" / load-balancing search.
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "FORMS",
    "PHASE_DECISION",
    "PHASE_EXPANSION",
    "PHASE_INFORMATION",
    "PHASE_REDISTRIBUTION",
    "PHASE_SOLUTION",
    "BalanceEvent",
    "Calibration",
    "CostOverestimateWarning",
    "Information",
    "LoopResult",
    "PhaseTiming",
    "Redistribution",
    "cache_dir",
    "calibrate",
    "decide",
    "gather_information",
    "load_overestimate",
    "overestimate_key",
    "redistribute",
    "run_loop",
    "store_overestimate",
    "user_store_path",
]

#: Loop forms accepted by :func:`run_loop`.
FORMS = ("original", "cost-effective", "expand")

#: Phase names, as in the paper (Figure 2, Table 4).
PHASE_INFORMATION = "information gathering"
PHASE_DECISION = "decision"
PHASE_REDISTRIBUTION = "redistribution"
PHASE_SOLUTION = "solution"
#: The scan and load-balancing search of the ``expand`` form.
PHASE_EXPANSION = "expansion"

CLOCKS = ("model", "wall")

#: Elementwise operations per VP charged per iteration by the loops themselves.
#: Figure 1: the WHERE test ``index <= workload``.
_ORIGINAL_OPS = 1
#: Figure 2: the WHERE test, ``workload - 1`` and ``parallel_index + 1``.
_BALANCED_OPS = 3

#: Online estimate: factor (per clock; wall times are noisier) and constant added to the
#: measured cost in iterations.
_ONLINE_FACTOR = {"model": 1.5, "wall": 2.0}
_ONLINE_MARGIN = 2.0

#: Workloads and task indices below this travel as one two-word message.
_PACK_LIMIT = 1 << 31

#: Default chunk of the expand form (tasks per step).
_DEFAULT_CHUNK = 1 << 22

_PACKAGE_STORE = Path(__file__).with_name("overestimates.json")


class CostOverestimateWarning(RuntimeWarning):
    """The measured cost of a balancing step exceeded the cost overestimate in use.

    Seed 000, section 4.1: "the load balancing algorithm outputs a warning message for the
    user if the actual costs of any iteration exceeds the overestimated cost value".
    Recalibrate (:func:`calibrate`) or pass a larger ``overestimate``.
    """


# --------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------


@dataclass
class PhaseTiming:
    """Per-execution times of one phase of a loop.

    ``cycles`` and ``wall`` are totals (model cycles, wall seconds); the per-execution
    samples (one per iteration that ran the phase) are in ``cycle_samples`` and
    ``wall_samples`` and summarised by :meth:`summary`, as in Table 4 of seed 000.
    """

    cycle_samples: list[float] = field(default_factory=list)
    wall_samples: list[float] = field(default_factory=list)

    @property
    def calls(self) -> int:
        """Number of executions of the phase."""
        return len(self.cycle_samples)

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
        _check_clock(clock)
        return self.cycle_samples if clock == "model" else self.wall_samples

    def summary(self, clock: str = "model") -> dict[str, float]:
        """Minimum, maximum and average per execution (NaN when it never ran)."""
        s = self.samples(clock)
        if not s:
            return {"min": math.nan, "max": math.nan, "mean": math.nan}
        return {"min": float(min(s)), "max": float(max(s)), "mean": float(sum(s) / len(s))}

    def _add(self, cycles: float, wall: float) -> None:
        self.cycle_samples.append(float(cycles))
        self.wall_samples.append(float(wall))


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
        Of the input workload (mean over all data, zeros included; Table 1 of seed 000).
    total_tasks : int
        Sum of the workload; the body saw exactly these (item, task) pairs.
    decisions : int
        Redistributions taken (cost-effective form).
    stats : dict of str to PhaseTiming
        Per phase of this loop: model cycles and wall seconds, per execution.
    cycles, wall : float
        The whole loop on the model clock and the wall clock.
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
    cycles: float
    wall: float
    clock: str
    overestimate: float | None = None
    overestimate_source: str | None = None
    events: list[BalanceEvent] = field(default_factory=list)
    vps: int = 0

    def time(self, clock: str = "model") -> float:
        """Total time of the loop on ``clock`` (cycles or seconds)."""
        _check_clock(clock)
        return self.cycles if clock == "model" else self.wall

    def cost_in_iterations(self, clock: str = "model") -> float | None:
        """Seed 000 section 2.1 for this run: (max info + max redis) / min solution.

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
        """Per-phase minimum, maximum and average time per execution, as Table 4 of seed 000.

        Examples
        --------
        >>> from simd import Machine
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
        _check_clock(clock)
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


@dataclass
class Information:
    """The information gathering phase of seed 000, section 2.3 (steps 1 to 5).

    Arrays are backend arrays over the VP set; names follow the paper. ``complete`` is
    False when the gathering stopped early because balancing could not pay (see
    :func:`gather_information`); the arrays are None then.
    """

    num_idle: int
    total: int
    avg: int
    act_mask: Any
    sum_workload: int
    assignment: Any
    new_workload_values: Any
    max_workload: int
    max_new_workload: int
    complete: bool = True

    @property
    def savings(self) -> int:
        """Savings in iterations: ``MAX(workload) - MAX(new_workload_values)``.

        An upper bound when the gathering stopped early (``complete`` False).
        """
        return self.max_workload - self.max_new_workload


@dataclass
class Redistribution:
    """The redistribution phase of seed 000, section 2.3.1 (steps 1 to 4).

    ``pointers_scan`` is the scan of step 1 (0-based, 0 where the processor sends
    nothing) and ``pointers`` the paper's 1-based pointers; ``sent_*`` are the arrays after
    the send of step 2, ``new_workload``, ``copied_parallel_index`` and ``problem_data``
    after the segmented copy-scans of step 3, ``scan_add_new_workload`` and
    ``parallel_index`` after step 4. ``workload`` is the exact number of tasks left on
    every processor afterwards (``new_workload`` except at the end of a block whose
    workload does not divide evenly), and ``heads`` the segment flags of the blocks.
    """

    pointers_scan: Any
    pointers: Any
    sent_new_workload_values: Any
    sent_workload: Any
    sent_parallel_index: Any
    sent_problem_data: Any
    heads: Any
    new_workload: Any
    copied_parallel_index: Any
    problem_data: Any
    scan_add_new_workload: Any
    parallel_index: Any
    workload: Any


# --------------------------------------------------------------------------------------
# Validation and small helpers
# --------------------------------------------------------------------------------------


def _check_clock(clock: str) -> None:
    if clock not in CLOCKS:
        raise ValueError(f"clock must be 'model' or 'wall', got {clock!r}")


def _validate_workload(workload: Any, machine: Any) -> Any:
    """Return the workload as an int64 backend array, or raise a clear error."""
    if isinstance(workload, (str, bytes)):
        raise TypeError("workload must be a 1-D array of non-negative integers, got a string")
    xp = machine.xp
    if not hasattr(workload, "__array__") and not hasattr(workload, "__cuda_array_interface__"):
        try:
            workload = np.asarray(workload)
        except ValueError as exc:
            raise ValueError(f"workload must be a 1-D integer array: {exc}") from exc
        except TypeError as exc:
            raise TypeError(f"workload must be a 1-D integer array: {exc}") from exc
    arr = workload
    if arr.dtype == object:
        raise TypeError("workload must be a 1-D integer array, got an object array")
    if arr.ndim != 1:
        raise ValueError(
            f"workload must be 1-D (one entry per problem datum), got shape {tuple(arr.shape)}"
        )
    kind = np.dtype(arr.dtype).kind
    if kind == "b":
        raise TypeError("workload must hold integers (task counts), got booleans")
    if kind == "f":
        host = machine.asnumpy(arr) if not isinstance(arr, np.ndarray) else arr
        if not np.all(np.isfinite(host)):
            raise ValueError("workload must be finite non-negative integers, got NaN or inf")
        if not np.all(host == np.floor(host)):
            raise ValueError("workload must hold whole numbers of tasks, got fractions")
    elif kind not in "iu":
        raise TypeError(f"workload must be an integer array, got dtype {arr.dtype}")
    out = machine.asarray(arr, dtype=np.int64)
    if out.size and int(xp.min(out)) < 0:
        raise ValueError("workload must be non-negative (a number of tasks per datum)")
    return out


class _Timer:
    """Model-clock and wall-clock deltas of one phase execution."""

    def __init__(self, machine: Any) -> None:
        self.machine = machine

    def __enter__(self) -> _Timer:
        self.machine.sync()
        self.c0 = float(self.machine.clock)
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.machine.sync()
        self.wall = time.perf_counter() - self.t0
        self.cycles = float(self.machine.clock) - self.c0

    def value(self, clock: str) -> float:
        return self.cycles if clock == "model" else self.wall


def decide(savings: int, overestimate: float) -> bool:
    """The decision phase (seed 000, section 2.1): balance when savings exceed the cost.

    Parameters
    ----------
    savings : int
        ``MAX(workload) - MAX(new_workload)`` in iterations.
    overestimate : float
        Overestimated cost of gathering plus redistribution, in iterations.

    Returns
    -------
    bool
        True when ``savings > overestimate``.

    Examples
    --------
    >>> decide(80, 20), decide(20, 20), decide(3, 2.5)
    (True, False, True)
    """
    return bool(savings > overestimate)


# --------------------------------------------------------------------------------------
# The three phases of Figure 2
# --------------------------------------------------------------------------------------


def gather_information(
    workload: Any,
    *,
    machine: Any,
    max_workload: int | None = None,
    threshold: float | None = None,
) -> Information:
    """Information gathering phase of seed 000, section 2.3: the trial workload.

    Steps, for ``n`` processors (one per element of ``workload``):

    1. ``num_idle``: count of processors whose workload is 0.
    2. ``avg = sum(workload) // n`` and ``act_mask = workload > avg``.
    3. ``sum_workload``: sum of the masked workloads.
    4. ``assignment = workload * num_idle // sum_workload + 1`` on masked processors (the
       integer form of the paper's ``workload / sum_workload * num_idle + 1``), 1 on the
       other active processors (they keep their work: the paper's example has none, but
       without them their work would be overwritten by the blocks) and 0 on idle ones.
    5. ``new_workload_values = ceil(workload / assignment)`` (ceil so that no task is lost
       when the division is not exact; the paper's example divides evenly).

    With ``threshold`` (the overestimate of the decision phase) the gathering stops as soon
    as the savings provably cannot exceed it: after step 1, because the heaviest processor
    gets at most ``num_idle`` helpers, ``MAX(new_workload) >= ceil(MAX(workload) /
    (num_idle + 1))``; after step 2, ``MAX(new_workload) >= ceil(sum / n)``; after step 3,
    the heaviest processor's own new workload, computed from the scalars. The record is
    then incomplete (``complete`` False, arrays None) and ``max_new_workload`` holds that
    lower bound, so ``savings`` is an upper bound that the decision rejects: the decisions
    are the paper's, at a fraction of the cost when balancing cannot pay.

    Parameters
    ----------
    workload : 1-D int64 backend array
        Tasks left per processor.
    machine : simd.Machine
    max_workload : int, optional
        ``MAX(workload)`` when the front end already knows it (the reduction is skipped).
    threshold : float, optional
        Stop early when the savings cannot exceed this.

    Returns
    -------
    Information
        With ``savings = max_workload - max_new_workload``.

    Examples
    --------
    >>> from simd import Machine
    >>> m = Machine(pes=7, backend="numpy")
    >>> info = gather_information(m.asarray([100, 19, 0, 0, 0, 0, 0]), machine=m)
    >>> info.assignment.tolist(), info.new_workload_values.tolist(), info.savings
    ([5, 1, 0, 0, 0, 0, 0], [20, 19, 0, 0, 0, 0, 0], 80)
    """
    m = machine
    xp = m.xp
    n = int(workload.size)
    if n == 0:
        empty = xp.zeros(0, dtype=np.int64)
        return Information(0, 0, 0, xp.zeros(0, dtype=bool), 0, empty, empty, 0, 0)
    if max_workload is None:
        max_workload = int(m.reduce(workload, "max"))

    def stop(bound: int, num_idle: int, total: int = -1) -> Information | None:
        if threshold is None or max_workload - bound > threshold:
            return None
        avg = total // n if total >= 0 else -1
        return Information(
            num_idle, total, avg, None, -1, None, None, max_workload, bound, complete=False
        )

    # Step 1.
    idle = workload == 0
    m.charge("elementwise", n, ops=1)
    num_idle = m.count(idle)
    early = stop(-(-max_workload // (num_idle + 1)), num_idle)
    if early is not None:
        return early
    # Step 2.
    total = int(m.reduce(workload, "add"))
    avg = total // n
    early = stop(max(-(-max_workload // (num_idle + 1)), -(-total // n)), num_idle, total)
    if early is not None:
        return early
    act_mask = workload > avg
    m.charge("elementwise", n, ops=1)
    # Step 3.
    sum_workload = int(m.reduce(workload, "add", mask=act_mask))
    # The heaviest processor's own share, computed on the front end from the scalars.
    if max_workload > avg:
        helpers = (max_workload * num_idle) // max(sum_workload, 1)
        early = stop(-(-max_workload // (helpers + 1)), num_idle, total)
        if early is not None:
            return early
    # Steps 4 and 5.
    share = (workload * num_idle) // max(sum_workload, 1) + 1
    assignment = xp.where(act_mask, share, (workload > 0).astype(np.int64))
    new_workload_values = xp.where(
        assignment > 0, (workload + assignment - 1) // xp.maximum(assignment, 1), 0
    )
    m.charge("elementwise", n, ops=9)  # assignment (5) and the ceiling division (4)
    max_new = int(m.reduce(new_workload_values, "max"))
    return Information(
        num_idle=num_idle,
        total=total,
        avg=avg,
        act_mask=act_mask,
        sum_workload=sum_workload,
        assignment=assignment.astype(np.int64, copy=False),
        new_workload_values=new_workload_values.astype(np.int64, copy=False),
        max_workload=max_workload,
        max_new_workload=max_new,
    )


def redistribute(
    workload: Any,
    parallel_index: Any,
    problem_data: Any,
    info: Information,
    *,
    machine: Any,
) -> Redistribution:
    """Redistribution phase of seed 000, section 2.3.1.

    1. ``pointers``: exclusive add-scan of ``info.assignment`` (block heads).
    2. A send of ``new_workload_values``, ``parallel_index`` and ``problem_data`` to the
       block heads. The block's remaining ``workload`` travels too, in one two-word
       message with ``parallel_index`` (so there are three sends, as in the paper): it
       gives the last processor of a block its exact share when the division is not
       exact.
    3. Segmented copy-scans spread them over every block.
    4. A segmented exclusive add-scan of ``new_workload`` added to ``parallel_index``
       renumbers the task indices.

    Parameters
    ----------
    workload : 1-D int64 backend array
        Tasks left per processor.
    parallel_index : 1-D int64 backend array
        Next task index per processor, 1-based as in the paper (0 on idle processors).
    problem_data : 1-D backend array
        One datum per processor (any dtype); in :func:`run_loop`, the datum's number.
    info : Information
        The result of :func:`gather_information` on ``workload``.
    machine : simd.Machine

    Returns
    -------
    Redistribution
        The intermediate arrays and the new ``workload``, ``parallel_index`` and
        ``problem_data``.

    Examples
    --------
    The example of section 2.3.1: processors 1 to 5 share datum 1.0, processor 6 keeps 2.0.

    >>> from simd import Machine
    >>> m = Machine(pes=7, backend="numpy")
    >>> w = m.asarray([100, 19, 0, 0, 0, 0, 0])
    >>> red = redistribute(w, m.asarray([1, 1, 0, 0, 0, 0, 0]),
    ...                    m.asarray([1.0, 2.0, 0, 0, 0, 0, 0]),
    ...                    gather_information(w, machine=m), machine=m)
    >>> red.pointers.tolist(), red.workload.tolist()
    ([1, 6, 0, 0, 0, 0, 0], [20, 20, 20, 20, 20, 19, 0])
    >>> red.parallel_index.tolist(), red.problem_data.tolist()
    ([1, 21, 41, 61, 81, 1, 0], [1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 0.0])
    """
    m = machine
    xp = m.xp
    n = int(workload.size)
    active = info.assignment > 0
    # Step 1: scan pointers. The scan addition variant (exclusive, initial 0).
    scanned = m.scan(info.assignment, "add", exclusive=True, initial=0)
    pointers_scan = xp.where(active, scanned, 0)
    pointers = xp.where(active, scanned + 1, 0)
    # The front end reads one element: where the last block ends.
    total_assigned = int(scanned[-1] + info.assignment[-1]) if n else 0
    m.charge("elementwise", n, ops=2)
    # Step 2: general send to the block heads (no collisions: assignments are >= 1).
    sent_nwv = m.send(info.new_workload_values, pointers_scan, n, mask=active, fill=0)
    if n and int(xp.max(workload)) < _PACK_LIMIT and int(xp.max(parallel_index)) < _PACK_LIMIT:
        # One two-word message (as a CM program sends a struct): workload and index.
        packed = workload * _PACK_LIMIT + parallel_index
        m.charge("elementwise", n, ops=2)
        sent = m.send(packed, pointers_scan, n, mask=active, fill=0)
        sent_w, sent_pi = sent // _PACK_LIMIT, sent % _PACK_LIMIT
        m.charge("elementwise", n, ops=2)
    else:
        sent_w = m.send(workload, pointers_scan, n, mask=active, fill=0)
        sent_pi = m.send(parallel_index, pointers_scan, n, mask=active, fill=0)
    sent_pd = m.send(problem_data, pointers_scan, n, mask=active, fill=0)
    # Segments: every block head, plus the first unassigned processor so that the
    # processors after the last block stay idle (processor 7 of the paper's example).
    processor = xp.arange(n, dtype=np.int64)
    heads = (sent_nwv > 0) | (processor == total_assigned)
    m.charge("elementwise", n, ops=3)
    # Step 3: segmented copy-scans.
    new_workload = m.scan(sent_nwv, "copy", segments=heads)
    block_workload = m.scan(sent_w, "copy", segments=heads)
    copied_pi = m.scan(sent_pi, "copy", segments=heads)
    new_problem_data = m.scan(sent_pd, "copy", segments=heads)
    # Step 4: renumber with a segmented add-scan (the scan addition variant).
    offset = m.scan(new_workload, "add", exclusive=True, segments=heads, initial=0)
    new_pi = copied_pi + offset
    # Exact share of every processor of a block; the last ones may get fewer (or none).
    new_w = xp.clip(block_workload - offset, 0, new_workload)
    new_pi = xp.where(new_w > 0, new_pi, 0)
    m.charge("elementwise", n, ops=5)
    return Redistribution(
        pointers_scan=pointers_scan,
        pointers=pointers,
        sent_new_workload_values=sent_nwv,
        sent_workload=sent_w,
        sent_parallel_index=sent_pi,
        sent_problem_data=sent_pd,
        heads=heads,
        new_workload=new_workload,
        copied_parallel_index=copied_pi,
        problem_data=new_problem_data,
        scan_add_new_workload=offset,
        parallel_index=new_pi,
        workload=new_w,
    )


# --------------------------------------------------------------------------------------
# Calibration store
# --------------------------------------------------------------------------------------


def cache_dir() -> Path:
    """The user's simd-emu cache folder (calibrations, the renderer's data sets).

    ``$SIMD_EMU_CACHE_DIR``, else ``$XDG_CACHE_HOME/simd-emu``, else ``~/.cache/simd-emu``.

    Examples
    --------
    >>> user_store_path() == cache_dir() / "overestimates.json"
    True
    """
    base = os.environ.get("SIMD_EMU_CACHE_DIR")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME")
    root = Path(xdg) if xdg else Path.home() / ".cache"
    return root / "simd-emu"


def user_store_path() -> Path:
    """The user's calibration file (see the module docstring for the search order)."""
    return cache_dir() / "overestimates.json"


def overestimate_key(machine: Any, *, name: str, clock: str = "model") -> str:
    """Key of a calibration: loop name, clock, machine preset (and host for the wall clock).

    Examples
    --------
    >>> from simd import Machine
    >>> overestimate_key(Machine(pes=512, backend="numpy"), name="z-buffer")
    'z-buffer|model|CM-5/512'
    """
    _check_clock(clock)
    preset = getattr(machine.cost, "name", f"P={machine.npes}")
    key = f"{name}|{clock}|{preset}"
    if clock == "wall":
        key += f"|{machine.backend}|{platform.node()}"
    return key


def _read_store(path: Path) -> dict[str, Any]:
    """The calibrations in ``path``; none when it is missing, unreadable or not a JSON
    object (the search then goes on with the next file, or the online estimate)."""
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def load_overestimate(
    machine: Any,
    *,
    name: str,
    clock: str = "model",
    n: int | None = None,
    path: str | os.PathLike | None = None,
) -> float | None:
    """The stored cost overestimate for this loop and machine, or None.

    Parameters
    ----------
    machine : simd.Machine
    name : str
        Loop name.
    clock : str
        "model" or "wall".
    n : int, optional
        VP set size; an entry calibrated at a larger VP ratio than ``n`` gives is not used.
    path : path, optional
        Only this file; default: the user file, then the package file.

    Examples
    --------
    >>> import os, tempfile
    >>> from simd import Machine
    >>> m, path = Machine(pes=8, backend="numpy"), os.path.join(tempfile.mkdtemp(), "o.json")
    >>> _ = store_overestimate(m, 12.5, name="demo", min_vp_ratio=4, path=path)
    >>> load_overestimate(m, name="demo", n=64, path=path)   # VP ratio 8: valid
    12.5
    >>> load_overestimate(m, name="demo", n=16, path=path) is None   # VP ratio 2: not
    True
    """
    key = overestimate_key(machine, name=name, clock=clock)
    paths = [Path(path)] if path is not None else [user_store_path(), _PACKAGE_STORE]
    for p in paths:
        entry = _read_store(p).get(key)
        if not isinstance(entry, dict) or "overestimate" not in entry:
            continue
        if n is not None and machine.cost.vp_ratio(n) < entry.get("min_vp_ratio", 1):
            continue
        return float(entry["overestimate"])
    return None


def store_overestimate(
    machine: Any,
    overestimate: float,
    *,
    name: str,
    clock: str = "model",
    min_vp_ratio: int = 1,
    path: str | os.PathLike | None = None,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Store a cost overestimate (JSON, read back by :func:`load_overestimate`).

    Returns the file written (default: :func:`user_store_path`); see
    :func:`load_overestimate` for an example.
    """
    if not (
        isinstance(overestimate, (int, float)) and math.isfinite(overestimate) and overestimate >= 0
    ):
        raise ValueError(f"overestimate must be a finite number >= 0, got {overestimate!r}")
    p = Path(path) if path is not None else user_store_path()
    data = _read_store(p)
    entry = {
        "overestimate": float(overestimate),
        "min_vp_ratio": int(min_vp_ratio),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if extra:
        entry.update(extra)
    data[overestimate_key(machine, name=name, clock=clock)] = entry
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".tmp")
    with open(tmp, "w") as f:
        json.dump(data, f, indent=2, sort_keys=True)
    os.replace(tmp, p)
    return p


@dataclass
class Calibration:
    """Result of :func:`calibrate`."""

    overestimate: float
    costs: list[float | None]
    margin: float
    clock: str
    key: str
    min_vp_ratio: int
    path: Path | None = None


def calibrate(
    workloads: Iterable[Any],
    body: Callable[[Any, Any], None] | None = None,
    *,
    machine: Any,
    clock: str = "model",
    name: str = "scan-conversion",
    task_cost: float = 1.0,
    margin: float = 2.0,
    store: bool = True,
    path: str | os.PathLike | None = None,
) -> Calibration:
    """Calibrate the cost overestimate by the procedure of seed 000, section 2.1.

    The load-balanced loop is run on every workload with balancing forced whenever it
    saves anything (overestimate 0); for each run the longest information gathering time
    plus the longest redistribution time is divided by the shortest solution time. The
    largest of these, plus the constant ``margin`` (iterations), is the overestimate.

    Parameters
    ----------
    workloads : iterable of 1-D integer arrays
        Calibration data sets; at least one must be unbalanced enough to redistribute.
    body : callable, optional
        The solution phase, as for :func:`run_loop` (None: no work besides ``task_cost``).
    machine : simd.Machine
    clock : str
        "model" or "wall".
    name, task_cost
        As for :func:`run_loop`; the calibration is stored under ``name``.
    margin : float
        Constant added to the largest measured cost (iterations).
    store : bool
        Write the result with :func:`store_overestimate` (to ``path`` or the user file).

    Returns
    -------
    Calibration

    Examples
    --------
    >>> import os, tempfile
    >>> from simd import Machine
    >>> m, path = Machine(pes=8, backend="numpy"), os.path.join(tempfile.mkdtemp(), "o.json")
    >>> cal = calibrate([[200] + [0] * 63, [3] * 64], machine=m, task_cost=100,
    ...                 name="demo", path=path)
    >>> cal.costs[1] is None       # the balanced workload never redistributes
    True
    >>> cal.overestimate == cal.costs[0] + 2.0 == load_overestimate(m, name="demo", path=path)
    True
    """
    _check_clock(clock)
    if not (math.isfinite(margin) and margin >= 0):
        raise ValueError(f"margin must be a finite number >= 0, got {margin!r}")
    costs: list[float | None] = []
    min_vpr: int | None = None
    for workload in workloads:
        res = run_loop(
            workload,
            body,
            machine=machine,
            form="cost-effective",
            overestimate=0.0,
            clock=clock,
            name=name,
            task_cost=task_cost,
            prune=False,
            warn=False,
        )
        cost = res.cost_in_iterations(clock)
        costs.append(cost)
        if cost is not None:
            vpr = machine.cost.vp_ratio(len(workload))
            min_vpr = vpr if min_vpr is None else min(min_vpr, vpr)
    measured = [c for c in costs if c is not None]
    if not measured:
        raise ValueError(
            "calibration needs at least one workload that the loop redistributes (an "
            "unbalanced one, with idle processors); none of the workloads given did"
        )
    over = float(max(measured) + margin)
    key = overestimate_key(machine, name=name, clock=clock)
    stored = None
    if store:
        stored = store_overestimate(
            machine,
            over,
            name=name,
            clock=clock,
            min_vp_ratio=min_vpr or 1,
            path=path,
            extra={
                "max_cost": float(max(measured)),
                "margin": float(margin),
                "datasets": len(costs),
            },
        )
    return Calibration(over, costs, float(margin), clock, key, min_vpr or 1, stored)


# --------------------------------------------------------------------------------------
# The loop
# --------------------------------------------------------------------------------------


def _progress_callback(progress: Any, total: int) -> tuple[Callable[[int], None], Callable]:
    """Normalise ``progress`` into (advance(done_now), close())."""
    if progress is None or progress is False:
        return (lambda done: None), (lambda: None)
    if progress is True:
        try:
            from tqdm.auto import tqdm
        except ImportError:  # pragma: no cover - tqdm is a declared extra
            return (lambda done: None), (lambda: None)
        bar = tqdm(total=total, unit="task", leave=False)
        return bar.update, bar.close
    if callable(progress):
        state = {"done": 0}

        def advance(done: int) -> None:
            state["done"] += done
            progress(state["done"], total)

        return advance, (lambda: None)
    raise TypeError("progress must be None, True or a callable(done, total)")


def _dry_run_costs(machine: Any, n: int) -> tuple[float, float, float, float]:
    """Information gathering and redistribution costs on a scratch machine, for ``n`` VPs.

    Returns (info cycles, redis cycles, info wall, redis wall); the wall times are the
    smaller of two runs, so that one-time start-up costs do not count.
    """
    scratch = type(machine)(pes=machine.pes, backend=machine.backend, cost=machine.cost)
    xp = scratch.xp
    best = [math.inf, math.inf, math.inf, math.inf]
    for _ in range(2):
        w = xp.zeros(n, dtype=np.int64)
        w[0] = max(n, 1)
        pi = (w > 0).astype(np.int64)
        pd = xp.arange(n, dtype=np.int64)
        with _Timer(scratch) as t_info:
            info = gather_information(w, machine=scratch)
        with _Timer(scratch) as t_red:
            redistribute(w, pi, pd, info, machine=scratch)
        best = [
            min(best[0], t_info.cycles),
            min(best[1], t_red.cycles),
            min(best[2], t_info.wall),
            min(best[3], t_red.wall),
        ]
    return best[0], best[1], best[2], best[3]


def run_loop(
    workload: Any,
    body: Callable[[Any, Any], None] | None,
    *,
    machine: Any,
    form: str = "cost-effective",
    overestimate: float | None = None,
    clock: str = "model",
    name: str = "scan-conversion",
    task_cost: float = 1.0,
    progress: Any = None,
    prune: bool = True,
    chunk: int | None = None,
    warn: bool = True,
) -> LoopResult:
    """Run every task of ``workload`` through ``body`` in one of three loop forms.

    Parameters
    ----------
    workload : 1-D integer array (NumPy, CuPy or sequence)
        Tasks per problem datum; datum ``i`` has tasks ``0 .. workload[i] - 1``.
    body : callable(items, tasks) or None
        The solution phase: called once per iteration with two equal-length int64 backend
        arrays, the datum and the 0-based task index of every task run in that iteration
        (live tasks only, packed). It runs inside ``machine.vp_set(slots)`` so its own
        instructions are charged for the whole VP set (``len(workload)``, or the chunk for
        ``expand``). The order of tasks within a call is unspecified.
    machine : simd.Machine
    form : str
        "original" (Figure 1), "cost-effective" (Figure 2) or "expand".
    overestimate : float, optional
        Cost overestimate in iterations for the decision phase; None: a stored calibration
        for this loop and machine, else an online estimate (module docstring).
    clock : str
        "model" (machine cycles) or "wall" (seconds on this host): the clock the costs are
        measured with for the decision and the warning.
    name : str
        Name of the loop; the machine phase enclosing the loop's phases and the key of
        stored calibrations.
    task_cost : float
        Model cycles per VP per iteration for the body's own elementwise work, charged as
        ``machine.charge("elementwise", slots, ops=task_cost)``.
    progress : None, True or callable(done, total)
        Progress report in tasks done (True: a tqdm bar).
    prune : bool
        Skip information gathering once no decision can be positive (module docstring).
    chunk : int, optional
        Tasks per step of the expand form (default 4 Mi).
    warn : bool
        Issue :class:`CostOverestimateWarning` when a measured cost exceeds the
        overestimate.

    Returns
    -------
    LoopResult

    Raises
    ------
    ValueError
        Bad form, clock, workload (negative, fractional, not 1-D), overestimate or chunk.
    TypeError
        Non-integer workload dtype or a body that is not callable.

    Examples
    --------
    >>> from simd import Machine
    >>> seen = []
    >>> res = run_loop([3, 0, 1], lambda i, t: seen.extend(zip(i.tolist(), t.tolist())),
    ...                machine=Machine(pes=4, backend="numpy"), form="original")
    >>> sorted(seen), res.iterations
    ([(0, 0), (0, 1), (0, 2), (2, 0)], 3)
    """
    if form not in FORMS:
        raise ValueError(f"form must be one of {', '.join(FORMS)}; got {form!r}")
    _check_clock(clock)
    if body is not None and not callable(body):
        raise TypeError("body must be a callable body(items, tasks) or None")
    if overestimate is not None:
        if isinstance(overestimate, bool) or not isinstance(overestimate, (int, float)):
            raise TypeError(f"overestimate must be a number, got {overestimate!r}")
        if not (math.isfinite(overestimate) and overestimate >= 0):
            raise ValueError(f"overestimate must be a finite number >= 0, got {overestimate}")
    if not (isinstance(task_cost, (int, float)) and math.isfinite(task_cost) and task_cost >= 0):
        raise ValueError(f"task_cost must be a finite number >= 0, got {task_cost!r}")
    if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1):
        raise ValueError(f"chunk must be a positive integer, got {chunk!r}")

    w = _validate_workload(workload, machine)
    n = int(w.size)
    total_tasks = int(w.sum()) if n else 0
    max_w = int(w.max()) if n else 0
    mean_w = float(total_tasks / n) if n else 0.0
    call = body if body is not None else (lambda items, tasks: None)
    advance, close = _progress_callback(progress, total_tasks)

    result = LoopResult(
        form=form,
        name=name,
        iterations=0,
        max_workload=max_w,
        mean_workload=mean_w,
        total_tasks=total_tasks,
        decisions=0,
        stats={},
        cycles=0.0,
        wall=0.0,
        clock=clock,
        vps=n,
    )
    try:
        with _Timer(machine) as whole, machine.phase(name):
            if form == "original":
                _original(w, call, machine, task_cost, result, advance)
            elif form == "expand":
                _expand(w, call, machine, task_cost, result, advance, chunk or _DEFAULT_CHUNK)
            else:
                _cost_effective(
                    w, call, machine, task_cost, result, advance, overestimate, clock, prune, warn
                )
    finally:
        close()
    result.cycles = whole.cycles
    result.wall = whole.wall
    return result


def _timing(result: LoopResult, phase: str) -> PhaseTiming:
    return result.stats.setdefault(phase, PhaseTiming())


def _solution_step(machine, call, items, tasks, slots, task_cost, ops) -> None:
    """Run the body on the live tasks, charged for the whole VP set."""
    with machine.vp_set(slots):
        call(items, tasks)
    machine.charge("elementwise", slots, ops=ops + task_cost)


def _original(w, call, machine, task_cost, result, advance) -> None:
    """Figure 1: ``forloop index = 1, MAX(workload) / WHERE (index <= workload)``."""
    m = machine
    xp = m.xp
    n = int(w.size)
    if n == 0:
        return
    soln = _timing(result, PHASE_SOLUTION)
    with m.phase(PHASE_SOLUTION):
        iterations = int(m.reduce(w, "max"))  # the loop bound, MAX(workload)
    # Live processors only ever drop out, so the packed list is filtered, never rebuilt.
    live = xp.nonzero(w > 0)[0]
    for index in range(iterations):
        with _Timer(m) as t, m.phase(PHASE_SOLUTION):
            tasks = xp.full(live.size, index, dtype=np.int64)
            _solution_step(m, call, live, tasks, n, task_cost, _ORIGINAL_OPS)
            done = int(live.size)
            live = live[w[live] > index + 1]
        soln._add(t.cycles, t.wall)
        result.iterations += 1
        advance(done)


def _expand(w, call, machine, task_cost, result, advance, chunk: int) -> None:
    """All tasks at once: add-scan of the workload + load-balancing search per chunk."""
    m = machine
    xp = m.xp
    n = int(w.size)
    if n == 0:
        return
    expansion = _timing(result, PHASE_EXPANSION)
    soln = _timing(result, PHASE_SOLUTION)
    with _Timer(m) as t, m.phase(PHASE_EXPANSION):
        offsets = m.scan(w, "add", exclusive=True, initial=0)
        total = int(m.reduce(w, "add"))
        ends = offsets + w
        datum = xp.arange(n, dtype=np.int64)
        m.charge("elementwise", n, ops=1)
    expansion._add(t.cycles, t.wall)
    for start in range(0, total, chunk):
        stop = min(start + chunk, total)
        length = stop - start
        with _Timer(m) as t, m.phase(PHASE_EXPANSION):
            # Load-balancing search: every datum with tasks in [start, stop) marks its
            # first task in the chunk with its number; an inclusive max-scan then carries
            # each datum's number over its tasks (data are numbered in offset order).
            overlaps = (w > 0) & (offsets < stop) & (ends > start)
            dest = xp.clip(offsets - start, 0, length - 1)
            m.charge("elementwise", n, ops=6)
            marks = m.send(datum, dest, length, combine="max", mask=overlaps, fill=-1)
            items = m.scan(marks, "max")
            first = m.get(offsets, items)
            tasks = xp.arange(start, stop, dtype=np.int64) - first
            m.charge("elementwise", length, ops=1)
        expansion._add(t.cycles, t.wall)
        with _Timer(m) as t, m.phase(PHASE_SOLUTION):
            _solution_step(m, call, items, tasks, length, task_cost, 0)
        soln._add(t.cycles, t.wall)
        result.iterations += 1
        advance(length)


class _Overestimate:
    """The overestimate in use: given, stored, or online (module docstring)."""

    def __init__(self, machine, n, task_cost, overestimate, clock, name) -> None:
        self.clock = clock
        self.value: float | None = None
        self.source = "given"
        if overestimate is not None:
            self.value = float(overestimate)
            return
        stored = load_overestimate(machine, name=name, clock=clock, n=n)
        if stored is not None:
            self.value = stored
            self.source = "stored"
            return
        self.source = "online"
        ic, rc, iw, rw = _dry_run_costs(machine, n)
        self.max_info = ic if clock == "model" else iw
        self.max_redis = rc if clock == "model" else rw
        # No decision before one solution iteration has been measured.
        self.min_soln = math.inf
        self._update()

    def _update(self) -> None:
        if self.source != "online":
            return
        if not math.isfinite(self.min_soln) or self.min_soln <= 0:
            self.value = None  # cannot decide before the first solution iteration
        else:
            cost = (self.max_info + self.max_redis) / self.min_soln
            self.value = _ONLINE_FACTOR[self.clock] * cost + _ONLINE_MARGIN

    def observe(self, info: float | None, redis: float | None, soln: float | None) -> None:
        if self.source != "online":
            return
        if info is not None:
            self.max_info = max(self.max_info, info)
        if redis is not None:
            self.max_redis = max(self.max_redis, redis)
        if soln is not None and soln > 0:
            self.min_soln = min(self.min_soln, soln)
        self._update()


def _cost_effective(
    w, call, machine, task_cost, result, advance, overestimate, clock, prune, warn
) -> None:
    """Figure 2: information gathering, decision, redistribution, solution."""
    m = machine
    xp = m.xp
    n = int(w.size)
    if n == 0:
        return
    est = _Overestimate(m, n, task_cost, overestimate, clock, result.name)
    result.overestimate_source = est.source
    info_t = _timing(result, PHASE_INFORMATION)
    dec_t = _timing(result, PHASE_DECISION)
    red_t = _timing(result, PHASE_REDISTRIBUTION)
    soln_t = _timing(result, PHASE_SOLUTION)

    w = w.copy()
    parallel_index = (w > 0).astype(np.int64)  # 1-based task index, 0 on idle processors
    problem_data = xp.arange(n, dtype=np.int64)  # the datum held by each processor
    live = xp.nonzero(w > 0)[0]
    remaining: int | None = None  # MAX(workload), known to the front end
    # Until the first redistribution every processor works on the same task index, so the
    # loop runs as Figure 1 with a front-end index: `workload` and `parallel_index` are
    # implicit (W - index, index + 1) and materialised at the first redistribution.
    redistributed = False
    while remaining is None or remaining > 0:
        info_cycles = info_wall = 0.0
        ran_info = False
        info_time = redis_time = None
        balanced = False
        info = None
        if prune and remaining is None:
            # The first step of the gathering alone, MAX(workload) (the loop bound of
            # Figure 1), tells whether any decision can be positive.
            with _Timer(m) as t, m.phase(PHASE_INFORMATION):
                remaining = int(m.reduce(w, "max"))
            info_cycles, info_wall, ran_info = t.cycles, t.wall, True
            if remaining == 0:
                info_t._add(info_cycles, info_wall)
                break
        # Savings are at most MAX(workload) - 1: gather only while that beats the cost.
        gather = not prune or (est.value is not None and remaining - 1 > est.value)
        if gather:
            with _Timer(m) as t, m.phase(PHASE_INFORMATION):
                if not redistributed and result.iterations:
                    m.charge("elementwise", n, ops=1)  # workload = W - index
                info = gather_information(
                    w, machine=m, max_workload=remaining, threshold=est.value if prune else None
                )
            info_cycles += t.cycles
            info_wall += t.wall
            ran_info = True
            remaining = info.max_workload
        if ran_info:
            info_t._add(info_cycles, info_wall)
            info_time = info_cycles if clock == "model" else info_wall
        if info is not None:
            if remaining == 0:
                break
            with _Timer(m) as t, m.phase(PHASE_DECISION):
                threshold = est.value
                balanced = (
                    threshold is not None and info.complete and decide(info.savings, threshold)
                )
            dec_t._add(t.cycles, t.wall)
            if balanced:
                with _Timer(m) as t, m.phase(PHASE_REDISTRIBUTION):
                    if not redistributed:
                        m.charge("elementwise", n, ops=2)  # materialise parallel_index
                    redistributed = True
                    red = redistribute(w, parallel_index, problem_data, info, machine=m)
                    w, parallel_index, problem_data = (
                        red.workload,
                        red.parallel_index,
                        red.problem_data,
                    )
                    live = xp.nonzero(w > 0)[0]
                red_t._add(t.cycles, t.wall)
                redis_time = t.value(clock)
                result.decisions += 1
                before, remaining = remaining, info.max_new_workload
        with _Timer(m) as t, m.phase(PHASE_SOLUTION):
            items = problem_data[live]
            tasks = parallel_index[live] - 1
            ops = _BALANCED_OPS if redistributed else _ORIGINAL_OPS
            _solution_step(m, call, items, tasks, n, task_cost, ops)
            w[live] -= 1
            parallel_index[live] += 1
            done = int(live.size)
            live = live[w[live] > 0]
        soln_t._add(t.cycles, t.wall)
        soln_time = t.value(clock)
        result.iterations += 1
        advance(done)
        remaining -= 1
        if balanced:
            measured = (info_time + redis_time) / soln_time if soln_time > 0 else math.inf
            result.events.append(
                BalanceEvent(
                    iteration=result.iterations,
                    savings=info.savings,
                    overestimate=threshold,
                    measured_cost=measured,
                    max_before=before,
                    max_after=info.max_new_workload,
                )
            )
            if warn and measured > threshold:
                warnings.warn(
                    f"{result.name}: measured balancing cost {measured:.2f} iterations "
                    f"({clock} clock) exceeds the cost overestimate {threshold:.2f} at "
                    f"iteration {result.iterations}; recalibrate (calibrate()) or pass a "
                    "larger overestimate",
                    CostOverestimateWarning,
                    stacklevel=3,  # the caller of run_loop
                )
        est.observe(info_time, redis_time, soln_time)
    # Processors whose work finished keep a stale parallel index; it is never read.
    result.overestimate = est.value
