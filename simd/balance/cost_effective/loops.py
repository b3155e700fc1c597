"""The balanced loop in its three forms: original (Figure 1), cost-effective (Figure 2),
expand (all tasks at once through a load-balancing search).

Every form runs the caller's solution phase (``body``) on the same (datum, task) pairs and
charges the model clock as the emulated machine would: all the VPs of the VP set step in
every iteration, the idle ones masked off.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from simd.balance.cost_effective.estimate import Overestimate
from simd.balance.cost_effective.phases import decide, gather_information, redistribute_state
from simd.balance.cost_effective.records import (
    FORMS,
    PHASE_DECISION,
    PHASE_EXPANSION,
    PHASE_INFORMATION,
    PHASE_REDISTRIBUTION,
    PHASE_SOLUTION,
    BalanceEvent,
    CostOverestimateWarning,
    LoopResult,
    PhaseTiming,
    check_clock,
)
from simd.balance.cost_effective.search import Expansion
from simd.machine import min_into

__all__ = ["run_loop"]

# Elementwise operations per VP charged per iteration by the loops themselves.
#: Figure 1: the WHERE test ``index <= workload``.
ORIGINAL_OPS = 1
#: Figure 2: the WHERE test, ``workload - 1`` and ``parallel_index + 1``.
BALANCED_OPS = 3
#: Figure 2 before the first redistribution: ``workload = W - index`` for the gathering.
IMPLICIT_WORKLOAD_OPS = 1
#: Figure 2 at the first redistribution: materialising ``workload`` and ``parallel_index``.
MATERIALISE_OPS = 2

#: Default chunk of the expand form (tasks per step).
DEFAULT_CHUNK = 1 << 22


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
    workload_stats: tuple[int, int, int] | None = None,
) -> LoopResult:
    """Run every task of ``workload`` through ``body`` in one of three loop forms.

    Parameters
    ----------
    workload : 1-D integer array (NumPy, CuPy or sequence)
        Tasks per problem datum; datum ``i`` has tasks ``0 .. workload[i] - 1``.
    body : callable(items, tasks) or None
        The solution phase: called once per iteration with two equal-length integer backend
        arrays, the datum and the 0-based task index of every task run in that iteration
        (live tasks only, packed): int32 where the number of data and the total of tasks
        are below 2**31 (half the bytes a task at the loop's peak), else int64. It runs
        inside ``machine.vp_set(slots)`` so its own instructions are charged for the whole
        VP set (``len(workload)``, or the chunk for ``expand``). The order of tasks within
        a call is unspecified.
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
    workload_stats : (total, max, min) of ints, optional
        The workload's sum, maximum and minimum, when the caller already knows them (read
        back together with other figures): run_loop then reads nothing back at start-up
        (on a GPU, one host sync fewer). They are trusted; the dtype and shape checks
        still run. The model clock is charged the same either way.

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
    check_clock(clock)
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

    w, total_tasks, max_w = _validate_workload(workload, machine, workload_stats)
    n = int(w.size)
    call = body if body is not None else (lambda items, tasks: None)
    advance, close = _progress_callback(progress, total_tasks)
    result = LoopResult(
        form=form,
        name=name,
        iterations=0,
        max_workload=max_w,
        mean_workload=float(total_tasks / n) if n else 0.0,
        total_tasks=total_tasks,
        decisions=0,
        stats={},
        clock=clock,
        vps=n,
    )
    loop = _Loop(machine, call, task_cost, result, advance)
    try:
        with machine.phase(name) as result.record:
            if n == 0:
                pass
            elif form == "original":
                loop.original(w, max_w)
            elif form == "expand":
                loop.expand(w, chunk or DEFAULT_CHUNK, total_tasks)
            else:
                estimate = Overestimate(machine, n, overestimate, clock, name)
                _CostEffective(loop, w, max_w, estimate, prune=prune, warn=warn).run()
    finally:
        close()
    return result


