"""Scan conversion's per-task span fused into one kernel: a scalar body written once.

:func:`span_one` computes, for task ``p`` (triangle ``items[p]``, its scan line
``row0 + tasks[p]``), the first pixel and the length of the span that the three edge
functions admit, as :func:`renderer.stages.scan.spans_arrays` does with array expressions (the
bounds come from exact int64 floor divisions; all of it is integer arithmetic, so any
order of evaluation gives the same bits; the body keeps the array code's order anyway).
:func:`compact_one` then gathers kept span ``p`` (task ``sel[p]``) and its depth at the
triangle's reference x on its scan line, as :func:`renderer.stages.scan.compact_spans_arrays` does
(the product rounded on its own: ``fmul``).
Compiled for the CPU with ``numba.njit`` (:func:`spans_cpu`, :func:`compact_cpu`) and for
the GPU with ``numba.cuda.jit`` (:mod:`renderer.stages.cuda_kernels`), as
:mod:`renderer.stages.setup_kernels` does.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from kernels.rebind import bind, cpu_body, cpu_loop, fmul
from renderer.stages.edges import edge_function, fill_bias
from renderer.stages.transform import SUBPIXEL

__all__ = [
    "SPAN_INT",
    "span_of",
    "span_one",
    "span_depth",
    "spans_cpu",
    "compact_one",
    "compact_cpu",
    "kept_spans_cpu",
    "TASK_INTS",
    "task_ints",
]

#: The kept spans' triangle, scan line, first pixel and length: int32, 16 bytes a span
#: less than int64. Scan lines, columns and lengths are below the image's size (at most
#: 4096 times the supersampling, far below 2**31) and triangle indices below 2**31
#: (``renderer.stages.zbuffer.id_bits`` requires it); the kernels that read them widen to int64
#: where a sum or product could overflow (``row * width + col``, ``tri + first``). The
#: length is the z-buffer loop's workload: the loops take int32 workloads as they are (no
#: int64 copy) and sum them in 64 bits.
SPAN_INT = np.int32
#: The loops' task arrays (datum and task index) the kernels take: int32 where every index
#: of the loop fits (half the bytes a task: :func:`simd.balance.run_loop`), else int64.
TASK_INTS = (np.dtype(np.int32), np.dtype(np.int64))


def task_ints(*arrays: Any) -> bool:
    """Whether every array holds int32 or int64 indices (the kernels' task arrays)."""
    return all(a.dtype in TASK_INTS for a in arrays)


def span_of(items, tasks, p, row0, col0, col1, xs, ys):
    """The scan line, first pixel and length (<= 0: no pixel) of task ``p``'s span."""
    t = items[p]
    u = np.uint64(t)  # an unsigned index: no test for one counted from the array's end
    r = row0[u] + tasks[p]
    big_y = r * SUBPIXEL
    first = col0[u]
    last = col1[u]
    for k in range(3):
        ak, bk, ck = edge_function(xs, ys, u, k)
        kk = bk * big_y + (ck + fill_bias(ak, bk))  # with the fill rule's bias
        # a > 0: i >= floor(-K / step) + 1; a < 0: i <= ~floor(K / step); a == 0: the
        # edge is horizontal and the whole row is in or out
        if ak > 0:
            first = max(first, (-kk) // (ak * SUBPIXEL) + 1)
        elif ak < 0:
            last = min(last, ~(kk // (ak * SUBPIXEL)))
        elif kk <= 0:
            last = first - 1
    return r, first, last - first + 1


def span_one(items, tasks, p, row0, col0, col1, xs, ys, row, lo, length):
    """Write ``row[p]``, ``lo[p]`` and ``length[p]`` (<= 0: no pixel) of task ``p``."""
    r, first, n = span_of(items, tasks, p, row0, col0, col1, xs, ys)
    row[p] = r
    lo[p] = first
    length[p] = n


def span_depth(z0, dzdy, y0, t, r):
    """The depth of triangle ``t`` at its reference x on scan line ``r``."""
    return z0[t] + fmul(dzdy[t], float(r) - y0[t])


def compact_one(sel, items, row, lo, length, z0, dzdy, y0, p, tri_out, row_out, col_out,
                len_out, zrow_out):  # fmt: skip
    """Write kept span ``p`` (task ``sel[p]``): triangle, row, first pixel, length, depth."""
    q = sel[p]
    t = items[q]
    r = row[q]
    tri_out[p] = t
    row_out[p] = r
    col_out[p] = lo[q]
    len_out[p] = length[q]
    zrow_out[p] = span_depth(z0, dzdy, y0, t, r)


def _compact_rows(sel, items, row, lo, length, z0, dzdy, y0, tri_out, row_out, col_out,
                  len_out, zrow_out):  # fmt: skip
    """Every kept span (the CPU's loop)."""
    for p in range(sel.shape[0]):
        body(sel, items, row, lo, length, z0, dzdy, y0, p, tri_out, row_out, col_out, len_out,
             zrow_out)  # fmt: skip


def _kept_rows(items, tasks, row0, col0, col1, xs, ys, z0, dzdy, y0, tri_out, row_out,
               col_out, len_out, zrow_out):  # fmt: skip
    """The CPU's spans and compaction in one pass over the tasks: the kept spans written in
    task order to outputs of one more element than the tasks; returns their number and
    their lengths' sum and maximum.

    Every task writes its span at the number kept so far, which only a kept one then
    advances: no branch on whether a span is kept, which no predictor can guess (about
    half of the expand frame's tasks are kept)."""
    count = 0
    total = 0
    high = 0
    for p in range(items.shape[0]):
        r, first, n = span_of(items, tasks, p, row0, col0, col1, xs, ys)
        t = items[p]
        tri_out[count] = t
        row_out[count] = r
        col_out[count] = first
        len_out[count] = n
        zrow_out[count] = span_depth(z0, dzdy, y0, t, r)
        count += n > 0
        total += max(n, 0)
        high = max(high, n)
    return count, total, high


def _span_rows(items, tasks, row0, col0, col1, xs, ys, row, lo, length):
    """Every task (the CPU's loop)."""
    for p in range(items.shape[0]):
        body(items, tasks, p, row0, col0, col1, xs, ys, row, lo, length)


def body(*args: Any) -> None:  # rebound to the compiled span_one by _cpu_kernel
    raise NotImplementedError


@functools.cache
def _cpu_span() -> Any:
    return cpu_body(span_of, edge_function=edge_function, fill_bias=fill_bias)


@functools.cache
def _cpu_depth() -> Any:
    return cpu_body(span_depth, "fmul")


@functools.cache
def _cpu_kernel() -> Any:
    body = bind(span_one, span_of=_cpu_span())
    return cpu_loop(bind(_span_rows, body=cpu_body(body)))


@functools.cache
def _cpu_compact() -> Any:
    body = bind(compact_one, span_depth=_cpu_depth())
    return cpu_loop(bind(_compact_rows, body=cpu_body(body)))


@functools.cache
def _cpu_kept() -> Any:
    return cpu_loop(bind(_kept_rows, span_of=_cpu_span(), span_depth=_cpu_depth()))


def kept_spans_cpu(setup: Any, items: np.ndarray, tasks: np.ndarray) -> tuple:
    """The CPU's :func:`spans` and compaction of the non-empty spans in one: ``(tri, row,
    col, length, zrow), (count, total, high)``: the kept spans as
    :func:`compact_cpu` gives them, their number and their lengths' sum and maximum.

    One pass over the tasks, no task's span computed twice: into the spans' arrays made
    one element longer than the tasks (the pages past the last kept span are never
    written, so never resident) and cut to the kept spans after, in place.

    Examples
    --------
    >>> from renderer.stages.scan import setup_triangles
    >>> clip = np.array([[[-0.5, -0.5, 0, 1], [0.5, -0.5, 0, 1], [0, 0.5, 0, 1]]])
    >>> s = setup_triangles(np, clip, 16, 16)
    >>> out, figures = kept_spans_cpu(s, np.array([0, 0, 0]), np.array([0, 6, 9]))
    >>> [x.tolist() for x in out], figures  # task 2 is above the triangle: no span
    ([[0, 0], [4, 10], [4, 7], [8, 2], [0.5, 0.5]], (2, 10, 8))
    """
    n = items.shape[0] + 1
    out = [np.empty(n, dtype=SPAN_INT) for _ in range(4)]
    out.append(np.empty(n))
    args = (items, tasks, *_setup_args(setup), *compact_args(setup))
    count, total, high = _cpu_kept()(*args, *out)
    for a in out:
        a.resize(count, refcheck=False)  # realloc: the kept spans stay where they are
    return tuple(out), (int(count), int(total), int(high))


def compact_cpu(setup: Any, sel: Any, items: Any, row: Any, lo: Any, length: Any) -> tuple:
    """The fused compaction on the CPU: ``tri, row, col, length`` (:data:`SPAN_INT`) and
    ``zrow`` (float64) of the kept spans ``sel``.

    Examples
    --------
    >>> from renderer.stages.scan import setup_triangles
    >>> clip = np.array([[[-0.5, -0.5, 0, 1], [0.5, -0.5, 0, 1], [0, 0.5, 0, 1]]])
    >>> s = setup_triangles(np, clip, 16, 16)
    >>> row, lo, length = spans_cpu(s, np.array([0, 0]), np.array([0, 6]))
    >>> out = compact_cpu(s, np.array([1]), np.array([0, 0]), row, lo, length)
    >>> [x.tolist() for x in out]
    [[0], [10], [7], [2], [0.5]]
    """
    n = sel.shape[0]
    tri, row_out, col, len_out = (np.empty(n, dtype=SPAN_INT) for _ in range(4))
    zrow = np.empty(n, dtype=np.float64)
    _cpu_compact()(sel, items, row, lo, length, *compact_args(setup), tri, row_out, col,
                   len_out, zrow)  # fmt: skip
    return tri, row_out, col, len_out, zrow


def compact_args(setup: Any) -> tuple:
    """The setup fields the compaction reads, in argument order."""
    return (setup.z0, setup.dzdy, setup.y0)


def spans_cpu(setup: Any, items: np.ndarray, tasks: np.ndarray) -> tuple:
    """The fused span computation on the CPU: ``row, lo, length`` (int64, one per task).

    Examples
    --------
    >>> from renderer.stages.scan import setup_triangles
    >>> clip = np.array([[[-0.5, -0.5, 0, 1], [0.5, -0.5, 0, 1], [0, 0.5, 0, 1]]])
    >>> s = setup_triangles(np, clip, 16, 16)
    >>> row, lo, length = spans_cpu(s, np.array([0, 0]), np.array([0, 6]))
    >>> row.tolist(), lo.tolist(), length.tolist()  # the bottom row is wide, the top narrow
    ([4, 10], [4, 7], [8, 2])
    """
    n = items.shape[0]
    row, lo, length = (np.empty(n, dtype=np.int64) for _ in range(3))
    _cpu_kernel()(items, tasks, *_setup_args(setup), row, lo, length)
    return row, lo, length


def _setup_args(setup: Any) -> tuple:
    return (setup.row0, setup.col0, setup.col1, setup.xs, setup.ys)
