"""Choosing the array backend: NumPy everywhere, CuPy where a GPU really answers."""

from __future__ import annotations

import functools
import os
import warnings
from types import ModuleType

import numpy as np

from simd.errors import BackendUnavailableError, GPUUnavailableWarning

__all__ = [
    "BACKENDS",
    "cupy_round_trip",
    "cupy_status",
    "gpu_missing",
    "numba_cuda_status",
    "resolve_backend",
]

BACKENDS = ("numpy", "cupy")
#: Not a backend of its own: the CuPy code path run on NumPy, counting launches and syncs
#: (``kernels.counting``). A machine on it has ``backend == "cupy"``.
COUNTING = "counting"


@functools.cache
def cupy_status() -> tuple[bool, str]:
    """Whether the GPU path can run here, and why not (or the device's name).

    The GPU path needs CuPy to reach a device and compute (:func:`cupy_round_trip`), and
    Numba's CUDA target to compile and launch a kernel there (:func:`numba_cuda_status`).
    CuPy is imported only here, and only when a caller asks.
    """
    ok, detail = cupy_round_trip()
    if not ok:
        return False, detail
    numba_ok, why = numba_cuda_status()
    return (True, detail) if numba_ok else (False, _with_missing(why))


@functools.cache
def cupy_round_trip() -> tuple[bool, str]:
    """Whether CuPy reaches a device and computes there, and why not (or its name)."""
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
        return False, _with_missing(f"CuPy cannot use a GPU here: {type(exc).__name__}: {exc}")
    return True, name


def _with_missing(reason: str) -> str:
    missing = gpu_missing()
    return reason + ("; missing: " + "; ".join(missing) if missing else "")


@functools.cache
def numba_cuda_status() -> tuple[bool, str]:
    """Whether Numba's CUDA target compiles and launches a kernel on the GPU here, with
    what it used (or why not), in one line. Asked by :func:`cupy_status` once CuPy works:
    the probe kernel is compiled once per machine, then loaded."""
    try:
        import cupy

        from kernels.numba_launch import probe

        return True, probe(cupy)
    except Exception as exc:  # noqa: BLE001 - any failure means the GPU path cannot run
        text = " ".join(str(exc).split()) or type(exc).__name__
        return False, f"Numba's CUDA target cannot compile or run a kernel here: {text}"


