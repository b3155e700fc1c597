"""Marching cubes as three fused kernels over the rows of a volume: scalar bodies written
once, compiled for the CPU (:mod:`renderer.contour.cpu_kernels`) and for the GPU
(:mod:`renderer.contour.cuda_kernels`), both bound by :func:`bound_bodies`.

A *row* is the line of grid points ``(i, j, 0 .. n2 - 1)`` along the volume's last axis,
numbered ``r = i * n1 + j``. Each row owns the edges that leave its points along axes 0, 1
and 2 and, unless it lies on the last plane of axis 0 or 1, the row of cells whose first
corners are its points. One body call does one row:

- :func:`classify_row` (the ``classify`` phase): each point against the level, the row's
  crossings along axis 2 (how many, the first and the last) and its counts of values at
  the level, of NaN or infinite values and of values inside (``>= level``);
- :func:`count_row` (``classify`` too, once the rows beside are classified): the row's
  crossed edges along each axis and the triangles of its cells, walking only the span of
  points where the surface can be (the rows around are constant outside it: the trimming
  of Schroeder, Maynard & Geveci, "Flying edges: A high-performance scalable isocontouring
  algorithm", LDAV 2015);
- :func:`emit_row` (``emit``): the row's vertices, one per crossed edge, and its cells'
  triangles, written at the row's offsets, which a scan over the rows' counts gives.

Vertices are numbered in the global edge order (row, axis, point): within a row every
crossed edge along axis 0 in point order, then along axis 1, then along axis 2. A cell's
triangles name the vertices of edges of four rows (its own, ``i + 1``, ``j + 1`` and both);
:func:`emit_row` keeps a counter per (row, axis) it reads, which steps past each crossed
edge as the walk passes it, as Flying Edges does. Triangles follow the cells in C order
and the case table's order in a cell (:mod:`renderer.contour.tables`).

A vertex lies at ``origin + spacing * (p + t)`` along its edge, ``t = (level - s0) /
(s1 - s0)`` from the values at the edge's lower and upper end, in float64; its normal is
the volume's negative gradient (central differences, one-sided at the border, as
``vtkMarchingCubes`` takes them) interpolated along the edge with the same ``t``, scaled
by the inverse spacing and normalised (times one over its length; a zero gradient stays
zero). Every product goes through ``fmul``, which the GPU binds to a multiply it never
fuses into an ``fma``, so every target gives the same bits. A triangle two of whose
vertices sit on one grid point (a value exactly at the level) is dropped, as
``vtkMarchingCubes`` drops the triangles its point merging makes degenerate.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from kernels.rebind import bind, fmul
from renderer.contour.tables import EDGES, MAX_TRIANGLES

__all__ = [
    "DTYPES",
    "ROW_FIELDS",
    "bound_bodies",
    "classify_finish",
    "classify_lane",
    "combine_lanes",
    "count_finish",
    "count_lane",
    "count_setup",
    "classify_row",
    "count_row",
    "emit_row",
]

#: The emission's output types unless asked otherwise: float32 vertices and normals (what
#: VTK stores; half the bytes to move) and int32 faces (while the vertices' ids fit).
DTYPES = (np.dtype(np.float32), np.dtype(np.int32))

#: The columns of the per-row table :func:`classify_row` fills.
ROW_FIELDS = (
    "crossings",  # crossed edges along axis 2
    "first",  # the first point whose edge along axis 2 is crossed (-1: none)
    "last",  # the last such point (-1: none)
    "side0",  # whether the row's first point is inside
    "side1",  # whether its last point is inside
    "equal",  # values exactly at the level
    "nonfinite",  # NaN and infinite values
    "inside",  # values at or above the level
)

# A cell's corner ``c`` and its edges' ends, as constants the bodies index.
_EDGE_LOW = tuple(a for a, _ in EDGES)
_EDGE_HIGH = tuple(b for _, b in EDGES)


def _at(vol, i, j, k):
    """``vol[i, j, k]`` for indices known to lie in the array: unsigned, so that the
    compiled code skips the test for a negative index (from the end) on every read (a
    negative index would read outside the array instead of from its end)."""
    return vol[np.uint64(i), np.uint64(j), np.uint64(k)]


def _above(x, level):
    """1 where ``x`` is inside (at or above the level), else 0."""
    if x >= level:
        return 1
    return 0


def _face(vol, level, i, j, k):
    """Corners 0-3 of the cells at point ``k`` of rows ``(i, j)``, ``(i + 1, j)``,
    ``(i + 1, j + 1)``, ``(i, j + 1)``: bit ``c`` set where corner ``c`` is inside."""
    return (
        _above(_at(vol, i, j, k), level)
        | (_above(_at(vol, i + 1, j, k), level) << 1)
        | (_above(_at(vol, i + 1, j + 1, k), level) << 2)
        | (_above(_at(vol, i, j + 1, k), level) << 3)
    )


def _load_faces(vol, level, i, j, lo, hi, row_faces):
    """The faces (:func:`_face`) of points ``[lo, hi)`` of rows ``(i, j)`` and around into
    ``row_faces``, one pass the CPU's vector unit runs several points at a time (the GPU
    binds a no-op: each thread computes a face where it reads it, :func:`_face_at`)."""
    for k in range(lo, hi):
        row_faces[np.uint64(k)] = _face(vol, level, i, j, k)  # unsigned: as in _at


def _face_at(vol, level, i, j, k, row_faces):
    """The face at point ``k`` of rows ``(i, j)`` and around, as :func:`_load_faces` left
    it (the GPU binds :func:`_face` itself)."""
    return row_faces[np.uint64(k)]


def _equal_face(vol, level, i, j, k):
    """As :func:`_face`, bit ``c`` set where the value at corner ``c`` is the level."""
    mask = 0
    if _at(vol, i, j, k) == level:
        mask |= 1
    if _at(vol, i + 1, j, k) == level:
        mask |= 2
    if _at(vol, i + 1, j + 1, k) == level:
        mask |= 4
    if _at(vol, i, j + 1, k) == level:
        mask |= 8
    return mask


def _corner_or_edge(e, equal):
    """Where the vertex of a cell's crossed edge ``e`` lies: the corner it sits on when
    that corner's value is the level (``t`` is 0 or 1 there), else ``8 + e``."""
    low = _EDGE_LOW[e]
    if (equal >> low) & 1:
        return low
    high = _EDGE_HIGH[e]
    if (equal >> high) & 1:
        return high
    return 8 + e


