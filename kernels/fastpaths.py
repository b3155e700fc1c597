"""The fast paths: the programs' fused kernels, each a name with an implementation per target.

A fast path does in one pass what a chain of array operations does: a per-item body written
once in Python, compiled by Numba into a CPU loop and into a GPU kernel, with the array
code as its reference (and its oracle in the tests). The machine's instructions are looked
up in :mod:`kernels.registry`; the fused kernels of the programs built on it (the
renderer's stages, the load-balancing search) here.

A package declares each fast path once (:func:`declare`), naming its implementations as
``"module:function"``, so that nothing is imported before it runs (the CUDA code only on a
GPU); a stage asks :func:`fast_path` for the one that runs on its arrays and never names a
target itself. On the counting stand-in for CuPy (:mod:`kernels.counting`) the device's
implementation runs, and each of its kernel launches counts one and runs the kernel's
emulation instead: the NumPy code registered for that kernel with :func:`emulates`
(:func:`launch`).

Examples
--------
>>> declare("example.product", cpu="operator:mul", device="operator:mul")
>>> fast_path("example.product", np)(21, 2)
42
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

from kernels.registry import force_reference

__all__ = ["declare", "declared", "emulates", "emulation", "fast_path", "launch"]

#: Per fast path: "module:function" of each target.
_DECLARED: dict[str, dict[str, str]] = {}
#: Per (fast path, target): the function, once imported.
_FOUND: dict[tuple[str, str], Callable] = {}
#: Per device kernel name: its NumPy emulation, ``fn(variant, args)``.
_EMULATIONS: dict[str, Callable] = {}


def declare(name: str, *, cpu: str, device: str) -> None:
    """Declare fast path ``name``: ``cpu`` and ``device`` are the ``"module:function"`` of its
    implementation on NumPy arrays and on CuPy's."""
    _DECLARED[name] = {"cpu": cpu, "device": device}
    _FOUND.pop((name, "cpu"), None)
    _FOUND.pop((name, "device"), None)


def declared() -> dict[str, dict[str, str]]:
    """Every fast path declared so far, with the ``"module:function"`` of each target."""
    return {name: dict(targets) for name, targets in _DECLARED.items()}


def fast_path(name: str, xp: Any) -> Callable | None:
    """The implementation of fast path ``name`` for arrays of ``xp``, to be called with the
    fast path's arguments: the CPU's on NumPy, the device's on CuPy (and on the counting
    stand-in), which takes ``xp`` first and is given it here; None where
    ``SIMD_FORCE_REFERENCE`` asks for the array code."""
    if force_reference():
        return None
    target = "cpu" if xp is np else "device"
    found = _FOUND.get((name, target))
    if found is None:
        try:
            where = _DECLARED[name][target]
        except KeyError:
            raise KeyError(f"no fast path {name!r} is declared") from None
        module, _, function = where.partition(":")
        found = _FOUND[(name, target)] = getattr(importlib.import_module(module), function)
    return found if target == "cpu" else functools.partial(found, xp)


def emulates(kernel: str) -> Callable[[Callable], Callable]:
    """Register ``fn(variant, args)`` as the NumPy emulation of device kernel ``kernel``,
    which the counting stand-in runs for each of its launches: ``args`` are the launch
    arguments, device arrays as NumPy arrays, and the emulation writes the kernel's outputs
    in place (``variant``: what the stand-in recognised a kernel source as, or None)."""

    def decorate(fn: Callable) -> Callable:
        _EMULATIONS[kernel] = fn
        return fn

    return decorate


def emulation(kernel: str) -> Callable | None:
    """The NumPy emulation of device kernel ``kernel`` (None: none is registered)."""
    return _EMULATIONS.get(kernel)


def launch(xp: Any, kernel: str, build: Callable[[], Any], grid: Any, block: Any, args: tuple):
    """Launch the Numba CUDA kernel ``kernel`` over ``grid`` blocks of ``block`` threads on
    ``xp``'s current stream (:func:`kernels.numba_launch.launch_on_stream`); ``build()``
    gives its dispatcher, and is called on a real GPU only. On the counting stand-in the
    launch counts one and runs the kernel's emulation."""
    emulated = getattr(xp, "launch_emulated", None)
    if emulated is not None:
        emulated(kernel, args)
        return
    from kernels.numba_launch import launch_on_stream

    launch_on_stream(xp, build(), grid, block, args)
