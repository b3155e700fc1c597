"""CuPy router kernels: ``send`` with atomic combining and ``get``, registered for the CuPy
backend.

Imported by ``kernels.cupy_scan`` (only when the CuPy backend is in use). The functions take
their array namespace from ``xp`` (CuPy, or the counting stand-in ``kernels.counting.cupy``).
The sources and the algorithm are in ``kernels.cuda_router_source``: one atomic per message
for every combine on int32 / int64 / float32 / float64 (float ``add`` rounds in arrival
order, see there for the tolerance against the NumPy backend), and a gather of words for
``get``; each folds the senders' mask and the machine's deferred address check into its
one launch. Cases the kernels do not cover (bool or other dtypes; a non-contiguous
``out``; more than 2**40 messages to overwrite) go to the reference implementation, which
runs on CuPy too (a stable sort by destination and a segmented scan).

Per call the wrapper does no lookup beyond memoised dictionary hits: the kernels' launches
(through ``cuLaunchKernel``, :mod:`kernels.cupy_launch`) are cached per (combine, dtype,
device), the launch's grid and size arguments per (messages, addresses), and overwrite's
tag array per (device, stream), kept between calls and never refilled (epochs, see
``kernels.cuda_router_source``).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from kernels import cuda_router_source as _src
from kernels import reference
from kernels.cupy_launch import launcher
from kernels.registry import register

__all__ = ["get", "send"]


@functools.cache
def _module(cupy: Any, combine: str, dtype: Any, device_id: int) -> Any:
    return cupy.RawModule(code=_src.router_source(combine, np.dtype(dtype)))


@functools.cache
def _kernels(cupy: Any, combine: str, dtype: Any, device_id: int) -> tuple:
    """The launches (:func:`kernels.cupy_launch.launcher`) of the kernels of (combine,
    dtype) on a device, compiled once: ``(WINNER_KERNEL, WRITE_KERNEL)`` for overwrite,
    ``(SEND_KERNEL,)`` otherwise."""
    source = _src.router_source(combine, np.dtype(dtype))
    module = _module(cupy, combine, dtype, device_id)
    overwrite = combine == "overwrite"
    names = (_src.WINNER_KERNEL, _src.WRITE_KERNEL) if overwrite else (_src.SEND_KERNEL,)
    return tuple(launcher(cupy, module.get_function(name), source, name) for name in names)


@functools.cache
def _gather(cupy: Any, itemsize: int, device_id: int) -> Any:
    """The launch of the get kernel for elements of ``itemsize`` bytes on a device."""
    source = _src.gather_source(itemsize)
    kernel = cupy.RawModule(code=source).get_function(_src.GET_KERNEL)
    return launcher(cupy, kernel, source, _src.GET_KERNEL)


#: Overwrite tag arrays by (namespace id, device, stream): [uint64 array, last epoch,
#: namespace, last tag] (the namespace is kept so that a reused id is not mistaken for it).
_TAGS: dict[tuple, list] = {}


def _epoch_tags(cupy: Any, size: int, device_id: int, stream: int) -> tuple[Any, np.uint64]:
    """The tag array (at least ``size`` words) of the current stream and this call's tag.

    Zero-filled only when it is created, grown, or its epoch wraps; otherwise a call costs
    no device work before the winner kernel. A stream capturing a CUDA graph gets tags of
    the graph's own, zeroed in it: a replay runs with the tag it was captured with, which
    the tags of the calls in between (later epochs) would otherwise beat.
    """
    if cupy.cuda.get_current_stream().is_capturing():
        return cupy.zeros(size, dtype=cupy.uint64), _TAG_STEP
    key = (id(cupy), device_id, stream)
    entry = _TAGS.get(key)
    if entry is None or entry[2] is not cupy:
        entry = None
    if entry is None or entry[0].size < size or entry[1] >= _src.MAX_EPOCH:
        grown = size if entry is None else max(size, entry[0].size)
        entry = _TAGS[key] = [cupy.zeros(grown, dtype=cupy.uint64), 0, cupy, np.uint64(0)]
    entry[1] += 1
    entry[3] += _TAG_STEP  # the tag of epoch entry[1], kept as the NumPy scalar it is passed as
    return entry[0], entry[3]


#: One epoch's step of the tags (the epoch above the sender bits).
_TAG_STEP = np.uint64(1 << _src.SENDER_BITS)


def _grid(n: int) -> tuple[int, int, int]:
    # Grid-stride loops: enough blocks to fill any current GPU, capped.
    return (max(1, min(-(-n // _src.BLOCK), 65536)), 1, 1)


_BLOCK = (_src.BLOCK, 1, 1)

#: (messages, addresses) -> (grid, count, size) launch arguments, memoised (NumPy scalars
#: cost a few tenths of a microsecond each to make).
_SIZES: dict[tuple[int, int], tuple] = {}


def _launch_sizes(n: int, size: int) -> tuple:
    """The grid and the ``long long`` message count and destination size of a launch."""
    hit = _SIZES.get((n, size))
    if hit is None:
        if len(_SIZES) >= 4096:  # a bound on what a program of many sizes keeps
            _SIZES.clear()
        hit = _SIZES[(n, size)] = (_grid(n), np.int64(n), np.int64(size))
    return hit


#: The dtypes the kernels take, as a set (one hash per call, not up to four comparisons).
_DTYPES = frozenset(_src.DTYPES)
_INT64 = np.dtype(np.int64)


#: The kernels' ``int row`` argument of each row of the machine's deferred checks.
_ROWS: list = []


def _check_arguments(bounds: Any) -> tuple:
    """The kernels' (bounds, row) arguments of a deferred check ``(table, row)``, or none."""
    if bounds is None:
        return None, np.int32(0)
    table, row = bounds
    while len(_ROWS) <= row:
        _ROWS.append(np.int32(len(_ROWS)))
    return table, _ROWS[row]


