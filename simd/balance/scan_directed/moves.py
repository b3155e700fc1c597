"""Step 2 of a balancing step (Biagioni & Prins 1991, Algorithms 3 and 4): moving the data.

The front end follows every boundary between PE hyperplanes by its flow, and the data
hyperplanes cross them by mesh shifts, one per PE hyperplane and put/get cycle: puts first
(a PE hyperplane hands its first data hyperplane down), then gets (one hands its last up).
A move that would overflow the receiver's buffer or empty the sender waits, so the Locality
Constraints hold after every cycle.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from simd.balance.scan_directed.flows import AxisReport
from simd.balance.scan_directed.grid import TiledGrid
from simd.distributed import shift_rows_uncharged

__all__ = ["MOVE_OPS", "shift_data"]

#: Local operations a PE spends per buffer slot of a hyperplane it puts or gets (reading or
#: writing the slot and advancing the buffer's FIFO pointer).
MOVE_OPS = 2.0


def shift_data(
    grid: TiledGrid,
    m: Any,
    axis: int,
    report: AxisReport,
    w_line: np.ndarray,
    average_p: float,
    on_cycle: Callable[[TiledGrid], None] | None,
) -> None:
    """Step 2 along ``axis``: the put/get cycles that follow ``report.flows``, moving the
    data hyperplanes (of loads ``w_line``) by mesh shifts; ``report`` and ``grid.extents``
    updated as they go (``average_p``: the average in pseudo-load units)."""
    k = grid.ndim
    p = grid.pes[axis]
    b = grid.buffer
    alpha = report.alpha
    bounds = grid.boundaries(axis)
    owner = np.searchsorted(bounds[1:], np.arange(bounds[-1]), side="right")
    weight = w_line[owner, np.arange(bounds[-1]) - bounds[owner]].astype(np.float64)
    pw = weight + alpha  # pseudo-load of every data hyperplane
    point_rule = k == 1  # Algorithms 1 and 2 test a constant threshold
    half_unit = (1.0 + alpha) / 2.0
    # The flows are sums of float pseudo-loads: a flow equal to its threshold in exact
    # arithmetic (the loops test strict inequalities) must not move on rounding noise.
    tol = 1e-9 * max(1.0, average_p * p)
    f = report.flows.copy()
    s_pos = bounds.copy()  # s_pos[i]: first data hyperplane of PE hyperplane i
    ext = grid.extents[axis].copy()
    grid.extents[axis] = ext  # live: _move updates it cycle by cycle
    for phase in ("put", "get"):
        while True:
            want = np.zeros(p + 1, dtype=bool)
            inner = np.arange(1, p)
            if phase == "put":
                thr = half_unit if point_rule else pw[np.minimum(s_pos[inner], len(pw) - 1)] / 2
                want[inner] = f[inner] > thr + tol
            else:
                thr = half_unit if point_rule else pw[np.maximum(s_pos[inner] - 1, 0)] / 2
                want[inner] = f[inner] < -thr - tol
            if not want.any():
                break
            move, held = _feasible(want, ext, b, phase)
            report.blocked += held
            if not move.any():
                break
            idx = np.nonzero(move)[0]
            if phase == "put":
                f[idx] -= pw[s_pos[idx]]
                s_pos[idx] += 1
            else:
                s_pos[idx] -= 1
                f[idx] += pw[s_pos[idx]]
            _move(grid, m, axis, move[1:p], phase, ext)
            report.cycles += 1
            report.moved += int(idx.size)
            if on_cycle is not None:
                on_cycle(grid)
    # The new hyperplane loads (for the report; the program recomputes them when needed).
    new_owner = np.searchsorted(np.cumsum(ext)[:-1], np.arange(bounds[-1]), side="right")
    report.loads_after = np.bincount(new_owner, weights=weight, minlength=p)


def _feasible(want: np.ndarray, ext: np.ndarray, b: int, phase: str) -> tuple[np.ndarray, int]:
    """Hold back the moves that would overflow a receiver or empty a sender.

    ``want[i]`` asks to move boundary ``i`` (between PE hyperplanes ``i - 1`` and ``i``);
    ``want[0]`` and ``want[p]`` are always False. A put moves it up (PE ``i`` gives its
    first hyperplane to ``i - 1``), a get down (PE ``i - 1`` gives its last to ``i``).
    Holding one move back can only make its two PEs' sizes closer to unchanged, so the loop
    ends; the result is the largest feasible subset reachable by holding back.
    """
    move = want.copy()
    while True:
        gain = move[1:].astype(np.int64)  # PE j gains (put) / loses (get) at boundary j+1
        lose = move[:-1].astype(np.int64)  # PE j loses (put) / gains (get) at boundary j
        if phase == "put":
            size = ext - lose + gain
            over = size > b  # gains at its top boundary j+1 without losing: hold j+1
            under = size < 1  # loses at boundary j without gaining: hold j
            hold_hi, hold_lo = over, under
        else:
            size = ext + lose - gain
            over = size > b  # gains at boundary j: hold j
            under = size < 1  # loses at boundary j+1: hold j+1
            hold_hi, hold_lo = under, over
        if not (over.any() or under.any()):
            return move, int(want.sum() - move.sum())
        move[1:][hold_hi] = False
        move[:-1][hold_lo] = False


def _move(grid: TiledGrid, m: Any, axis: int, mv: np.ndarray, phase: str, ext: np.ndarray) -> None:
    """One synchronous put (or get) cycle along ``axis``; ``mv[i-1]`` for boundary ``i``.

    put: every PE hyperplane ``i`` with a moving low boundary sends its first data
    hyperplane to PE hyperplane ``i - 1``, which appends it after its last one; the sender
    shifts its FIFO buffer down by one. get: PE hyperplane ``i - 1`` sends its last data
    hyperplane to ``i``, which shifts its buffer up by one and stores it first.
    """
    xp = grid.xp
    k = grid.ndim
    npes = math.prod(grid.pes)
    hyper = grid.buffer ** (k - 1)
    boundary_idx = np.nonzero(mv)[0] + 1  # boundaries i that move
    if phase == "put":
        senders, receivers = boundary_idx, boundary_idx - 1
    else:
        senders, receivers = boundary_idx - 1, boundary_idx
    # The PE hyperplanes held here: across ranks, axis 0 is this rank's block of PE rows.
    lo, hi = grid.rows if axis == 0 else (0, grid.pes[axis])
    mine_s = (senders >= lo) & (senders < hi)
    mine_r = (receivers >= lo) & (receivers < hi)
    s_idx = xp.asarray(senders[mine_s] - lo)
    r_idx = xp.asarray(receivers[mine_r] - lo)
    charged = 0
    for name, tiles in grid.channels.items():
        # Mesh axis first, then the buffer axis along it: (p, b, ...rest).
        arr = xp.moveaxis(tiles, (axis, k + axis), (0, 1))
        if phase == "put":
            out = arr[:, 0]
        else:
            last = xp.asarray(np.maximum(ext[lo:hi] - 1, 0))
            out = arr[xp.arange(hi - lo), last]
        # The shift runs on the mesh's own layout (mesh axes first, axis 0 split across
        # ranks), then the arrivals take the moved layout again.
        offset = -1 if phase == "put" else 1
        on_mesh = xp.moveaxis(out, 0, axis).copy()
        incoming = xp.moveaxis(
            _shift(m, on_mesh, offset, axis, name not in grid.uncharged), axis, 0
        )
        charged += name not in grid.uncharged
        if phase == "put":
            arr[s_idx, :-1] = arr[s_idx, 1:].copy()
            here = receivers[mine_r]
            slot = xp.asarray(ext[here] - (np.isin(here, senders)).astype(np.int64))
            arr[r_idx, slot] = incoming[r_idx]
        else:
            arr[r_idx, 1:] = arr[r_idx, :-1].copy()
            arr[r_idx, 0] = incoming[r_idx]
    m.charge("local", npes * hyper * max(charged, 1), ops=MOVE_OPS)
    ext[senders] -= 1
    ext[receivers] += 1


def _shift(m: Any, x: Any, offset: int, axis: int, charged: bool) -> Any:
    """Mesh shift along ``axis`` (zeros enter); bookkeeping channels bypass the model
    clock."""
    if charged:
        return m.shift(x, offset, axis=axis, boundary="zero")
    if axis == 0 and m.ranks is not None:
        return shift_rows_uncharged(m, x, offset)
    xp = m.xp
    out = xp.zeros_like(x)
    src = [slice(None)] * x.ndim
    dst = [slice(None)] * x.ndim
    if offset < 0:
        dst[axis], src[axis] = slice(None, offset), slice(-offset, None)
    else:
        dst[axis], src[axis] = slice(offset, None), slice(None, -offset)
    out[tuple(dst)] = x[tuple(src)]
    return out
