"""What this installation runs on: backend, device, versions (for ``simd-emu info``
and the JSON of every benchmark)."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import sys
import warnings

from simd.backend import gpu_missing
from simd.errors import GPUUnavailableWarning

__all__ = ["environment"]

_PACKAGES = (
    "simd-emu",
    "numpy",
    "numba",
    "mpi4py",
    "numba-cuda",
    "cupy-cuda13x",
    "cuda-bindings",
    "nvidia-cuda-nvrtc",
    "nvidia-cuda-runtime",
    "scikit-image",
    "trimesh",
    "moderngl",
)


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _versions() -> dict[str, str | None]:
    versions = {name: _version(name) for name in _PACKAGES}
    if versions["simd-emu"] is None:  # run from a source tree without installing
        from simd import __version__

        versions["simd-emu"] = f"{__version__} (source tree)"
    return versions


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment() -> dict:
    """Machine, backend and package versions as plain data.

    Examples
    --------
    >>> env = environment()
    >>> env["backend"] in ("numpy", "cupy")
    True
    >>> "numpy" in env["versions"]
    True
    """
    from simd import backend as backends

    gpu_ok, gpu_detail = backends.cupy_status()
    # Numba's CUDA target is tried only where CuPy reaches a GPU.
    numba_cuda = backends.numba_cuda_status() if backends.cupy_round_trip()[0] else None
    try:
        with warnings.catch_warnings():  # the reason is in the report already
            warnings.simplefilter("ignore", GPUUnavailableWarning)
            backend = backends.resolve_backend("auto")[0]
    except Exception as exc:  # a bad SIMD_BACKEND: report it rather than fail
        backend = f"error: {exc}"
    return {
        "backend": backend,
        "cpu": _cpu_name(),
        "cpu_count": os.cpu_count(),
        "gpu": gpu_detail if gpu_ok else None,
        "gpu_unavailable_reason": None if gpu_ok else gpu_detail,
        # What the CuPy and Numba CUDA backends lack (empty when all is installed).
        "gpu_missing": gpu_missing(),
        "nvrtc": _nvrtc(),
        # Numba's CUDA target on this GPU: the probe's outcome (None: no GPU to try).
        "numba_cuda": None if numba_cuda is None else numba_cuda[1],
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "versions": _versions(),
        "hostname": platform.node(),
        "SIMD_BACKEND": os.environ.get("SIMD_BACKEND"),
        "mpi": _mpi(),
        "cache": _cache(),
    }


def _cache() -> dict:
    """The cache folder (the built-in data sets, the compiled GPU kernels, calibrations)
    and the bytes it holds.

    >>> sorted(_cache())
    ['bytes', 'folder']
    """
    from kernels.cache import cache_bytes, cache_dir

    return {"folder": str(cache_dir()), "bytes": cache_bytes()}


def _nvrtc() -> str | None:
    """NVRTC's version, which CuPy compiles its kernels with (None: not loadable)."""
    try:
        from cupy.cuda import nvrtc

        major, minor = nvrtc.getVersion()
    except Exception:  # noqa: BLE001 - no CuPy, no NVRTC library
        return None
    return f"{major}.{minor}"


def _mpi() -> dict:
    """The MPI layer: the MPI library, whether it takes GPU buffers directly (CUDA-aware,
    ``SIMD_MPI_CUDA_AWARE=0`` forces no), the path GPU arrays take to MPI (``direct``, or
    pinned host staging) and the ranks of this launch; ``available: False`` with the reason
    (``unavailable``) when MPI cannot be used: no mpi4py, or mpi4py without an MPI library.

    Examples
    --------
    >>> mpi = _mpi()
    >>> mpi["available"] in (True, False) and mpi["ranks"] >= 1
    True
    """
    from simd.launch import launched_ranks, mpi_status

    ok, detail = mpi_status()
    if not ok:
        return {"available": False, "unavailable": detail, "ranks": launched_ranks()}
    from simd.ranks import cuda_aware
    from simd.staging import DIRECT, STAGED

    aware = cuda_aware()
    return {
        "available": True,
        "library": detail,
        "cuda_aware": aware,
        "gpu_arrays": DIRECT if aware else STAGED,
        "ranks": launched_ranks(),
    }
