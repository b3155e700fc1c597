"""A small Numba CUDA kernel for the tests of :mod:`kernels.numba_launch` (compiled to a
cubin without a GPU)."""

from __future__ import annotations

from kernels.numba_cuda import cuda_module

cuda = cuda_module()


def add_scalar(a, k):
    """``a[i] += k`` for every element of the 1-D array ``a``."""
    i = cuda.grid(1)
    if i < a.size:
        a[i] += k
