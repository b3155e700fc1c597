"""The dense path's device loops: one fused Perona-Malik kernel per iteration.

Imported only for device arrays. ``xp`` is ``cupy`` or the counting stand-in
(:mod:`kernels.counting`), on which a launch is counted once and computed by the NumPy
model of the kernel's arithmetic (:mod:`diffusion.cuda_kernels`).

With ``epsilon`` the loop reads the per-iteration counts of changed points back once
every :data:`CHECK_EVERY` iterations (and after the last), not every iteration: once an
iteration changes no point, every later one changes none either (the input of the next
is the same image, or every point is frozen), so the extra iterations leave the image
as it is, and the counts read back say at which iteration the NumPy path would have
stopped.

The loops run on this process's block of a :class:`diffusion.layout.Layout`: on MPI ranks
(:mod:`diffusion.blocks`) the block lies in a buffer with a ghost row from each neighbour
block, refilled before each launch, the kernel computes the block's rows only, and the
counts are summed over the ranks when they are read (one small all-reduce every
:data:`CHECK_EVERY` iterations), so every rank stops at the same iteration.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from diffusion.cuda_kernels import (
    active_args,
    active_kernel,
    active_launch,
    device_id,
    shape_args,
    step_kernel,
    step_launch,
    step_scalars,
)
from diffusion.layout import Layout
from diffusion.settings import PMParameters

__all__ = ["CHECK_EVERY", "GRAPH_STEPS", "pm_iterate", "pm_iterate_epsilon"]

#: Iterations between read backs of the activity counts with ``epsilon``: one sync per
#: 8 iterations, and at most 7 iterations that change nothing after convergence.
CHECK_EVERY = 8

_NULL = np.uint64(0)  # a null pointer argument


def _buffers(xp: Any, out: Any, layout: Layout) -> tuple[Any, Any, int, int]:
    """A C-contiguous source (16-byte aligned for ``float4``) with room for the layout's
    ghost rows, its twin, and the range of the block's own rows in them."""
    src, own = layout.buffer(xp, xp.ascontiguousarray(out))
    ptr = getattr(getattr(src, "data", None), "ptr", 0)
    if out.shape[-1] % 4 == 0 and ptr % 16:  # the float4 variant (see step_launch)
        src = src.copy()
    return src, xp.empty_like(src), own.start, own.stop


def pm_iterate(xp: Any, out: Any, p: PMParameters, layout: Layout | None = None) -> Any:
    """``p.niter`` plain Perona-Malik steps (``p.epsilon`` is not looked at) of the float32
    device array ``out`` (which it may overwrite), this process's block of ``layout``
    (:class:`diffusion.layout.Layout`; the whole image by default); returns the result. One
    launch per iteration, no sync (on ranks also the exchange of the ghost rows); on one
    process, a CUDA graph of :data:`GRAPH_STEPS` iterations launched again instead."""
    layout = layout or Layout(out.shape)
    src, dst, lo, hi = _buffers(xp, out, layout)
    if hi == lo:
        return out  # an empty block: nothing to compute, no neighbour waits for it
    grid, block, vec, index64 = step_launch(src.shape)
    kernel = step_kernel(xp, p.option, out.ndim, 0, vec, index64, device_id(xp))
    args = shape_args(src.shape, index64, lo, hi) + step_scalars(p)
    own = slice(lo, hi)

    def step(src: Any, dst: Any) -> tuple[Any, Any]:
        layout.fill(src, own)
        kernel(grid, block, (src, dst, *args))
        return dst, src

    done = _replayed_steps(xp, step, src, dst, p.niter, type(layout).fill is Layout.fill)
    for _ in range(p.niter - done):
        src, dst = step(src, dst)
    return src[own]


#: Iterations captured into one CUDA graph, launched again and again (even: the two
#: buffers are back in their places after it).
GRAPH_STEPS = 16


