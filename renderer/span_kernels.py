"""Scan conversion's per-task span fused into one kernel: a scalar body written once.

:func:`span_one` computes, for task ``p`` (triangle ``items[p]``, its scan line
``row0 + tasks[p]``), the first pixel and the length of the span that the three edge
functions admit, as :func:`renderer.scan.spans_arrays` does with array expressions (the
bounds come from exact int64 floor divisions; all of it is integer arithmetic, so any
order of evaluation gives the same bits; the body keeps the array code's order anyway).
:func:`compact_one` then gathers kept span ``p`` (task ``sel[p]``) and its depth at the
triangle's reference x on its scan line, as :func:`renderer.scan.compact_spans_arrays` does
(the product rounded on its own: ``fmul``).
Compiled for the CPU with ``numba.njit`` (:func:`spans_cpu`, :func:`compact_cpu`) and for
the GPU with ``numba.cuda.jit`` (:mod:`renderer.fused_cuda`), as
:mod:`renderer.setup_kernels` does.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from renderer.setup_kernels import bind, cpu_body, cpu_loop, edge_function, fill_bias, fmul
from renderer.transform import SUBPIXEL

__all__ = ["span_one", "spans_cpu", "compact_one", "compact_cpu"]


def span_one(items, tasks, p, row0, col0, col1, xs, ys, row, lo, length):
    """Write ``row[p]``, ``lo[p]`` and ``length[p]`` (<= 0: no pixel) of task ``p``."""
    t = items[p]
    r = row0[t] + tasks[p]
    big_y = r * SUBPIXEL
    first = col0[t]
    last = col1[t]
    for k in range(3):
        ak, bk, ck = edge_function(xs, ys, t, k)
        kk = bk * big_y + (ck + fill_bias(ak, bk))  # with the fill rule's bias
        # a > 0: i >= floor(-K / step) + 1; a < 0: i <= ~floor(K / step); a == 0: the
        # edge is horizontal and the whole row is in or out
        if ak > 0:
            first = max(first, (-kk) // (ak * SUBPIXEL) + 1)
        elif ak < 0:
            last = min(last, ~(kk // (ak * SUBPIXEL)))
        elif kk <= 0:
            last = first - 1
    row[p] = r
    lo[p] = first
    length[p] = last - first + 1


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
    zrow_out[p] = z0[t] + fmul(dzdy[t], float(r) - y0[t])


def _compact_rows(sel, items, row, lo, length, z0, dzdy, y0, tri_out, row_out, col_out,
                  len_out, zrow_out):  # fmt: skip
    """Every kept span (the CPU's loop)."""
    for p in range(sel.shape[0]):
        body(sel, items, row, lo, length, z0, dzdy, y0, p, tri_out, row_out, col_out, len_out,
             zrow_out)  # fmt: skip


def _span_rows(items, tasks, row0, col0, col1, xs, ys, row, lo, length):
    """Every task (the CPU's loop)."""
    for p in range(items.shape[0]):
        body(items, tasks, p, row0, col0, col1, xs, ys, row, lo, length)


def body(*args: Any) -> None:  # rebound to the compiled span_one by _cpu_kernel
    raise NotImplementedError


@functools.cache
def _cpu_kernel() -> Any:
    return cpu_loop(bind(_span_rows, body=cpu_body(span_one, "edge_function", "fill_bias")))


@functools.cache
def _cpu_compact() -> Any:
    return cpu_loop(bind(_compact_rows, body=cpu_body(compact_one, "fmul")))


def compact_cpu(setup: Any, sel: Any, items: Any, row: Any, lo: Any, length: Any) -> tuple:
    """The fused compaction on the CPU: ``tri, row, col, length`` (int64) and ``zrow``
    (float64) of the kept spans ``sel``.

    Examples
    --------
    >>> from renderer.scan import setup_triangles
    >>> clip = np.array([[[-0.5, -0.5, 0, 1], [0.5, -0.5, 0, 1], [0, 0.5, 0, 1]]])
    >>> s = setup_triangles(np, clip, 16, 16)
    >>> row, lo, length = spans_cpu(s, np.array([0, 0]), np.array([0, 6]))
    >>> out = compact_cpu(s, np.array([1]), np.array([0, 0]), row, lo, length)
    >>> [x.tolist() for x in out]
    [[0], [10], [7], [2], [0.5]]
    """
    n = sel.shape[0]
    tri, row_out, col, len_out = (np.empty(n, dtype=np.int64) for _ in range(4))
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
    >>> from renderer.scan import setup_triangles
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
