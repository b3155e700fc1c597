"""CuPy router kernels: ``send`` with atomic combining, registered for the CuPy backend.

Imported by ``kernels.cupy_scan`` (only when the CuPy backend is in use). ``send`` takes
its array namespace from ``xp`` (CuPy, or the counting stand-in ``kernels.counting.cupy``).
The sources and the algorithm are in ``kernels.cuda_router_source``. Cases the kernels do not cover
(float ``add``, which must combine in sender order to be deterministic; bool or other
dtypes; a non-contiguous ``out``) go to the reference implementation, which runs on CuPy
too (a stable sort by destination and a segmented scan).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from kernels import cuda_router_source as _src
from kernels import reference
from kernels.registry import register

__all__ = ["send"]


@functools.cache
def _module(cupy: Any, combine: str, dtype: str, device_id: int) -> Any:
    return cupy.RawModule(code=_src.router_source(combine, np.dtype(dtype)))


def _grid(n: int) -> tuple[int]:
    # Grid-stride loops: enough blocks to fill any current GPU, capped.
    return (max(1, min(-(-n // _src.BLOCK), 65536)),)


@register("send", "cupy")
def send(xp, values, dest, out, combine: str):
    """Router put on the GPU; same contract as ``kernels.reference.send``.

    One thread per message with an atomic combine at the destination (the CM router's
    combining send, Hillis 1985); overwrite takes the highest sender index per address
    with an atomic maximum, then writes that sender's value. Unlike the reference, a
    message addressed outside ``out`` is dropped (masked-off senders send to -1; the
    machine reports out-of-range addresses with its deferred range check).
    """
    dtype = out.dtype
    if (
        xp is np
        or dtype not in _src.DTYPES
        or not out.flags.c_contiguous
        or (combine == "add" and dtype.kind == "f")
    ):
        return _reference_dropping(xp, values, dest, out, combine)
    n = dest.size
    if n == 0:
        return out
    if combine == "unique":  # collisions were checked by the caller
        combine = "overwrite"
    if combine != "overwrite" and combine not in _src.ATOMIC_COMBINES[dtype.kind]:
        return _reference_dropping(xp, values, dest, out, combine)
    cupy = xp
    flat = out.reshape(-1)
    values = cupy.ascontiguousarray(values.reshape(-1), dtype=dtype)
    dest = cupy.ascontiguousarray(dest.reshape(-1), dtype=cupy.int64)
    module = _module(cupy, combine, dtype.str, cupy.cuda.Device().id)
    grid, block = _grid(n), (_src.BLOCK,)
    if combine == "overwrite":
        winner = cupy.full(flat.size, -1, dtype=cupy.int64)
        size = np.int64(flat.size)
        module.get_function(_src.WINNER_KERNEL)(grid, block, (dest, winner, np.int64(n), size))
        module.get_function(_src.WRITE_KERNEL)(
            grid, block, (values, dest, winner, flat, np.int64(n), size)
        )
    else:
        module.get_function(_src.SEND_KERNEL)(
            grid, block, (values, dest, flat, np.int64(n), np.int64(flat.size))
        )
    return out


def _reference_dropping(xp, values, dest, out, combine: str):
    """``reference.send`` where messages addressed outside ``out`` are dropped, as the
    kernels drop them: they go to a spare element past the end."""
    if xp is np or dest.size == 0:
        return reference.send(xp, values, dest, out, combine)
    size = out.size
    spare = xp.empty(size + 1, dtype=out.dtype)
    spare[:size] = out.reshape(-1)
    inside = (dest >= 0) & (dest < size)
    reference.send(xp, values, xp.where(inside, dest, size), spare, combine)
    out[...] = spare[:size].reshape(out.shape)
    return out
