"""Choosing the array backend: NumPy everywhere, CuPy where a GPU really answers."""

from __future__ import annotations

import functools
import os
from types import ModuleType

import numpy as np

from simd.errors import BackendUnavailableError

__all__ = ["BACKENDS", "cupy_status", "resolve_backend"]

BACKENDS = ("numpy", "cupy")
#: Not a backend of its own: the CuPy code path run on NumPy, counting launches and syncs
#: (``kernels.counting``). A machine on it has ``backend == "cupy"``.
COUNTING = "counting"


@functools.cache
def cupy_status() -> tuple[bool, str]:
    """Whether CuPy can run kernels here, and why not (or the device's name).

    CuPy is imported only here, and only when a caller asks.
    """
    try:
        import cupy
    except ImportError as exc:
        return False, f"CuPy is not installed ({exc}); install the 'gpu' extra"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
        if count < 1:
            return False, "CuPy found no CUDA device"
        # A real round trip: the driver can list a device and still refuse to run on it.
        probe = cupy.arange(4, dtype=cupy.int32).sum()
        if int(probe) != 6:
            return False, "CuPy's test computation gave a wrong result"
        name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
    except Exception as exc:  # CUDARuntimeError, driver and library load errors
        return False, f"CuPy cannot use a GPU here: {type(exc).__name__}: {exc}"
    return True, name


def resolve_backend(backend: str = "auto") -> tuple[str, ModuleType]:
    """The backend name and array module for ``backend``.

    ``"auto"`` takes the environment variable ``SIMD_BACKEND`` if it is set, else CuPy
    when a GPU answers and NumPy otherwise. Asking for ``"cupy"`` without a usable GPU
    raises :class:`~simd.errors.BackendUnavailableError` with the reason. ``"counting"``
    gives ``"cupy"`` with the counting stand-in for CuPy (``kernels.counting.cupy``), which
    runs the CuPy code path on NumPy and counts its launches, syncs and transfers.
    """
    if not isinstance(backend, str):
        raise TypeError(f"backend must be a string, got {type(backend).__name__}")
    name = backend.lower()
    if name == "auto":
        name = os.environ.get("SIMD_BACKEND", "").strip().lower() or "auto"
    if name == "auto":
        ok, _ = cupy_status()
        name = "cupy" if ok else "numpy"
    if name == COUNTING:
        from kernels.counting import cupy as counting

        return "cupy", counting
    if name not in BACKENDS:
        raise ValueError(
            f"unknown backend {backend!r}; expected 'auto', 'numpy', 'cupy' or 'counting'"
            + (" (from SIMD_BACKEND)" if backend.lower() == "auto" else "")
        )
    if name == "numpy":
        return "numpy", np
    ok, reason = cupy_status()
    if not ok:
        raise BackendUnavailableError(f"backend 'cupy' was asked for but is unavailable: {reason}")
    import cupy

    return "cupy", cupy