def _replayed_steps(xp: Any, step: Any, src: Any, dst: Any, niter: int, alone: bool) -> int:
    """Run the first iterations as one CUDA graph of :data:`GRAPH_STEPS` of them, captured
    once and launched again (one launch where there were sixteen); returns how many it ran
    (a multiple of it; 0 where the iterations are too few, the image is a block of MPI
    ranks whose ghost rows an exchange fills, or ``SIMD_GRAPHS=0``)."""
    import os

    cuda = xp.cuda
    if not alone or niter < 2 * GRAPH_STEPS or os.environ.get("SIMD_GRAPHS", "1") == "0":
        return 0
    if not hasattr(cuda.Stream(), "begin_capture"):
        return 0
    stream = cuda.Stream(non_blocking=True)
    current = cuda.get_current_stream()
    if hasattr(stream, "wait_event"):  # the image made on the current stream first
        stream.wait_event(current.record())
    with stream:
        stream.begin_capture()
        try:
            a, b = src, dst
            for _ in range(GRAPH_STEPS):
                a, b = step(a, b)
        finally:
            graph = stream.end_capture()
        for _ in range(niter // GRAPH_STEPS):
            graph.launch(stream)
    if hasattr(current, "wait_event"):  # later work on the current stream after them
        current.wait_event(stream.record())
    return niter // GRAPH_STEPS * GRAPH_STEPS


def pm_iterate_epsilon(
    xp: Any, out: Any, p: PMParameters, dilated: bool, layout: Layout | None = None
) -> tuple[Any, np.ndarray, np.ndarray | None]:
    """Steps with the fixed point ``p.epsilon`` (and ``p.freeze``) of ``out``, this
    process's block of ``layout``, as the NumPy path of :func:`diffusion.anisotropic_diffusion`,
    until an iteration changes no point of the whole image or after ``p.niter``. Returns
    ``(image, changed, active)``: the points of the whole image changed by each iteration
    run (its length is the iteration count) and, with ``dilated``, the points active after
    each (the changed ones and their neighbours; None otherwise). On ranks the counts are
    summed over the ranks once every :data:`CHECK_EVERY` iterations, when they are read."""
    niter, freeze = p.niter, p.freeze
    eps = 2 if freeze else 1
    layout = layout or Layout(out.shape)
    src, dst, lo, hi = _buffers(xp, out, layout)
    own, empty = slice(lo, hi), hi == lo
    grid, block, vec, index64 = step_launch(src.shape)
    args = shape_args(src.shape, index64, lo, hi) + step_scalars(p)
    frozen = xp.zeros(src.shape, dtype=np.uint8) if freeze else _NULL
    mask = xp.empty(src.shape, dtype=np.uint8) if (dilated and not freeze) else _NULL
    counts = xp.zeros((max(niter, 1), 2), dtype=np.uint64)  # changed, active
    if not empty:
        kernel = step_kernel(xp, p.option, out.ndim, eps, vec, index64, device_id(xp))
    if mask is not _NULL and not empty:
        a_grid, a_block, a_index64 = active_launch(src.shape)
        active = active_kernel(xp, a_index64, device_id(xp))
        a_args = active_args(src.shape, a_index64, lo, hi)
    host = np.zeros((0, 2), dtype=np.uint64)
    for it in range(niter):
        layout.fill(src, own)
        if not empty:
            kernel(grid, block, (src, dst, *args, np.float32(p.epsilon), frozen, mask, counts[it]))
        if mask is not _NULL:
            layout.fill(mask, own)  # the neighbours' changed rows, for the dilation
            if not empty:
                active(a_grid, a_block, (mask, *a_args, counts[it, 1:]))
        src, dst = dst, src
        if (it + 1) % CHECK_EVERY == 0 or it + 1 == niter:
            mine = xp.asnumpy(counts[len(host) : it + 1])
            host = np.concatenate([host, layout.total(mine)])
            still = host[:, 0] > 0
            if not still.all():
                host = host[: int(np.argmin(still)) + 1]
                break
    changed = host[:, 0]
    return src[own], changed, (host[:, 1] if mask is not _NULL else None)
