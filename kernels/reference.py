"""Reference implementation of the instruction set, written once against ``xp``.

Every function takes the array namespace ``xp`` (``numpy`` or ``cupy``) first and works on
plain arrays of that namespace. These functions are the NumPy backend of the machine and
the oracle that the GPU kernels are tested against, so they favour clarity and exactness
over speed; where NumPy has a fast exact primitive (``cumsum``, ``ufunc.accumulate``) it is
used, otherwise the scans fall back to the Hillis-Steele doubling scan, which works for
every associative operator and for segmented scans alike.

Arguments are validated by the machine (``simd.machine``); these functions assume valid
input.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kernels.exact_sum import exact_sum

__all__ = [
    "OPS",
    "SCAN_DTYPES",
    "VALUE_DTYPES",
    "NO_BOUNDS",
    "accumulator",
    "fold_bounds",
    "get",
    "halo_exchange",
    "identity",
    "reduce",
    "scan",
    "send",
    "shift",
]

#: Scan and reduce operators. ``copy`` is the copy-scan (broadcast of a segment's first
#: element in scan direction); it has no identity and no reduction.
OPS = ("add", "max", "min", "and", "or", "xor", "copy")

#: Element types the GPU's scan kernels are compiled for; every backend's scan and reduce
#: take all of ``VALUE_DTYPES`` (the CuPy backend runs the others on the reference).
SCAN_DTYPES = (np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.float32), np.dtype(np.float64))

#: Element types of scans and reductions: bool, every integer type and float32/float64.
VALUE_DTYPES = tuple(
    np.dtype(t)
    for t in (
        np.bool_,
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.uint8,
        np.uint16,
        np.uint32,
        np.uint64,
        np.float32,
        np.float64,
    )
)

_UFUNC_NAMES = {
    "add": "add",
    "max": "maximum",
    "min": "minimum",
    "and": "bitwise_and",
    "or": "bitwise_or",
    "xor": "bitwise_xor",
}


def identity(op: str, dtype: Any) -> Any:
    """The identity element of ``op`` for ``dtype`` (a NumPy scalar).

    Examples
    --------
    >>> identity("max", np.int32)
    np.int32(-2147483648)
    >>> identity("and", bool)
    np.True_
    >>> identity("and", np.uint8), identity("and", np.int16)
    (np.uint8(255), np.int16(-1))
    """
    dtype = np.dtype(dtype)
    kind = dtype.kind
    if op in ("add", "or", "xor", "copy"):
        return dtype.type(0)
    if op == "and":
        # All bits set: -1 for signed types, the maximum for unsigned ones, True for bool.
        return np.invert(dtype.type(0))
    if op == "max":
        if kind == "f":
            return dtype.type(-np.inf)
        return dtype.type(False) if kind == "b" else dtype.type(np.iinfo(dtype).min)
    if op == "min":
        if kind == "f":
            return dtype.type(np.inf)
        return dtype.type(True) if kind == "b" else dtype.type(np.iinfo(dtype).max)
    raise ValueError(f"unknown operator {op!r}; expected one of {', '.join(OPS)}")


def accumulator(op: str, dtype: Any) -> np.dtype:
    """The dtype of a scan or reduction of ``dtype`` values with ``op``.

    ``add`` follows NumPy's accumulation rule (``numpy.sum`` / ``numpy.cumsum``) for the
    types narrower than the machine's 32-bit word: bool and signed integers of 8 and 16
    bits accumulate in int64, unsigned ones in uint64. 32- and 64-bit integers and floats
    keep their type (an int32 sum wraps modulo 2**32, as in C and CUB; NumPy would widen
    it to int64). Every other operator keeps the type.

    Examples
    --------
    >>> accumulator("add", np.uint8), accumulator("add", bool), accumulator("add", np.int32)
    (dtype('uint64'), dtype('int64'), dtype('int32'))
    >>> accumulator("max", np.uint8)
    dtype('uint8')
    """
    dtype = np.dtype(dtype)
    if op != "add":
        return dtype
    if dtype.kind == "b" or (dtype.kind == "i" and dtype.itemsize < 4):
        return np.dtype(np.int64)
    if dtype.kind == "u" and dtype.itemsize < 4:
        return np.dtype(np.uint64)
    return dtype


def _combine(xp, op: str, a, b):
    return getattr(xp, _UFUNC_NAMES[op])(a, b)


def _doubling_scan(xp, op: str, v, starts):
    """Inclusive segmented scan of each row of ``v`` by recursive doubling.

    Hillis & Steele's data-parallel prefix (CACM 1986) with Schwartz's segment flags:
    after the step of distance ``d`` every element holds the combination of the at most
    ``2d`` elements ending at it that lie in its own segment. ``starts`` is True at segment
    starts and is never None here (each row's first element is a start).
    """
    v = v.copy()
    f = starts.copy()
    n = v.shape[-1]
    d = 1
    while d < n:
        combined = _combine(xp, op, v[..., :-d], v[..., d:])
        new_v = xp.where(f[..., d:], v[..., d:], combined)
        f_tail = f[..., d:] | f[..., :-d]
        v[..., d:] = new_v
        f[..., d:] = f_tail
        d *= 2
    return v


def _inclusive_rows(xp, op: str, x, starts):
    """Inclusive forward scan along the last axis of a 2-D array ``x``.

    ``starts`` is None (each row is one segment) or a bool array like ``x`` that is True at
    the first element of every segment (and at column 0).
    """
    n = x.shape[-1]
    if n == 0:
        return x.copy()
    if op == "copy":
        if starts is None:
            return xp.broadcast_to(x[:, :1], x.shape).copy()
        # Index of each element's segment start: a running max of the start positions.
        positions = xp.where(starts, xp.arange(n, dtype=np.int64)[None, :], 0)
        head = _inclusive_rows(xp, "max", positions, None)
        return xp.take_along_axis(x, head, axis=1)
    if starts is None:
        if op == "add":
            return xp.cumsum(x, axis=1, dtype=x.dtype)
        if xp is np:
            return getattr(np, _UFUNC_NAMES[op]).accumulate(x, axis=1)
        starts = xp.zeros(x.shape, dtype=bool)
        starts[:, 0] = True
        return _doubling_scan(xp, op, x, starts)
    if op == "add" and x.dtype.kind in "iu":
        # Exact for integers (two's-complement wrap-around cancels): the running sum minus
        # the running sum just before the segment's start.
        total = xp.cumsum(x, axis=1, dtype=x.dtype)
        before = total - x
        positions = xp.where(starts, xp.arange(n, dtype=np.int64)[None, :], 0)
        head = _inclusive_rows(xp, "max", positions, None)
        return total - xp.take_along_axis(before, head, axis=1)
    return _doubling_scan(xp, op, x, starts)


def scan(
    xp,
    x,
    op: str = "add",
    *,
    exclusive: bool = False,
    reverse: bool = False,
    segments=None,
    axis: int | None = None,
    initial=None,
):
    """Scan (parallel prefix) of ``x`` with ``op``; see ``simd.Machine.scan``.

    Parameters
    ----------
    xp : module
        ``numpy`` or ``cupy``.
    x : array
        Values, of a dtype in ``VALUE_DTYPES`` (bool only with the logical operators and
        copy; the machine widens to ``accumulator(op, dtype)`` first).
    op : str
        One of ``OPS``.
    exclusive, reverse : bool
        Exclusive form (each element gets the combination of the elements before it in
        scan direction, ``initial`` at a segment's start), and scanning from the end.
    segments : bool array like ``x`` or None
        True at the first element, in index order, of every segment.
    axis : int or None
        Scan along this axis; None scans the whole array in C order.
    initial : scalar or None
        Combined in at every segment start, as in C++'s ``inclusive_scan`` and
        ``exclusive_scan`` with an initial value; defaults to the identity of ``op`` (0 for
        an exclusive copy, which puts it at the segment's start).

    Returns
    -------
    array
        Same shape and dtype as ``x``.

    Examples
    --------
    >>> scan(np, np.array([3, 1, 4, 1, 5]), "add", exclusive=True)
    array([0, 3, 4, 8, 9])
    >>> flags = np.array([True, False, True, False, False])
    >>> scan(np, np.array([3, 1, 4, 1, 5]), "max", segments=flags, reverse=True)
    array([3, 1, 5, 5, 5])
    """
    if x.size == 0:
        return x.copy()
    rows, starts, restore = to_rows(xp, x, segments, axis)
    n = rows.shape[-1]
    if starts is not None:
        starts = starts.copy()
        starts[:, 0] = True
    if reverse:
        rows = rows[:, ::-1]
        if starts is not None:
            # A segment's start in reverse direction is its last element in index order.
            last = xp.zeros_like(starts)
            last[:, :-1] = starts[:, 1:]
            last[:, -1] = True
            starts = last[:, ::-1]
    out = _inclusive_rows(xp, op, xp.ascontiguousarray(rows), starts)
    if initial is not None and op != "copy":
        out = _combine(xp, op, x.dtype.type(initial), out).astype(x.dtype, copy=False)
    if exclusive and n > 0:
        fill = identity(op, x.dtype) if initial is None else x.dtype.type(initial)
        shifted = xp.empty_like(out)
        shifted[:, 0] = fill
        shifted[:, 1:] = out[:, :-1]
        if starts is not None:
            shifted = xp.where(starts, x.dtype.type(fill), shifted)
        out = shifted
    if reverse:
        out = out[:, ::-1]
    return restore(out)


def to_rows(xp, x, segments, axis):
    """``x`` (and ``segments``) as C-contiguous 2-D rows to scan, and the way back.

    With ``axis=None`` the whole array is one row in C order; otherwise every line along
    ``axis`` is a row. Returns ``(rows, starts, restore)`` where ``restore(out_rows)`` gives
    an array shaped like ``x``.
    """
    shape = x.shape
    if axis is None:
        rows = x.reshape(1, -1)
        starts = None if segments is None else segments.reshape(1, -1)

        def restore(out):
            return xp.ascontiguousarray(out).reshape(shape)

        return xp.ascontiguousarray(rows), starts, restore
    moved = xp.moveaxis(x, axis, -1)
    moved_shape = moved.shape
    rows = xp.ascontiguousarray(moved).reshape(-1, moved_shape[-1])
    starts = None
    if segments is not None:
        starts = xp.ascontiguousarray(xp.moveaxis(segments, axis, -1)).reshape(rows.shape)

    def restore(out):
        return xp.ascontiguousarray(xp.moveaxis(out.reshape(moved_shape), -1, axis))

    return rows, starts, restore


def reduce(xp, x, op: str = "add", *, axis: int | None = None):
    """Reduction of ``x`` with ``op`` (not ``copy``) over ``axis`` (None: everything).

    The result has the dtype ``accumulator(op, x.dtype)`` and is an array of ``xp``: 0-d
    for ``axis=None``. An empty reduction gives the identity of ``op``. A float ``add`` is
    correctly rounded (``kernels.exact_sum``: the exact sum rounded once, the same in any
    order, on any backend and over any split of the data), where ``numpy.sum`` adds
    pairwise and CuPy in tree order.

    Examples
    --------
    >>> reduce(np, np.array([[1, 2], [3, 4]]), "max", axis=0)
    array([3, 4])
    >>> reduce(np, np.array([200, 100], dtype=np.uint8), "add")
    array(300, dtype=uint64)
    >>> reduce(np, np.array([1e16, 1.0, 1.0, -1e16]), "add")    # numpy.sum: 0.0
    array(2.)
    """
    dtype = accumulator(op, x.dtype)
    if x.size == 0 or (axis is not None and x.shape[axis] == 0):
        out_shape = () if axis is None else tuple(s for i, s in enumerate(x.shape) if i != axis)
        return xp.full(out_shape, identity(op, dtype), dtype=dtype)
    if op == "add" and dtype.kind == "f":
        out = exact_sum(xp, x, axis=axis)
    elif op == "add":
        out = xp.sum(x, axis=axis, dtype=dtype)
    elif op == "max":
        out = xp.max(x, axis=axis)
    elif op == "min":
        out = xp.min(x, axis=axis)
    else:
        # Bitwise reductions: the last element of an inclusive scan.
        flat_axis = axis
        if axis is None:
            x = x.reshape(-1)
            flat_axis = 0
        total = scan(xp, x, op, axis=flat_axis)
        out = xp.take(total, -1, axis=flat_axis)
    return xp.asarray(out)


def send(xp, values, dest, out, combine: str, *, mask=None, bounds=None):
    """Router put: combine ``values[i]`` into ``out.flat[dest[i]]``, in place.

    ``dest`` is a flat int64 index per message, in range or negative: a message to a
    negative address is dropped (indexed, -1 would be the last element). Messages to one
    address are combined in sender order (so a float ``add`` is deterministic);
    ``overwrite`` keeps the message of the highest sender index; ``combine`` is one of
    overwrite, add, max, min, and, or. The caller has already checked ``unique`` sends for
    collisions. ``mask`` (a bool per message, optional): only the messages where it is
    True are sent. ``bounds`` (optional, as :func:`fold_bounds` takes it): the machine's
    deferred range check of the addresses sent, folded in as the GPU kernels fold it.

    Examples
    --------
    >>> out = np.zeros(3, dtype=np.int64)
    >>> send(np, np.array([5, 7, 1]), np.array([2, 2, 0]), out, "add")
    array([ 1,  0, 12])
    >>> send(np, np.array([5, 7, 1]), np.array([2, -1, 0]), out, "add")  # 7 is dropped
    array([ 2,  0, 17])
    >>> send(np, np.array([5, 7, 1]), np.array([2, 1, 0]), out, "add",
    ...      mask=np.array([True, False, True]))
    array([ 3,  0, 22])
    """
    if bounds is not None:
        fold_bounds(xp, dest, mask, bounds)
    if mask is not None:
        dest = xp.where(mask, dest, -1)
    flat = out.reshape(-1)
    if dest.size == 0:
        return out
    order = xp.argsort(dest, kind="stable")
    d_sorted = dest[order]
    v_sorted = values[order].astype(out.dtype, copy=False)
    last = xp.ones(d_sorted.shape, dtype=bool)
    last[:-1] = d_sorted[:-1] != d_sorted[1:]
    last &= d_sorted >= 0  # the dropped messages (see above)
    if combine in ("overwrite", "unique"):
        flat[d_sorted[last]] = v_sorted[last]
        return out
    first = xp.ones(d_sorted.shape, dtype=bool)
    first[1:] = d_sorted[1:] != d_sorted[:-1]
    combined = scan(xp, v_sorted, combine, segments=first)[last]
    targets = d_sorted[last]
    flat[targets] = _combine(xp, combine, flat[targets], combined)
    return out


def get(xp, source, index, *, mask=None, fill=None, bounds=None):
    """Router get: ``source.flat[index]`` for in-range int64 indices; ``fill`` (a scalar of
    ``source``'s dtype) where ``mask`` (optional) is False. ``bounds``: as in :func:`send`.

    Examples
    --------
    >>> get(np, np.array([10, 20, 30]), np.array([2, 0, 9]), mask=np.array([1, 1, 0], bool),
    ...     fill=np.int64(-1))
    array([30, 10, -1])
    """
    if bounds is not None:
        fold_bounds(xp, index, mask, bounds)
    if mask is None:
        return source.reshape(-1)[index]
    out = source.reshape(-1)[xp.where(mask, index, 0)]  # masked off: a valid address
    return xp.where(mask, out, source.dtype.type(fill))  # a scalar: no copy to the device


#: The (least, greatest) address of a deferred range check that has seen none (int64):
#: the values its row holds before an instruction folds its addresses in.
NO_BOUNDS = (np.iinfo(np.int64).max, np.iinfo(np.int64).min)


def fold_bounds(xp, index, mask, bounds) -> None:
    """Fold the least and greatest of ``index`` (where ``mask``, if given) into the row
    ``row`` of the int64 table ``table`` (``bounds = (table, row)``), on the device.

    The machine's deferred address checks (``simd.transfers``) keep a row per instruction,
    holding :data:`NO_BOUNDS` until an instruction folds its addresses in; the GPU's router
    kernels fold them as they go; this does the same with array operations.

    Examples
    --------
    >>> table = np.array([NO_BOUNDS, NO_BOUNDS])
    >>> fold_bounds(np, np.array([4, -2, 9]), np.array([True, True, False]), (table, 1))
    >>> table[1].tolist()
    [-2, 4]
    """
    if index.size == 0:
        return
    table, row = bounds
    low, high = index, index
    if mask is not None:
        low = xp.where(mask, index, NO_BOUNDS[0])
        high = xp.where(mask, index, NO_BOUNDS[1])
    table[row, 0] = xp.minimum(table[row, 0], low.min())
    table[row, 1] = xp.maximum(table[row, 1], high.max())


def _boundary_take(xp, x, positions, axis: int, boundary):
    """Take ``positions`` along ``axis``; positions outside [0, n) follow ``boundary``."""
    n = x.shape[axis]
    if boundary == "wrap":
        return xp.take(x, positions % n, axis=axis)
    clipped = xp.clip(positions, 0, n - 1)
    taken = xp.take(x, clipped, axis=axis)
    if boundary == "edge":
        return taken
    fill = 0 if boundary == "zero" else boundary
    inside = (positions >= 0) & (positions < n)
    shape = [1] * x.ndim
    shape[axis] = positions.shape[0]
    return xp.where(inside.reshape(shape), taken, xp.asarray(fill, dtype=x.dtype))


def shift(xp, x, offsets: tuple[int, ...], boundary="wrap"):
    """Mesh shift with ``numpy.roll`` semantics: ``out[i] = x[i - offsets]``.

    ``offsets`` has one entry per axis of ``x``; positions that come from outside the
    mesh take the ``boundary``: "wrap" (torus), "zero", "edge" (nearest border element)
    or a constant.

    Examples
    --------
    >>> shift(np, np.arange(5), (2,), "zero")
    array([0, 0, 0, 1, 2])
    >>> shift(np, np.arange(5), (-1,), "edge")
    array([1, 2, 3, 4, 4])
    """
    out = x
    for axis, k in enumerate(offsets):
        if k == 0 or x.shape[axis] == 0:
            continue
        out = _shift_axis(xp, out, int(k), axis, boundary)
    return out.copy() if out is x else out


def _shift_axis(xp, x, k: int, axis: int, boundary):
    """Shift along one axis by slicing (one copy), the border filled by ``boundary``."""
    n = x.shape[axis]
    if boundary == "wrap":
        return xp.roll(x, k, axis=axis)
    k = max(-n, min(n, k))

    def cut(start, stop):
        index = [slice(None)] * x.ndim
        index[axis] = slice(start, stop)
        return tuple(index)

    out = xp.empty_like(x)
    # Data moves by k; the |k| positions it leaves empty take the boundary.
    moved, empty, edge = (
        (cut(k, n), cut(0, k), cut(0, 1))
        if k > 0
        else (cut(0, n + k), cut(n + k, n), cut(n - 1, n))
    )
    out[moved] = x[cut(0, n - k) if k > 0 else cut(-k, n)]
    if boundary == "edge":
        out[empty] = x[edge]
    else:
        out[empty] = 0 if boundary == "zero" else boundary
    return out


def halo_exchange(xp, tiles, heights, widths, width: int = 1, boundary="edge"):
    """Tiles of an orthogonal decomposition with a halo of their 8 neighbours' edges.

    PE ``(r, c)`` of an ``R x C`` mesh holds ``heights[r] x widths[c]`` grid points at the
    top-left of its buffer ``tiles[r, c]``; the blocks tile a ``sum(heights) x
    sum(widths)`` grid in row-major PE order. The result has room for ``width`` extra
    points on each side; each PE's tile sits at ``[width:width+h, width:width+w]`` with the
    neighbours' edge points around it (zeros beyond the valid region). At the mesh border
    the grid is extended by ``boundary`` ("edge" replicates the border: zero flux).

    This oracle assembles the global grid, pads it and cuts every PE's window out again,
    which equals a neighbour exchange as long as ``width`` is at most every tile's size.
    """
    R, C, BH, BW = tiles.shape
    heights_np = np.asarray(heights, dtype=np.int64)
    widths_np = np.asarray(widths, dtype=np.int64)
    row_off = np.concatenate([[0], np.cumsum(heights_np)])
    col_off = np.concatenate([[0], np.cumsum(widths_np)])
    H, W = int(row_off[-1]), int(col_off[-1])
    # Global point (g, h) lives in PE row r(g), local row g - row_off[r(g)].
    pe_row = np.searchsorted(row_off[1:], np.arange(H), side="right")
    pe_col = np.searchsorted(col_off[1:], np.arange(W), side="right")
    local_row = np.arange(H) - row_off[pe_row]
    local_col = np.arange(W) - col_off[pe_col]
    grid = tiles[
        xp.asarray(pe_row)[:, None],
        xp.asarray(pe_col)[None, :],
        xp.asarray(local_row)[:, None],
        xp.asarray(local_col)[None, :],
    ]
    # Window of PE (r, c) in padded coordinates starts at (row_off[r], col_off[c]).
    span_r = np.arange(BH + 2 * width)
    span_c = np.arange(BW + 2 * width)
    rows = row_off[:-1, None] + span_r[None, :] - width
    cols = col_off[:-1, None] + span_c[None, :] - width
    grid_rows = _boundary_take(xp, grid, xp.asarray(rows.reshape(-1)), 0, boundary)
    windows = _boundary_take(xp, grid_rows, xp.asarray(cols.reshape(-1)), 1, boundary)
    windows = windows.reshape(R, BH + 2 * width, C, BW + 2 * width).transpose(0, 2, 1, 3)
    valid_r = span_r[None, :] < heights_np[:, None] + 2 * width
    valid_c = span_c[None, :] < widths_np[:, None] + 2 * width
    valid = xp.asarray(valid_r[:, None, :, None] & valid_c[None, :, None, :])
    return xp.where(valid, windows, xp.zeros((), dtype=tiles.dtype))
