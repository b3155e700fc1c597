"""The edge functions of a triangle on snapped vertices, shared by the fused kernels of set-up,
scan conversion and shading (scalar bodies, compiled into each target by
:mod:`kernels.rebind`). They are not stored by set-up: each kernel derives them exactly, in
integers, from the snapped vertices where it needs them.

Examples
--------
>>> import numpy as np
>>> xs = np.array([[0, 256, 0]], dtype=np.int32)
>>> ys = np.array([[0, 0, 256]], dtype=np.int32)
>>> [int(v) for v in edge_function(xs, ys, 0, 0)], fill_bias(0, 256)
([0, 256, 0], 1)
"""

from __future__ import annotations

import numpy as np

__all__ = ["edge_function", "fill_bias"]


def fill_bias(a, b):
    """The fill rule's bias of an edge: 1 for left edges (a > 0) and bottom edges (a == 0,
    b > 0), whose pixel centres count as inside, else 0."""
    if a > 0 or (a == 0 and b > 0):
        return 1
    return 0


def edge_function(xs, ys, t, k):
    """``(a, b, c)`` of edge ``k`` (vertex ``k`` to ``k + 1``) of the counter-clockwise
    triangle ``t`` of snapped vertices ``xs, ys``: ``E(X, Y) = a X + b Y + c``, positive
    inside, without the fill rule's bias (:func:`fill_bias` gives it)."""
    k1 = k + 1 if k < 2 else 0
    # in int64 (the coordinates are int32; so is NumPy's scalar arithmetic on them, which
    # the CUDA simulator runs)
    x0 = np.int64(xs[t, k])
    y0 = np.int64(ys[t, k])
    a = y0 - np.int64(ys[t, k1])
    b = np.int64(xs[t, k1]) - x0
    return a, b, -(a * x0 + b * y0)
