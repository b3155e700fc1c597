"""The z-buffer's per-task work and the decoding of its keys fused into kernels: scalar
bodies written once.

:func:`fragment_one` computes, for task ``p`` (pixel ``col + tasks[p]`` of span
``items[p]``), the depth key and the z-buffer address that
:func:`renderer.stages.zbuffer.fragments_arrays` computes with array expressions: the depth at the
pixel (the product rounded on its own: ``fmul``), clamped to [0, 1] (below float32's
smallest normal number: 0), rounded to float32,
its bits above the triangle's drawing index. The combining send that follows stays the
machine's (the router; on the NumPy backend its kernel, piece by piece and charged as one
send: :class:`renderer.stages.zbuffer.ZBufferBody`). Compiled for the CPU with ``numba.njit``
(:func:`fragments_cpu`) and for the GPU with ``numba.cuda.jit``
(:mod:`renderer.stages.cuda_kernels`), as :mod:`renderer.stages.setup_kernels` does for setup.

:func:`decode_one` decodes the key of pixel ``p`` as
:func:`renderer.stages.zbuffer.decode_keys_arrays` does (covered or not, the triangle index
or -1, the float32 depth or 1.0): one kernel where the array code launches seven.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from kernels.rebind import bind, cpu_body, cpu_loop, fmul

__all__ = ["EMPTY", "FLOAT32_TINY", "decode_cpu", "decode_one", "f32_bits", "f32_of_bits",
           "fragment_one", "fragments_cpu"]  # fmt: skip

#: Key of a pixel nothing was drawn to (greater than every real key).
EMPTY = np.iinfo(np.int64).max

#: float32's smallest normal number: depths below it are keyed as 0 on every path (CuPy's
#: elementwise kernels compile with -ftz=true and would flush them; the others would not).
FLOAT32_TINY = float(np.finfo(np.float32).tiny)


def f32_bits(z):
    """The IEEE bits of float64 ``z`` rounded to float32, as an int64 (each target binds
    its own)."""
    return np.int64(np.float32(z).view(np.int32))


def f32_of_bits(b):
    """The float32 whose IEEE bits are the int32 ``b`` (each target binds its own)."""
    return np.int32(b).view(np.float32)


def fragment_one(items, tasks, p, tri, row, col, zrow, dzdx, x0, width, bits, first, keys,
                 dest):  # fmt: skip
    """Write the depth key ``keys[p]`` and z-buffer address ``dest[p]`` of task ``p``."""
    s = np.uint64(items[p])  # unsigned indices: no test for one counted from the end
    t = tri[s]
    u = np.uint64(t)
    c = col[s] + tasks[p]
    z = zrow[s] + fmul(dzdx[u], float(c) - x0[u])  # the triangle's slope and reference x
    if not z >= FLOAT32_TINY:  # clamped to [0, 1]: NaN, -0.0 and subnormals become +0.0
        z = 0.0
    if not z < 1.0:
        z = 1.0
    keys[p] = (f32_bits(z) << bits) | (t + first)
    dest[p] = row[s] * width + c


def _fragment_rows(items, tasks, tri, row, col, zrow, dzdx, x0, width, bits, first, keys,
                   dest):  # fmt: skip
    """Every task (the CPU's loop)."""
    for p in range(items.shape[0]):
        body(items, tasks, p, tri, row, col, zrow, dzdx, x0, width, bits, first, keys, dest)


def body(*args: Any) -> None:  # rebound to the compiled fragment_one by _cpu_kernel
    raise NotImplementedError


@functools.cache
def _cpu_kernel() -> Any:
    body = cpu_body(fragment_one, "fmul", f32_bits=f32_bits)
    return cpu_loop(bind(_fragment_rows, body=body))


def fragments_cpu(spans: Any, items: Any, tasks: Any, width: int, bits: int, first: int) -> tuple:
    """The fused fragment work on the CPU: ``keys, dest`` (int64, one per task).

    Examples
    --------
    >>> from renderer.stages.scan import Spans
    >>> one = np.array([0], dtype=np.int32)
    >>> s = Spans(one + 2, one + 1, one + 3, np.array([4]), np.array([0.5]),
    ...           np.array([0, 0, 0.25]), np.array([0, 0, 3.0]))  # triangle 2's slope and x0
    >>> keys, dest = fragments_cpu(s, np.array([0, 0]), np.array([0, 2]), 8, 4, 0)
    >>> dest.tolist(), [int(k) & 15 for k in keys], [float(np.int32(k >> 4).view(np.float32))
    ...                                              for k in keys]
    ([11, 13], [2, 2], [0.5, 1.0])
    """
    n = items.shape[0]
    keys = np.empty(n, dtype=np.int64)
    dest = np.empty(n, dtype=np.int64)
    _cpu_kernel()(items, tasks, *spans_args(spans), int(width), int(bits), int(first), keys, dest)
    return keys, dest


def spans_args(spans: Any) -> tuple:
    """The span fields the body reads, in argument order."""
    s = spans
    return (s.tri, s.row, s.col, s.zrow, s.dzdx, s.x0)


def decode_one(keys, p, bits, covered, tri, depth):
    """Decode key ``keys[p]``: ``covered[p]``, ``tri[p]`` (the drawing index, -1 where
    nothing was drawn) and ``depth[p]`` (float32, 1.0 where nothing was drawn)."""
    k = keys[p]
    if k == EMPTY:
        covered[p] = False
        tri[p] = -1
        depth[p] = 1.0
        return
    covered[p] = True
    tri[p] = k & ((1 << bits) - 1)
    high = (k >> bits) & 0xFFFFFFFF  # the low 32 bits as a signed int32, as astype does
    if high >= 0x80000000:
        high -= 0x100000000
    depth[p] = f32_of_bits(high)


def _decode_rows(keys, bits, covered, tri, depth):
    """Every pixel (the CPU's loop)."""
    for p in range(keys.shape[0]):
        body(keys, p, bits, covered, tri, depth)


@functools.cache
def _cpu_decode() -> Any:
    body = cpu_body(decode_one, f32_of_bits=f32_of_bits)
    return cpu_loop(bind(_decode_rows, body=body))


def decode_cpu(keys: np.ndarray, bits: int, count: Any = None) -> tuple:
    """The fused decoding on the CPU: ``covered, tri, depth`` of 1-D int64 ``keys``; the
    number of covered pixels is added to ``count`` (a 1-element int64 array) when given.

    Examples
    --------
    >>> covered, tri, depth = decode_cpu(np.array([(0x3E800000 << 2) | 1, EMPTY]), 2)
    >>> covered.tolist(), tri.tolist(), depth.tolist()
    ([True, False], [1, -1], [0.25, 1.0])
    """
    n = keys.shape[0]
    covered = np.empty(n, dtype=np.bool_)
    tri = np.empty(n, dtype=np.int64)
    depth = np.empty(n, dtype=np.float32)
    _cpu_decode()(keys, int(bits), covered, tri, depth)
    if count is not None:
        count += np.count_nonzero(covered)
    return covered, tri, depth
