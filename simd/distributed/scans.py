"""``scan``, ``spread`` and ``pack`` across the ranks (see :mod:`simd.distributed`).

A scan along the blocks (axis None or 0) runs as lines in scan direction: every rank scans
its block's lines, then continues them with the carry of the blocks before it. Exact
operators fold every earlier block's summary (one all-gather); a float ``add`` waits for its
predecessor's inclusive value and scans its block again behind it (a sequential scan, as on
one rank), so the result is the one-rank scan's bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernels import reference
from kernels.registry import lookup
from simd.distributed.layouts import layout, on_device, owners

__all__ = ["pack", "scan", "spread"]


def _combine(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a op b`` on the host, as the serial CPU kernels combine (``a`` the earlier)."""
    if op == "add":
        return a + b
    if op == "max":
        return np.where((a >= b) | (a != a), a, b)
    if op == "min":
        return np.where((a <= b) | (a != a), a, b)
    if op == "and":
        return a & b
    if op == "or":
        return a | b
    if op == "xor":
        return a ^ b
    return a.copy()  # copy: the segment's first element, which came earlier


def scan(m, x, op: str, *, exclusive: bool, reverse: bool, segments, axis, initial):
    """``Machine.scan`` across ranks; ``x`` already in the result's domain (masked)."""
    xp = m.xp
    fn = lookup("scan", m.backend)
    across = axis is None or axis == 0
    first_flags = None
    if across and reverse and segments is not None and x.shape[0] > 0:
        first_flags = m.asnumpy(segments.reshape(1, -1)[:, :1] if axis is None else segments[0])
        first_flags = first_flags.reshape(-1)
    bounds, firsts = layout(m, x, "x", first_flags)
    tail = x.shape[1:]
    size = int(bounds[-1]) * math.prod(tail)
    nbytes = size * x.dtype.itemsize * 2 + (0 if segments is None else size)
    m._account("scan", size, nbytes, label="scan")
    if not across:
        kwargs = dict(exclusive=bool(exclusive), reverse=bool(reverse), initial=initial)
        return fn(xp, x, op, segments=segments, axis=axis, **kwargs)
    if size == 0:
        return x.copy()
    lines = _lines(m, x, segments, axis, reverse, bounds, firsts)

    def local(values, starts, init):
        return fn(xp, values, op, segments=starts, axis=1, initial=init)

    inclusive, carry = _inclusive(m, lines, op, local, initial)
    out = inclusive
    if exclusive and lines.length:
        out = _exclusive(xp, lines, op, inclusive, carry, initial)
    if reverse:
        out = out[:, ::-1]
    if axis is None:
        return xp.ascontiguousarray(out).reshape(x.shape)
    return xp.ascontiguousarray(xp.moveaxis(out.reshape(*tail, lines.length), -1, 0))


@dataclass
class _Lines:
    """This rank's block of a scan along the blocks, as ``K`` lines of ``length`` elements
    in scan direction (C-contiguous ``values``, ``starts`` their segment starts in scan
    direction or None), and the ranks in scan direction before this one (``earlier``) and
    those before and after it that hold elements."""

    values: Any
    starts: Any
    earlier: list[int]
    before: list[int]
    after: list[int]

    @property
    def count(self) -> int:
        """``K``: one line for ``axis=None``, one per line along axis 0 otherwise."""
        return self.values.shape[0]

    @property
    def length(self) -> int:
        """The elements of each line held here."""
        return self.values.shape[1]


def _lines(m, x, segments, axis, reverse: bool, bounds: np.ndarray, firsts: list) -> _Lines:
    """The block ``x`` as the scan's lines (one, in C order, for ``axis=None``; one per line
    along axis 0 otherwise), turned to scan direction."""
    xp = m.xp
    tail = x.shape[1:]
    if axis is None:
        rows = x.reshape(1, -1)
        seg = None if segments is None else segments.reshape(1, -1)
        lengths = np.diff(bounds) * math.prod(tail)
    else:
        K = math.prod(tail)
        rows = xp.moveaxis(x, 0, -1).reshape(K, -1)
        seg = None if segments is None else xp.moveaxis(segments, 0, -1).reshape(K, -1)
        lengths = np.diff(bounds)
    n = rows.shape[1]
    # Ranks in scan direction: those before this one, and the neighbours holding elements.
    order = list(range(m.nranks))[:: -1 if reverse else 1]
    here = order.index(m.rank)
    before = [q for q in order[:here] if lengths[q] > 0]
    after = [q for q in order[here + 1 :] if lengths[q] > 0]
    # Work in scan direction, with segment starts in scan direction.
    v = rows[:, ::-1] if reverse else rows
    st = None
    if seg is not None:
        st = seg
        if reverse and n:
            # A segment's start in reverse direction is its last element in index order,
            # which for the block's last element depends on the next rank's first flag.
            nxt = next((firsts[q] for q in range(m.rank + 1, m.nranks) if lengths[q] > 0), None)
            last = xp.empty_like(seg)
            last[:, :-1] = seg[:, 1:]
            last[:, -1] = True if nxt is None else xp.asarray(nxt)
            st = last[:, ::-1]
        st = xp.ascontiguousarray(st)
    v = xp.ascontiguousarray(v)
    return _Lines(values=v, starts=st, earlier=order[:here], before=before, after=after)


