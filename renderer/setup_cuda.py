"""The fused triangle setup on the GPU: :func:`renderer.setup_kernels.setup_one` as a
Numba CUDA kernel over CuPy arrays, one thread per triangle.

:func:`setup_device` allocates the outputs and launches one kernel (grid-stride loop) that
also counts the degenerate triangles with an atomic add; the count stays on the device.
On the counting stand-in for CuPy (:mod:`kernels.counting`) the launch counts one and its
emulation runs the array code, :func:`renderer.scan.setup_triangles_arrays`.

This module is imported on the CuPy code path only; it imports ``numba.cuda`` on the
first launch (:func:`build_kernel`), so the counting stand-in needs no CUDA at all. The
tests run the same kernel in Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, where
``libdevice`` does not exist and plain Python float products are already rounded one at a
time) and compile it to PTX for sm_90.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np

from renderer.setup_kernels import OUTPUTS, bind, setup_one

__all__ = ["setup_device", "setup_kernel", "build_kernel", "kernel_function", "KERNEL_NAME"]

#: The kernel's name on the counting stand-in.
KERNEL_NAME = "renderer.setup_triangles"

# Threads per block: one triangle each; 128 keeps the many live registers of the body
# (three vertices' coordinates) from limiting occupancy much.
_THREADS = 128
_MAX_GRID = 2**31 - 1


#: Bound to ``numba.cuda`` (or its simulator) in the kernel's copy: kernel_function.
cuda: Any = None


def body(*args: Any) -> int:  # bound to the target's compiled setup_one: kernel_function
    raise NotImplementedError


def setup_kernel(clip, width, height, sx, sy, a, b, c, area2, xs, ys, row0, workload,
                 col0, col1, z0, dzdx, dzdy, x0, y0, inv_w, order, count):  # fmt: skip
    """Triangles ``t = grid position + k * grid size``; ``count[0]`` += degenerate ones."""
    t = cuda.grid(1)
    stride = cuda.gridsize(1)
    while t < clip.shape[0]:
        if body(clip, t, width, height, sx, sy, a, b, c, area2, xs, ys, row0, workload,
                col0, col1, z0, dzdx, dzdy, x0, y0, inv_w, order):  # fmt: skip
            cuda.atomic.add(count, 0, 1)
        t += stride


def _sim_fmul(a, b):
    return a * b


@functools.cache
def kernel_function() -> Any:
    """The kernel's Python function with the device primitives bound (imports numba.cuda).

    On the GPU ``fmul`` is libdevice's ``dmul_rn`` (never contracted into an ``fma``) and
    ``rint`` libdevice's; in the simulator, NumPy's (Python floats round every product).
    """
    from numba import config, cuda

    if config.ENABLE_CUDASIM:  # the simulator runs the Python functions as they are
        return bind(
            setup_kernel,
            cuda=cuda,
            body=bind(setup_one, fmul=_sim_fmul, rint=np.rint, to_i64=np.int64),
        )
    from numba.cuda import libdevice

    flag = cuda.jit(device=True)(bind(_flag_fn()))
    device_body = cuda.jit(device=True)(
        bind(setup_one, fmul=libdevice.dmul_rn, rint=libdevice.rint, to_i64=np.int64, _flag=flag)
    )
    return bind(setup_kernel, cuda=cuda, body=device_body)


def _flag_fn() -> Any:
    from renderer import setup_kernels

    return setup_kernels._flag


@functools.cache
def build_kernel() -> Any:
    """The ``cuda.jit`` dispatcher of the kernel, built once per process (compiled on its
    first launch, one specialisation per argument signature)."""
    from numba import cuda

    return cuda.jit(kernel_function())


def setup_device(xp: Any, clip: Any, width: int, height: int) -> dict[str, Any]:
    """The fused setup on ``xp``'s device: the fields of :class:`renderer.scan.TriangleSetup`.

    One launch (and the zeroing of the degenerate count); nothing is read back.
    """
    t = int(clip.shape[0])
    out = {
        name: xp.empty((t, 3) if per_vertex else t, dtype=dtype)
        for name, dtype, per_vertex in OUTPUTS
    }
    count = xp.zeros(1, dtype=xp.int64)
    if t:
        args = (clip, width, height, width / 2.0, height / 2.0, *out.values(), count)
        _launch(xp, t, args)
    out["n_degenerate"] = count.reshape(())
    return out


def _launch(xp: Any, t: int, args: tuple) -> None:
    emulated = getattr(xp, "launch_emulated", None)
    if emulated is not None:  # the counting stand-in for CuPy (kernels.counting)
        _register_emulation()
        emulated(KERNEL_NAME, args)
        return
    from numba import cuda
    from numba.core.errors import NumbaPerformanceWarning

    stream = cuda.default_stream()
    if xp is not np:
        ptr = xp.cuda.get_current_stream().ptr
        if ptr:
            stream = cuda.external_stream(ptr)
        # CuPy arrays as Numba device arrays: no copy, no synchronisation
        args = tuple(
            cuda.as_cuda_array(a, sync=False) if hasattr(a, "__cuda_array_interface__") else a
            for a in args
        )
    grid = max(1, min(_MAX_GRID, -(-t // _THREADS)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumbaPerformanceWarning)
        build_kernel()[grid, _THREADS, stream](*args)


@functools.cache
def _register_emulation() -> None:
    from kernels.counting import emulates

    @emulates(KERNEL_NAME)
    def _emulate(variant: Any, args: tuple) -> None:
        from renderer.scan import setup_triangles_arrays

        clip, width, height = args[0], int(args[1]), int(args[2])
        outs, count = args[5:-1], args[-1]
        ref = setup_triangles_arrays(np, np.asarray(clip), width, height)
        for (name, _, _), dest in zip(OUTPUTS, outs, strict=True):
            dest[...] = getattr(ref, name)
        count[0] = int(ref.n_degenerate) + int(count[0])