def _has_module(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _load_cuda_lib(name: str, sonames: tuple[str, ...]) -> str | None:
    """Why the CUDA library ``name`` cannot be loaded (None when it can)."""
    try:
        from cuda import pathfinder
    except ImportError:
        pathfinder = None
    if pathfinder is not None:
        try:
            pathfinder.load_nvidia_dynamic_lib(name)
            return None
        except Exception as exc:  # DynamicLibNotFoundError and friends
            return f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    import ctypes

    for soname in sonames:
        try:
            ctypes.CDLL(soname)
            return None
        except OSError:
            continue
    return f"none of {', '.join(sonames)} could be loaded"


def _driver_missing() -> str | None:
    import ctypes
    import sys

    soname = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"
    try:
        libcuda = ctypes.CDLL(soname)
    except OSError:
        return f"the NVIDIA driver ({soname} not found): install the NVIDIA driver"
    version = ctypes.c_int(0)
    if libcuda.cuDriverGetVersion(ctypes.byref(version)) == 0 and version.value < 13000:
        major, minor = divmod(version.value, 1000)
        return (
            f"a driver for CUDA 13: this one supports CUDA {major}.{minor // 10} "
            "(cupy-cuda13x and numba-cuda[cu13] need driver 580 or newer)"
        )
    return None


def gpu_missing() -> list[str]:
    """What the CuPy and Numba CUDA backends lack here, one line per missing piece.

    Empty when everything they need is installed (a GPU may still be absent or busy:
    ``cupy_status`` tries one). Checks the driver, the Python packages of the ``gpu``
    extra, the libraries CuPy and Numba load at run time (NVRTC, NVVM; through
    ``cuda.pathfinder``, as they do; nvJitLink), the CUDA headers CuPy's kernels include.
    Loads libraries but touches no GPU.
    """
    missing = []
    driver = _driver_missing()
    if driver:
        missing.append(driver)
    if not _has_module("cupy"):
        missing.append("CuPy (pip install 'simd-emu[gpu]', or cupy-cuda13x[ctk])")
    nvrtc = _load_cuda_lib("nvrtc", ("libnvrtc.so.13", "libnvrtc.so"))
    if nvrtc:
        missing.append(
            f"NVRTC, which CuPy compiles every kernel with (pip install nvidia-cuda-nvrtc): {nvrtc}"
        )
    if _has_module("cuda.pathfinder"):
        from cuda import pathfinder

        try:
            found = pathfinder.find_nvidia_header_directory("cudart")
        except Exception:  # noqa: BLE001 - any failure means not found
            found = None
        if not found:
            missing.append(
                "the CUDA runtime headers CuPy's kernels include (pip install nvidia-cuda-runtime)"
            )
    if not _has_module("numba_cuda"):
        missing.append("numba-cuda, Numba's CUDA target (pip install 'numba-cuda[cu13]')")
    else:
        if not _has_module("cuda.bindings"):
            missing.append(
                "cuda-bindings, which numba-cuda drives the GPU with "
                "(pip install 'cuda-bindings>=13')"
            )
        nvvm = _load_cuda_lib("nvvm", ("libnvvm.so.4", "libnvvm.so"))
        if nvvm:
            missing.append(
                "NVVM, which Numba compiles CUDA kernels with "
                f"(pip install 'numba-cuda[cu13]'): {nvvm}"
            )
        nvjitlink = _load_cuda_lib("nvJitLink", ("libnvJitLink.so.13", "libnvJitLink.so"))
        if nvjitlink:
            missing.append(
                "nvJitLink, which links the compiled CUDA kernels "
                f"(pip install 'numba-cuda[cu13]'): {nvjitlink}"
            )
    return missing


@functools.cache
def _say_why_not_gpu(reason: str) -> None:
    """On a machine with CuPy and an NVIDIA driver whose GPU path fails, say once why the
    automatic choice is NumPy (a laptop without a GPU hears nothing)."""
    if _has_module("cupy") and _driver_missing() is None:
        warnings.warn(f"using NumPy, not the GPU: {reason}", GPUUnavailableWarning, stacklevel=4)


def resolve_backend(backend: str = "auto") -> tuple[str, ModuleType]:
    """The backend name and array module for ``backend``.

    ``"auto"`` takes the environment variable ``SIMD_BACKEND`` if it is set, else CuPy
    when the GPU path works (:func:`cupy_status`) and NumPy otherwise; where CuPy and a
    driver are installed but the GPU path fails, a :class:`~simd.errors.GPUUnavailableWarning`
    says why, once. Asking for ``"cupy"`` without a usable GPU
    raises :class:`~simd.errors.BackendUnavailableError` with the reason. ``"counting"``
    gives ``"cupy"`` with the counting stand-in for CuPy (``kernels.counting.cupy``), which
    runs the CuPy code path on NumPy and counts its launches, syncs and transfers.
    """
    if not isinstance(backend, str):
        raise TypeError(f"backend must be a string, got {type(backend).__name__}")
    name = backend.lower()
    given, source = backend, ""
    if name == "auto":
        from_env = os.environ.get("SIMD_BACKEND", "").strip()
        if from_env:
            given, source = from_env, " (from the environment variable SIMD_BACKEND)"
        name = from_env.lower() or "auto"
    if name == "auto":
        ok, reason = cupy_status()
        name = "cupy" if ok else "numpy"
        if not ok:
            _say_why_not_gpu(reason)
    if name == COUNTING:
        from kernels.counting import cupy as counting

        return "cupy", counting
    if name not in BACKENDS:
        raise ValueError(
            f"unknown backend {given!r}{source}; expected 'auto', 'numpy', 'cupy' or 'counting'"
        )
    if name == "numpy":
        return "numpy", np
    ok, reason = cupy_status()
    if not ok:
        raise BackendUnavailableError(f"backend 'cupy' was asked for but is unavailable: {reason}")
    import cupy

    return "cupy", cupy