def _degenerate(table, case, s, equal):
    """Whether triangle ``s // 3`` of ``case`` has two vertices on one grid point."""
    a = _corner_or_edge(table[case, s], equal)
    b = _corner_or_edge(table[case, s + 1], equal)
    c = _corner_or_edge(table[case, s + 2], equal)
    return a == b or b == c or a == c


def _span(rows, a, b, c, d, n2):
    """The points ``[lo, hi)`` of the rows ``a, b, c, d`` (repeats allowed) outside which
    every one of them is constant and all agree, so that no cell and no edge between them
    is crossed there; ``(0, 0)`` when nowhere."""
    lo = n2
    hi = -1
    for r in (a, b, c, d):
        if rows[r, 1] >= 0:
            lo = min(lo, rows[r, 1])
            hi = max(hi, rows[r, 2])
    side0 = rows[a, 3] + rows[b, 3] + rows[c, 3] + rows[d, 3]
    side1 = rows[a, 4] + rows[b, 4] + rows[c, 4] + rows[d, 4]
    if hi < 0:  # constant rows: crossed nowhere or between them everywhere
        if side0 == 0 or side0 == 4:
            return 0, 0
        return 0, n2
    if side0 != 0 and side0 != 4:
        lo = 0
    if side1 != 0 and side1 != 4:
        hi = n2 - 2
    return lo, hi + 2


def classify_row(vol, above, at, r, rows):
    """Classify the points of row ``r``: row ``r`` of ``rows`` (:data:`ROW_FIELDS`).
    ``x >= above`` is inside, ``x == at`` at the level
    (:func:`~renderer.contour.parameters.thresholds`: the level in the volume's own type
    where that is exact, so that the loop compares as many values at once as the CPU's
    vector unit holds)."""
    i, j = _row_point(vol, r)
    part = classify_lane(vol, above, at, i, j, 0, 1)
    classify_finish(vol, above, at, i, j, r, rows, part)


def _row_point(vol, r):
    """The first two grid indices ``(i, j)`` of row ``r``."""
    n1 = vol.shape[1]
    i = r // n1
    return i, r - i * n1


