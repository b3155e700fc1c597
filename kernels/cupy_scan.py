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
(exclusive, reverse, segmented, initial) is a runtime argument. A scan is one launch,
through ``cuLaunchKernel`` (:mod:`kernels.cupy_launch`), with no host sync.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import numpy as np

from kernels import cuda_scan_source as _src
from kernels import reference
from kernels.cupy_launch import launcher
from kernels.registry import register

__all__ = ["reduce", "scan", "scratch_arrays"]


#: The dtypes the kernels take, as a set (one hash per call, not up to four comparisons).
_DTYPES = frozenset(_src.DTYPES)
_UINT8 = np.dtype(np.uint8)


@functools.cache
def _module(cupy: Any, key: tuple, device_id: int) -> tuple[Any, Any]:
    """The launches (:func:`kernels.cupy_launch.launcher`) of the (init, scan) kernels of
    variant ``key`` (op, dtype, pairs) on a device, compiled once."""
    op, dtype, pairs = key
    source = _src.scan_source(op, np.dtype(dtype), pairs=pairs)
    options = ("-std=c++17",) + tuple(f"-I{d}" for d in _src.cccl_include_dirs())
    module = cupy.RawModule(code=source, options=options)
    return tuple(
        launcher(cupy, module.get_function(name), source, name)
        for name in (_src.INIT_KERNEL, _src.SCAN_KERNEL)
    )


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
    """The launch plan of a scan form, memoised: (plan key, scan grid, scan block, the
    size arguments, the form, the tile count, the scratch's capacity in tiles, the fill
    when no ``initial`` is given)."""
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
    fill = None if has_initial else _src.scan_fill(op, dtype, exclusive=exclusive)
    return (
        plan.key,
        (plan.num_tiles, 1, 1),
        (plan.block, 1, 1),
        (np.int64(n), np.int64(row_len)),
        np.int32(plan.form),
        np.int32(plan.num_tiles),
        _src.scratch_capacity(plan.num_tiles),
        fill,
    )


#: The look-back's scratch per (namespace id, device, stream, thread, dtype, pairs, capacity):
#: (its two regions of tile states (uint8), the bytes of one as the kernel's argument, its
#: capacity in tiles as the kernel's argument, the control word (uint64), the namespace,
#: kept so that a reused id is not mistaken for it). Made and initialised once (one launch
#: of the init kernel); every scan after that keeps it ready for the next (see
#: ``kernels.cuda_scan_source``). One thread's launches on one stream run in order, and a
#: scratch serves scans of one tile-state layout (dtype, pairs) and of one size class.
_SCRATCH: dict[tuple, tuple] = {}


def scratch_arrays(cupy: Any) -> list:
    """The look-back's scratch buffers of namespace ``cupy`` (every stream's and thread's):
    what a CUDA graph of scans uses that was made before it (:mod:`simd.graphs` holds
    them for as long as it may replay). Their state lives on the device, each scan leaving
    it ready for the next, so a replayed scan finds it as a scan run anew does."""
    return [a for entry in _SCRATCH.values() if entry[4] is cupy for a in (entry[0], entry[3])]


def _scratch(cupy: Any, key: tuple, capacity: int, device_id: int, stream: int, init: Any):
    """The scratch of scans of variant ``key`` with up to ``capacity`` tiles on ``stream``."""
    _, dtype, pairs = key
    where = (id(cupy), device_id, stream, threading.get_ident(), dtype, pairs, capacity)
    entry = _SCRATCH.get(where)
    if entry is not None and entry[4] is cupy:
        return entry
    region = _src.tile_state_bytes(capacity)
    regions = cupy.empty(2 * region, dtype=cupy.uint8)
    control = cupy.empty(1, dtype=cupy.uint64)
    entry = (regions, np.uint64(region), np.int32(capacity), control, cupy)
    grid = (max(1, -(-capacity // _src.INIT_BLOCK)), 1, 1)
    init(stream, grid, (_src.INIT_BLOCK, 1, 1), (regions, entry[1], entry[2], control))
    _SCRATCH[where] = entry
    return entry


#: Everything a scan's launch needs but its arrays and fill, per (scan form, namespace id,
#: device, stream, thread): (the scan's launch, grid, block, the size arguments, the fill
#: when no ``initial`` is given, the arguments after the fill, the namespace). A scan of a
#: form seen before on its stream costs one dictionary lookup before its launch.
_PLANS: dict[tuple, tuple] = {}


def _plan(cupy: Any, form: tuple, device_id: int, stream: int) -> tuple:
    """The launch of a scan of ``form`` (the arguments of :func:`_launch`) on ``stream``."""
    where = (*form, id(cupy), device_id, stream, threading.get_ident())
    plan = _PLANS.get(where)
    if plan is not None and plan[-1] is cupy:
        return plan
    key, grid, block, sizes, form_bits, tiles, capacity, fill = _launch(*form)
    init, scan = _module(cupy, key, device_id)
    regions, region_bytes, cap, control, _ = _scratch(cupy, key, capacity, device_id, stream, init)
    if len(_PLANS) >= 4096:  # a bound on what a program of many sizes keeps
        _PLANS.clear()
    plan = _PLANS[where] = (
        scan,
        grid,
        block,
        sizes,
        fill,
        (form_bits, regions, region_bytes, tiles, cap, control),
        cupy,
    )
    return plan


def _scan_rows(cupy, buf, flags, row_len: int, op: str, *, exclusive, reverse, initial):
    """Scan the C-contiguous 1-D ``buf`` in rows of ``row_len`` (flags: uint8 or None)."""
    n = buf.size
    out = cupy.empty_like(buf)
    if n == 0:
        return out
    cuda = cupy.cuda
    stream = cuda.get_current_stream().ptr
    form = (n, row_len, buf.dtype, op, exclusive, reverse, flags is not None, initial is not None)
    scan, grid, block, sizes, fill, rest, _ = _plan(cupy, form, cuda.runtime.getDevice(), stream)
    if initial is not None:
        fill = _src.scan_fill(op, buf.dtype, exclusive=exclusive, initial=initial)
    # flags: never read when the scan is not segmented
    scan(stream, grid, block, (buf, buf if flags is None else flags, out, *sizes, fill, *rest))
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
