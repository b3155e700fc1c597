"""Triangle setup and the scan conversion loop (one task per scan line of a polygon).

Scan conversion of Ortega, Hansen & Ahrens (SC'93) as load-balanced by Ahrens & Hansen
(Ahrens & Hansen 1995, section 3): the problem data are polygons, a polygon's workload is the number
of scan lines it covers, and task ``t`` of polygon ``p`` produces the span of ``p`` on its
``t``-th scan line.

Rasterisation follows OpenGL's rules as Mesa's llvmpipe implements them, so images can be
compared pixel for pixel:

- window coordinates are snapped to 1/256 pixel (8 sub-pixel bits) after subtracting the
  pixel-centre offset 0.5, rounding to nearest even, so pixel (i, j) has its centre at the
  integer point (256 i, 256 j) of the snapped frame;
- a pixel is covered when its centre is inside all three edges, evaluated exactly with
  int64 edge functions; a centre exactly on an edge belongs to the triangle only for
  "left" and "bottom" edges (in GL window coordinates, y up; this is llvmpipe's top-left
  rule on a framebuffer object, whose rows are stored bottom-up), so two triangles sharing
  an edge never both cover, nor both miss, a pixel on it;
- triangles of zero area after snapping are skipped;
- spans are clipped to the viewport (x and y are not clipped geometrically).

Each span carries what its pixels need for the depth test: depth is linear in window space,
``z(i) = zrow + dzdx * (i - x0)`` with the plane through the unsnapped vertices (llvmpipe
sets up its interpolants from the unsnapped positions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kernels import registry
from renderer.stages.fast_paths import fast_path
from renderer.stages.span_kernels import SPAN_INT, kept_spans_cpu, task_ints
from renderer.stages.transform import SUBPIXEL, to_window

__all__ = [
    "TriangleSetup",
    "edge_functions",
    "setup_triangles",
    "setup_triangles_arrays",
    "spans",
    "spans_arrays",
    "compact_spans",
    "compact_spans_arrays",
    "ScanConverter",
    "Spans",
]

#: Elementwise operations per triangle of the setup (snapping, orientation, edge and depth
#: plane equations; hand-counted, the golden test pins the effect).
SETUP_OPS = 80


@dataclass
class TriangleSetup:
    """Per-triangle data of scan conversion (xp arrays of length T unless noted).

    ``xs, ys`` (T, 3) int32: the snapped vertex positions, counter-clockwise; the edge
    functions ``E_k(X, Y) = a X + b Y + c`` of edge k (vertex k to vertex k+1), positive
    inside, and twice the area follow from them exactly (:func:`edge_functions`), so they
    are not stored (72 bytes a triangle less at the frame's peak). ``row0`` first scan
    line, ``workload`` number of scan lines (0: nothing to draw); ``col0, col1`` the pixel
    columns of the bounding box clipped to the viewport (these four int32); ``z0``,
    ``dzdx``, ``dzdy``, ``x0``, ``y0`` the depth plane (pixel units); ``order`` (T, 3)
    int8: the vertex permutation that made the triangle counter-clockwise (vertex k of
    ``xs, ys`` is the clipper's vertex ``order[k]``). ``n_degenerate``: the number of
    triangles of zero area, a 0-d xp array (on a GPU it stays on the device until the
    frame reads its results back: ``int()`` reads it).
    """

    xs: Any
    ys: Any
    row0: Any
    workload: Any
    col0: Any
    col1: Any
    z0: Any
    dzdx: Any
    dzdy: Any
    x0: Any
    y0: Any
    order: Any
    n_degenerate: Any

    def keep_for_shading(self) -> None:
        """Drop the fields only scan conversion reads (set to None), once its spans are
        made: shading reads ``xs``, ``ys`` and ``order``; the rest, 56 bytes a triangle,
        need not stay through the z-buffer loop (but ``dzdx`` and ``x0``, which the spans
        hold, until the spans go)."""
        for name in ("row0", "workload", "col0", "col1", "z0", "dzdx", "dzdy", "x0", "y0"):
            setattr(self, name, None)


def edge_functions(xp: Any, xs: Any, ys: Any) -> tuple[Any, Any, Any]:
    """``a, b, c`` (int64) of the edge functions ``E_k = a X + b Y + c`` of
    counter-clockwise triangles ``xs, ys`` (T, 3), without the fill rule's bias: the array
    form of :func:`renderer.stages.edges.edge_function`.

    Examples
    --------
    >>> import numpy as np
    >>> a, b, c = edge_functions(np, np.array([[0, 512, 0]]), np.array([[0, 0, 512]]))
    >>> a.tolist(), b.tolist(), c.tolist()
    ([[0, -512, 512]], [[512, -512, 0]], [[0, 262144, 0]])
    """
    xs, ys = xs.astype(xp.int64), ys.astype(xp.int64)  # products need 64 bits
    a = ys - xp.roll(ys, -1, axis=1)  # a_k = y_k - y_k+1
    b = xp.roll(xs, -1, axis=1) - xs  # b_k = x_k+1 - x_k
    return a, b, -(a * xs + b * ys)


def snap(xp: Any, coord: Any) -> Any:
    """Window coordinate -> int64 fixed point relative to pixel centres (8 sub-pixel bits,
    round half to even, as llvmpipe's ``subpixel_snap(x - 0.5)``).

    Examples
    --------
    >>> import numpy as np
    >>> snap(np, np.array([0.5, 1.0, 3.5 + 1 / 512])).tolist()  # 768.5 rounds to even
    [0, 128, 768]
    """
    return xp.rint((coord - 0.5) * SUBPIXEL).astype(xp.int64)


def setup_triangles(
    xp: Any,
    clip: Any,
    width: int,
    height: int,
    *,
    corners: Any = None,
    machine: Any = None,
    count: Any = None,
) -> TriangleSetup:
    """Snap the triangles to the sub-pixel grid (counter-clockwise) and find their
    scan-line ranges, column ranges and depth planes.

    One fused kernel per frame where one is compiled (:mod:`renderer.stages.setup_kernels`):
    Numba on the CPU (NumPy backend), Numba CUDA on the GPU (CuPy backend; one counted
    launch on the counting stand-in). Its results are bit for bit those of the array code,
    :func:`setup_triangles_arrays`, which serves float32 input and
    ``SIMD_FORCE_REFERENCE=1``.

    Parameters
    ----------
    xp : module
    clip : (T, 3, 4) or, with ``corners``, (V, 4) float64 xp array
        Clip coordinates after clipping (``w > 0``): of each triangle's vertices, or of
        the vertices the triangles ``corners`` index (the clipper's output: no per-corner
        copy of the coordinates is made).
    width, height : int
        Viewport size in pixels.
    corners : (T, 3) int64 xp array, optional
        Each triangle's vertices as rows of ``clip``.
    machine : Machine, optional
        Charged for the elementwise work (:data:`SETUP_OPS` per triangle).
    count : (1,) int64 xp array of zeros, optional
        Where the degenerate triangles are counted (``n_degenerate`` is then its 0-d
        view): a frame's counters read back together (the fused kernel on a GPU counts
        into it, saving it a zeroing of its own).

    Returns
    -------
    TriangleSetup

    Examples
    --------
    A triangle from pixel (4, 4) to (12, 4) and (8, 12) of a 16 x 16 viewport:

    >>> import numpy as np
    >>> clip = np.array([[[-0.5, -0.5, 0, 1], [0.5, -0.5, 0, 1], [0, 0.5, 0, 1]]])
    >>> s = setup_triangles(np, clip, 16, 16)
    >>> int(s.row0[0]), int(s.workload[0]), int(s.col0[0]), int(s.col1[0])  # rows 4..11
    (4, 8, 4, 11)
    """
    if corners is None:  # the triangles' own vertices: rows 3 t, 3 t + 1, 3 t + 2
        t = int(clip.shape[0])
        corners = xp.arange(3 * t, dtype=xp.int64).reshape(t, 3)
        clip = clip.reshape(3 * t, clip.shape[2])
    fused = fast_path("setup", xp)
    if fused is not None and clip.dtype == np.float64 and corners.dtype == np.int64:
        setup = TriangleSetup(**fused(clip, corners, width, height, count))  # counts into it
    else:
        setup = setup_triangles_arrays(xp, clip[corners], width, height)
        if count is not None:
            count += setup.n_degenerate
            setup.n_degenerate = count.reshape(())
    if machine is not None:
        machine.charge("elementwise", int(corners.shape[0]), ops=SETUP_OPS)
    return setup


def setup_triangles_arrays(xp: Any, clip: Any, width: int, height: int) -> TriangleSetup:
    """:func:`setup_triangles` as a chain of array expressions (the fused kernels' oracle).

    Examples
    --------
    >>> import numpy as np
    >>> clip = np.array([[[-0.5, -0.5, 0, 1], [0.5, -0.5, 0, 1], [0, 0.5, 0, 1]]])
    >>> s = setup_triangles_arrays(np, clip, 16, 16)
    >>> s.xs.tolist(), s.ys.tolist(), edge_functions(np, s.xs, s.ys)[0].tolist()
    ([[896, 2944, 1920]], [[896, 896, 2944]], [[0, -2048, 2048]])
    """
    t = clip.shape[0]
    xw, yw, zw, _ = to_window(xp, clip, width, height)
    xs, ys = snap(xp, xw), snap(xp, yw)
    area2 = (xs[:, 1] - xs[:, 0]) * (ys[:, 2] - ys[:, 0]) - (xs[:, 2] - xs[:, 0]) * (
        ys[:, 1] - ys[:, 0]
    )
    # make every triangle counter-clockwise (y up) by swapping vertices 1 and 2
    cw = area2 < 0
    order = xp.stack([xp.zeros(t, dtype=xp.int64), xp.where(cw, 2, 1), xp.where(cw, 1, 2)], axis=1)
    order = order.astype(xp.int8)  # 0, 1, 2: a byte each

    def ccw(a: Any) -> Any:  # apply the swap of vertices 1 and 2 where clockwise
        return xp.stack(
            [a[:, 0], xp.where(cw, a[:, 2], a[:, 1]), xp.where(cw, a[:, 1], a[:, 2])], axis=1
        )

    xs, ys, zw, xw, yw = (ccw(a) for a in (xs, ys, zw, xw, yw))
    degenerate = area2 == 0

    ymin, ymax = ys.min(axis=1), ys.max(axis=1)
    xmin, xmax = xs.min(axis=1), xs.max(axis=1)
    # first and last pixel centres inside the box (ceil and floor), clipped to the viewport
    row0 = xp.maximum(-((-ymin) // SUBPIXEL), 0)
    row1 = xp.minimum(ymax // SUBPIXEL, height - 1)
    col0 = xp.maximum(-((-xmin) // SUBPIXEL), 0)
    col1 = xp.minimum(xmax // SUBPIXEL, width - 1)
    workload = xp.where(degenerate | (col1 < col0), 0, xp.maximum(row1 - row0 + 1, 0))

    # depth plane through the unsnapped vertices (as llvmpipe sets up its interpolants),
    # in pixels relative to pixel centres: pixel (i, j) is at (i, j)
    xf, yf = xw - 0.5, yw - 0.5
    dx1, dy1 = xf[:, 1] - xf[:, 0], yf[:, 1] - yf[:, 0]
    dx2, dy2 = xf[:, 2] - xf[:, 0], yf[:, 2] - yf[:, 0]
    dz1, dz2 = zw[:, 1] - zw[:, 0], zw[:, 2] - zw[:, 0]
    det = dx1 * dy2 - dx2 * dy1
    flat = degenerate | (det == 0)
    det = xp.where(flat, 1.0, det)
    dzdx = xp.where(flat, 0.0, (dz1 * dy2 - dz2 * dy1) / det)
    dzdy = xp.where(flat, 0.0, (dz2 * dx1 - dz1 * dx2) / det)
    return TriangleSetup(
        xs=xs.astype(xp.int32),
        ys=ys.astype(xp.int32),
        row0=row0.astype(xp.int32),
        workload=workload.astype(xp.int32),
        col0=col0.astype(xp.int32),
        col1=col1.astype(xp.int32),
        z0=zw[:, 0],
        dzdx=dzdx,
        dzdy=dzdy,
        x0=xf[:, 0],
        y0=yf[:, 0],
        order=order,
        n_degenerate=degenerate.sum(),
    )


def _fused(items: Any, tasks: Any, setup: TriangleSetup) -> bool:
    """Whether the fused span kernels take these tasks (else the array code does)."""
    floats = (setup.z0, setup.dzdy, setup.y0)
    return (
        task_ints(items, tasks)
        and all(a.dtype == np.float64 for a in floats)
        and not registry.force_reference()
    )


def spans(xp: Any, setup: TriangleSetup, items: Any, tasks: Any) -> tuple[Any, Any, Any]:
    """The scan line, first pixel and length (<= 0: empty) of the span of triangle ``items``
    on its scan line ``row0 + tasks``: one fused kernel where one is compiled
    (:mod:`renderer.stages.span_kernels`), else :func:`spans_arrays`, with the same results."""
    fused = fast_path("spans", xp)
    if fused is not None and task_ints(items, tasks):
        return fused(setup, items, tasks)
    return spans_arrays(xp, setup, items, tasks)


def spans_arrays(xp: Any, setup: TriangleSetup, items: Any, tasks: Any) -> tuple[Any, Any, Any]:
    """:func:`spans` as array expressions (the fused kernels' oracle).

    Examples
    --------
    >>> import numpy as np
    >>> clip = np.array([[[-0.5, -0.5, 0, 1], [0.5, -0.5, 0, 1], [0, 0.5, 0, 1]]])
    >>> s = setup_triangles_arrays(np, clip, 16, 16)
    >>> [x.tolist() for x in spans_arrays(np, s, np.array([0, 0]), np.array([0, 6]))]
    [[4, 10], [4, 7], [8, 2]]
    """
    s = setup
    row = xp.add(s.row0[items], tasks, dtype=xp.int64)  # int32 fields: int64 spans
    big_y = row * SUBPIXEL
    lo = s.col0[items]
    hi = s.col1[items]
    a_all, b_all, c_all = edge_functions(xp, s.xs[items], s.ys[items])
    # fill rule: centres on left edges (dy < 0, a > 0) and bottom edges (dy == 0, dx > 0)
    # are inside; E + 1 > 0 <=> E >= 0 for integers
    c_all = c_all + ((a_all > 0) | ((a_all == 0) & (b_all > 0))).astype(xp.int64)
    for k in range(3):
        a = a_all[:, k]
        kk = b_all[:, k] * big_y + c_all[:, k]
        step = a * SUBPIXEL
        pos, neg = a > 0, a < 0
        # a > 0: i >= floor(-K / step) + 1 ; a < 0: i <= ceil(K / -step) - 1, which is
        # -floor(K / step) - 1 = ~floor(K / step) (two's complement), exactly
        safe = xp.where(a == 0, 1, step)
        lo_k = xp.floor_divide(-kk, safe) + 1
        hi_k = ~xp.floor_divide(kk, safe)
        lo = xp.where(pos, xp.maximum(lo, lo_k), lo)
        hi = xp.where(neg, xp.minimum(hi, hi_k), hi)
        # a == 0: the edge is horizontal, the whole row is in or out
        hi = xp.where((a == 0) & (kk <= 0), lo - 1, hi)
    return row, lo, hi - lo + 1


def compact_spans(
    xp: Any, setup: TriangleSetup, sel: Any, items: Any, row: Any, lo: Any, length: Any
) -> tuple[Any, Any, Any, Any, Any]:
    """The kept spans ``sel`` of tasks ``items`` (spans ``row, lo, length``): their
    triangle, scan line, first pixel and length (:data:`renderer.stages.span_kernels.SPAN_INT`)
    and depth at (x0 of the triangle, row): one fused kernel where one is compiled
    (:mod:`renderer.stages.span_kernels`), else :func:`compact_spans_arrays`, with the same
    results."""
    ints = (sel, row, lo, length)
    floats = (setup.z0, setup.dzdy, setup.y0)
    fused = fast_path("compact", xp)
    if (
        fused is not None
        and all(a.dtype == np.int64 for a in ints)
        and task_ints(items)
        and all(a.dtype == np.float64 for a in floats)
    ):
        return fused(setup, sel, items, row, lo, length)
    return compact_spans_arrays(xp, setup, sel, items, row, lo, length)


def compact_spans_arrays(
    xp: Any, setup: TriangleSetup, sel: Any, items: Any, row: Any, lo: Any, length: Any
) -> tuple[Any, Any, Any, Any, Any]:
    """:func:`compact_spans` as array expressions (the fused kernels' oracle).

    Examples
    --------
    >>> import numpy as np
    >>> clip = np.array([[[-0.5, -0.5, 0, 1], [0.5, -0.5, 0, 1], [0, 0.5, 0, 1]]])
    >>> s = setup_triangles_arrays(np, clip, 16, 16)
    >>> row, lo, length = spans_arrays(np, s, np.array([0, 0]), np.array([0, 6]))
    >>> out = compact_spans_arrays(np, s, np.array([1]), np.array([0, 0]), row, lo, length)
    >>> [x.tolist() for x in out]
    [[0], [10], [7], [2], [0.5]]
    """
    s = setup
    tri = items[sel]
    row = row[sel]
    zrow = s.z0[tri] + s.dzdy[tri] * (row.astype(xp.float64) - s.y0[tri])
    return (*(a.astype(SPAN_INT) for a in (tri, row, lo[sel], length[sel])), zrow)


@dataclass
class Spans:
    """Spans made by scan conversion (xp arrays of length S).

    ``tri`` triangle, ``row`` scan line, ``col`` first pixel, ``length`` pixels (> 0: the
    z-buffer loop's workload; all four int32: :data:`renderer.stages.span_kernels.SPAN_INT`),
    ``zrow`` depth at (x0 of the triangle, row); ``dzdx`` depth slope and
    ``x0`` reference x are per triangle (length T: setup's own arrays, indexed by ``tri``,
    not copied per span: 16 bytes a span less).
    """

    tri: Any
    row: Any
    col: Any
    length: Any
    zrow: Any
    dzdx: Any
    x0: Any


class ScanConverter:
    """The solution phase of the scan conversion loop: ``body(items, tasks)`` computes the
    span of triangle ``items`` on its scan line ``row0 + tasks`` and keeps the non-empty ones.

    Span limits come from the three edge functions exactly: on row ``Y = 256 j`` an edge
    with ``a > 0`` admits columns ``i > -K / (256 a)`` (``K = b Y + c``), one with
    ``a < 0`` columns ``i < K / (-256 a)``, one with ``a == 0`` all or none; integer floor
    divisions give the bounds without rounding.
    """

    #: model cycles per task of the body's own elementwise work (3 edges x ~8 ops + span)
    TASK_COST = 32.0

    def __init__(self, xp: Any, setup: TriangleSetup, *, machine: Any = None) -> None:
        self.xp, self.setup, self.machine = xp, setup, machine
        self._parts: list[tuple[Any, ...]] = []
        self._figures: tuple[int, int, int] | None = None
        self._count = 0

    def __call__(self, items: Any, tasks: Any) -> None:
        xp, s = self.xp, self.setup
        if items.size == 0:
            return
        if xp is np and self.machine is not None and _fused(items, tasks, s):
            # the CPU's one loop: no per-task arrays; charged as the pack below
            n = int(items.size)
            self.machine.charge("scan", n, label="pack", nbytes=2 * 8 * n)
            part, (count, total, high) = kept_spans_cpu(s, items, tasks)
            if count:
                self._add_figures(count, (total, high, 1))  # the minimum as _pack gives it
                self._parts.append(part)
            return
        row, lo, length = spans(xp, s, items, tasks)
        keep = length > 0
        if self.machine is None:
            sel = xp.nonzero(keep)[0]
            count = int(sel.size)
            if count:
                kept = length[sel]
                figures = (int(kept.sum()), int(kept.max()), int(kept.min()))
        else:
            sel, count, figures = self._pack(keep, length)
        if count == 0:
            return
        self._add_figures(count, figures)
        self._parts.append(compact_spans(xp, s, sel, items, row, lo, length))

    def _pack(self, keep: Any, length: Any) -> tuple[Any, int, tuple[int, int, int]]:
        """The positions of the kept spans, their number and their lengths' sum, max, min.

        The machine's pack, charged to the model clock as :meth:`Machine.pack` is (a scan
        of the VP set), done as an add-scan of the mask and a search: the number of kept
        spans is read back with their lengths' sum and maximum in one read (one host sync
        on a GPU), so the packed size is known without another. The minimum reported is
        1, a lower bound (kept spans are not empty): it serves run_loop's check only.
        """
        xp, m = self.xp, self.machine
        n = int(keep.size)
        # charged as Machine.pack of the positions (int64) would be
        m.charge("scan", n, label="pack", nbytes=2 * 8 * n)
        buf = xp.empty(n + 2, dtype=xp.int64)
        ranks = buf[:n]
        xp.cumsum(keep, out=ranks)  # inclusive: ranks[i] kept spans up to i
        xp.sum(xp.where(keep, length, 0), out=buf[n : n + 1].reshape(()))
        xp.max(length, out=buf[n + 1 : n + 2].reshape(()))  # a kept one's when any is kept
        count, total, high = m.asnumpy(buf[n - 1 :]).tolist()
        if count == 0:
            return None, 0, (0, 0, 0)
        # the k-th kept span is the first position whose inclusive rank reaches k
        sel = xp.searchsorted(ranks, xp.arange(1, count + 1, dtype=xp.int64))
        return sel, count, (total, high, 1)

    def _add_figures(self, count: int, figures: tuple[int, int, int]) -> None:
        total, high, low = figures
        if self._figures is None:
            self._figures = (total, high, low)
        else:
            t0, h0, l0 = self._figures
            self._figures = (t0 + total, max(h0, high), min(l0, low))
        self._count += count

    @property
    def workload_stats(self) -> tuple[int, int, int]:
        """The span lengths' sum, maximum and minimum (the z-buffer loop's workload), known
        on the host without a read back: ``run_loop(..., workload_stats=...)``."""
        return self._figures if self._figures is not None else (0, 0, 0)

    @property
    def n_spans(self) -> int:
        """The number of spans produced so far (known on the host)."""
        return self._count

    def spans(self) -> Spans:
        """All spans produced so far, in production order."""
        xp, s = self.xp, self.setup
        if len(self._parts) == 1:
            tri, row, col, length, zrow = self._parts[0]
        elif self._parts:
            tri, row, col, length, zrow = (
                xp.concatenate(p) for p in zip(*self._parts, strict=True)
            )
            # the pieces' memory goes: the spans are kept once
            self._parts = [(tri, row, col, length, zrow)]
        else:
            e = xp.zeros(0, dtype=SPAN_INT)
            tri, row, col, length, zrow = e, e, e, e, xp.zeros(0)
        return Spans(tri, row, col, length, zrow, s.dzdx, s.x0)