def classify_lane(vol, above, at, i, j, lane, lanes):
    """Lane ``lane`` of ``lanes`` classifying row ``(i, j)``: the points ``k = lane, lane +
    lanes, ...`` before the row's last, their (values inside, values at the level, NaN and
    infinite values, crossed edges along axis 2, the first and the last point whose edge
    is crossed: ``n2`` and -1 when none). A GPU's warp runs a row's lanes side by side,
    reading consecutive points, and sums them (:func:`combine_lanes`); the CPU runs one
    lane (0 of 1)."""
    n2 = vol.shape[2]
    inside = 0
    equal = 0
    nonfinite = 0
    crossings = 0
    first = n2
    last = -1
    for k in range(lane, n2 - 1, lanes):
        x = _at(vol, i, j, k)
        side = x >= above
        crossed = side != (_at(vol, i, j, k + 1) >= above)
        inside += side
        equal += x == at
        nonfinite += x - x != 0  # NaN - NaN and inf - inf are NaN
        crossings += crossed
        first = min(first, k if crossed else n2)
        last = max(last, k if crossed else -1)
    return inside, equal, nonfinite, crossings, first, last


def combine_lanes(a, b):
    """Two lanes' :func:`classify_lane` results as one: the counts summed, the first
    point the lesser, the last the greater."""
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], min(a[4], b[4]),
            max(a[5], b[5]))  # fmt: skip


def classify_finish(vol, above, at, i, j, r, rows, part):
    """Row ``r`` of ``rows`` from its lanes' combined :func:`classify_lane` and the row's
    last point."""
    n2 = vol.shape[2]
    inside, equal, nonfinite, crossings, first, last = part
    x = vol[i, j, n2 - 1]
    inside += x >= above
    equal += x == at
    nonfinite += x - x != 0
    rows[r, 0] = crossings
    rows[r, 1] = first if crossings > 0 else -1
    rows[r, 2] = last
    rows[r, 3] = _above(vol[i, j, 0], above)
    rows[r, 4] = _above(x, above)
    rows[r, 5] = equal
    rows[r, 6] = nonfinite
    rows[r, 7] = inside


def count_row(vol, level, r, rows, table, ntri, edges, tris, spans):
    """Count row ``r``'s crossed edges along each axis (``edges[r]``) and its cells'
    triangles (``tris[r]``); ``spans[r]``: the points ``[lo, hi)`` that
    :func:`emit_row` walks."""
    i, j, lo, hi, check, cells = count_setup(vol, rows, r)
    along0 = 0
    along1 = 0
    triangles = 0
    if cells and hi > lo:
        f0 = _face(vol, level, i, j, lo)
        q0 = _equal_face(vol, level, i, j, lo) if check else 0
        for k in range(lo, hi):
            own = _own_edges(f0)
            along0 += own & 1
            along1 += own >> 1
            if k + 1 < hi:  # the cell between points k and k + 1
                f1 = _face(vol, level, i, j, k + 1)
                q1 = _equal_face(vol, level, i, j, k + 1) if check else 0
                triangles += _cell_triangles(table, ntri, f0 | (f1 << 4), q0 | (q1 << 4))
                f0 = f1
                q0 = q1
    else:  # a row on the last plane of axis 0 or 1: its own edges only
        for k in range(lo, hi):
            bits = _edge_bits(vol, level, i, j, k)
            along0 += bits & 1
            along1 += (bits >> 1) & 1
    count_finish(r, rows, edges, tris, spans, lo, hi, (along0, along1, triangles))


def count_setup(vol, rows, r):
    """What counting row ``r`` needs first: its ``(i, j)``, the span ``[lo, hi)`` of points
    to walk (:func:`_span` over it and the rows beside it), whether a value of those rows
    lies at the level (``check``: then triangles may be degenerate) and whether the row
    has cells (it lies on no last plane)."""
    n0 = vol.shape[0]
    n1 = vol.shape[1]
    i, j = _row_point(vol, r)
    next_i = r + n1 if i + 1 < n0 else r  # the rows beside it, itself on the last planes
    next_j = r + 1 if j + 1 < n1 else r
    lo, hi = _span(rows, r, next_i, next_j, next_i + (next_j - r), vol.shape[2])
    cells = i + 1 < n0 and j + 1 < n1
    check = False
    if cells:
        check = rows[r, 5] + rows[next_i, 5] + rows[next_j, 5] + rows[next_i + 1, 5] > 0
    return i, j, lo, hi, check, cells


