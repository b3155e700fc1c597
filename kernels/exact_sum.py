"""Correctly rounded float sums, exact in integer arithmetic and independent of order.

A float32 or float64 value is an integer times a power of two: ``M * 2**(s + emin)`` with
``M`` its significand (the implicit bit included, ``M < 2**24`` or ``2**53``), ``s >= 0``
from its exponent and ``emin`` the exponent of the least subnormal (-149 or -1074). So every
value of a dtype is an integer number of units of ``2**emin``: ``M << s``, at most 277 or
2098 bits. That integer is cut into 32-bit limbs, each value adding ``M << (s % 32)`` (two
limbs for float32, three for float64) at limb ``s // 32``; each limb is summed in 64-bit
integers, which is exact and therefore the same in any order, on any backend and over any
split of the data (ranks combine their limb vectors with an integer ``Allreduce``). The
host then rounds the exact sum once to the dtype (round half to even, overflow to
infinity), with Python integers.

A limb sums at most :data:`CHUNK` values (each adds less than ``2**33`` to it, so the sum
stays within int64) before a carry step brings every limb back under ``2**33`` in
magnitude; the top limbs leave room for ``2**63`` values. After the last carry step the
limb vectors of ``2**30`` ranks can be added without overflow.

Special values are counted in four bins after the limbs: NaN, +inf, -inf and -0.0. Any
NaN, or +inf with -inf, gives NaN; else an infinity gives itself; a sum of only -0.0 is
-0.0, an exact zero otherwise +0.0 (IEEE round to nearest); an empty sum is +0.0.

Costs: about 20 array operations per value, two or three of them ``add.at`` scatters
(the CuPy code path: 44 launches for float32, 51 for float64), one read back of the limb
vectors (``8 * width`` bytes per output element), then Python integer work on the host,
about 10 us per output element. NumPy's pairwise ``sum`` is some hundred times faster;
this is the price of the same bits everywhere. On a GPU the scatters are atomics into a
few addresses: exact, but serialised where values share an exponent range.

Examples
--------
>>> x = np.array([1e16, 1.0, 1.0, -1e16])
>>> float(np.sum(x)), float(exact_sum(np, x))
(0.0, 2.0)
>>> exact_sum(np, np.array([[0.1, 0.2], [0.3, -0.0]], np.float32), axis=1)
array([0.3, 0.3], dtype=float32)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = [
    "CHUNK",
    "CPU_PIECE",
    "DEVICE_PIECE",
    "FORMATS",
    "exact_sum",
    "finish",
    "limbs",
    "row_count",
    "round_exact",
]

#: Values a limb sums in 64-bit integers before a carry step (each adds under 2**33).
CHUNK = 1 << 29

#: Values summed at a time on the CPU, and on a GPU (divisors of CHUNK).
CPU_PIECE = 1 << 16
DEVICE_PIECE = 1 << 24

_MASK32 = (1 << 32) - 1

_POW2 = np.left_shift(np.uint64(1), np.arange(32, dtype=np.uint64))


class _Format:
    """The layout of one float dtype and of its limb vector."""

    def __init__(self, dtype: Any, uint: Any, fraction: int, exponent: int) -> None:
        self.dtype = np.dtype(dtype)
        self.uint = np.dtype(uint)
        self.fraction = fraction  # stored significand bits
        self.precision = fraction + 1
        bias = (1 << (exponent - 1)) - 1
        self.emin = 1 - bias - fraction  # exponent of the least subnormal
        self.emax = bias  # exponent of the greatest finite value's leading bit
        self.all_ones = (1 << exponent) - 1  # biased exponent of inf and NaN
        self.sign = 1 << (fraction + exponent)
        top_bit = self.all_ones - 2 + self.precision  # every value is below 2**top_bit units
        self.limbs = -(-(top_bit + 63) // 32)  # room for 2**63 values of the greatest size
        self.parts = 2 if self.precision + 31 <= 64 else 3  # limbs one value touches
        #: The limbs, then the four special-value counts.
        self.width = self.limbs + 4


#: The float dtypes summed exactly: their layout.
FORMATS = {
    np.dtype(np.float32): _Format(np.float32, np.uint32, 23, 8),
    np.dtype(np.float64): _Format(np.float64, np.uint64, 52, 11),
}

# Where each special value is counted, after the limbs.
_NAN, _POS_INF, _NEG_INF, _NEG_ZERO = range(4)


def _rows(xp, x, axis: int | None):
    """``x`` as C-contiguous rows (one per output element) to sum along."""
    if axis is None:
        return xp.ascontiguousarray(x).reshape(1, x.size)
    count = math.prod(s for i, s in enumerate(x.shape) if i != axis)
    return xp.ascontiguousarray(xp.moveaxis(x, axis, -1)).reshape(count, x.shape[axis])


def limbs(xp, x, axis: int | None = None):
    """The exact sums of ``x`` (float32 or float64) along ``axis`` as limb vectors.

    Returns an int64 array of ``xp`` shaped ``(rows, FORMATS[x.dtype].width)``: one row per
    output element (one for ``axis=None``; else in C order of the output shape), its first
    ``limbs`` entries the sum in 32-bit limbs of ``2**emin`` units (least significant
    first; each under ``2**33`` in magnitude, not normalised), then the counts of NaN, +inf,
    -inf and -0.0. Adding such arrays (another block's, another rank's) gives the limb
    vector of the data together, exactly.

    Examples
    --------
    >>> v = limbs(np, np.array([1.0, -0.0, np.inf], np.float32))
    >>> v.shape, int(v[0, 4]), v[0, 11:15].tolist()     # 1.0 = 2**149 units = 1 << 21 at limb 4
    ((1, 15), 2097152, [0, 1, 0, 1])
    """
    fmt = FORMATS[np.dtype(x.dtype)]
    rows = _rows(xp, x, axis)
    count, n = rows.shape
    width = fmt.width
    acc = xp.zeros(count * width, dtype=np.uint64)  # int64 bits: adds wrap alike
    base = None if count == 1 else (xp.arange(count, dtype=np.int64) * width).reshape(-1, 1)
    # In pieces: on the CPU cache-sized (their temporaries stay in cache: about twice as
    # fast at a million values), on a GPU large (each costs its launches) but bounded (a
    # dozen temporaries of 8 bytes per value: 1.6 GB at most).
    piece = min(CHUNK, CPU_PIECE if xp is np else DEVICE_PIECE)
    for start in range(0, n, piece):
        _scatter(xp, fmt, rows[:, start : start + piece], base, acc)
        if (start + piece) % CHUNK == 0 and start + piece < n:  # CHUNK values since the last
            acc = _carry(xp, fmt, acc.reshape(count, width)).view(np.uint64).reshape(-1)
    return _carry(xp, fmt, acc.reshape(count, width))


def _scatter(xp, fmt: _Format, rows, base, acc) -> None:
    """Add the limbs and special counts of ``rows`` into ``acc`` (rows of uint64)."""
    u = rows.view(fmt.uint).astype(np.uint64, copy=False)
    biased = (u >> fmt.fraction) & fmt.all_ones
    normal = biased != 0
    fraction = u & ((1 << fmt.fraction) - 1)
    significand = xp.where(normal, fraction | (1 << fmt.fraction), fraction)
    position = biased - normal  # s: the value is significand << s units
    # +1 or -1, and 0 for inf and NaN (counted apart below).
    weight = xp.where(biased == fmt.all_ones, 0, xp.where(u >= fmt.sign, -1, 1))
    # significand << (s % 32) as products with 2**(s % 32), each within 64 bits (a table
    # look-up and a multiply: NumPy's shifts by an array of counts are slow).
    scale = xp.take(xp.asarray(_POW2), position & 31)
    index = (position >> 5).astype(np.int64)
    index = (index if base is None else index + base).reshape(-1)
    low = (significand & _MASK32) * scale  # below 2**63
    if fmt.parts == 2:  # float32: the whole product is below 2**55
        parts = [low & _MASK32, low >> 32]
    else:  # float64: the significand's top 21 bits times the scale, below 2**52
        high = (significand >> 32) * scale
        parts = [low & _MASK32, (low >> 32) + (high & _MASK32), high >> 32]
    for j, part in enumerate(parts):  # each under 2**33
        signed = (part.view(np.int64) * weight).view(np.uint64).reshape(-1)
        xp.add.at(acc, index + j if j else index, signed)
    # NaN, +inf, -inf and -0.0, counted per row.
    specials = [xp.isnan(rows), rows == np.inf, rows == -np.inf, u == fmt.sign]
    counts = xp.stack(specials).sum(axis=2, dtype=np.int64).T.astype(np.uint64)
    acc.reshape(-1, fmt.width)[:, fmt.limbs :] += counts


def _carry(xp, fmt: _Format, acc):
    """One carry step on the limbs of ``acc`` (rows of uint64 bits of int64 sums): each
    limb but the top one keeps its low 32 bits and passes the rest, signed, to the next.
    The special counts are untouched. Gives int64 rows."""
    acc = acc.view(np.int64)
    high = acc[:, : fmt.limbs - 1] >> 32
    out = acc.copy()
    out[:, : fmt.limbs - 1] &= _MASK32
    out[:, 1 : fmt.limbs] += high
    return out


def row_count(x, axis: int | None) -> int:
    """How many values each output element of ``x`` summed along ``axis`` adds."""
    return int(x.size) if axis is None else int(x.shape[axis])


def round_exact(units: int, dtype: Any) -> float:
    """``units * 2**emin`` rounded once to ``dtype`` (round half to even; overflow to inf),
    as a Python float (exactly the dtype's value).

    Examples
    --------
    >>> round_exact(3, np.float64)                     # 3 * 2**-1074: a subnormal
    1.5e-323
    >>> round_exact((1 << 149) + (1 << 125), np.float32)  # 1 + 2**-24: a tie, to even
    1.0
    """
    fmt = FORMATS[np.dtype(dtype)]
    magnitude = abs(units)
    if magnitude == 0:
        return 0.0
    lead = magnitude.bit_length() - 1 + fmt.emin  # exponent of the leading bit
    ulp = max(lead - fmt.precision + 1, fmt.emin)
    drop = ulp - fmt.emin
    significand = magnitude >> drop
    if drop:
        rest, half = magnitude & ((1 << drop) - 1), 1 << (drop - 1)
        if rest > half or (rest == half and significand & 1):
            significand += 1
    if significand.bit_length() - 1 + ulp > fmt.emax:
        value = math.inf
    else:
        value = math.ldexp(significand, ulp)  # exact: significand <= 2**precision
    return -value if units < 0 else value


def finish(total: np.ndarray, dtype: Any, n: int) -> np.ndarray:
    """The correctly rounded sums (a host array of ``dtype``, one per row) of the limb
    vectors ``total`` (host int64 rows of :func:`limbs`, possibly added over blocks), each
    the sum of ``n`` values in all."""
    fmt = FORMATS[np.dtype(dtype)]
    total = np.asarray(total, dtype=np.int64).reshape(-1, fmt.width)
    out = np.empty(total.shape[0], dtype=fmt.dtype)
    for r, row in enumerate(total.tolist()):
        nan, pos_inf, neg_inf, neg_zero = row[fmt.limbs :]
        if nan or (pos_inf and neg_inf):
            out[r] = np.nan
        elif pos_inf or neg_inf:
            out[r] = np.inf if pos_inf else -np.inf
        else:
            # The limbs (signed, not normalised) weighed and added as Python integers.
            units = sum(limb << (32 * i) for i, limb in enumerate(row[: fmt.limbs]) if limb)
            if units == 0 and n > 0 and neg_zero == n:
                out[r] = -0.0
            else:
                out[r] = round_exact(units, dtype)
    return out


def exact_sum(xp, x, axis: int | None = None):
    """The correctly rounded sum of ``x`` (float32 or float64) along ``axis`` (None: all),
    an array of ``xp`` of ``x``'s dtype (0-d for ``axis=None``): the exact sum of the
    values rounded once, whatever their order or backend. One read back of the limbs.

    Examples
    --------
    >>> exact_sum(np, np.array([0.1] * 10))      # np.sum gives 0.9999999999999999
    array(1.)
    """
    total = limbs(xp, x, axis)
    host = np.asarray(total) if xp is np else xp.asnumpy(total)
    out = finish(host, x.dtype, row_count(x, axis))
    shape = () if axis is None else tuple(s for i, s in enumerate(x.shape) if i != axis)
    if xp is np:
        return out.reshape(shape)
    # Copied as a 1-D array: CuPy makes a 0-d array by filling it, and fills a zero with
    # memset, which would turn a sum of -0.0 into +0.0.
    return xp.asarray(out.reshape(-1)).reshape(shape)
