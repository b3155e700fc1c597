"""CuPy scan kernels: every scan form CuPy lacks, in one kernel family.

Loaded when the CuPy backend is first used (``kernels.registry`` loads it). It registers
``scan`` and ``reduce`` for the ``"cupy"`` backend and imports ``kernels.cupy_router``
(``send``). The functions take their array namespace from ``xp``: CuPy, or the counting
stand-in ``kernels.counting.cupy`` that runs this same code on NumPy and counts its
launches; NumPy goes to the reference. CuPy itself is never imported here.

The kernels are the single-pass decoupled look-back scan of Merrill & Garland (NVIDIA
NVR-2016-002) over CUB block primitives, with Schwartz's (flag, value) pair operator for
segmented scans and for scans along an axis; see ``kernels.cuda_scan_source`` for the
algorithm and the source template. One module is compiled per kernel variant (operator,
dtype, pairs) and device, and memoised, as CuPy does for its own kernels; the scan form
(exclusive, reverse, segmented, initial) is a runtime argument.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import numpy as np

from kernels import cuda_scan_source as _src
from kernels import reference
from kernels.registry import register

__all__ = ["reduce", "scan", "scratch_arrays"]


#: The dtypes the kernels take, as a set (one hash per call, not up to four comparisons).
_DTYPES = frozenset(_src.DTYPES)
_UINT8 = np.dtype(np.uint8)


@functools.cache
def _module(cupy: Any, key: tuple, device_id: int) -> tuple[Any, Any]:
    """Compiled (init, scan) kernels of variant ``key`` (op, dtype, pairs) on a device."""
    op, dtype, pairs = key
    source = _src.scan_source(op, np.dtype(dtype), pairs=pairs)
    options = ("-std=c++17",) + tuple(f"-I{d}" for d in _src.cccl_include_dirs())
    module = cupy.RawModule(code=source, options=options)
    return module.get_function(_src.INIT_KERNEL), module.get_function(_src.SCAN_KERNEL)


@functools.lru_cache(maxsize=4096)
def _launch(
    n: int,
    row_len: int,
    dtype: np.dtype,
    op: str,
    exclusive: bool,
    reverse: bool,
    segmented: bool,
    has_initial: bool,
) -> tuple:
    """The launch plan of a scan form, memoised: (plan key, init grid, init scalar
    arguments, scan grid, scan block, scan scalar arguments, tile-state bytes, fill when
    no ``initial`` is given)."""
    plan = _src.plan_scan(
        n,
        row_len,
        dtype,
        op,
        exclusive=exclusive,
        reverse=reverse,
        segmented=segmented,
        has_initial=has_initial,
    )
    tile_bytes = _src.tile_state_bytes(plan.num_tiles)
    init_blocks = max(1, -(-plan.num_tiles // _src.INIT_BLOCK))
    tiles = (np.uint64(tile_bytes), np.int32(plan.num_tiles))
    fill = None if has_initial else _src.scan_fill(op, dtype, exclusive=exclusive)
    return (
        plan.key,
        (init_blocks,),
        tiles,
        (plan.num_tiles,),
        (plan.block,),
        (np.int64(n), np.int64(row_len)),
        np.int32(plan.form),
        tile_bytes,
        fill,
    )


#: The look-back's scratch per (namespace id, device, stream, thread): [tile states (uint8),
#: ticket (uint32), namespace (kept so that a reused id is not mistaken for it), views of
#: the tile states by size]. The init kernel resets both before every scan, and one
#: thread's launches on one stream run in order, so a scan reuses them rather than
#: allocating two buffers per call.
_SCRATCH: dict[tuple, list] = {}


def scratch_arrays(cupy: Any) -> list:
    """The look-back's scratch buffers of namespace ``cupy`` (every stream's and thread's):
    what a CUDA graph of scans uses that was made before it (:mod:`simd.graphs` holds
    them for as long as it may replay)."""
    return [a for entry in _SCRATCH.values() if entry[2] is cupy for a in entry[:2]]


def _scratch(cupy: Any, tile_bytes: int, device_id: int) -> tuple[Any, Any]:
    """The tile-state buffer (``tile_bytes``) and ticket of the current stream."""
    key = (id(cupy), device_id, cupy.cuda.get_current_stream().ptr, threading.get_ident())
    entry = _SCRATCH.get(key)
    if entry is not None and entry[2] is cupy:
        view = entry[3].get(tile_bytes)
        if view is not None:
            return view, entry[1]
    else:
        entry = None
    if entry is None or entry[0].size < tile_bytes:
        grown = tile_bytes if entry is None else max(tile_bytes, entry[0].size)
        ticket = cupy.empty(1, dtype=cupy.uint32)
        entry = _SCRATCH[key] = [cupy.empty(grown, dtype=cupy.uint8), ticket, cupy, {}]
    views = entry[3]
    if len(views) >= 64:  # a bound on what a program of many sizes keeps
        views.clear()
    view = views[tile_bytes] = entry[0][:tile_bytes]
    return view, entry[1]


def _scan_rows(cupy, buf, flags, row_len: int, op: str, *, exclusive, reverse, initial):
    """Scan the C-contiguous 1-D ``buf`` in rows of ``row_len`` (flags: uint8 or None)."""
    n = buf.size
    out = cupy.empty_like(buf)
    if n == 0:
        return out
    dtype = buf.dtype
    key, init_grid, tiles, grid, block, sizes, form, tile_bytes, fill = _launch(
        n,
        row_len,
        dtype,
        op,
        bool(exclusive),
        bool(reverse),
        flags is not None,
        initial is not None,
    )
    if initial is not None:
        fill = _src.scan_fill(op, dtype, exclusive=exclusive, initial=initial)
    device_id = cupy.cuda.Device().id
    init_kernel, scan_kernel = _module(cupy, key, device_id)
    tile_mem, ticket = _scratch(cupy, tile_bytes, device_id)
    init_kernel(init_grid, (_src.INIT_BLOCK,), (tile_mem, *tiles, ticket))
    scan_kernel(
        grid,
        block,
        (
            buf,
            buf if flags is None else flags,  # never read when the scan is not segmented
            out,
            *sizes,
            fill,
            form,
            tile_mem,
            *tiles,
            ticket,
        ),
    )
    return out


def _flat(cupy: Any, a: Any) -> Any:
    """``a`` as a C-contiguous 1-D array: ``a`` itself when it is one."""
    if a.ndim == 1 and a.flags.c_contiguous:
        return a
    return (a if a.flags.c_contiguous and a.ndim else cupy.ascontiguousarray(a)).reshape(-1)


@register("scan", "cupy")
def scan(
    xp,
    x,
    op: str = "add",
    *,
    exclusive: bool = False,
    reverse: bool = False,
    segments=None,
    axis: int | None = None,
    initial=None,
):
    """Scan of ``x`` with ``op`` on the GPU; same contract as ``kernels.reference.scan``.

    Single-pass decoupled look-back scan (Merrill & Garland 2016) with CUB block
    primitives; segmented by Schwartz's (flag, value) pair operator. dtypes other than
    int32, int64, float32, float64 go to the reference implementation.

    Examples
    --------
    >>> import cupy  # doctest: +SKIP
    >>> scan(cupy, cupy.arange(5), "max", reverse=True).get()  # doctest: +SKIP
    array([4, 4, 4, 4, 4])
    """
    if xp is np or x.dtype not in _DTYPES:
        return reference.scan(
            xp,
            x,
            op,
            exclusive=exclusive,
            reverse=reverse,
            segments=segments,
            axis=axis,
            initial=initial,
        )
    cupy = xp
    shape = x.shape
    if axis is None or x.ndim <= 1:
        # ascontiguousarray and reshape only where they change something (each is a call
        # on the host, and a reshape makes a new array object)
        buf = _flat(cupy, x)
        row_len = max(buf.size, 1)
        flags = None
        if segments is not None:
            if segments.dtype == np.bool_:
                flags = _flat(cupy, segments)
            else:
                flags = cupy.ascontiguousarray(segments, dtype=cupy.bool_).reshape(-1)
        moved_shape = None
    else:
        axis = axis % x.ndim
        moved = cupy.ascontiguousarray(cupy.moveaxis(x, axis, -1))
        moved_shape = moved.shape
        buf = moved.reshape(-1)
        row_len = max(shape[axis], 1)
        flags = None
        if segments is not None:
            flags = cupy.ascontiguousarray(
                cupy.moveaxis(segments.astype(cupy.bool_, copy=False), axis, -1)
            ).reshape(-1)
    if flags is not None:
        flags = flags.view(_UINT8)
    out = _scan_rows(
        cupy, buf, flags, row_len, op, exclusive=exclusive, reverse=reverse, initial=initial
    )
    if moved_shape is None:
        return out if len(shape) == 1 else out.reshape(shape)
    return cupy.ascontiguousarray(cupy.moveaxis(out.reshape(moved_shape), -1, axis))


@register("reduce", "cupy")
def reduce(xp, x, op: str = "add", *, axis: int | None = None):
    """Reduction on the GPU; same contract as ``kernels.reference.reduce``.

    add, max and min use CuPy's reductions (a float add the exact limb sum of
    ``kernels.exact_sum``, one read back of its limbs); the bitwise ones take the last
    element of an inclusive scan kernel (CuPy has no bitwise reductions).
    """
    if xp is np or op in ("add", "max", "min") or x.dtype not in _DTYPES:
        return reference.reduce(xp, x, op, axis=axis)
    if x.size == 0 or (axis is not None and x.shape[axis] == 0):
        return reference.reduce(xp, x, op, axis=axis)
    if axis is None:
        return scan(xp, x.reshape(-1), op)[-1]
    total = scan(xp, x, op, axis=axis)
    return xp.take(total, -1, axis=axis)


# The router kernels register themselves for the CuPy backend too.
from kernels import cupy_router as _cupy_router  # noqa: E402,F401