def count_lane(vol, level, table, ntri, i, j, lo, hi, check, cells, lane, lanes):
    """Lane ``lane`` of ``lanes`` counting row ``(i, j)`` over its span ``[lo, hi)``
    (:func:`count_setup`): the points ``k = lo + lane, lo + lane + lanes, ...``, their
    crossed edges along axes 0 and 1 and the triangles of the cells between ``k`` and
    ``k + 1``, for a GPU's warp to sum (:func:`count_row` walks a row alone, each face
    computed once)."""
    along0 = 0
    along1 = 0
    triangles = 0
    for k in range(lo + lane, hi, lanes):
        if cells:
            f0 = _face(vol, level, i, j, k)
            own = _own_edges(f0)
            along0 += own & 1
            along1 += own >> 1
            if k + 1 < hi:
                f1 = _face(vol, level, i, j, k + 1)
                equal = 0
                if check:
                    equal = _equal_face(vol, level, i, j, k) | (
                        _equal_face(vol, level, i, j, k + 1) << 4
                    )
                triangles += _cell_triangles(table, ntri, f0 | (f1 << 4), equal)
        else:
            bits = _edge_bits(vol, level, i, j, k)
            along0 += bits & 1
            along1 += (bits >> 1) & 1
    return along0, along1, triangles


def count_finish(r, rows, edges, tris, spans, lo, hi, part):
    """Row ``r``'s counts from its lanes' summed :func:`count_lane`."""
    edges[r, 0] = part[0]
    edges[r, 1] = part[1]
    edges[r, 2] = rows[r, 0]
    tris[r] = part[2]
    spans[r, 0] = lo
    spans[r, 1] = hi


def _own_edges(face):
    """Of the face (:func:`_face`) at a point: bit 0 set where the point's edge along axis
    0 is crossed (corners 0 and 1 differ), bit 1 along axis 1 (corners 0 and 3)."""
    return ((face ^ (face >> 1)) & 1) | (((face ^ (face >> 3)) & 1) << 1)


def _cell_triangles(table, ntri, case, equal):
    """The triangles a cell of ``case`` gives (none for 0 and 255), less those that two
    of its corners at the level (``equal``) make degenerate."""
    if case == 0 or case == 255:
        return 0
    n = ntri[np.uint64(case)]
    if equal != 0:
        for s in range(0, 3 * n, 3):
            if _degenerate(table, case, s, equal):
                n -= 1
    return n


def _gradient(vol, i, j, k):
    """The negative gradient at grid point ``(i, j, k)`` in index units: central
    differences inside, one-sided on the border (``vtkMarchingCubes``' choice)."""
    n0 = vol.shape[0]
    n1 = vol.shape[1]
    n2 = vol.shape[2]
    s = np.float64(_at(vol, i, j, k))
    if i == 0:
        gx = s - np.float64(_at(vol, i + 1, j, k))
    elif i == n0 - 1:
        gx = np.float64(_at(vol, i - 1, j, k)) - s
    else:
        gx = fmul(0.5, np.float64(_at(vol, i - 1, j, k)) - np.float64(_at(vol, i + 1, j, k)))
    if j == 0:
        gy = s - np.float64(_at(vol, i, j + 1, k))
    elif j == n1 - 1:
        gy = np.float64(_at(vol, i, j - 1, k)) - s
    else:
        gy = fmul(0.5, np.float64(_at(vol, i, j - 1, k)) - np.float64(_at(vol, i, j + 1, k)))
    if k == 0:
        gz = s - np.float64(_at(vol, i, j, k + 1))
    elif k == n2 - 1:
        gz = np.float64(_at(vol, i, j, k - 1)) - s
    else:
        gz = fmul(0.5, np.float64(_at(vol, i, j, k - 1)) - np.float64(_at(vol, i, j, k + 1)))
    return gx, gy, gz


