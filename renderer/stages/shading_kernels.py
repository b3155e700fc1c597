"""Shading's per-pixel work fused into one kernel: a scalar per-pixel body written once.

:func:`shade_one` computes the colour of one covered pixel as
:func:`renderer.stages.shading.shade_pixels_arrays` does with array expressions: the barycentric
weights from the triangle's exact integer edge functions, perspective-correct
interpolation of the vertex colours, clamping and rounding to 8 bits, in the same
operation order (products rounded on their own: ``fmul``), so the colours are the array
code's bit for bit. Compiled for the CPU with ``numba.njit`` (:func:`shade_cpu`) and for
the GPU with ``numba.cuda.jit`` (:mod:`renderer.stages.cuda_kernels`), as
:mod:`renderer.stages.setup_kernels` does for setup.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from kernels.rebind import bind, cpu_body, cpu_loop, fmul
from renderer.stages.edges import edge_function
from renderer.stages.transform import SUBPIXEL

__all__ = ["shade_one", "shade_cpu"]


def floor(x):
    """Round towards minus infinity (each target binds its own)."""
    return np.floor(x)


def to_u8(x):
    """Float in [0, 255] to uint8 (each target binds its own)."""
    return np.uint8(x)


def shade_one(tri, pix, p, width, xs, ys, order, points, colours, corners, out):
    """Write the colour of pixel ``pix[p]`` drawn by triangle ``tri[p]`` to ``out[p]``; the
    clip coordinates and colour of the triangle's vertex ``k`` are row ``corners[t, k]``
    of ``points`` and ``colours``."""
    # unsigned indices: no test for one counted from the array's end on every read
    t = np.uint64(tri[p])
    q = pix[p]
    j = q // width
    i = q - j * width
    px = i * SUBPIXEL
    py = j * SUBPIXEL
    # the raw edge functions (without the fill rule's bias) at the pixel centre
    a0, b0, c0 = edge_function(xs, ys, t, 0)
    a1, b1, c1 = edge_function(xs, ys, t, 1)
    a2, b2, c2 = edge_function(xs, ys, t, 2)
    l0 = float(a0 * px + b0 * py + c0)
    l1 = float(a1 * px + b1 * py + c1)
    l2 = float(a2 * px + b2 * py + c2)
    # twice the area, (x1 - x0) (y2 - y0) - (x2 - x0) (y1 - y0), positive (the vertices
    # are counter-clockwise)
    area = float(b0 * a2 - b2 * a0)
    v0 = np.uint64(corners[t, np.uint64(order[t, 0])])
    v1 = np.uint64(corners[t, np.uint64(order[t, 1])])
    v2 = np.uint64(corners[t, np.uint64(order[t, 2])])
    # edge k is opposite vertex k + 2: the weight of vertex v is edge v + 1's function;
    # 1 / w as setup computes it
    p0 = fmul(l1 / area, 1.0 / points[v0, 3])
    p1 = fmul(l2 / area, 1.0 / points[v1, 3])
    p2 = fmul(l0 / area, 1.0 / points[v2, 3])
    total = p0 + p1 + p2
    q0 = p0 / total
    q1 = p1 / total
    q2 = p2 / total
    for ch in range(3):
        acc = 0.0
        acc = acc + fmul(q0, colours[v0, ch])
        acc = acc + fmul(q1, colours[v1, ch])
        acc = acc + fmul(q2, colours[v2, ch])
        if acc < 0.0:  # clamped to [0, 1]; NaN stays NaN
            acc = 0.0
        elif acc > 1.0:
            acc = 1.0
        level = floor(fmul(acc, 255.0) + 0.5)
        if level != level:
            out[p, ch] = 0  # NaN: what NumPy's and CUDA's conversions give
        else:
            out[p, ch] = to_u8(level)


def _shade_rows(tri, pix, width, xs, ys, order, points, colours, corners, out):
    """Every pixel (the CPU's loop)."""
    for p in range(tri.shape[0]):
        body(tri, pix, p, width, xs, ys, order, points, colours, corners, out)


def body(*args: Any) -> None:  # rebound to the compiled shade_one by _cpu_kernel
    raise NotImplementedError


@functools.cache
def _cpu_kernel() -> Any:
    body = cpu_body(shade_one, "fmul", "floor", "to_u8", edge_function=edge_function)
    return cpu_loop(bind(_shade_rows, body=body))


def shade_cpu(
    tri: Any, pix: Any, width: int, setup: Any, points: Any, colours: Any, corners: Any
) -> np.ndarray:
    """The fused shading on the CPU: ``(K, 3)`` uint8 colours of pixels ``pix`` (the
    triangles' vertices: rows ``corners`` (T, 3) of the clip coordinates ``points``
    (V, 4) and of the colours ``colours`` (V, 3)).

    Examples
    --------
    >>> from renderer.stages.scan import setup_triangles
    >>> points = np.array([[-0.5, -0.5, 0, 1], [0.5, -0.5, 0, 1], [0, 0.5, 0, 1]])
    >>> corners = np.array([[0, 1, 2]])
    >>> s = setup_triangles(np, points, 16, 16, corners=corners)
    >>> red_green_blue = np.eye(3)  # vertex v is pure red, green or blue
    >>> shade_cpu(np.array([0]), np.array([8 * 16 + 8]), 16, s, points, red_green_blue,
    ...           corners).tolist()
    [[40, 72, 143]]
    """
    out = np.empty((tri.shape[0], 3), dtype=np.uint8)
    _cpu_kernel()(tri, pix, width, setup.xs, setup.ys, setup.order, points, colours, corners, out)
    return out
