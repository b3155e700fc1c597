"""The instruction set of a machine spread over MPI ranks (``Machine(..., comm=...)``).

On each rank a parallel variable is that rank's block along axis 0 (blocks in rank order,
of any sizes, possibly empty). Every function here gives, on each rank, that rank's block
of what the one-rank machine gives on the gathered (global) array, bit for bit, float
``add`` reductions included: they are correctly rounded on every backend and any number
of ranks (``kernels.exact_sum``: each rank sums its block exactly in integer limbs, one
``Allreduce`` adds the limb vectors, and the exact total is rounded once). The model
clock is charged for the global operand, so ``Machine.clock`` is the same on every rank
and equals the one-rank clock.

The machine validates the operands (errors agreed on every rank) and calls these with
local operands already checked; each function is collective. On a GPU the routing (owners,
order, counts) runs on the device and device arrays go to the collectives of
``simd.ranks``, which hand them to MPI directly or through pinned host buffers; only what
must cross leaves the device: block summaries, faces, and the rows routed to other ranks.

What each instruction communicates:

- ``scan`` (axis None or 0): one all-gather of the block layout; exact operators then one
  all-gather of per-block summaries (the trailing segment's value, whether the block starts
  a segment), folded in rank order; a float ``add`` chains the carry rank to rank instead
  (each rank waits for its predecessor's inclusive value: a sequential scan, as on one rank).
- ``reduce``, ``count``: ``Allreduce`` (float ``add``: of the exact sums' int64 limb vectors,
  one read back of them; float ``max``/``min``: an all-gather of partials, folded in rank
  order).
- ``pack``: local pack, then ``Alltoallv`` to the canonical layout.
- ``send``, ``get``: ``Alltoallv`` of (address, value) messages to the owning rank (and back).
- ``shift``, ``halo_exchange``: ``Sendrecv`` of the border rows with the neighbours, or a
  row fetch with ``Alltoallv`` when a neighbour's block is too small.
"""

from __future__ import annotations

import math
from copy import deepcopy
from typing import TYPE_CHECKING, Any

import numpy as np

from kernels import exact_sum, reference
from kernels.registry import lookup
from simd.errors import CollisionError
from simd.operands import bool_boundary, check_addresses, extent_vector, normalise_offsets
from simd.stats import PhaseStats, Stats

if TYPE_CHECKING:
    from simd.machine import Machine

__all__ = [
    "block_shape",
    "count",
    "get",
    "halo_exchange",
    "layout",
    "pack",
    "reduce",
    "scan",
    "send",
    "shift",
    "shift_rows_uncharged",
    "spread",
    "stats_across_ranks",
]


# --------------------------------------------------------------------------- layouts


def layout(m: Machine, x, what: str, extra: Any = None) -> tuple[np.ndarray, list]:
    """Row offsets (length ``nranks + 1``) of the VP set whose block here is ``x``, and
    every rank's ``extra`` (one all-gather). The blocks must agree in dtype and trailing
    shape (ValueError on every rank otherwise)."""
    info = (x.shape[0] if x.ndim else -1, tuple(x.shape[1:]), x.dtype.str, extra)
    infos = m.ranks.allgather(info)
    if any(i[0] < 0 for i in infos):
        raise ValueError(
            f"{what} must have at least one dimension on every rank (its blocks lie along "
            "axis 0 across the ranks)"
        )
    if len({(i[1], i[2]) for i in infos}) != 1:
        raise ValueError(
            f"{what}: the ranks' blocks differ in dtype or trailing shape: "
            + "; ".join(f"rank {r}: {np.dtype(i[2])} {i[1]}" for r, i in enumerate(infos))
        )
    bounds = np.concatenate([[0], np.cumsum([i[0] for i in infos])]).astype(np.int64)
    return bounds, [i[3] for i in infos]