def _vertex(vol, level, geometry, i, j, k, axis, v, verts, normals):
    """Write vertex ``v``: the crossing on the edge from grid point ``(i, j, k)`` along
    ``axis``, with its unit normal (``geometry``:
    :func:`~renderer.contour.parameters.emission_geometry`)."""
    i1 = i
    j1 = j
    k1 = k
    if axis == 0:
        i1 = i + 1
    elif axis == 1:
        j1 = j + 1
    else:
        k1 = k + 1
    s0 = np.float64(_at(vol, i, j, k))
    t = (level - s0) / (np.float64(_at(vol, i1, j1, k1)) - s0)
    p0 = np.float64(i) + geometry[9]  # the plane's global index (exact: whole numbers)
    p1 = np.float64(j)
    p2 = np.float64(k)
    if axis == 0:
        p0 = p0 + t
    elif axis == 1:
        p1 = p1 + t
    else:
        p2 = p2 + t
    w = np.uint64(v)  # unsigned: as in _at
    verts[w, 0] = geometry[3] + fmul(geometry[0], p0)
    verts[w, 1] = geometry[4] + fmul(geometry[1], p1)
    verts[w, 2] = geometry[5] + fmul(geometry[2], p2)
    ax, ay, az = _gradient(vol, i, j, k)
    bx, by, bz = _gradient(vol, i1, j1, k1)
    nx = fmul(ax + fmul(t, bx - ax), geometry[6])
    ny = fmul(ay + fmul(t, by - ay), geometry[7])
    nz = fmul(az + fmul(t, bz - az), geometry[8])
    length = math.sqrt(fmul(nx, nx) + fmul(ny, ny) + fmul(nz, nz))
    if length > 0:
        scale = 1.0 / length
        nx = fmul(nx, scale)
        ny = fmul(ny, scale)
        nz = fmul(nz, scale)
    normals[w, 0] = nx
    normals[w, 1] = ny
    normals[w, 2] = nz


def _edge_bits(vol, level, i, j, k):
    """Bit ``a`` set where the edge leaving grid point ``(i, j, k)`` along axis ``a`` is
    crossed."""
    n0 = vol.shape[0]
    n1 = vol.shape[1]
    n2 = vol.shape[2]
    side = _above(_at(vol, i, j, k), level)
    bits = 0
    if i + 1 < n0 and side != _above(_at(vol, i + 1, j, k), level):
        bits |= 1
    if j + 1 < n1 and side != _above(_at(vol, i, j + 1, k), level):
        bits |= 2
    if k + 1 < n2 and side != _above(_at(vol, i, j, k + 1), level):
        bits |= 4
    return bits


def emit_row(vol, level, r, geometry, rows, table, starts, tri_starts, spans, eid, row_faces,
             verts, normals, faces):  # fmt: skip
    """Write row ``r``'s vertices from ``starts[r]`` (one per axis) and its cells'
    triangles from ``tri_starts[r]``; ``eid``: scratch for a cell's 12 vertex ids,
    ``row_faces`` for a row's faces (:func:`_load_faces`)."""
    n0 = vol.shape[0]
    n1 = vol.shape[1]
    lo = spans[r, 0]
    hi = spans[r, 1]
    if hi <= lo:
        return
    i = r // n1
    j = r - i * n1
    cells = i + 1 < n0 and j + 1 < n1
    # the next vertex id of each (row, axis) the walk reads, at the walk's first point:
    # the row's own (00), and those of rows (i + 1, j) (10), (i, j + 1) (01) and both (11)
    x00 = starts[r, 0]
    y00 = starts[r, 1]
    z00 = starts[r, 2]
    x01 = 0
    y10 = 0
    z10 = 0
    z01 = 0
    z11 = 0
    check = False
    f0 = 0
    q0 = 0
    t = 0
    if cells:
        x01 = starts[r + 1, 0]
        y10 = starts[r + n1, 1]
        z10 = starts[r + n1, 2]
        z01 = starts[r + 1, 2]
        z11 = starts[r + n1 + 1, 2]
        check = rows[r, 5] + rows[r + n1, 5] + rows[r + 1, 5] + rows[r + n1 + 1, 5] > 0
        _load_faces(vol, level, i, j, lo, hi, row_faces)
        f0 = _face_at(vol, level, i, j, lo, row_faces)
        q0 = _equal_face(vol, level, i, j, lo) if check else 0
        t = tri_starts[r]
    for k in range(lo, hi):
        if cells:
            f1 = 0
            if k + 1 < hi:  # the cell between points k and k + 1
                f1 = _face_at(vol, level, i, j, k + 1, row_faces)
                q1 = _equal_face(vol, level, i, j, k + 1) if check else 0
                case = f0 | (f1 << 4)
                if case != 0 and case != 255:
                    eid[0] = x00
                    eid[1] = y10
                    eid[2] = x01
                    eid[3] = y00
                    eid[4] = x00 + ((f0 ^ (f0 >> 1)) & 1)
                    eid[5] = y10 + (((f0 >> 1) ^ (f0 >> 2)) & 1)
                    eid[6] = x01 + (((f0 >> 3) ^ (f0 >> 2)) & 1)
                    eid[7] = y00 + ((f0 ^ (f0 >> 3)) & 1)
                    eid[8] = z00
                    eid[9] = z10
                    eid[10] = z01
                    eid[11] = z11
                    t = _triangles(table, case, q0 | (q1 << 4), eid, t, faces)
                flips = f0 ^ f1
                x01 += ((f0 >> 3) ^ (f0 >> 2)) & 1
                y10 += ((f0 >> 1) ^ (f0 >> 2)) & 1
                z10 += (flips >> 1) & 1
                z11 += (flips >> 2) & 1
                z01 += (flips >> 3) & 1
                q0 = q1
            # the row's own crossed edges at point k (none along axis 2 at the span's last
            # point: the rows are constant from there on)
            bits = _own_edges(f0)
            if k + 1 < hi:
                bits |= ((f0 ^ f1) & 1) << 2
            f0 = f1
        else:
            bits = _edge_bits(vol, level, i, j, k)
        # one vertex per crossed edge, numbered along its (row, axis)
        if bits & 1:
            _vertex(vol, level, geometry, i, j, k, 0, x00, verts, normals)
            x00 += 1
        if bits & 2:
            _vertex(vol, level, geometry, i, j, k, 1, y00, verts, normals)
            y00 += 1
        if bits & 4:
            _vertex(vol, level, geometry, i, j, k, 2, z00, verts, normals)
            z00 += 1


