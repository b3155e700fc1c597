"""The cost-effective form of the balanced loop (Ahrens & Hansen 1995, Figure 2).

Every iteration runs the information gathering, the decision and, when balancing pays, the
redistribution (:mod:`simd.balance.cost_effective.phases`), then the solution phase on
every processor with work left; :func:`cost_effective` is the form
:func:`~simd.balance.cost_effective.run_loop` runs.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from simd.balance.cost_effective.estimate import Overestimate
from simd.balance.cost_effective.forms import ORIGINAL_OPS, LiveSet, LoopState
from simd.balance.cost_effective.phases import decide, gather_information, redistribute_state
from simd.balance.cost_effective.records import (
    PHASE_DECISION,
    PHASE_INFORMATION,
    PHASE_REDISTRIBUTION,
    PHASE_SOLUTION,
    BalanceEvent,
    CostOverestimateWarning,
)

__all__ = ["cost_effective"]

# Elementwise operations per VP charged per iteration by the loop itself.
#: Figure 2: the WHERE test, ``workload - 1`` and ``parallel_index + 1``.
BALANCED_OPS = 3
#: Figure 2 before the first redistribution: ``workload = W - index`` for the gathering.
IMPLICIT_WORKLOAD_OPS = 1
#: Figure 2 at the first redistribution: materialising ``workload`` and ``parallel_index``.
MATERIALISE_OPS = 2


def cost_effective(loop: LoopState, w: Any) -> None:
    """Figure 2: information gathering, decision, redistribution, solution, per iteration,
    with the cost overestimate of ``loop.overestimate`` (None: stored, else online)."""
    result = loop.result
    n = int(w.size)
    estimate = Overestimate(loop.machine, n, loop.overestimate, result.clock, result.name)
    _CostEffective(loop, w, result.max_workload, estimate, prune=loop.prune, warn=loop.warn).run()


class _CostEffective:
    """Figure 2: information gathering, decision, redistribution, solution, per iteration.

    Until the first redistribution every processor works on the same task index, so the
    loop runs as Figure 1 with a front-end index: ``workload`` and ``parallel_index`` are
    implicit (W - index, index + 1) and materialised at the first redistribution, and so
    is ``problem_data`` (each processor's own number). Until then the loop holds nothing
    per processor but the live list (and, through a gathering, the workload it reads).
    """

    def __init__(
        self,
        loop: LoopState,
        w: Any,
        max_w: int,
        estimate: Overestimate,
        *,
        prune: bool,
        warn: bool,
    ):
        xp = loop.machine.xp
        self.loop, self.m, self.estimate = loop, loop.machine, estimate
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
        self.live = LiveSet(self.m, w, max_w, index)
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
            self.live = LiveSet(m, self.w, info.max_new_workload, self.w.dtype)
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
                stacklevel=5,  # the caller of run_loop
            )
