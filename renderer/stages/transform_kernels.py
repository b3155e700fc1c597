"""The transform to clip space fused into one kernel: a scalar per-vertex body written once.

:func:`clip_one` computes the clip coordinates ``mvp @ [x, y, z, 1]`` of vertex ``v`` as
:func:`renderer.stages.transform.to_clip_arrays` does with array expressions: per row
``((m0 x + m1 y) + m2 z) + m3``, every product rounded on its own (``fmul``: no fused
multiply-add on the GPU). The matrix travels as 16 scalars in the kernel's arguments (a
tuple, row by row), so a frame uploads nothing for it. Compiled for the CPU with
``numba.njit`` (:func:`clip_cpu`) and for the GPU with ``numba.cuda.jit``
(:mod:`renderer.stages.cuda_kernels`), as :mod:`renderer.stages.setup_kernels` does for setup.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from kernels.rebind import bind, cpu_body, cpu_loop, fmul

__all__ = ["clip_cpu", "clip_one", "matrix_args"]


def clip_one(vertices, v, m, out):
    """Write the clip coordinates ``out[v, 0..3]`` of vertex ``v`` (``m``: the matrix's 16
    entries, row by row)."""
    x = vertices[v, 0]
    y = vertices[v, 1]
    z = vertices[v, 2]
    out[v, 0] = fmul(x, m[0]) + fmul(y, m[1]) + fmul(z, m[2]) + m[3]
    out[v, 1] = fmul(x, m[4]) + fmul(y, m[5]) + fmul(z, m[6]) + m[7]
    out[v, 2] = fmul(x, m[8]) + fmul(y, m[9]) + fmul(z, m[10]) + m[11]
    out[v, 3] = fmul(x, m[12]) + fmul(y, m[13]) + fmul(z, m[14]) + m[15]


def matrix_args(mvp: Any) -> tuple:
    """The 4x4 matrix ``mvp`` as the kernels take it: 16 Python floats, row by row."""
    return tuple(np.asarray(mvp, dtype=np.float64).reshape(16).tolist())


def _clip_rows(vertices, m, out):
    """Every vertex (the CPU's loop)."""
    for v in range(vertices.shape[0]):
        body(vertices, v, m, out)


def body(*args: Any) -> None:  # rebound to the compiled clip_one by _cpu_kernel
    raise NotImplementedError


@functools.cache
def _cpu_kernel() -> Any:
    return cpu_loop(bind(_clip_rows, body=cpu_body(clip_one, "fmul")))


def clip_cpu(vertices: np.ndarray, mvp: Any) -> np.ndarray:
    """The fused transform on the CPU: ``(N, 4)`` float64 clip coordinates.

    Examples
    --------
    >>> clip_cpu(np.array([[1.0, 2.0, 3.0]]), 2 * np.eye(4)).tolist()
    [[2.0, 4.0, 6.0, 2.0]]
    """
    out = np.empty((vertices.shape[0], 4), dtype=np.float64)
    _cpu_kernel()(vertices, matrix_args(mvp), out)
    return out