def _triangles(table, case, equal, eid, t, faces):
    """Write the triangles of a cell of ``case`` from ``faces[t]`` (``eid``: the vertex
    ids of its 12 edges; ``equal``: its corners at the level); the next ``t``."""
    c = np.uint64(case)  # unsigned indices: as in _at
    for s in range(0, 3 * MAX_TRIANGLES, 3):
        if table[c, s] < 0:
            break
        if equal != 0 and _degenerate(table, c, s, equal):
            continue
        u = np.uint64(t)
        faces[u, 0] = eid[np.uint64(table[c, s])]
        faces[u, 1] = eid[np.uint64(table[c, s + 1])]
        faces[u, 2] = eid[np.uint64(table[c, s + 2])]
        t += 1
    return t


def _face_here(vol, level, i, j, k, row_faces):
    """:func:`_face_at` for a target that loads no faces ahead (``row_faces`` unused)."""
    return _face(vol, level, i, j, k)


def _load_no_faces(vol, level, i, j, lo, hi, row_faces):
    """:func:`_load_faces` for a target whose threads compute each face where they read it."""
    return


#: The bodies and their helpers in the order they are compiled: each after the helpers it
#: calls (:func:`bound_bodies`).
_BODIES = (
    _above, _at, _row_point, _face, _load_faces, _face_at, _equal_face, _corner_or_edge,
    _degenerate, _span, _gradient, _vertex, _edge_bits, _own_edges, _cell_triangles,
    _triangles, classify_lane, combine_lanes, classify_finish, count_setup, count_lane,
    count_finish, classify_row, count_row, emit_row,
)  # fmt: skip


def bound_bodies(device: Any, fmul: Any, *, faces_ahead: bool) -> dict[str, Any]:
    """Every body and helper compiled for one target, by name: ``device`` compiles a
    function for it (to be inlined on the CPU, a device function on the GPU) with the
    helpers it calls bound to their compiled copies, ``fmul`` is its product;
    ``faces_ahead``: whether the emission loads a row's faces ahead (:func:`_load_faces`,
    the CPU's vector unit) or computes each where it reads it (a GPU thread). One binding
    for every target: the CPU's loops and the GPU's kernels call what it gives."""
    swaps = {} if faces_ahead else {"_load_faces": _load_no_faces, "_face_at": _face_here}
    compiled: dict[str, Any] = {"fmul": fmul}
    for body in _BODIES:
        fn = swaps.get(body.__name__, body)
        calls = {n: compiled[n] for n in fn.__code__.co_names if n in compiled}
        compiled[body.__name__] = device(bind(fn, **calls) if calls else fn)
    return compiled
