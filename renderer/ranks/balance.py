"""Balancing the clipped triangles across MPI ranks before the loops (sort-last rendering).

The cost-effective algorithm of Ahrens & Hansen (1995, Figure 2) at rank level, once
per frame, in its three phases (machine phases inside the frame's ``rank-balance`` phase,
so the phase records show their MPI messages and bytes):

- *information gathering*: every rank estimates its work, the sum over its triangles of
  their clipped bounding-box pixels plus one (what the two loops overestimate), and the
  ranks all-gather the sums and triangle counts;
- *decision*: move only if the modelled cost of moving the triangles (their bytes over the
  router and one latency per message, on the model clock) is below the expected gain, the
  work of the busiest rank above the mean;
- *redistribution*: an exclusive scan of the work over the triangles in global drawing
  order assigns each triangle to the rank whose equal share of the total work it starts
  in, so ranks get contiguous ranges of equal work in the same order; ``alltoallv`` sends
  them. The order, hence every triangle's global drawing index and depth key, is kept: the
  image is the same with and without balancing.

Examples
--------
>>> destinations(np.array([0, 4, 8, 12]), 16, 2).tolist()   # work starts -> ranks
[0, 0, 1, 1]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from renderer.stages.transform import to_window
from renderer.stages.zbuffer import ZBufferBody

__all__ = ["triangle_work", "destinations", "balance_triangles", "pixel_cycles"]

#: Elementwise operations per pixel of the z-buffer loop's body (depth, key, address).
PIXEL_OPS = ZBufferBody.TASK_COST


def pixel_cycles(cost: Any) -> float:
    """Model cycles of one pixel of work on one rank's machine of ``cost.pes`` PEs: the
    body's elementwise work and its combining send through the router."""
    return (PIXEL_OPS * cost.elementwise + cost.router_per_vp) / cost.pes


def triangle_work(clip: np.ndarray, width: int, height: int) -> np.ndarray:
    """Estimated work of each clipped triangle (T, 3, 4): its window bounding box clipped
    to the viewport, in pixels, plus one (its set-up)."""
    if clip.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    xw, yw, _, _ = to_window(np, clip, width, height)
    cols = np.clip(np.ceil(xw.max(axis=1)), 0, width) - np.clip(np.floor(xw.min(axis=1)), 0, width)
    rows = np.clip(np.ceil(yw.max(axis=1)), 0, height) - np.clip(
        np.floor(yw.min(axis=1)), 0, height
    )
    return (cols * rows).astype(np.int64) + 1


