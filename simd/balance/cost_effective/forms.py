"""What every form of the balanced loop shares, and the two forms without a decision.

:class:`LoopState` is the loop being run (the machine, the body, the options, the result
being filled in); :func:`original` (Figure 1 of Ahrens & Hansen 1995) and :func:`expand`
(every task at once through a load-balancing search) are two of the forms
:func:`~simd.balance.cost_effective.run_loop` runs, each a function of the loop's state and
its workload. :class:`LiveSet` follows the processors with work left, one task each per
iteration.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from simd.balance.cost_effective.records import (
    PHASE_EXPANSION,
    PHASE_SOLUTION,
    LoopResult,
    PhaseTiming,
)
from simd.balance.cost_effective.search import Expansion

__all__ = ["DEFAULT_CHUNK", "ORIGINAL_OPS", "LiveSet", "LoopState", "expand", "original"]

#: Elementwise operations per VP charged per iteration by Figure 1's loop: the WHERE test
#: ``index <= workload``.
ORIGINAL_OPS = 1

#: Default chunk of the expand form (tasks per step).
DEFAULT_CHUNK = 1 << 22


@dataclass
class LoopState:
    """One run of a balanced loop, as its form sees it.

    Attributes
    ----------
    machine : simd.Machine
    call : callable(items, tasks)
        The solution phase (the caller's body, or one that does nothing).
    result : LoopResult
        Being filled in; its ``max_workload`` and ``total_tasks`` are the workload's.
    advance : callable(done)
        Reports progress, in tasks done.
    task_cost : float
        Model cycles per VP per iteration for the body's own elementwise work.
    overestimate, prune, warn
        The cost-effective form's options (see ``run_loop``).
    chunk : int
        Tasks per step of the expand form.
    """

    machine: Any
    call: Callable[[Any, Any], None]
    result: LoopResult
    advance: Callable[[int], None]
    task_cost: float = 1.0
    overestimate: float | None = None
    prune: bool = True
    warn: bool = True
    chunk: int = DEFAULT_CHUNK

    def timing(self, phase: str) -> PhaseTiming:
        """The per-execution records of ``phase`` in this loop."""
        return self.result.stats.setdefault(phase, PhaseTiming())

    def solve(self, items: Any, tasks: Any, slots: int, ops: float, live: Any = None) -> None:
        """Run the body on the live tasks, charged for the whole VP set of ``slots``
        (``live``: their positions in it, for cost models that charge the busiest node)."""
        with self.machine.vp_set(slots, live=live):
            self.call(items, tasks)
        self.machine.charge("elementwise", slots, ops=ops + self.task_cost)


def original(loop: LoopState, w: Any) -> None:
    """Figure 1: ``forloop index = 1, MAX(workload) / WHERE (index <= workload)``."""
    m, xp = loop.machine, loop.machine.xp
    n = int(w.size)
    max_w = loop.result.max_workload
    soln = loop.timing(PHASE_SOLUTION)
    with m.phase(PHASE_SOLUTION):
        # The loop bound, MAX(workload): the front end read it with the workload's
        # sum (run_loop), so the machine's reduction is not read back again.
        m.reduce(w, "max")
    iterations = max_w
    small = n + loop.result.total_tasks < 2**31  # every datum and task number fits
    live = LiveSet(m, w, max_w, np.int32 if small else np.int64)
    for index in range(iterations):
        with m.phase(PHASE_SOLUTION) as record:
            items, done = live.step()
            tasks = xp.full(done, index, dtype=items.dtype)
            loop.solve(items, tasks, n, ORIGINAL_OPS, live=items)
            live.drop(w, index + 1)
        soln.records.append(record)
        loop.result.iterations += 1
        loop.advance(done)


def expand(loop: LoopState, w: Any) -> None:
    """All tasks at once: an add-scan of the workload, a load-balancing search per chunk."""
    m = loop.machine
    chunk, total = loop.chunk, loop.result.total_tasks
    expansion = loop.timing(PHASE_EXPANSION)
    soln = loop.timing(PHASE_SOLUTION)
    with m.phase(PHASE_EXPANSION) as record:
        search = Expansion(w, machine=m, total=total)
    expansion.records.append(record)
    for start in range(0, total, chunk):
        stop = min(start + chunk, total)
        with m.phase(PHASE_EXPANSION) as record:
            items, tasks = search.tasks(start, stop)
        expansion.records.append(record)
        with m.phase(PHASE_SOLUTION) as record:
            loop.solve(items, tasks, stop - start, 0)
        soln.records.append(record)
        loop.result.iterations += 1
        loop.advance(stop - start)


class LiveSet:
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
