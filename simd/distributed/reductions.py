"""``reduce`` and ``count`` across the ranks (see :mod:`simd.distributed`)."""

from __future__ import annotations

import math

import numpy as np

from kernels import exact_sum
from kernels.registry import lookup
from simd.distributed.layouts import layout

__all__ = ["count", "reduce"]


def reduce(m, x, op: str, *, axis):
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


def count(m, mask) -> int:
    """``Machine.count`` across ranks: one ``Allreduce`` of (count, size)."""
    both = np.array([int(m.xp.count_nonzero(mask)), mask.size], dtype=np.int64)
    total, size = (int(v) for v in m.ranks.allreduce(both, "add"))
    m._account("reduce", size, size, label="count")
    return total