def _inclusive(m, lines: _Lines, op: str, local, initial) -> tuple[Any, Any]:
    """The inclusive scan of the lines, continued from the blocks before this one, and the
    carry it continued (None where no earlier block holds elements)."""
    xp = m.xp
    v, st, K, n = lines.values, lines.starts, lines.count, lines.length
    dtype = v.dtype
    chained = op == "add" and dtype.kind == "f"
    carry = None
    if chained:  # float add: wait for the predecessor's exact value (a sequential scan)
        if lines.before and n:
            carry = m.ranks.sendrecv(None, None, lines.before[-1], (K,), dtype, device=on_device(m))
        # Without segments the whole block continues the carry: one scan behind it below.
        inclusive = v if (carry is not None and st is None) or not n else local(v, st, initial)
    else:
        inclusive = local(v, st, initial) if n else v
    without = inclusive
    if not chained:  # exact operators: fold every earlier block's summary in order
        if n:
            without = inclusive if initial is None or op == "copy" else local(v, st, None)
        carry = _earlier_carry(m, lines, op, inclusive, without)
    if n and carry is not None:
        # The block's first partial segment continues the carry (without the initial,
        # which the carry holds already), as the one-rank scan runs through it.
        column = xp.asarray(carry.astype(dtype, copy=False)).reshape(K, 1)
        if chained:  # floats: scan the block again behind the carry, in sequence
            behind = None if st is None else xp.concatenate([xp.zeros((K, 1), bool), st], 1)
            continued = local(xp.concatenate([column, v], axis=1), behind, None)[:, 1:]
        else:  # associative: one elementwise step on the local scan
            continued = _combine(op, xp.broadcast_to(column, without.shape), without)
        if st is None:
            inclusive = continued
        else:
            prefix = xp.cumsum(st, axis=1, dtype=np.int64) == 0
            inclusive = xp.where(prefix, continued, inclusive)
    if chained and lines.after and n:  # on to the next rank that holds elements
        m.ranks.sendrecv(inclusive[:, -1], lines.after[0], None, (K,), dtype)
    return inclusive, carry


def _earlier_carry(m, lines: _Lines, op: str, inclusive, without):
    """The carry of the blocks before this one under an exact operator: every block's
    summary (whether a line starts a segment there, its last inclusive value with and
    without the initial), read back at once and all-gathered, folded in scan order."""
    summary = None
    if lines.length:
        # The block's summary, read back in one transfer.
        if lines.starts is None:
            summary = (np.zeros(lines.count, bool), *m.fetch(inclusive[:, -1], without[:, -1]))
        else:
            summary = m.fetch(lines.starts.any(axis=1), inclusive[:, -1], without[:, -1])
    summaries = m.ranks.allgather(summary)
    carry = None
    for q in lines.earlier:
        if summaries[q] is None:
            continue
        has_start, with_initial, without_initial = summaries[q]
        if carry is None:
            carry = with_initial
        else:
            carry = np.where(has_start, with_initial, _combine(op, carry, without_initial))
    return carry


def _exclusive(xp: Any, lines: _Lines, op: str, inclusive, carry, initial):
    """The exclusive scan from the inclusive one: each element gets its predecessor's
    value, a segment's first element ``initial`` (or the identity), the block's first
    element the carry."""
    dtype = lines.values.dtype
    K = lines.count
    fill = reference.identity(op, dtype) if initial is None else dtype.type(initial)
    head = (
        xp.full((K, 1), fill, dtype)
        if carry is None
        else xp.asarray(carry.astype(dtype, copy=False)).reshape(K, 1)
    )
    previous = xp.concatenate([head, inclusive[:, :-1]], axis=1)
    starts = xp.zeros(lines.values.shape, bool) if lines.starts is None else lines.starts.copy()
    if carry is None:
        starts[:, 0] = True
    return xp.where(starts, dtype.type(fill), previous)


def spread(m, x, axis: int, index: int):
    """``Machine.spread`` across ranks: along axis 0 the owner of the row broadcasts it."""
    xp = m.xp
    bounds, _ = layout(m, x, "x")
    n_global = int(bounds[-1]) if axis == 0 else x.shape[axis]
    if not -n_global <= index < n_global:
        raise IndexError(f"spread index {index} is out of range for an axis of length {n_global}")
    size = int(bounds[-1]) * math.prod(x.shape[1:])
    m._account("scan", size, size * x.dtype.itemsize * 2, label="spread")
    if axis != 0:
        piece = xp.take(x, [index], axis=axis)
        return xp.ascontiguousarray(xp.broadcast_to(piece, x.shape))
    index %= n_global
    root = int(owners(bounds, np.array([index]))[0])
    at = index - int(bounds[m.rank])
    row = x[at : at + 1] if m.rank == root else xp.empty((1, *x.shape[1:]), x.dtype)
    row = m.ranks.bcast(row, root)
    return xp.ascontiguousarray(xp.broadcast_to(row, x.shape))


def pack(m, x, mask):
    """``Machine.pack`` across ranks: local pack, then rebalanced to the canonical layout."""
    picked = x[mask]
    bounds, counts = layout(m, x, "x", int(picked.size))
    size = int(bounds[-1]) * math.prod(x.shape[1:])
    m._account("scan", size, size * x.dtype.itemsize * 2, label="pack")
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    target = m.ranks.bounds(int(starts[-1]))
    lo, hi = starts[m.rank], starts[m.rank + 1]
    # How many of this rank's packed elements fall in each rank's canonical block.
    send_counts = np.clip(np.minimum(target[1:], hi) - np.maximum(target[:-1], lo), 0, None)
    return m.ranks.alltoallv(picked, send_counts)