class _Loop:
    """What every form shares: the machine, the body, the result being filled in."""

    def __init__(self, machine: Any, call: Callable, task_cost: float, result: LoopResult, advance):
        self.m = machine
        self.call = call
        self.task_cost = task_cost
        self.result = result
        self.advance = advance

    def timing(self, phase: str) -> PhaseTiming:
        """The per-execution records of ``phase`` in this loop."""
        return self.result.stats.setdefault(phase, PhaseTiming())

    def solve(self, items: Any, tasks: Any, slots: int, ops: float, live: Any = None) -> None:
        """Run the body on the live tasks, charged for the whole VP set of ``slots``
        (``live``: their positions in it, for cost models that charge the busiest node)."""
        with self.m.vp_set(slots, live=live):
            self.call(items, tasks)
        self.m.charge("elementwise", slots, ops=ops + self.task_cost)

    def original(self, w: Any, max_w: int) -> None:
        """Figure 1: ``forloop index = 1, MAX(workload) / WHERE (index <= workload)``."""
        m, xp = self.m, self.m.xp
        n = int(w.size)
        soln = self.timing(PHASE_SOLUTION)
        with m.phase(PHASE_SOLUTION):
            # The loop bound, MAX(workload): the front end read it with the workload's
            # sum (run_loop), so the machine's reduction is not read back again.
            m.reduce(w, "max")
        iterations = max_w
        small = n + self.result.total_tasks < 2**31  # every datum and task number fits
        live = _LiveSet(m, w, max_w, np.int32 if small else np.int64)
        for index in range(iterations):
            with m.phase(PHASE_SOLUTION) as record:
                items, done = live.step()
                tasks = xp.full(done, index, dtype=items.dtype)
                self.solve(items, tasks, n, ORIGINAL_OPS, live=items)
                live.drop(w, index + 1)
            soln.records.append(record)
            self.result.iterations += 1
            self.advance(done)

    def expand(self, w: Any, chunk: int, total: int) -> None:
        """All tasks at once: an add-scan of the workload, a load-balancing search per chunk."""
        m = self.m
        expansion = self.timing(PHASE_EXPANSION)
        soln = self.timing(PHASE_SOLUTION)
        with m.phase(PHASE_EXPANSION) as record:
            search = Expansion(w, machine=m, total=total)
        expansion.records.append(record)
        for start in range(0, total, chunk):
            stop = min(start + chunk, total)
            with m.phase(PHASE_EXPANSION) as record:
                items, tasks = search.tasks(start, stop)
            expansion.records.append(record)
            with m.phase(PHASE_SOLUTION) as record:
                self.solve(items, tasks, stop - start, 0)
            soln.records.append(record)
            self.result.iterations += 1
            self.advance(stop - start)


