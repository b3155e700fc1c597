"""Clipping's per-face tests fused into one kernel: a scalar per-face body written once.

:func:`classify_one` decides, for one face, what :func:`renderer.stages.clip.classify_arrays`
decides with array expressions: whether the face is wholly outside one plane of the view
volume (rejected) and, if not, whether a vertex lies outside a clipping plane (near, far or
the guard band: the face is clipped). The outcodes of its three corners are computed in
the body from the clip coordinates, with the same operations (the guard-band products
``gx * w`` are rounded on their own: ``fmul``), so the flags are those of the array code.

Compiled for the CPU with ``numba.njit`` (:func:`classify_cpu`, a loop over faces
that also counts both kinds) and for the GPU with ``numba.cuda.jit``
(:mod:`renderer.stages.cuda_kernels`), as :mod:`renderer.stages.setup_kernels` does for setup.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from kernels.rebind import bind, cpu_body, cpu_loop, fmul

__all__ = ["classify_one", "classify_cpu"]


def classify_one(clip, faces, f, gx, gy, rejected, crossing):
    """Write ``rejected[f]`` and ``crossing[f]`` of face ``f``; return ``crossing + 2 *
    rejected`` (0, 1 or 2)."""
    lx = ly = lz = hx = hy = hz = True
    beyond = False
    for k in range(3):
        v = np.uint64(faces[f, k])  # unsigned: no test for an index from the array's end
        x = clip[v, 0]
        y = clip[v, 1]
        z = clip[v, 2]
        w = clip[v, 3]
        # Cohen-Sutherland: outside one side of the view volume (-w <= x, y, z <= w)
        # (& and |, not and and or: no branch per test)
        lx = lx & (x < -w)
        ly = ly & (y < -w)
        lz = lz & (z < -w)
        hx = hx & (x > w)
        hy = hy & (y > w)
        hz = hz & (z > w)
        # outside a clipping plane: near, far, the guard band (gx w - x < 0, ...)
        gxw = fmul(w, gx)
        gyw = fmul(w, gy)
        beyond = beyond | (z + w < 0) | (w - z < 0) | (gxw - x < 0) | (gyw - y < 0)
        beyond = beyond | (gxw + x < 0) | (gyw + y < 0)
    rej = lx | ly | lz | hx | hy | hz
    cross = beyond & (not rej)
    rejected[f] = rej
    crossing[f] = cross
    code = 0
    if cross:
        code += 1
    if rej:
        code += 2
    return code


def _classify_rows(clip, faces, gx, gy, rejected, crossing):
    """Every face (the CPU's loop); returns the numbers of crossing and rejected faces."""
    n_cross = 0
    n_rej = 0
    for f in range(faces.shape[0]):
        code = body(clip, faces, f, gx, gy, rejected, crossing)
        n_cross += code & 1
        n_rej += code >> 1
    return n_cross, n_rej


def body(*args: Any) -> int:  # rebound to the compiled classify_one by _cpu_kernel
    raise NotImplementedError


@functools.cache
def _cpu_kernel() -> Any:
    return cpu_loop(bind(_classify_rows, body=cpu_body(classify_one, "fmul")))


def classify_cpu(clip: np.ndarray, faces: np.ndarray, gx: float, gy: float) -> tuple:
    """The fused tests on the CPU: ``rejected, crossing, n_clipped, n_rejected``.

    Examples
    --------
    >>> clip = np.array([[-0.5, -0.5, 0, 1], [0.5, -0.5, 0, 1], [0, 0.5, 0, 1], [0, 0, -2, 1]])
    >>> rej, cross, counts = classify_cpu(clip, np.array([[0, 1, 2], [0, 1, 3]]), 3.0, 3.0)
    >>> rej.tolist(), cross.tolist(), counts.tolist()
    ([False, False], [False, True], [1, 0])
    """
    m = faces.shape[0]
    rejected = np.empty(m, dtype=np.bool_)
    crossing = np.empty(m, dtype=np.bool_)
    n_cross, n_rej = _cpu_kernel()(clip, faces, float(gx), float(gy), rejected, crossing)
    return rejected, crossing, np.array([n_cross, n_rej], dtype=np.int64)
