"""``shift`` and ``halo_exchange`` across the ranks: border rows to the neighbouring ranks
(see :mod:`simd.distributed`)."""

from __future__ import annotations

import math

import numpy as np

from kernels.registry import lookup
from simd.distributed.layouts import fetch_rows, layout, on_device
from simd.operands import bool_boundary, extent_vector, normalise_offsets

__all__ = ["halo_exchange", "shift", "shift_rows_uncharged"]


def _edge_rows(m, x, k: int, boundary, first: bool):
    """``k`` rows entering at the border of the mesh (not the torus)."""
    shape = (k, *x.shape[1:])
    if isinstance(boundary, str) and boundary == "edge":
        return m.xp.broadcast_to(x[:1] if first else x[-1:], shape)
    return m.xp.full(shape, 0 if boundary == "zero" else boundary, dtype=x.dtype)


def _shift_rows(m, x, k: int, bounds: np.ndarray, boundary):
    """``x`` shifted by ``k`` along axis 0 of the global mesh (``0 < |k| <= N``)."""
    xp = m.xp
    N, P, r = int(bounds[-1]), m.nranks, m.rank
    sizes = np.diff(bounds)
    lo, n = int(bounds[r]), x.shape[0]
    mode = boundary if isinstance(boundary, str) else "constant"
    wrap = mode == "wrap"
    if sizes.min() >= abs(k):
        # Every row needed comes from this block or a neighbour's: one Sendrecv.
        up = k > 0  # rows move to higher indices: each rank sends its last k rows on
        succ = r + 1 if up else r - 1
        pred = r - 1 if up else r + 1
        succ = succ % P if wrap else (succ if 0 <= succ < P else None)
        pred = pred % P if wrap else (pred if 0 <= pred < P else None)
        piece = x[n - k :] if up else x[:-k]
        face = (abs(k), *x.shape[1:])
        got = m.ranks.sendrecv(
            None if succ is None else piece, succ, pred, face, x.dtype, device=on_device(m)
        )
        border = _edge_rows(m, x, abs(k), boundary, up) if got is None else got
        if up:
            return xp.concatenate([border, x[: n - k]])
        return xp.concatenate([x[-k:], border])
    # A general row fetch: each row's source row, wherever it lies.
    source = xp.arange(lo - k, lo + n - k, dtype=np.int64)
    if mode in ("wrap", "edge"):
        return fetch_rows(m, x, bounds, source % N if wrap else xp.clip(source, 0, N - 1))
    # The rows that come from inside the mesh: a contiguous run of this block's rows.
    first, last = max(lo - k, 0), min(lo + n - k, N)
    out = _edge_rows(m, x, n, boundary, True).copy()
    if last > first:
        at = first - (lo - k)
        out[at : at + last - first] = fetch_rows(m, x, bounds, source[at : at + last - first])
    else:
        fetch_rows(m, x, bounds, source[:0])  # collective: every rank takes part
    return out


def shift(m, x, offsets: tuple[int, ...], boundary):
    """``Machine.shift`` across ranks: axis 0 between ranks, the other axes locally."""
    xp = m.xp
    bounds, _ = layout(m, x, "x")
    shape = (int(bounds[-1]), *x.shape[1:])
    offsets = normalise_offsets(offsets, shape, boundary)
    size = math.prod(shape)
    distance = max(map(abs, offsets), default=0)
    m._account("shift", size, size * x.dtype.itemsize * 2, label="shift", distance=distance)
    as_bool = x.dtype == np.bool_
    if as_bool:
        x, boundary = x.view(np.uint8), bool_boundary(boundary)
    out = x
    if offsets[0] != 0:
        out = _shift_rows(m, x, offsets[0], bounds, boundary)
    rest = (0, *offsets[1:])
    if any(rest):
        out = lookup("shift", m.backend)(xp, xp.ascontiguousarray(out), rest, boundary)
    out = out.copy() if out is x else xp.ascontiguousarray(out)
    return out.view(np.bool_) if as_bool else out


