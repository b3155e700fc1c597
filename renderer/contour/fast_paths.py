"""The isosurface's fast paths: marching cubes' two fused kernels by name, with their
implementation on the CPU (the Numba loops of :mod:`renderer.contour.cpu_kernels`) and on
the GPU (the Numba CUDA kernels of :mod:`renderer.contour.cuda_kernels`), in the registry
of :mod:`kernels.fastpaths`.

:func:`renderer.isosurface` asks :func:`fast_path` for the one that runs on its arrays and
runs its array code (:mod:`renderer.contour.arrays`) where none applies.

Examples
--------
>>> import numpy as np
>>> fast_path("emit", np).__name__
'emit_cpu'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernels import fastpaths

__all__ = ["FAST_PATHS", "fast_path"]

#: Fast path -> (the CPU's "module:function", the device's).
FAST_PATHS = {
    "classify": (
        "renderer.contour.cpu_kernels:classify_cpu",
        "renderer.contour.cuda_kernels:classify_device",
    ),
    "emit": ("renderer.contour.cpu_kernels:emit_cpu", "renderer.contour.cuda_kernels:emit_device"),
}

for _name, (_cpu, _device) in FAST_PATHS.items():
    fastpaths.declare(f"renderer.contour.{_name}", cpu=_cpu, device=_device)


def fast_path(name: str, xp: Any) -> Callable | None:
    """The implementation of marching cubes' fast path ``name`` for arrays of ``xp``; None
    where the array code must run (``SIMD_FORCE_REFERENCE=1``)."""
    return fastpaths.fast_path(f"renderer.contour.{name}", xp)
