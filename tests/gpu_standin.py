"""The ``gpu`` tests without a GPU: CuPy served by the counting stand-in.

``pytest --gpu-standin`` (tests/conftest.py) calls :func:`install` before any test module
is imported: from then on ``import cupy`` gives :data:`kernels.counting.cupy` (CuPy's API
on NumPy, the CUDA kernels emulated), so ``Machine(backend="cupy")`` and the tests' own
``cupy`` calls run the CuPy code path on the CPU. A test that needs real CUDA (a kernel
source of its own, a second process on the device, 40 GiB of device memory) calls
:func:`needs_real_gpu`, which skips it there and says why.
"""

from __future__ import annotations

import importlib.machinery
import sys

import pytest

__all__ = ["active", "install", "needs_real_gpu"]


def install() -> None:
    """Serve ``import cupy`` with the counting stand-in for the rest of this process."""
    from kernels import counting
    from simd import backend

    counting.cupy.__spec__ = importlib.machinery.ModuleSpec("cupy", None)  # for find_spec
    sys.modules["cupy"] = counting.cupy
    backend.cupy_status.cache_clear()
    backend.cupy_round_trip.cache_clear()
    # The stand-in emulates the Numba kernels: there is no Numba CUDA to probe.
    backend.numba_cuda_status = lambda: (True, "the counting stand-in emulates the kernels")


def active() -> bool:
    """Whether ``cupy`` is the counting stand-in in this process."""
    from kernels import counting

    return sys.modules.get("cupy") is counting.cupy


def needs_real_gpu(why: str) -> None:
    """Skip the calling test on the stand-in, saying what it needs real CUDA for."""
    if active():
        pytest.skip(f"needs a real GPU: {why}")