class _CostEffective:
    """Figure 2: information gathering, decision, redistribution, solution, per iteration.

    Until the first redistribution every processor works on the same task index, so the
    loop runs as Figure 1 with a front-end index: ``workload`` and ``parallel_index`` are
    implicit (W - index, index + 1) and materialised at the first redistribution, and so
    is ``problem_data`` (each processor's own number). Until then the loop holds nothing
    per processor but the live list (and, through a gathering, the workload it reads).
    """

    def __init__(
        self, loop: _Loop, w: Any, max_w: int, estimate: Overestimate, *, prune: bool, warn: bool
    ):
        xp = loop.m.xp
        self.loop, self.m, self.estimate = loop, loop.m, estimate
        self.prune, self.warn = prune, warn
        self.clock = loop.result.clock
        self.n = int(w.size)
        # The loop's state in int32 where every value fits (workloads, their sum, 1-based
        # task indices, data numbers): half the bytes a processor at the redistribution's
        # peak; the gathering's sums and products are made in 64 bits either way.
        small = self.n + loop.result.total_tasks < 2**31
        self.index = index = np.int32 if small else np.int64
        self.xp = xp
        self.W = w  # the workload as given: read, never written
        # Materialised at the first redistribution (workload: also for each gathering
        # before it, and dropped by the solution that follows).
        self.w = self.parallel_index = self.problem_data = None
        self.max_w = max_w  # read by run_loop with the workload's sum
        self.live = _LiveSet(self.m, w, max_w, index)
        self.remaining: int | None = None  # MAX(workload), known to the front end
        self.redistributed = False
        loop.result.overestimate_source = estimate.source
        # Table 4's phases in the paper's order, even where one never runs.
        for phase in (PHASE_INFORMATION, PHASE_DECISION, PHASE_REDISTRIBUTION, PHASE_SOLUTION):
            loop.timing(phase)

    def run(self) -> None:
        while self.remaining is None or self.remaining > 0:
            gathering, info = self.gather()
            if self.remaining == 0:
                break
            redistribution, event = self.decide_and_redistribute(info) if info else (None, None)
            info = None  # a rejected gathering's arrays go now, not in the next gathering
            solution = self.solve()
            self.remaining -= 1
            info_t, redis_t, soln_t = map(self._time, (gathering, redistribution, solution))
            if event is not None:
                self.record_event(event, info_t + redis_t, soln_t)
            self.estimate.observe(info_t, redis_t, soln_t)
        # Processors whose work finished keep a stale parallel index; it is never read.
        self.loop.result.overestimate = self.estimate.value

    def _time(self, record: Any) -> float | None:
        if record is None:
            return None
        return record.cycles if self.clock == "model" else record.wall

    def worth_gathering(self) -> bool:
        """Savings are at most MAX(workload) - 1: gather only while that beats the cost."""
        value = self.estimate.value
        return not self.prune or (value is not None and self.remaining - 1 > value)

    def gather(self):
        """The information gathering phase; returns its record (or None) and the result."""
        m = self.m
        first = self.prune and self.remaining is None
        if not first and not self.worth_gathering():
            return None, None
        info = None
        with m.phase(PHASE_INFORMATION) as record:
            if first:
                # MAX(workload) alone (Figure 1's loop bound) tells whether any decision
                # can be positive.
                m.reduce(self.W, "max")  # read already, with the workload's sum
                self.remaining = self.max_w
            if self.remaining != 0 and self.worth_gathering():
                if not self.redistributed and self.loop.result.iterations:
                    m.charge("elementwise", self.n, ops=IMPLICIT_WORKLOAD_OPS)
                threshold = self.estimate.value if self.prune else None
                info = gather_information(
                    self.workload(), machine=m, max_workload=self.remaining, threshold=threshold
                )
                self.remaining = info.max_workload
        self.loop.timing(PHASE_INFORMATION).records.append(record)
        return record, info

    def workload(self) -> Any:
        """The workload left on every processor: until the first redistribution made from
        the front-end index, ``MAX(W - index, 0)``, in the loop's integers."""
        if self.w is None:
            w = self.xp.subtract(self.W, self.loop.result.iterations, dtype=self.index)
            self.w = self.xp.maximum(w, 0, out=w)
        return self.w

    def decide_and_redistribute(self, info: Any):
        """The decision and, when balancing pays, the redistribution.

        Returns the redistribution's record and its :class:`BalanceEvent`, or two Nones.
        """
        m, loop, result = self.m, self.loop, self.loop.result
        with m.phase(PHASE_DECISION) as record:
            threshold = self.estimate.value
            balanced = threshold is not None and info.complete and decide(info.savings, threshold)
        loop.timing(PHASE_DECISION).records.append(record)
        if not balanced:
            return None, None
        with m.phase(PHASE_REDISTRIBUTION) as record:
            if not self.redistributed:
                m.charge("elementwise", self.n, ops=MATERIALISE_OPS)
                self.materialise()
            self.redistributed = True
            # the state handed over: each old array goes once sent (not held to the end)
            state = [self.w, self.parallel_index, self.problem_data]
            self.w = self.parallel_index = self.problem_data = None
            self.live = None  # the live list is made anew from the new workload
            red = redistribute_state(state, info, machine=m, steps=False)
            self.w, self.parallel_index = red.workload, red.parallel_index
            self.problem_data = red.problem_data
            self.live = _LiveSet(m, self.w, info.max_new_workload, self.w.dtype)
        loop.timing(PHASE_REDISTRIBUTION).records.append(record)
        result.decisions += 1
        event = BalanceEvent(
            iteration=result.iterations + 1,
            savings=info.savings,
            overestimate=threshold,
            measured_cost=math.nan,  # known once the next solution iteration is timed
            max_before=self.remaining,
            max_after=info.max_new_workload,
        )
        self.remaining = info.max_new_workload
        return record, event

    def materialise(self) -> None:
        """The state before the first redistribution, from the front-end index ``k``:
        workload ``MAX(W - k, 0)``, 1-based task index ``k + 1`` where work is left (0
        elsewhere: the processors that finished held a stale index no step reads, and
        no larger one, so the redistribution's maximum of it is the same), and every
        processor's own datum."""
        xp, index = self.xp, self.index
        w = self.workload()
        k = self.loop.result.iterations
        self.parallel_index = xp.where(w > 0, index(k + 1), index(0))
        self.problem_data = xp.arange(self.n, dtype=index)

    def solve(self):
        """One iteration of the solution phase on every processor with work left."""
        m, loop = self.m, self.loop
        with m.phase(PHASE_SOLUTION) as record:
            live, done = self.live.step()
            if self.redistributed:
                items = self.problem_data[live]
                tasks = self.parallel_index[live]
                tasks -= 1
                loop.solve(items, tasks, self.n, BALANCED_OPS, live=live)
                del items, tasks
                self.w[live] -= 1
                self.parallel_index[live] += 1
                self.live.drop(self.w, 0)
            else:
                # Figure 1 with the front-end index k: every live processor's own datum,
                # task k; the gathering's workload goes before the body runs
                self.w = None
                k = loop.result.iterations
                tasks = self.xp.full(done, k, dtype=live.dtype)
                loop.solve(live, tasks, self.n, ORIGINAL_OPS, live=live)
                del tasks
                self.live.drop(self.W, k + 1)
        loop.timing(PHASE_SOLUTION).records.append(record)
        loop.result.iterations += 1
        loop.advance(done)
        return record

    def record_event(self, event: BalanceEvent, spent: float, soln_time: float) -> None:
        """Keep a redistribution's measured cost; warn when it exceeded the estimate."""
        event.measured_cost = spent / soln_time if soln_time > 0 else math.inf
        result = self.loop.result
        result.events.append(event)
        if self.warn and event.measured_cost > event.overestimate:
            warnings.warn(
                f"{result.name}: measured balancing cost {event.measured_cost:.2f} iterations "
                f"({self.clock} clock) exceeds the cost overestimate {event.overestimate:.2f} "
                f"at iteration {result.iterations}; recalibrate (calibrate()) or pass a "
                "larger overestimate",
                CostOverestimateWarning,
                stacklevel=4,  # the caller of run_loop
            )