def block_shape(m: Machine, size: Any) -> tuple[int, ...]:
    """This rank's block (canonical layout) of a new VP set of global shape ``size``."""
    shape = tuple(size) if isinstance(size, tuple | list) else (size,)
    if not shape or any(
        not isinstance(s, int | np.integer) or isinstance(s, bool) or s < 0 for s in shape
    ):
        raise ValueError(f"size must be a non-negative int or a tuple of them, got {size!r}")
    lo, hi = m.ranks.bounds(int(shape[0]))[m.rank : m.rank + 2]
    return (int(hi - lo), *map(int, shape[1:]))


def _on_device(m: Machine) -> bool:
    """Whether the machine's arrays lie on a GPU (or the counting stand-in's device)."""
    return m.backend == "cupy"


def _owner(bounds: np.ndarray, rows: np.ndarray) -> np.ndarray:
    return np.searchsorted(bounds[1:], rows, side="right")


def _by_owner(m: Machine, bounds: np.ndarray, rows) -> tuple[Any, np.ndarray]:
    """The order (stable) that groups ``rows`` (global indices along axis 0, a backend
    array) by owning rank, and the host count per rank: worked out where ``rows`` lie,
    one small read back of the counts."""
    xp = m.xp
    owner = xp.searchsorted(xp.asarray(bounds[1:]), rows, side="right")
    order = xp.argsort(owner, kind="stable")
    starts = xp.searchsorted(owner[order], xp.arange(m.nranks + 1), side="left")
    return order, np.diff(m.asnumpy(starts))


def _fetch(m: Machine, block, bounds: np.ndarray, wanted):
    """Rows ``wanted`` (global indices along axis 0, a backend int64 array) of the VP set
    whose block here is ``block``: requests to their owners and answers back (two
    ``Alltoallv``; the rows asked of this rank do not leave it)."""
    xp = m.xp
    wanted = xp.asarray(wanted, dtype=np.int64).reshape(-1)
    order, counts = _by_owner(m, bounds, wanted)
    asked, asked_counts = m.ranks.alltoallv(wanted[order], counts, with_counts=True)
    answers = block[asked - int(bounds[m.rank])]
    back = m.ranks.alltoallv(answers, asked_counts)
    out = xp.empty_like(back)
    out[order] = back
    return out


def _raise_out_of_range(what: str, size: int, lows: list, highs: list) -> None:
    """The one-rank machine's address error, from every rank's (low, high) (None: no
    addresses there); raised alike on every rank."""
    lows = [v for v in lows if v is not None]
    if not lows:
        return
    check_addresses(what, size, min(lows), max(v for v in highs if v is not None))


# --------------------------------------------------------------------------- scan


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


def scan(m: Machine, x, op: str, *, exclusive: bool, reverse: bool, segments, axis, initial):
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
    kwargs = dict(exclusive=bool(exclusive), reverse=bool(reverse), initial=initial)
    if not across:
        return fn(xp, x, op, segments=segments, axis=axis, **kwargs)
    # The scan's rows: one (C order) for axis=None, one per line along axis 0 otherwise.
    K = 1 if axis is None else math.prod(tail)
    if size == 0:
        return x.copy()
    if axis is None:
        rows = x.reshape(1, -1)
        seg = None if segments is None else segments.reshape(1, -1)
        lengths = np.diff(bounds) * math.prod(tail)
    else:
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
    dtype = x.dtype

    def local(values, starts, init):
        return fn(xp, values, op, segments=starts, axis=1, initial=init)

    chained = op == "add" and dtype.kind == "f"
    carry = None
    if chained:  # float add: wait for the predecessor's exact value (a sequential scan)
        if before and n:
            carry = m.ranks.sendrecv(None, None, before[-1], (K,), dtype, device=_on_device(m))
        # Without segments the whole block continues the carry: one scan behind it below.
        inclusive = v if (carry is not None and st is None) or not n else local(v, st, initial)
    else:
        inclusive = local(v, st, initial) if n else v
    without = inclusive
    if not chained:  # exact operators: fold every earlier block's summary in order
        summary = None
        if n:
            without = inclusive if initial is None or op == "copy" else local(v, st, None)
            # The block's summary, read back in one transfer.
            if st is None:
                summary = (np.zeros(K, bool), *m.fetch(inclusive[:, -1], without[:, -1]))
            else:
                summary = m.fetch(st.any(axis=1), inclusive[:, -1], without[:, -1])
        summaries = m.ranks.allgather(summary)
        for q in order[:here]:
            if summaries[q] is None:
                continue
            has_start, with_initial, without_initial = summaries[q]
            if carry is None:
                carry = with_initial
            else:
                carry = np.where(has_start, with_initial, _combine(op, carry, without_initial))
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
    if chained and after and n:  # on to the next rank that holds elements
        m.ranks.sendrecv(inclusive[:, -1], after[0], None, (K,), dtype)
    out = inclusive
    if exclusive and n:
        fill = reference.identity(op, dtype) if initial is None else dtype.type(initial)
        head = (
            xp.full((K, 1), fill, dtype)
            if carry is None
            else xp.asarray(carry.astype(dtype, copy=False)).reshape(K, 1)
        )
        previous = xp.concatenate([head, inclusive[:, :-1]], axis=1)
        starts = xp.zeros(v.shape, bool) if st is None else st.copy()
        if carry is None:
            starts[:, 0] = True
        out = xp.where(starts, dtype.type(fill), previous)
    if reverse:
        out = out[:, ::-1]
    if axis is None:
        return xp.ascontiguousarray(out).reshape(x.shape)
    return xp.ascontiguousarray(xp.moveaxis(out.reshape(*tail, n), -1, 0))


