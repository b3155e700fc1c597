"""Run the fused Perona-Malik step (:mod:`diffusion.cuda_source`) with CuPy.

Imported only when the input is a CuPy array. Kernels are compiled once per device,
conduction option and dimension.
"""

from __future__ import annotations

import functools
from typing import Any

import cupy
import numpy as np

from diffusion.cuda_source import KERNEL_NAME, pm_source

__all__ = ["pm_iterate"]

_THREADS = 256


@functools.cache
def _kernel(option: int, ndim: int, device_id: int) -> cupy.RawKernel:
    return cupy.RawKernel(pm_source(option, ndim), KERNEL_NAME, options=("-std=c++17",))


def pm_iterate(
    out: Any, niter: int, kappa: float, gamma: float, spacing: tuple[float, ...], option: int
) -> Any:
    """``niter`` plain Perona-Malik steps of the float32 CuPy array ``out``; returns the
    result (``out`` or its twin buffer)."""
    kernel = _kernel(option, out.ndim, cupy.cuda.Device().id)
    shape = (1,) * (3 - out.ndim) + tuple(out.shape)
    sp = (1.0,) * (3 - out.ndim) + tuple(spacing)
    k = kappa * (2**0.5) if option == 3 else kappa
    src = cupy.ascontiguousarray(out)
    dst = cupy.empty_like(src)
    blocks = int(min(-(-src.size // _THREADS), 65535 * 32))
    args = (
        np.int64(shape[0]),
        np.int64(shape[1]),
        np.int64(shape[2]),
        np.float32(k),
        np.float32(gamma),
        np.float32(sp[0]),
        np.float32(sp[1]),
        np.float32(sp[2]),
    )
    for _ in range(niter):
        kernel((blocks,), (_THREADS,), (src, dst) + args)
        src, dst = dst, src
    return src
