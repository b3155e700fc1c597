"""Shading's per-pixel work fused into one kernel: a scalar per-pixel body written once.

:func:`shade_one` computes the colour of one covered pixel as
:func:`renderer.shading.shade_pixels_arrays` does with array expressions: the barycentric
weights from the triangle's exact integer edge functions, perspective-correct
interpolation of the vertex colours, clamping and rounding to 8 bits, in the same
operation order (products rounded on their own: ``fmul``), so the colours are the array
code's bit for bit. Compiled for the CPU with ``numba.njit`` (:func:`shade_cpu`) and for
the GPU with ``numba.cuda.jit`` (:mod:`renderer.fused_cuda`), as
:mod:`renderer.setup_kernels` does for setup.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from renderer.setup_kernels import bind, cpu_body, cpu_loop, fmul
from renderer.transform import SUBPIXEL

__all__ = ["shade_one", "shade_cpu"]


def floor(x):
    """Round towards minus infinity (each target binds its own)."""
    return np.floor(x)


def to_u8(x):
    """Float in [0, 255] to uint8 (each target binds its own)."""
    return np.uint8(x)


def shade_one(tri, pix, p, width, a, b, xs, ys, area2, inv_w, order, colours, corners, out):
    """Write the colour of pixel ``pix[p]`` drawn by triangle ``tri[p]`` to ``out[p]``; the
    colour of the triangle's vertex ``k`` is row ``corners[t, k]`` of ``colours``."""
    t = tri[p]
    q = pix[p]
    j = q // width
    i = q - j * width
    px = i * SUBPIXEL
    py = j * SUBPIXEL
    # the raw edge functions (without the fill rule's bias) at the pixel centre
    l0 = float(a[t, 0] * px + b[t, 0] * py + -(a[t, 0] * xs[t, 0] + b[t, 0] * ys[t, 0]))
    l1 = float(a[t, 1] * px + b[t, 1] * py + -(a[t, 1] * xs[t, 1] + b[t, 1] * ys[t, 1]))
    l2 = float(a[t, 2] * px + b[t, 2] * py + -(a[t, 2] * xs[t, 2] + b[t, 2] * ys[t, 2]))
    # edge k is opposite vertex k + 2: the weight of vertex v is edge v + 1's function
    area = float(area2[t])
    p0 = fmul(l1 / area, inv_w[t, 0])
    p1 = fmul(l2 / area, inv_w[t, 1])
    p2 = fmul(l0 / area, inv_w[t, 2])
    total = p0 + p1 + p2
    q0 = p0 / total
    q1 = p1 / total
    q2 = p2 / total
    v0 = corners[t, order[t, 0]]
    v1 = corners[t, order[t, 1]]
    v2 = corners[t, order[t, 2]]
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


def _shade_rows(tri, pix, width, a, b, xs, ys, area2, inv_w, order, colours, corners, out):
    """Every pixel (the CPU's loop)."""
    for p in range(tri.shape[0]):
        body(tri, pix, p, width, a, b, xs, ys, area2, inv_w, order, colours, corners, out)


def body(*args: Any) -> None:  # rebound to the compiled shade_one by _cpu_kernel
    raise NotImplementedError


@functools.cache
def _cpu_kernel() -> Any:
    return cpu_loop(bind(_shade_rows, body=cpu_body(shade_one, "fmul", "floor", "to_u8")))


def shade_cpu(tri: Any, pix: Any, width: int, setup: Any, colours: Any, corners: Any) -> np.ndarray:
    """The fused shading on the CPU: ``(K, 3)`` uint8 colours of pixels ``pix`` (the
    triangles' vertex colours: rows ``corners`` (T, 3) of ``colours`` (V, 3)).

    Examples
    --------
    >>> from renderer.scan import setup_triangles
    >>> clip = np.array([[[-0.5, -0.5, 0, 1], [0.5, -0.5, 0, 1], [0, 0.5, 0, 1]]])
    >>> s = setup_triangles(np, clip, 16, 16)
    >>> red_green_blue = np.eye(3)  # vertex v is pure red, green or blue
    >>> rgb = shade_cpu(np.array([0]), np.array([8 * 16 + 8]), 16, s, red_green_blue,
    ...                 np.array([[0, 1, 2]]))
    >>> rgb.tolist()
    [[40, 72, 143]]
    """
    out = np.empty((tri.shape[0], 3), dtype=np.uint8)
    _cpu_kernel()(tri, pix, width, *_setup_args(setup), colours, corners, out)
    return out


def _setup_args(setup: Any) -> tuple:
    return (setup.a, setup.b, setup.xs, setup.ys, setup.area2, setup.inv_w, setup.order)