# --------------------------------------------------------------------------- reductions


def reduce(m: Machine, x, op: str, *, axis):
    """``Machine.reduce`` across ranks (``x`` masked already)."""
    xp = m.xp
    bounds, _ = layout(m, x, "x")
    size = int(bounds[-1]) * math.prod(x.shape[1:])
    m._account("reduce", size, size * x.dtype.itemsize, label="reduce")
    fn = lookup("reduce", m.backend)
    if x.ndim == 0 or (axis is not None and axis > 0):
        return xp.asarray(fn(xp, x, op, axis=axis))
    if op == "add" and x.dtype.kind == "f":
        # The exact sum's limb vectors, added over the ranks in integers (exact, in any
        # order), then rounded once: the one-rank result bit for bit.
        total = m.ranks.allreduce(m.asnumpy(exact_sum.limbs(xp, x, axis)), "add")
        count = size if axis is None else int(bounds[-1])
        shape = () if axis is None else x.shape[1:]
        return xp.asarray(exact_sum.finish(total, x.dtype, count).reshape(shape))
    part = np.asarray(m.asnumpy(fn(xp, x, op, axis=axis)))
    if part.dtype.kind == "f":
        # max, min of floats: the partials folded in rank order (MPI's own reductions do
        # not promise NaN propagation); empty blocks take no part.
        parts = m.ranks.allgather(part if x.shape[0] else None)
        total = None
        for p in parts:
            if p is not None:
                total = p if total is None else _fold_float(op, total, p)
        out = part if total is None else total
    else:
        out = m.ranks.allreduce(part.reshape(-1), op).reshape(part.shape)
    return xp.asarray(out.astype(part.dtype, copy=False))