def shift_rows_uncharged(m, x, offset: int):
    """``x`` shifted by ``offset`` along axis 0 across the ranks, zeros entering, without
    charging the model clock: for the emulator's own bookkeeping data that travels with
    the machine's (e.g. the global indices a balancing test checks). Collective."""
    bounds, _ = layout(m, x, "x")
    if offset == 0 or bounds[-1] == 0:
        return x.copy()
    k = int(np.clip(offset, -bounds[-1], bounds[-1]))
    as_bool = x.dtype == np.bool_
    out = _shift_rows(m, x.view(np.uint8) if as_bool else x, k, bounds, 0)
    return out.view(np.bool_) if as_bool else out


def halo_exchange(m, tiles, heights, widths, width: int, boundary):
    """``Machine.halo_exchange`` across ranks: tiles split along R, ``heights`` global.

    The neighbour ranks' border tile rows (one PE row above, one below) join the block as
    ghosts, then the local kernel runs on them: a window needs at most ``width`` grid rows
    of a neighbour, and ``width`` is at most every tile's height.
    """
    xp = m.xp
    bounds, _ = layout(m, tiles, "tiles")
    R = int(bounds[-1])
    _, C, BH, BW = tiles.shape
    with m.ranks.collective_errors():
        heights = extent_vector(heights, R, BH, "heights")
        if R and C and heights.min() < width:
            raise ValueError(
                f"halo width {width} exceeds the smallest tile ({heights.min()} x "
                f"{widths.min()}): a neighbour exchange could not fill it"
            )
    per_pe = 2 * width * (BH + BW) + 4 * width * width
    m._account("shift", R * C * per_pe, R * C * per_pe * tiles.itemsize * 2, label="halo_exchange")
    r, P = m.rank, m.nranks
    lo, hi = int(bounds[r]), int(bounds[r + 1])
    wrap = isinstance(boundary, str) and boundary == "wrap"
    n = hi - lo
    above = (lo - 1) % R if wrap and n else (lo - 1 if n and lo > 0 else None)
    below = hi % R if wrap and n else (hi if n and hi < R else None)
    sizes = np.diff(bounds)
    if sizes.min() > 0:  # neighbours hold the ghost rows: two Sendrecv
        succ = (r + 1) % P if wrap else (r + 1 if r + 1 < P else None)
        pred = (r - 1) % P if wrap else (r - 1 if r > 0 else None)
        shape, dev = (C, BH, BW), on_device(m)
        last = None if succ is None else tiles[-1]
        got_above = m.ranks.sendrecv(last, succ, pred, shape, tiles.dtype, device=dev)
        first = None if pred is None else tiles[0]
        got_below = m.ranks.sendrecv(first, pred, succ, shape, tiles.dtype, device=dev)
        ghosts = [None if g is None else g[None] for g in (got_above, got_below)]
    else:  # an empty block between: fetch the two PE rows from wherever they lie
        wanted = [g for g in (above, below) if g is not None]
        fetched = fetch_rows(m, tiles, bounds, np.array(wanted, dtype=np.int64))
        ghosts, i = [], 0
        for g in (above, below):
            ghosts.append(None if g is None else fetched[i : i + 1])
            i += g is not None
    if n == 0:
        return xp.zeros((0, C, BH + 2 * width, BW + 2 * width), dtype=tiles.dtype)
    parts = [g for g in (ghosts[0], tiles, ghosts[1]) if g is not None]
    extended_heights = np.concatenate(
        [heights[[above]] if above is not None else [], heights[lo:hi]]
        + ([heights[[below]]] if below is not None else [])
    ).astype(np.int64)
    fn = lookup("halo_exchange", m.backend)
    out = fn(xp, xp.concatenate(parts), extended_heights, widths, int(width), boundary)
    start = 0 if above is None else 1
    return out[start : start + n]
