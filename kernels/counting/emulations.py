"""NumPy emulations of the CuPy backend's own kernels, for the counting stand-in.

The look-back scan of :mod:`kernels.cupy_scan`, the router kernels of
:mod:`kernels.cupy_router` and the Numba shift and halo kernels of
:mod:`kernels.numba_shift`, each registered by kernel name with
:func:`kernels.fastpaths.emulates` and computed by the reference implementations
(:mod:`kernels.reference`). Each takes ``(variant, args)``: what the stand-in recognised
the kernel's source as (:func:`variant_of_source`), and the launch's arguments, device
arrays as NumPy arrays, whose outputs it writes in place. The programs' kernels register
their emulations beside their own code.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from kernels import cuda_router_source as _router_src
from kernels import cuda_scan_source as _scan_src
from kernels import reference
from kernels.fastpaths import emulates

__all__ = ["variant_of_source"]


@functools.cache
def variant_of_source(code: str) -> Any:
    """What a ``RawModule``'s source is: ``("scan", op, dtype, pairs)`` for a scan module
    of :mod:`kernels.cuda_scan_source`, ``("router", combine, dtype)`` for a router module
    of :mod:`kernels.cuda_router_source` and ``("get", itemsize)`` for its get module,
    None for any other.

    Examples
    --------
    >>> variant_of_source(_router_src.router_source("add", "int64"))
    ('router', 'add', dtype('int64'))
    >>> variant_of_source("extern \\"C\\" __global__ void k() {}") is None
    True
    """
    for op, dtype, pairs in _scan_src.all_variants():
        if _scan_src.scan_source(op, dtype, pairs=pairs) == code:
            return ("scan", op, np.dtype(dtype), pairs)
    for combine, dtype in _router_src.all_variants():
        if _router_src.router_source(combine, dtype) == code:
            return ("router", combine, np.dtype(dtype))
    for itemsize in _router_src.GET_ITEMSIZES:
        if _router_src.gather_source(itemsize) == code:
            return ("get", itemsize)
    return None


@emulates(_scan_src.INIT_KERNEL)
def _scan_init(variant: Any, args: tuple) -> None:
    pass  # resets the look-back tile states: nothing to emulate


@emulates(_scan_src.SCAN_KERNEL)
def _scan(variant: Any, args: tuple) -> None:
    buf, flags, out, n, row_len, fill, form = args[:7]
    _, op, dtype, _pairs = variant
    # One row is the whole buffer: scanned as it is (axis=None), without moving axes.
    one_row = int(row_len) == buf.size
    rows = buf if one_row else buf.reshape(-1, int(row_len))
    segments = None
    if form & _scan_src.FORM_SEGMENTED:
        segments = flags.reshape(rows.shape).astype(bool)
    exclusive = bool(form & _scan_src.FORM_EXCLUSIVE)
    result = reference.scan(
        np,
        rows,
        op,
        exclusive=exclusive,
        reverse=bool(form & _scan_src.FORM_REVERSE),
        segments=segments,
        axis=None if one_row else 1,
        # The kernel puts `fill` at the heads of an exclusive scan even without
        # FORM_INITIAL (an exclusive copy's initial; otherwise the identity).
        initial=fill if form & _scan_src.FORM_INITIAL or exclusive else None,
    )
    out[...] = result.reshape(out.shape)


def _sent(dest: np.ndarray, mask: Any, size: Any) -> tuple[np.ndarray, np.ndarray]:
    """The messages the router kernels check (the senders) and those they deliver (the
    senders addressed inside the destination)."""
    senders = np.ones(dest.shape, dtype=bool) if mask is None else mask.astype(bool)
    return senders, senders & (dest >= 0) & (dest < int(size))


def _fold(bounds: Any, row: Any, addresses: np.ndarray) -> None:
    """The kernels' fold of the checked addresses into the deferred check's row."""
    if bounds is None or addresses.size == 0:
        return
    b = bounds.reshape(-1, 2)[int(row)]
    b[0] = min(int(b[0]), int(addresses.min()))
    b[1] = max(int(b[1]), int(addresses.max()))


_INT_AT = {
    "add": np.add,
    "max": np.maximum,
    "min": np.minimum,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
}


@emulates(_router_src.SEND_KERNEL)
def _router_send(variant: Any, args: tuple) -> None:
    values, dest, mask, flat, n, size, bounds, row = args
    senders, keep = _sent(dest, mask, size)
    _fold(bounds, row, dest[senders])
    combine = variant[1]
    if flat.dtype.kind in "iu" and combine in _INT_AT:
        # Integer combines are exact in any order: one ufunc.at, as the atomics do it.
        _INT_AT[combine].at(flat, dest[keep], values[keep])
        return
    flat[...] = reference.send(np, values[keep], dest[keep], flat.copy(), combine)


@emulates(_router_src.WINNER_KERNEL)
def _router_winner(variant: Any, args: tuple) -> None:
    dest, mask, winner, tag, n, size, bounds, row = args
    senders, keep = _sent(dest, mask, size)
    _fold(bounds, row, dest[senders])
    tags = np.uint64(tag) | np.arange(int(n), dtype=np.uint64)
    np.maximum.at(winner, dest[keep], tags[keep])


@emulates(_router_src.WRITE_KERNEL)
def _router_write(variant: Any, args: tuple) -> None:
    values, dest, mask, winner, tag, flat, n, size = args
    _, keep = _sent(dest, mask, size)
    tags = np.uint64(tag) | np.arange(int(n), dtype=np.uint64)
    won = np.zeros(dest.shape, dtype=bool)
    won[keep] = winner[dest[keep]] == tags[keep]
    flat[dest[won]] = values[won]


@emulates(_router_src.GET_KERNEL)
def _router_get(variant: Any, args: tuple) -> None:
    source, index, mask, fill, out, n, size, bounds, row = args
    readers = np.ones(index.shape, dtype=bool) if mask is None else mask.astype(bool)
    _fold(bounds, row, index[readers])
    words = np.dtype(f"u{variant[1]}")
    got = source.reshape(-1).view(words)[index % int(size)]  # wrapped as CuPy's take
    got[~readers] = fill
    out.view(words)[...] = got.reshape(out.shape)


_SHIFT_MODES = {0: "wrap", 2: "edge"}  # kernels.numba_shift's _WRAP, _EDGE; 1 is a fill


@emulates("numba_shift.shift3")
def _shift3(variant: Any, args: tuple) -> None:
    src, out, inner, d_c, mid, d_r, mode, fill = args
    outer, rows, length = src.shape
    grid = src.reshape(outer, rows // mid, mid, length // inner, inner)
    boundary = _SHIFT_MODES.get(int(mode), fill)
    moved = reference.shift(np, grid, (0, int(d_r), 0, int(d_c), 0), boundary)
    out[...] = moved.reshape(out.shape)


@emulates("numba_shift.halo")
def _halo(variant: Any, args: tuple) -> None:
    tiles, heights, widths, out, width, mode, fill = args
    boundary = _SHIFT_MODES.get(int(mode), fill)
    out[...] = reference.halo_exchange(np, tiles, heights, widths, int(width), boundary)
