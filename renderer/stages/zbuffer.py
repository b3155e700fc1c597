"""The z-buffer loop (one task per pixel of a span) and depth keys.

Z-buffering of Ortega, Hansen & Ahrens (SC'93) as load-balanced by Ahrens & Hansen
(Ahrens & Hansen 1995, section 3): the problem data are the spans made by scan conversion, a span's
workload is its length in pixels, and task ``t`` of span ``s`` computes the depth of pixel
``col + t`` and sends it to the z-buffer with a *min* combine (the router's combining send).

Depth keys make the result independent of the order of the sends: the key is the IEEE
bit pattern of the float32 window depth (monotonic for non-negative floats) in the high
bits and the triangle's drawing index in the low bits. The minimum key is the nearest
fragment and, on equal depths, the triangle drawn first, which is what OpenGL's
``GL_LESS`` depth test keeps. Every loop form and backend therefore writes the same
z-buffer.

Depths below float32's smallest normal number count as 0: CuPy compiles its elementwise
kernels with ``-ftz=true``, which would flush such a depth to zero on the GPU's array path
and keep it elsewhere, so every path flushes it explicitly and no backend differs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kernels import registry
from renderer.stages.fast_paths import fast_path
from renderer.stages.scan import Spans
from renderer.stages.span_kernels import SPAN_INT, task_ints
from renderer.stages.zbuffer_kernels import EMPTY, FLOAT32_TINY, fragments_cpu
from simd.transfers import check_addresses

__all__ = [
    "EMPTY",
    "id_bits",
    "depth_keys",
    "decode_keys",
    "decode_keys_arrays",
    "fragments",
    "fragments_arrays",
    "ZBufferBody",
]


def id_bits(n_triangles: int) -> int:
    """Bits needed for triangle indices 0..n-1 (at least 1, at most 31).

    Examples
    --------
    >>> id_bits(1), id_bits(1000)
    (1, 10)
    """
    bits = max(1, int(n_triangles - 1).bit_length())
    if bits > 31:
        raise ValueError(f"too many triangles for the depth key: {n_triangles} >= 2**31")
    return bits


def depth_keys(xp: Any, z: Any, tri: Any, bits: int) -> Any:
    """Pack float64 depths ``z`` (clamped to [0, 1], rounded to float32) and triangle
    indices ``tri`` into int64 keys ordered by (depth, index).

    Depths below float32's smallest normal number (and -0.0, NaN) count as +0.0.

    Examples
    --------
    >>> keys = depth_keys(np, np.array([0.5, 1e-40, -0.0, 2.0]), np.array([1, 2, 3, 0]), 4)
    >>> [(int(k) >> 4, int(k) & 15) for k in keys] == [(0x3F000000, 1), (0, 2), (0, 3),
    ...                                                (0x3F800000, 0)]
    True
    """
    z = xp.where(z >= FLOAT32_TINY, z, 0.0)  # no subnormals: CuPy's -ftz would flush them
    z = xp.where(z < 1.0, z, 1.0).astype(xp.float32)
    return (z.view(xp.int32).astype(xp.int64) << bits) | tri


def decode_keys(xp: Any, keys: Any, bits: int, count: Any = None) -> tuple[Any, Any, Any]:
    """Inverse of :func:`depth_keys`: (covered mask, triangle index or -1, float32 depth
    with 1.0 where nothing was drawn).

    One fused kernel for 1-D int64 keys (:func:`renderer.stages.zbuffer_kernels.decode_one`),
    else :func:`decode_keys_arrays`, with the same results. ``count``: a 1-element int64
    xp array the number of covered pixels is added to (by the kernel on a GPU: the frame
    reads it with its results, and the host does not count them).

    Examples
    --------
    >>> import numpy as np
    >>> keys = depth_keys(np, np.array([0.25, 0.25, 0.5]), np.array([3, 1, 0]), 2)
    >>> int(np.argmin(keys))            # nearest, and on a tie the triangle drawn first
    1
    >>> covered, tri, depth = decode_keys(np, np.array([keys[1], EMPTY]), 2)
    >>> covered.tolist(), tri.tolist(), depth.tolist()
    ([True, False], [1, -1], [0.25, 1.0])
    """
    fused = fast_path("decode", xp)
    if fused is not None and keys.dtype == np.int64 and keys.ndim == 1:
        return fused(keys, bits, count)  # counts into it
    out = decode_keys_arrays(xp, keys, bits)
    if count is not None:
        count += xp.count_nonzero(out[0])
    return out


def decode_keys_arrays(xp: Any, keys: Any, bits: int) -> tuple[Any, Any, Any]:
    """:func:`decode_keys` as array expressions (the fused kernels' oracle).

    Examples
    --------
    >>> import numpy as np
    >>> covered, tri, depth = decode_keys_arrays(np, np.array([(0x3F000000 << 3) | 5]), 3)
    >>> covered.tolist(), tri.tolist(), depth.tolist()
    ([True], [5], [0.5])
    """
    covered = keys != EMPTY
    k = xp.where(covered, keys, 0)
    tri = xp.where(covered, k & ((1 << bits) - 1), -1)
    depth = (k >> bits).astype(xp.int32).view(xp.float32)
    depth = xp.where(covered, depth, xp.float32(1.0))
    return covered, tri, depth


def fragments(
    xp: Any, spans: Spans, items: Any, tasks: Any, width: int, bits: int, first: int = 0
) -> tuple[Any, Any]:
    """The depth keys and z-buffer addresses of pixel ``col + tasks`` of spans ``items``
    (triangle indices offset by ``first``): one fused kernel where one is compiled
    (:mod:`renderer.stages.zbuffer_kernels`), else :func:`fragments_arrays`, with the same results.
    """
    fused = fast_path("fragments", xp)
    if fused is not None and _fused_dtypes(spans, items, tasks):
        return fused(spans, items, tasks, width, bits, first)
    return fragments_arrays(xp, spans, items, tasks, width, bits, first)


def fragments_arrays(
    xp: Any, spans: Spans, items: Any, tasks: Any, width: int, bits: int, first: int = 0
) -> tuple[Any, Any]:
    """:func:`fragments` as array expressions (the fused kernels' oracle).

    Examples
    --------
    >>> import numpy as np
    >>> one = np.array([0], dtype=np.int32)
    >>> s = Spans(one + 2, one + 1, one + 3, np.array([4]), np.array([0.5]),
    ...           np.array([0, 0, 0.25]), np.array([0, 0, 3.0]))  # triangle 2's slope and x0
    >>> keys, dest = fragments_arrays(np, s, np.array([0, 0]), np.array([0, 2]), 8, 4)
    >>> dest.tolist(), decode_keys(np, keys, 4)[1].tolist()
    ([11, 13], [2, 2])
    """
    s = spans
    col = s.col[items] + tasks
    tri = s.tri[items]
    z = s.zrow[items] + s.dzdx[tri] * (col.astype(xp.float64) - s.x0[tri])
    tri = tri.astype(xp.int64)  # int32 spans: keys and addresses are int64
    if first:  # only on ranks: no extra operation on one
        tri = tri + first
    return depth_keys(xp, z, tri, bits), s.row[items].astype(xp.int64) * width + col


class ZBufferBody:
    """Solution phase of the z-buffer loop: ``body(items, tasks)`` depth-tests pixel
    ``col + tasks`` of spans ``items`` with a combining send (``combine="min"``).

    On the NumPy backend of one process (no write counts, the fused kernel's dtypes) the
    keys and addresses are made and combined into the z-buffer :data:`PIECE` tasks at a
    time, with the router's own kernel, and the send is charged once, as the machine's
    send of them all would be: the per-task keys and addresses (16 bytes a task) never
    exceed one piece, and the z-buffer is the same (the minimum is order-independent).
    """

    #: model cycles per task of the body's own elementwise work (depth, key, address)
    TASK_COST = 10.0
    #: Tasks per piece of the NumPy backend's depth test (2 MiB of keys and addresses).
    PIECE = 1 << 17

    def __init__(
        self,
        xp: Any,
        spans: Spans,
        zbuffer: Any,
        width: int,
        bits: int,
        *,
        machine: Any,
        writes: Any = None,
        first: int = 0,
    ) -> None:
        self.xp, self.spans, self.zbuffer = xp, spans, zbuffer
        self.width, self.bits, self.machine, self.writes = width, bits, machine, writes
        #: Drawing index of the first triangle (a rank's share of a frame over MPI ranks).
        self.first = int(first)

    def __call__(self, items: Any, tasks: Any) -> None:
        xp, s = self.xp, self.spans
        if items.size == 0:
            return
        if self._in_pieces(items, tasks):
            self._depth_test_pieces(items, tasks)
            return
        keys, dest = fragments(xp, s, items, tasks, self.width, self.bits, self.first)
        self.machine.send(keys, dest, combine="min", into=self.zbuffer)
        if self.writes is not None:
            self.machine.send(
                xp.ones(dest.shape, dtype=xp.int64), dest, combine="add", into=self.writes
            )

    def _in_pieces(self, items: Any, tasks: Any) -> bool:
        """Whether the depth test runs piece by piece (class docstring)."""
        m = self.machine
        return (
            self.xp is np
            and m.backend == "numpy"
            and m.ranks is None
            and self.writes is None
            and self.zbuffer.dtype == np.int64
            and self.zbuffer.flags.c_contiguous
            and _fused_dtypes(self.spans, items, tasks)
            and not registry.force_reference()
        )

    def _depth_test_pieces(self, items: np.ndarray, tasks: np.ndarray) -> None:
        n, size = int(items.size), int(self.zbuffer.size)
        # charged as Machine.send of every key (int64) to its address (int64) would be
        self.machine.charge("router", n, label="send", nbytes=16 * n)
        send = registry.lookup("send", "numpy")
        for start in range(0, n, self.PIECE):
            piece = slice(start, start + self.PIECE)
            keys, dest = fragments_cpu(
                self.spans, items[piece], tasks[piece], self.width, self.bits, self.first
            )
            # checked before the kernel writes anything, as Machine.send checks
            check_addresses("send destination", size, int(dest.min()), int(dest.max()))
            send(np, keys, dest, self.zbuffer, "min")
            del keys, dest  # not held while the next piece's are made


def _fused_dtypes(spans: Spans, items: Any, tasks: Any) -> bool:
    """Whether the fused fragment kernels take these arrays (int32 or int64 tasks, int32
    span fields, float64 depths)."""
    s = spans
    return (
        task_ints(items, tasks)
        and all(a.dtype == SPAN_INT for a in (s.tri, s.row, s.col))
        and all(a.dtype == np.float64 for a in (s.zrow, s.dzdx, s.x0))
    )
