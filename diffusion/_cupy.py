"""Run the fused Perona-Malik kernels (:mod:`diffusion.cuda_source`) with CuPy.

Imported only for device arrays. ``xp`` is ``cupy`` or the counting stand-in
(:mod:`kernels.counting`), on which a launch is counted once and computed by the NumPy
model of the kernel's arithmetic below. Kernels are compiled once per namespace,
device and variant.

With ``epsilon`` the loop reads the per-iteration counts of changed points back once
every :data:`CHECK_EVERY` iterations (and after the last), not every iteration: once an
iteration changes no point, every later one changes none either (the input of the next
is the same image, or every point is frozen), so the extra iterations leave the image
as it is, and the counts read back say at which iteration the NumPy path would have
stopped.

The loops run on this process's block of a :class:`diffusion.dense.Layout`: on MPI ranks
(:mod:`diffusion.blocks`) the block lies in a buffer with a ghost row from each neighbour
block, refilled before each launch, the kernel computes the block's rows only, and the
counts are summed over the ranks when they are read (one small all-reduce every
:data:`CHECK_EVERY` iterations), so every rank stops at the same iteration.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from diffusion.cuda_source import (
    ACTIVE_NAME,
    active_launch,
    active_source,
    pm_source,
    step_launch,
    step_name,
)
from diffusion.dense import Layout, PMParameters
from kernels import fastpaths

__all__ = ["CHECK_EVERY", "pm_iterate", "pm_iterate_epsilon"]

#: Iterations between read backs of the activity counts with ``epsilon``: one sync per
#: 8 iterations, and at most 7 iterations that change nothing after convergence.
CHECK_EVERY = 8

_NULL = np.uint64(0)  # a null pointer argument


@functools.cache
def _step_kernel(xp: Any, option: int, ndim: int, eps: int, vec: int, index64: bool,
                 device: int) -> Any:  # fmt: skip
    name = step_name(option, ndim, eps, vec, index64)
    if hasattr(xp, "launch_emulated"):  # the counting stand-in: a NumPy model
        fastpaths.emulates(name)(functools.partial(_model_step, option, ndim, eps))
    source = pm_source(option, ndim, eps, vec, index64)
    return xp.RawKernel(source, name, options=("-std=c++17",))


@functools.cache
def _active_kernel(xp: Any, index64: bool, device: int) -> Any:
    if hasattr(xp, "launch_emulated"):
        fastpaths.emulates(ACTIVE_NAME)(_model_active)
    return xp.RawKernel(active_source(index64), ACTIVE_NAME, options=("-std=c++17",))


def _device(xp: Any) -> int:
    return int(xp.cuda.Device().id)


def _scalars(p: PMParameters) -> tuple:
    """``ik, kt, gamma, is0, is1, is2`` of ``p`` in float32: reciprocals of the float32
    values NumPy divides by (``kappa``, ``kappa sqrt 2`` for option 3, the spacings)."""
    k = np.float32(p.kappa * (2**0.5) if p.option == 3 else p.kappa)
    inv = [np.float32(1.0 / float(np.float32(s))) for s in p.spacing]
    if len(inv) == 2:
        inv = [inv[0], np.float32(1.0), inv[1]]  # is1 (the middle axis) is 3-D only
    return (np.float32(1.0 / float(k)), k, np.float32(p.gamma), *inv)


def _shape_args(shape: tuple[int, ...], index64: bool, lo: int = 0, hi: int | None = None) -> tuple:
    """``n0, n1, n2, lo, hi``: the shape as three axes, and the rows (along axis 0) that the
    step computes (all by default; the others are ghost rows, only read)."""
    n = (1,) * (3 - len(shape)) + tuple(int(s) for s in shape)
    t = np.int64 if index64 else np.int32
    return tuple(t(s) for s in n) + (t(lo), t(shape[0] if hi is None else hi))


def _active_args(shape: tuple[int, ...], index64: bool, lo: int, hi: int) -> tuple:
    """``n0, n1, n2, lo, hi`` of the counting kernel: its rows are ``z * n1 + y``, so in
    3-D the range of planes becomes one of rows."""
    n0, n1, n2, _, _ = _shape_args(shape, index64)
    per = int(n1) if len(shape) == 3 else 1
    t = np.int64 if index64 else np.int32
    return (n0, n1, n2, t(lo * per), t(hi * per))


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
    (:class:`diffusion.dense.Layout`; the whole image by default); returns the result. One
    launch per iteration, no sync (on ranks also the exchange of the ghost rows)."""
    layout = layout or Layout(out.shape)
    src, dst, lo, hi = _buffers(xp, out, layout)
    if hi == lo:
        return out  # an empty block: nothing to compute, no neighbour waits for it
    grid, block, vec, index64 = step_launch(src.shape)
    kernel = _step_kernel(xp, p.option, out.ndim, 0, vec, index64, _device(xp))
    args = _shape_args(src.shape, index64, lo, hi) + _scalars(p)
    own = slice(lo, hi)
    for _ in range(p.niter):
        layout.fill(src, own)
        kernel(grid, block, (src, dst, *args))
        src, dst = dst, src
    return src[own]


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
    args = _shape_args(src.shape, index64, lo, hi) + _scalars(p)
    frozen = xp.zeros(src.shape, dtype=np.uint8) if freeze else _NULL
    mask = xp.empty(src.shape, dtype=np.uint8) if (dilated and not freeze) else _NULL
    counts = xp.zeros((max(niter, 1), 2), dtype=np.uint64)  # changed, active
    if not empty:
        kernel = _step_kernel(xp, p.option, out.ndim, eps, vec, index64, _device(xp))
    if mask is not _NULL and not empty:
        a_grid, a_block, a_index64 = active_launch(src.shape)
        active = _active_kernel(xp, a_index64, _device(xp))
        a_args = _active_args(src.shape, a_index64, lo, hi)
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


