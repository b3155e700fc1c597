"""The frame's fast paths: each fused stage kernel by name, with its implementation on
the CPU (a Numba loop, ``renderer/stages/*_kernels.py``) and on the GPU (a Numba CUDA kernel,
:mod:`renderer.stages.cuda_kernels`), in the registry of :mod:`kernels.fastpaths`.

A stage asks :func:`fast_path` for the one that runs on its arrays; each implementation
takes the same arguments (but ``xp``, which the registry gives the device's) and gives the
same results as the stage's array code, which the stage runs instead where the kernel
does not apply (other dtypes, ``SIMD_FORCE_REFERENCE=1``).

Examples
--------
>>> import numpy as np
>>> fast_path("transform", np).__name__
'clip_cpu'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernels import fastpaths

__all__ = ["FAST_PATHS", "fast_path"]

#: Fast path -> (the CPU's "module:function", the device's).
FAST_PATHS = {
    "transform": (
        "renderer.stages.transform_kernels:clip_cpu",
        "renderer.stages.cuda_kernels:transform_device",
    ),
    "classify": (
        "renderer.stages.clip_kernels:classify_cpu",
        "renderer.stages.cuda_kernels:classify_device",
    ),
    "setup": (
        "renderer.stages.setup_kernels:setup_cpu",
        "renderer.stages.cuda_kernels:setup_device",
    ),
    "spans": (
        "renderer.stages.span_kernels:spans_cpu",
        "renderer.stages.cuda_kernels:spans_device",
    ),
    "compact": (
        "renderer.stages.span_kernels:compact_cpu",
        "renderer.stages.cuda_kernels:compact_device",
    ),
    "fragments": (
        "renderer.stages.zbuffer_kernels:fragments_cpu",
        "renderer.stages.cuda_kernels:fragments_device",
    ),
    "decode": (
        "renderer.stages.zbuffer_kernels:decode_cpu",
        "renderer.stages.cuda_kernels:decode_device",
    ),
    "shade": (
        "renderer.stages.shading_kernels:shade_cpu",
        "renderer.stages.cuda_kernels:shade_device",
    ),
}

for _name, (_cpu, _device) in FAST_PATHS.items():
    fastpaths.declare(f"renderer.{_name}", cpu=_cpu, device=_device)


def fast_path(name: str, xp: Any) -> Callable | None:
    """The implementation of the renderer's fast path ``name`` for arrays of ``xp``, called
    with the stage's arguments; None where the array code must run
    (``SIMD_FORCE_REFERENCE=1``)."""
    return fastpaths.fast_path(f"renderer.{name}", xp)
