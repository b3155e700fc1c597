"""Numba-compiled CPU kernels for the NumPy backend: one-pass scans and router sends.

The reference scans (``kernels.reference``) are exact but use the Hillis-Steele doubling
scan for segmented and non-additive forms, ``log2(n)`` passes over the data, and the
reference send sorts its messages. A CPU runs the plain serial algorithms much faster:
one left-to-right (or right-to-left) pass per row for every scan form (Blelloch's
sequential definition of the scan, 1990, with segment flags), and one pass over the
messages for a combining send (sender order, so ``overwrite`` keeps the highest sender and
float sums are deterministic). Numba is a core dependency, so these serve every NumPy
installation; ``SIMD_FORCE_REFERENCE=1`` switches them off.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.extending import overload

from kernels import reference
from kernels.compiles import watch
from kernels.registry import register

__all__ = ["WARM_DTYPES", "scan", "send", "warm_up"]

watch()  # their compiles timed and, past a second, announced

_OP_CODES = {"add": 0, "max": 1, "min": 2, "and": 3, "or": 4, "xor": 5, "copy": 6}
_COMBINE_CODES = {"overwrite": 7, "unique": 7, "add": 0, "max": 1, "min": 2, "and": 3, "or": 4}


def _apply(code, a, b):
    """``a op b`` for an operator code; compiled per element type by the overload below."""


@overload(_apply)
def _apply_typed(code, a, b):
    # Bitwise operators exist for integers and bools only, so floats get their own body.
    if isinstance(a, types.Float):

        def arithmetic(code, a, b):
            # max and min propagate NaN as numpy.maximum / minimum do (a NaN operand gives
            # NaN): `a >= b` alone is False for a NaN `a` and would drop it.
            if code == 0:
                return a + b
            if code == 1:
                return a if (a >= b or a != a) else b
            if code == 2:
                return a if (a <= b or a != a) else b
            return b  # overwrite

        return arithmetic

    def integral(code, a, b):
        if code == 0:
            return a + b
        if code == 1:
            return a if a >= b else b
        if code == 2:
            return a if a <= b else b
        if code == 3:
            return a & b
        if code == 4:
            return a | b
        if code == 5:
            return a ^ b
        return b  # overwrite

    return integral


@numba.njit(cache=True, nogil=True)
def _scan_rows(rows, starts, has_starts, code, exclusive, reverse, has_initial, fill, out):
    """Serial segmented scan of every row.

    ``starts`` marks segment starts in *scan direction* (the caller converts index-order
    flags for a reverse scan). ``fill`` is both what an exclusive scan puts at a segment's
    start and, with ``has_initial``, the initial value combined in front of each segment
    (the two are the same value: ``initial``, or the operator's identity). The loop walks
    the row once in scan direction.
    """
    n_rows, n = rows.shape
    step = -1 if reverse else 1
    first = n - 1 if reverse else 0
    for r in range(n_rows):
        acc = fill
        i = first
        for k in range(n):
            v = rows[r, i]
            start = k == 0 or (has_starts and starts[r, i])
            if code == 6:  # copy: the segment's first element in scan direction
                if start:
                    acc = v
                    out[r, i] = fill if exclusive else v
                else:
                    out[r, i] = acc
            elif start:
                acc = _apply(code, fill, v) if has_initial else v
                out[r, i] = fill if exclusive else acc
            else:
                before = acc
                acc = _apply(code, acc, v)
                out[r, i] = before if exclusive else acc
            i += step


@register("scan", "numpy")
def scan(
    xp, x, op="add", *, exclusive=False, reverse=False, segments=None, axis=None, initial=None
):
    """One-pass serial scan of every row; same contract as ``kernels.reference.scan``."""
    if x.size == 0:
        return x.copy()
    rows, starts, restore = reference.to_rows(np, x, segments, axis)
    has_starts = starts is not None
    if not has_starts:
        starts = np.zeros((1, 1), dtype=np.bool_)
    elif reverse:
        # A segment's start in reverse direction is its last element in index order.
        last = np.empty_like(starts)
        last[:, :-1] = starts[:, 1:]
        last[:, -1] = True
        starts = last
    # The value at a segment's start of an exclusive scan, and what is combined in front.
    fill = reference.identity(op, x.dtype) if initial is None else x.dtype.type(initial)
    out = np.empty_like(rows)
    _scan_rows(
        rows,
        np.ascontiguousarray(starts),
        has_starts,
        _OP_CODES[op],
        bool(exclusive),
        bool(reverse),
        initial is not None and op != "copy",
        fill,
        out,
    )
    return restore(out)


@numba.njit(cache=True, nogil=True)
def _send_serial(values, dest, flat, code):
    for i in range(dest.shape[0]):
        d = dest[i]
        flat[d] = _apply(code, flat[d], values[i])


@register("send", "numpy")
def send(xp, values, dest, out, combine):
    """Router put in sender order; same contract as ``kernels.reference.send``."""
    if dest.size == 0:
        return out
    flat = out.reshape(-1)  # a view: the machine passes a C-contiguous destination
    _send_serial(
        np.ascontiguousarray(values, dtype=out.dtype),
        np.ascontiguousarray(dest),
        flat,
        _COMBINE_CODES[combine],
    )
    return out


#: The value dtypes whose kernels :func:`warm_up` compiles, or loads from Numba's on-disk
#: cache: those of addresses, counts, flags and coordinates.
WARM_DTYPES = (np.int64, np.int32, np.float64, np.float32, np.bool_)


def warm_up() -> None:
    """Compile (first run after an install: about a second per kernel) or load from Numba's
    cache (milliseconds) the scan and send kernels for :data:`WARM_DTYPES`, so that the
    first instructions of a program do not carry it. Any other dtype compiles on its first
    call, once per installation."""
    for dtype in WARM_DTYPES:
        x = np.zeros(2, dtype=dtype)
        scan(np, x, "max", exclusive=True, initial=0)
        send(np, x, np.zeros(2, dtype=np.int64), np.zeros(2, dtype=dtype), "max")
