"""Launching a Numba CUDA kernel on CuPy's current stream.

The one launch path of every Numba CUDA kernel (the mesh shifts of
:mod:`kernels.numba_shift`, the renderer's fused stage kernels): CuPy arrays become Numba
device arrays without a copy and without synchronising on their stream (the launch is
ordered after their producers on the same stream); host arrays are left to Numba, which
copies them in and back. Numba's low-occupancy warning is silenced: small meshes and
frames are legitimate here. Numba is imported on the first launch.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from kernels.numba_cuda import cuda_module

__all__ = ["launch_on_stream"]


def launch_on_stream(xp: Any, kernel: Any, grid: Any, block: Any, args: tuple) -> None:
    """Launch the Numba CUDA dispatcher ``kernel[grid, block]`` on ``xp``'s current stream
    (CuPy's, or Numba's default stream for NumPy ``xp``) with ``args``."""
    from numba.core.errors import NumbaPerformanceWarning

    cuda = cuda_module()
    stream = cuda.default_stream()
    if xp is not np:
        ptr = xp.cuda.get_current_stream().ptr
        if ptr:
            stream = cuda.external_stream(ptr)
        args = tuple(
            cuda.as_cuda_array(a, sync=False) if hasattr(a, "__cuda_array_interface__") else a
            for a in args
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumbaPerformanceWarning)
        kernel[grid, block, stream](*args)