def _fold_float(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """max or min of two partials, NaN propagating (as the one-rank reduction)."""
    return np.asarray(np.maximum(a, b) if op == "max" else np.minimum(a, b))


def count(m: Machine, mask) -> int:
    """``Machine.count`` across ranks: one ``Allreduce`` of (count, size)."""
    both = np.array([int(m.xp.count_nonzero(mask)), mask.size], dtype=np.int64)
    total, size = (int(v) for v in m.ranks.allreduce(both, "add"))
    m._account("reduce", size, size, label="count")
    return total


def spread(m: Machine, x, axis: int, index: int):
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
    root = int(_owner(bounds, np.array([index]))[0])
    at = index - int(bounds[m.rank])
    row = x[at : at + 1] if m.rank == root else xp.empty((1, *x.shape[1:]), x.dtype)
    row = m.ranks.bcast(row, root)
    return xp.ascontiguousarray(xp.broadcast_to(row, x.shape))


def pack(m: Machine, x, mask):
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


# --------------------------------------------------------------------------- router


def _kept(m: Machine, mask, *arrays):
    """``arrays`` (flat) at the VPs where ``mask`` is set (all without a mask), and the
    flat positions kept (None without a mask): selected where they lie."""
    if mask is None:
        return arrays, None
    keep = m.xp.flatnonzero(mask)
    return tuple(a[keep] for a in arrays), keep


def _span(m: Machine, a) -> tuple[int | None, int | None]:
    """The least and greatest of ``a`` (None, None when empty), in one read back."""
    if not a.size:
        return None, None
    low, high = m.fetch(m.xp.stack([a.min(), a.max()]))[0].tolist()
    return int(low), int(high)


def send(m: Machine, values, dest, mask, out, combine: str, *, new: bool, fill: Any):
    """``Machine.send`` across ranks: messages routed to the owners of their addresses.

    ``values`` and ``dest`` are flat (one per sender), ``out`` this rank's block of the
    destination (already holding ``fill`` when ``new``). A message is one row of bytes
    (its int64 address, then its value), so one ``Alltoallv`` carries both; messages to
    this rank's own block stay where they are.
    """
    xp = m.xp
    (d, v), _ = _kept(m, mask, dest.reshape(-1), values.reshape(-1))
    nbytes = d.nbytes + v.nbytes
    span = _span(m, d)
    bounds, infos = layout(m, out, "the destination", (int(dest.size), nbytes, *span))
    row = math.prod(out.shape[1:])
    size = int(bounds[-1]) * row
    _raise_out_of_range("send destination", size, [i[2] for i in infos], [i[3] for i in infos])
    d = d.astype(np.int64, copy=False)
    order, counts = _by_owner(m, bounds, d // max(row, 1))  # keeps sender order per owner
    value_bytes = np.dtype(out.dtype).itemsize
    messages = xp.concatenate(
        [
            d[order].reshape(-1, 1).view(np.uint8),
            v[order].astype(out.dtype).reshape(-1, 1).view(np.uint8),
        ],
        axis=1,
    )
    got = m.ranks.alltoallv(messages, counts)
    offset = int(bounds[m.rank]) * row
    addresses = xp.ascontiguousarray(got[:, :8]).view(np.int64).reshape(-1) - offset
    received_values = xp.ascontiguousarray(got[:, 8 : 8 + value_bytes]).view(out.dtype)
    if combine == "unique":
        clashes, first = 0, None
        if addresses.size > 1:
            ordered = xp.sort(addresses)
            clash = ordered[1:] == ordered[:-1]
            both = m.fetch(xp.stack([clash.sum(), ordered[1:][clash.argmax()]]))[0]
            clashes, first = int(both[0]), int(both[1]) + offset
        everyone = m.ranks.allgather((clashes, first if clashes else None))
        total = sum(c for c, _ in everyone)
        if total:
            first = min(f for _, f in everyone if f is not None)
            raise CollisionError(
                f"send(combine='unique'): {total} message(s) collided, the first at address {first}"
            )
    m._account("router", sum(i[0] for i in infos), sum(i[1] for i in infos), label="send")
    fn = lookup("send", m.backend)
    flat_dest = addresses
    flat_values = received_values.reshape(-1)
    if not new:
        if not out.flags.c_contiguous:
            out[...] = fn(xp, flat_values, flat_dest, xp.ascontiguousarray(out), combine)
            return out
        return fn(xp, flat_values, flat_dest, out, combine)
    if combine in ("overwrite", "unique"):
        return fn(xp, flat_values, flat_dest, out, combine)
    out[...] = reference.identity(combine, out.dtype)
    out = fn(xp, flat_values, flat_dest, out, combine)
    received = xp.zeros(out.size, dtype=bool)
    received[flat_dest] = True
    return xp.where(received.reshape(out.shape), out, xp.asarray(fill, out.dtype))


def get(m: Machine, source, index, mask, fill: Any):
    """``Machine.get`` across ranks: requests to the owners, answers back (the indices
    this rank's own block answers never leave it)."""
    xp = m.xp
    (asked,), keep = _kept(m, mask, index.reshape(-1))
    span = _span(m, asked)
    bounds, infos = layout(m, source, "source", (int(index.size), *span))
    row = math.prod(source.shape[1:])
    size = int(bounds[-1]) * row
    _raise_out_of_range("get index", size, [i[1] for i in infos], [i[2] for i in infos])
    total = sum(i[0] for i in infos)
    m._account("router", total, total * 16, label="get")
    if size == 0:  # every VP is masked off, or there are none
        return xp.full(index.shape, fill, dtype=source.dtype)
    answers = _fetch(m, source.reshape(-1), bounds * row, asked)
    if keep is None:
        return answers.reshape(index.shape)
    out = xp.full(index.size, fill, dtype=source.dtype)
    out[keep] = answers
    return out.reshape(index.shape)


# --------------------------------------------------------------------------- mesh


def _edge_rows(m: Machine, x, k: int, boundary, first: bool):
    """``k`` rows entering at the border of the mesh (not the torus)."""
    shape = (k, *x.shape[1:])
    if isinstance(boundary, str) and boundary == "edge":
        return m.xp.broadcast_to(x[:1] if first else x[-1:], shape)
    return m.xp.full(shape, 0 if boundary == "zero" else boundary, dtype=x.dtype)


def _shift_rows(m: Machine, x, k: int, bounds: np.ndarray, boundary):
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
            None if succ is None else piece, succ, pred, face, x.dtype, device=_on_device(m)
        )
        border = _edge_rows(m, x, abs(k), boundary, up) if got is None else got
        if up:
            return xp.concatenate([border, x[: n - k]])
        return xp.concatenate([x[-k:], border])
    # A general row fetch: each row's source row, wherever it lies.
    source = xp.arange(lo - k, lo + n - k, dtype=np.int64)
    if mode in ("wrap", "edge"):
        return _fetch(m, x, bounds, source % N if wrap else xp.clip(source, 0, N - 1))
    # The rows that come from inside the mesh: a contiguous run of this block's rows.
    first, last = max(lo - k, 0), min(lo + n - k, N)
    out = _edge_rows(m, x, n, boundary, True).copy()
    if last > first:
        at = first - (lo - k)
        out[at : at + last - first] = _fetch(m, x, bounds, source[at : at + last - first])
    else:
        _fetch(m, x, bounds, source[:0])  # collective: every rank takes part
    return out


def shift(m: Machine, x, offsets: tuple[int, ...], boundary):
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


def shift_rows_uncharged(m: Machine, x, offset: int):
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


def halo_exchange(m: Machine, tiles, heights, widths, width: int, boundary):
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
        shape, dev = (C, BH, BW), _on_device(m)
        last = None if succ is None else tiles[-1]
        got_above = m.ranks.sendrecv(last, succ, pred, shape, tiles.dtype, device=dev)
        first = None if pred is None else tiles[0]
        got_below = m.ranks.sendrecv(first, pred, succ, shape, tiles.dtype, device=dev)
        ghosts = [None if g is None else g[None] for g in (got_above, got_below)]
    else:  # an empty block between: fetch the two PE rows from wherever they lie
        wanted = [g for g in (above, below) if g is not None]
        fetched = _fetch(m, tiles, bounds, np.array(wanted, dtype=np.int64))
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


# --------------------------------------------------------------------------- statistics


def stats_across_ranks(m: Machine, mine: Stats) -> Stats:
    """Every rank's phases together (collective): wall and comm wall of the slowest rank,
    messages and bytes summed, the rest (the same on every rank) from the first rank that
    has the phase; the union of the phase paths."""
    everyone = m.ranks.allgather(mine.phases)
    merged: dict[str, PhaseStats] = {}
    for phases in everyone:
        for path, p in phases.items():
            if path not in merged:
                merged[path] = deepcopy(p)
                merged[path].messages = merged[path].message_bytes = 0
                merged[path].wall = merged[path].comm_wall = 0.0
            total = merged[path]
            total.wall = max(total.wall, p.wall)
            total.comm_wall = max(total.comm_wall, p.comm_wall)
            total.messages += p.messages
            total.message_bytes += p.message_bytes
    return Stats(phases=merged, machine=mine.machine, clock_hz=mine.clock_hz)