@register("send", "cupy")
def send(xp, values, dest, out, combine: str, *, mask=None, bounds=None):
    """Router put on the GPU; same contract as ``kernels.reference.send``.

    One thread per message with an atomic combine at the destination (the CM router's
    combining send, Hillis 1985); overwrite takes the highest sender index per address
    with an atomic maximum of an epoch-tagged index, then writes that sender's value.
    Unlike the reference, a message addressed outside ``out`` is dropped (the machine
    reports out-of-range addresses with its deferred range check, folded into the kernel
    from ``bounds``).
    """
    dtype = out.dtype
    if xp is np or dtype not in _DTYPES or not out.flags.c_contiguous:
        return _reference_dropping(xp, values, dest, out, combine, mask, bounds)
    n = dest.size
    if n == 0:
        return out
    if combine == "unique":  # collisions were checked by the caller
        combine = "overwrite"
    if combine == "overwrite":
        if n >= 1 << _src.SENDER_BITS:
            return _reference_dropping(xp, values, dest, out, combine, mask, bounds)
    elif combine not in _src.ATOMIC_COMBINES[dtype.kind]:
        return _reference_dropping(xp, values, dest, out, combine, mask, bounds)
    cupy = xp
    flat = out if out.ndim == 1 else out.reshape(-1)
    values = _contiguous(cupy, values if values.ndim == 1 else values.reshape(-1), dtype)
    dest = _contiguous(cupy, dest if dest.ndim == 1 else dest.reshape(-1), _INT64)
    cuda = cupy.cuda
    device_id = cuda.runtime.getDevice()
    stream = cuda.get_current_stream().ptr
    kernels = _kernels(cupy, combine, dtype, device_id)
    grid, count, size = _launch_sizes(n, flat.size)
    table, row = _check_arguments(bounds)
    if combine == "overwrite":
        tags, tag = _epoch_tags(cupy, flat.size, device_id, stream)
        kernels[0](stream, grid, _BLOCK, (dest, mask, tags, tag, count, size, table, row))
        kernels[1](stream, grid, _BLOCK, (values, dest, mask, tags, tag, flat, count, size))
    else:
        kernels[0](stream, grid, _BLOCK, (values, dest, mask, flat, count, size, table, row))
    return out


#: The unsigned word of each element size (the get kernel copies words).
_WORDS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


@register("get", "cupy")
def get(xp, source, index, *, mask=None, fill=None, bounds=None):
    """Router get on the GPU; same contract as ``kernels.reference.get``.

    One launch: a gather of words of the element's size, ``fill`` where ``mask`` is
    False, the indices folded into the deferred range check from ``bounds``; an index
    outside the source wraps into it, as CuPy's ``take`` does (the check reports it).
    """
    itemsize = source.dtype.itemsize
    if xp is np or itemsize not in _WORDS or source.size == 0 or index.size == 0:
        return reference.get(xp, source, index, mask=mask, fill=fill, bounds=bounds)
    cupy = xp
    flat = source if source.flags.c_contiguous else cupy.ascontiguousarray(source)
    index = _contiguous(cupy, index, _INT64)
    out = cupy.empty(index.shape, dtype=source.dtype)
    # fill's bits as the word the kernel copies (the machine passes a scalar of the dtype)
    words = _WORDS[itemsize]
    if fill is None:
        word = words(0)
    else:
        word = (fill if type(fill) is source.dtype.type else source.dtype.type(fill)).view(words)
    cuda = cupy.cuda
    device_id = cuda.runtime.getDevice()
    stream = cuda.get_current_stream().ptr
    grid, count, size = _launch_sizes(index.size, flat.size)
    table, row = _check_arguments(bounds)
    _gather(cupy, itemsize, device_id)(
        stream, grid, _BLOCK, (flat, index, mask, word, out, count, size, table, row)
    )
    return out


def _contiguous(cupy, a, dtype: np.dtype):
    """``cupy.ascontiguousarray(a, dtype=dtype)``, not called where ``a`` is already that
    (a host call saved; the result is the same array)."""
    if a.dtype == dtype and a.flags.c_contiguous:
        return a
    return cupy.ascontiguousarray(a, dtype=dtype)


def _reference_dropping(xp, values, dest, out, combine: str, mask, bounds):
    """``reference.send`` where messages addressed outside ``out`` are dropped, as the
    kernels drop them: they go to a spare element past the end."""
    if xp is np or dest.size == 0:
        return reference.send(xp, values, dest, out, combine, mask=mask, bounds=bounds)
    if bounds is not None:
        reference.fold_bounds(xp, dest, mask, bounds)
    size = out.size
    spare = xp.empty(size + 1, dtype=out.dtype)
    spare[:size] = out.reshape(-1)
    inside = (dest >= 0) & (dest < size)
    if mask is not None:
        inside &= mask
    reference.send(xp, values, xp.where(inside, dest, size), spare, combine)
    out[...] = spare[:size].reshape(out.shape)
    return out