def destinations(starts: np.ndarray, total: int, nranks: int) -> np.ndarray:
    """The rank of each triangle whose work starts at global offset ``starts`` (an
    exclusive scan of the work): rank ``r`` takes the triangles that start in
    ``[r total / P, (r + 1) total / P)``; non-decreasing, so ranges stay contiguous."""
    if total <= 0:
        return np.zeros(starts.shape, dtype=np.int64)
    return np.minimum(starts * nranks // total, nranks - 1).astype(np.int64)


def balance_triangles(
    ranks: Any,
    machine: Any,
    arrays: dict[str, np.ndarray] | Callable[[], dict[str, np.ndarray]],
    work: np.ndarray,
    *,
    enabled: bool = True,
    row_bytes: int | None = None,
) -> tuple[dict[str, np.ndarray] | None, dict[str, Any]]:
    """Balance the rank's triangles ``arrays`` (host arrays, one row per triangle, in
    global drawing order) by their estimated ``work``; collective.

    Parameters
    ----------
    ranks : simd.ranks.Ranks
    machine : simd.Machine
        The machine spread over the ranks: its phases record the messages and its cost
        model prices the decision.
    arrays : dict of str to (T, ...) numpy arrays, or a function that makes them
        A function is called only when triangles move (a frame whose ranks keep their
        triangles copies none to host rows); ``row_bytes`` then gives the bytes of a row.
    work : (T,) int64
    enabled : bool
        False gathers the information and decides nothing (no triangle moves).
    row_bytes : int, optional
        The bytes of one triangle's row of ``arrays`` (the same on every rank); by default
        read from the arrays' dtypes and shapes.

    Returns
    -------
    (arrays, report): the rank's triangles after balancing (None where nothing moved and
    ``arrays`` is a function), and a dict with the work per rank before and after
    (``work_before``, ``work_after``), ``balanced`` and ``moved`` (triangles that changed
    rank).

    Notes
    -----
    On the model clock of ``machine.cost`` (a rank is a machine of ``pes`` PEs): the gain
    is ``(max work - mean work) * pixel_cycles``; the price of the move is the words of
    the triangles expected to change rank (each rank's work outside its target range, at
    its mean work per triangle) times ``router_per_vp / pes``, plus one router latency
    (``levels * router_latency_per_level``) per message. Every rank decides from the same
    all-gathered figures, so all take the same decision.
    """
    cost = machine.cost
    with machine.phase("information"):
        info = ranks.allgather((int(work.sum()), int(work.shape[0])))
    totals = np.array([i[0] for i in info], dtype=np.int64)
    counts = np.array([i[1] for i in info], dtype=np.int64)
    total, p = int(totals.sum()), ranks.size
    report: dict[str, Any] = {
        "work_before": totals.tolist(),
        "work_after": totals.tolist(),
        "balanced": False,
        "moved": 0,
    }
    with machine.phase("decision"):
        if row_bytes is None:
            # from dtypes and trailing shapes, the same on every rank (even one with none)
            row_bytes = sum(a.dtype.itemsize * int(np.prod(a.shape[1:])) for a in arrays.values())
        gain = (totals.max() - total / p) * pixel_cycles(cost) if p else 0.0
        moved, messages = _moved(totals, counts, total, p)
        price = (
            moved * row_bytes / 8 * cost.router_per_vp / cost.pes
            + messages * cost.levels * cost.router_latency_per_level
        )
        go = bool(enabled and total > 0 and moved > 0 and price < gain)
    if not go:
        return (None if callable(arrays) else arrays), report
    if callable(arrays):
        arrays = arrays()
    with machine.phase("redistribution"):
        start = int(totals[: ranks.rank].sum())
        starts = start + np.cumsum(work) - work
        dest = destinations(starts, total, p)
        send_counts = np.bincount(dest, minlength=p)
        # received rows come grouped by source rank: the global order is kept
        received = ranks.alltoallv(_with_work(arrays, work), send_counts)
        out = {k: np.ascontiguousarray(received[k]) for k in arrays}
        after = ranks.allgather(int(received["_work"].sum()))
        leaving = np.array([send_counts.sum() - send_counts[ranks.rank]])
        moved_all = int(ranks.allreduce(leaving, "add")[0])
    report.update(work_after=[int(a) for a in after], balanced=True, moved=moved_all)
    return out, report


def _with_work(arrays: dict[str, np.ndarray], work: np.ndarray) -> np.ndarray:
    """One structured row per triangle: its arrays and its work."""
    fields = [(k, a.dtype, a.shape[1:]) for k, a in arrays.items()] + [("_work", "<i8")]
    rows = np.empty(work.shape[0], dtype=fields)
    for k, a in arrays.items():
        rows[k] = a
    rows["_work"] = work
    return rows


def _moved(totals: np.ndarray, counts: np.ndarray, total: int, p: int) -> tuple[float, int]:
    """Estimated triangles that would change rank, and messages, from the gathered sums:
    the work of rank ``r`` outside its target range, at its mean work per triangle."""
    if total <= 0:
        return 0.0, 0
    edges = np.concatenate([[0], np.cumsum(totals)])
    moved, messages = 0.0, 0
    for r in range(p):
        lo, hi = edges[r], edges[r + 1]
        if hi <= lo:
            continue
        for d in range(p):
            t_lo, t_hi = d * total / p, (d + 1) * total / p
            overlap = max(0.0, min(hi, t_hi) - max(lo, t_lo))
            if d != r and overlap > 0:
                moved += overlap / (hi - lo) * counts[r]
                messages += 1
    return moved, messages