class _LiveSet:
    """The processors with work left, in index order, while every live one does one task
    per iteration (Figure 1's ``WHERE (index <= workload)``).

    On NumPy the packed list is filtered after each iteration. On a GPU that filter is a
    host sync per iteration (a data-dependent size); instead the processors are sorted
    once, heaviest first, and the number still live at every iteration (the processors
    with a workload above it) is read back once, as one table: iteration ``k`` takes the
    first ``count[k]`` of them, back in index order (a sort, no sync).
    """

    def __init__(self, machine: Any, w: Any, max_w: int, index: Any = np.int64) -> None:
        xp = self.xp = machine.xp
        self.k = 0
        self.on_device = machine.backend == "cupy"
        n = int(w.size)
        if not self.on_device:
            # positions in ``index`` (the loop's int32 where every number fits): the list
            # is held through every iteration
            self.live = xp.nonzero(w > 0)[0].astype(index, copy=False)
            return
        # Heaviest first: the ascending order reversed (a view; iteration k's count[k]
        # heaviest are the processors with work above k however ties fall), so no
        # negated copy of the workload; kept in ``index`` (half of argsort's int64 where
        # it fits), as is the sorted live list made from it every iteration.
        self.order = xp.argsort(w)[::-1].astype(index)
        below = xp.searchsorted(xp.sort(w), xp.arange(max_w, dtype=np.int64), side="right")
        self.counts = machine.asnumpy(n - below).tolist() if max_w > 0 else []

    def step(self) -> tuple[Any, int]:
        """The live processors of this iteration (ascending) and how many there are."""
        if not self.on_device:
            return self.live, int(self.live.size)
        count = self.counts[self.k] if self.k < len(self.counts) else 0
        return self.xp.sort(self.order[:count]), count

    def drop(self, w: Any, above: int) -> None:
        """End the iteration: keep the processors whose ``w`` is still above ``above``
        (NumPy: filtered; GPU: known from the table)."""
        if not self.on_device:
            self.live = self.live[w[self.live] > above]
        self.k += 1


def _validate_workload(
    workload: Any, machine: Any, known: tuple[int, int, int] | None = None
) -> tuple[Any, int, int]:
    """The workload as an int64 backend array (int32 ones as they are: no copy; the forms
    widen what could overflow) with its sum and maximum, or a clear error.

    Sum, maximum and minimum (the check) are read back together: one host sync; none when
    the caller passes them (``known``: total, max, min).
    """
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
    out = machine.asarray(arr, dtype=np.int32 if arr.dtype == np.int32 else np.int64)
    if not out.size:
        return out, 0, 0
    if known is not None:
        total, high, low = (int(v) for v in known)
    elif machine.backend == "cupy":  # three reductions into one buffer, one read back
        buf = xp.empty(3, dtype=np.int64)
        xp.sum(out, out=buf[0:1].reshape(()))
        xp.max(out, out=buf[1:2].reshape(()))
        min_into(xp, out, buf[2:3].reshape(()))
        total, high, low = machine.asnumpy(buf).tolist()
    else:
        total, high, low = int(out.sum()), int(out.max()), int(xp.min(out))
    if low < 0:
        raise ValueError("workload must be non-negative (a number of tasks per datum)")
    return out, total, high


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