# ----------------------------------------------------------------- counting stand-in


def _model_flux(d: np.ndarray, ik: np.float32, kt: np.float32, option: int) -> np.ndarray:
    q = d * ik
    if option == 1:
        return np.exp(-(q * q)) * d
    if option == 2:
        return (np.float32(1.0) / (np.float32(1.0) + q * q)) * d
    r = np.float32(1.0) - q * q
    return np.where(np.abs(d) <= kt, np.float32(0.5) * (r * r), np.float32(0.0)) * d


def _model_step(option: int, ndim: int, eps: int, variant: Any, args: tuple) -> None:
    """NumPy model of one launch of the step kernel (its float32 arithmetic, without the
    tiling and without fused multiply-adds)."""
    src, dst, n0, n1, n2, lo, hi, ik, kt, gamma, is0, is1, is2 = args[:13]
    shape = (int(n0), int(n1), int(n2))[3 - ndim :]
    v = np.asarray(src).reshape(shape)
    rows = slice(int(lo), int(hi))  # the rows computed; the others are ghosts
    inv = (is0, is1, is2) if ndim == 3 else (is0, is2)
    acc = np.zeros(shape, np.float32)
    for axis in range(ndim):
        f = _model_flux(np.diff(v, axis=axis), ik, kt, option)
        pad = [(0, 0)] * ndim
        pad[axis] = (1, 1)  # no flux through the border faces
        f = np.pad(f, pad)
        hi = tuple(slice(1, None) if a == axis else slice(None) for a in range(ndim))
        lo = tuple(slice(None, -1) if a == axis else slice(None) for a in range(ndim))
        acc += (f[hi] - f[lo]) * inv[axis]
    v, acc = v[rows], acc[rows]
    res = dst.reshape(shape)[rows]
    if eps == 0:
        res[...] = v + gamma * acc
        return
    epsilon, frozen, mask, count = args[13:]
    u = gamma * acc
    ch = np.abs(u) >= epsilon
    if eps == 2:
        ch &= frozen.reshape(shape)[rows] == 0
        frozen.reshape(shape)[rows] = ~ch
    res[...] = np.where(ch, v + u, v)
    if isinstance(mask, np.ndarray):
        mask.reshape(shape)[rows] = ch
    count[0] += np.uint64(ch.sum())


def _model_active(variant: Any, args: tuple) -> None:
    from diffusion.dense import dilate

    mask, n0, n1, n2, lo, hi, count = args
    m = np.asarray(mask).reshape(int(n0) * int(n1), int(n2)).astype(bool)
    a = dilate(np, m.reshape(int(n0), int(n1), int(n2))).reshape(m.shape)
    count[0] += np.uint64(a[int(lo) : int(hi)].sum())
