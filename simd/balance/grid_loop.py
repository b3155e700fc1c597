"""A grid computation on a processor mesh, balanced every ``k`` iterations by scan-directed
load balancing (Biagioni & Prins 1991).

The workload is a 2-D grid of counts: data point ``(i, j)`` is *active* for its first
``counts[i, j]`` iterations (a pixel of edge-directed diffusion that keeps changing, a
cell of a simulation that has not settled) and then sleeps for good. The grid lies on the
machine's mesh under the hierarchical decomposition of Lemma 1 (:class:`TiledGrid`); every
iteration each PE updates its own active points from a worklist, so the mesh waits for the
PE with the most active points. Every ``k`` iterations (at iterations 0, k, 2k, ...)
Biagioni & Prins' Scan Directed Load Balancing (:func:`simd.balance.scan_directed.balance`)
moves whole data hyperplanes between neighbouring PEs so that the PE hyperplanes carry the
same active load; the points carry their remaining counts with them.

An iteration is charged to the model clock as the emulated machine runs it: a max-reduce
of the PEs' active counts (the worklist's bound, which also ends the loop), the busiest
PE's active points times ``task_cost`` operations, and one operation per buffer slot to
rebuild the worklist. The balancing steps are charged by the balancer itself (its scans,
shifts and local work). Nothing else is charged: no neighbour exchange, which the same
program would pay with and without balancing.

After each balancing step the Locality Property is checked independently of the
balancer's own bookkeeping: every point's global index is read from the buffer slot it
physically sits in, every point must be held exactly once, and the mapping rebuilt from
those slots must satisfy the Locality Constraints of Figure 1
(:func:`~simd.balance.scan_directed.locality_violations`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simd.balance.scan_directed import LocalityError, TiledGrid, balance, check_grid

__all__ = ["GRID_PHASES", "GridLoopResult", "run_grid_loop"]

#: The loop's phases: the iterations' work and the balancing steps.
GRID_PHASES = ("solution", "balancing")

#: Operations per buffer slot and iteration to rebuild the worklist of active points.
WORKLIST_OPS = 1.0


@dataclass
class GridLoopResult:
    """What a grid loop did.

    Attributes
    ----------
    iterations : int
        Iterations with at least one active point.
    every : int
        Balancing interval (0: never).
    balance_steps, moved : int
        Balancing steps run, and those of them that moved data (the others aborted or
        found nothing to move).
    cycles, wall : dict of str to float
        Model cycles and wall seconds per phase (:data:`GRID_PHASES`) and their
        ``"total"``.
    busiest, active : list of int
        Per iteration: the busiest PE's active points, and the PEs with any.
    cumulative : list of float
        Model cycles from the start until each iteration's tasks begin (after that
        iteration's balancing), then the loop's total.
    tasks_run : int
        Point-iterations computed; equals the sum of the counts.
    locality : bool or None
        Whether the Locality Property held after every balancing step (None: not
        checked).
    """

    iterations: int = 0
    every: int = 0
    balance_steps: int = 0
    moved: int = 0
    cycles: dict[str, float] = field(default_factory=dict)
    wall: dict[str, float] = field(default_factory=dict)
    busiest: list[int] = field(default_factory=list)
    active: list[int] = field(default_factory=list)
    cumulative: list[float] = field(default_factory=list)
    tasks_run: int = 0
    locality: bool | None = None


def run_grid_loop(
    counts: Any,
    *,
    machine: Any,
    every: int = 0,
    task_cost: float = 32.0,
    axes: tuple[int, ...] | None = None,
    limited: bool = True,
    check_locality: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> GridLoopResult:
    """Run every active point of ``counts`` on ``machine``'s mesh, balancing every ``every``.

    Parameters
    ----------
    counts : 2-D array of non-negative ints
        Iterations each data point stays active; its shape is the data grid, at least the
        mesh's along each axis.
    machine : simd.Machine
        A 2-D mesh (``Machine(pes=(R, C))``); the NumPy or CuPy backend.
    every : int
        Balance before iterations 0, ``every``, 2 ``every``, ...; 0 never.
    task_cost : float
        Operations per active point and iteration.
    axes : tuple of int, optional
        Axes to balance (default both; ``(0,)`` for one dimension only).
    limited : bool
        Biagioni & Prins' Algorithm 4 (buffers never overflow) rather than Algorithm 3.
    check_locality : bool
        Check the Locality Property after every balancing step (bookkeeping, off both
        clocks).
    progress : callable(done, total), optional
        Called after every iteration with the point-iterations done so far.

    Returns
    -------
    GridLoopResult

    Examples
    --------
    >>> from simd import Machine
    >>> counts = np.zeros((12, 12), dtype=int); counts[:6, :6] = 6  # a hot corner
    >>> m = Machine(pes=(4, 4), backend="numpy")
    >>> still = run_grid_loop(counts, machine=m)
    >>> moved = run_grid_loop(counts, machine=m, every=1)
    >>> still.busiest[:3], moved.busiest[:3], moved.locality, moved.tasks_run
    ([9, 9, 9], [4, 4, 4], True, 216)
    """
    m = machine
    if len(m.pes) != 2:
        raise ValueError(f"a grid loop needs a 2-D mesh, got pes={m.pes}")
    if isinstance(every, bool) or not isinstance(every, int | np.integer) or every < 0:
        raise ValueError(f"every must be an integer >= 0, got {every!r}")
    host = np.asarray(counts)
    if host.ndim != 2 or host.dtype.kind not in "iu" or (host.size and host.min() < 0):
        raise ValueError("counts must be a 2-D grid of non-negative integers")
    run = _GridRun(m, host, int(every), float(task_cost), axes, limited, check_locality)
    return run.run(progress)


class _GridRun:
    """One run: the decomposed grid, the phase records and the result."""

    def __init__(self, m, host, every, task_cost, axes, limited, check_locality):
        self.m, self.every, self.task_cost = m, every, task_cost
        self.axes, self.limited, self.check = axes, limited, check_locality
        self.points = int(host.size)
        self.total = int(host.sum())
        arrays = {
            "remaining": host.astype(np.int32),
            "active": host > 0,
            "index": np.arange(host.size, dtype=np.int64).reshape(host.shape),
        }
        self.grid = TiledGrid.from_arrays(arrays, m.pes, xp=m.xp, uncharged=("index",))
        self.res = GridLoopResult(every=every, locality=True if check_locality else None)
        self.res.cycles = dict.fromkeys(GRID_PHASES, 0.0)
        self.res.wall = dict.fromkeys(GRID_PHASES, 0.0)

    def run(self, progress) -> GridLoopResult:
        res, m = self.res, self.m
        start = m.clock
        t0 = time.perf_counter()
        valid = self.grid.valid()
        while True:
            if self.every and res.iterations % self.every == 0 and self.balance():
                valid = self.grid.valid()
            if not self.iterate(valid, start):
                break
            if progress is not None:
                progress(res.tasks_run, self.total)
        res.cycles["total"] = sum(res.cycles[p] for p in GRID_PHASES)
        res.cumulative.append(m.clock - start)
        res.wall["total"] = time.perf_counter() - t0
        return res

    def account(self, phase: str, record: Any) -> None:
        self.res.cycles[phase] += record.cycles
        self.res.wall[phase] += record.wall

    def iterate(self, valid: Any, start: float) -> bool:
        """One iteration; False when no point is active any more. ``start``: the model
        clock at the loop's start."""
        m, grid, xp = self.m, self.grid, self.m.xp
        npes = math.prod(m.pes)
        remaining, active = grid.channels["remaining"], grid.channels["active"]
        with m.phase("solution") as record:
            act = active & valid
            per_pe = act.sum(axis=(2, 3))
            busiest = m.reduce(per_pe, "max")
            # The report's figures, read back with the bound: bookkeeping, not charged.
            busiest, busy, done = (
                int(v) for v in m.asnumpy(xp.stack([busiest, (per_pe > 0).sum(), per_pe.sum()]))
            )
            if busiest:
                self.res.cumulative.append(m.clock - start)
                m.charge("local", npes * busiest, ops=self.task_cost)
                remaining -= act
                active &= remaining > 0
                m.charge("local", npes * grid.buffer**2, ops=WORKLIST_OPS)
        self.account("solution", record)
        if not busiest:
            return False
        res = self.res
        res.iterations += 1
        res.busiest.append(busiest)
        res.active.append(busy)
        res.tasks_run += done
        return True

    def balance(self) -> bool:
        """One balancing step, then (when it moved data) the independent check of the
        Locality Property; returns whether it moved data."""
        m, res = self.m, self.res
        with m.phase("balancing") as record:
            reports = balance(
                self.grid, machine=m, load="active", axes=self.axes, limited=self.limited
            )
        self.account("balancing", record)
        res.balance_steps += 1
        moved = any(r.moved for r in reports)
        res.moved += moved
        if moved and self.check and not self.locality_holds():
            res.locality = False
        return moved

    def locality_holds(self) -> bool:
        """Every point held once, and the mapping read from the slots keeps the Locality
        Constraints."""
        try:
            check_grid(self.grid, self.points)
        except LocalityError:
            return False
        return True
