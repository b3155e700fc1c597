"""Marching cubes as array code over ``xp`` (NumPy or CuPy): one virtual processor per grid
point, the reference of the fused kernels of :mod:`renderer.contour.row_kernels`.

Each function gives exactly the outputs of the per-row kernels, computed for all grid
points at once with elementwise operations, reductions along the rows and gathers:
:func:`row_table` the per-row table of ``classify_row``, :func:`count_arrays` the rows'
crossed edges, triangles and spans of ``count_row`` (both: :func:`classify_arrays`),
:func:`emit_arrays` the vertices, normals and triangles of ``emit_row`` in the same order
and with the same bits (every product, sum and quotient is one rounding here as there).
It runs where the kernels do not (``SIMD_FORCE_REFERENCE=1``), as the kernels' emulation
on the counting stand-in for CuPy, and as their oracle in the tests. It holds a few
arrays the size of the volume, so it suits small volumes.

Examples
--------
>>> import numpy as np
>>> vol = np.zeros((2, 2, 2)); vol[0, 0, 0] = 1.0
>>> rows, edges, tris, spans = classify_arrays(np, vol, 0.5)
>>> edges[0].tolist(), tris.tolist(), spans[0].tolist()
([1, 1, 1], [1, 0, 0, 0], [0, 2])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from renderer.contour.parameters import emission_geometry, thresholds
from renderer.contour.tables import CORNERS, EDGES, MAX_TRIANGLES, case_table

__all__ = ["classify_arrays", "count_arrays", "emit_arrays", "row_table"]

# Per cell edge: the offset of its lower corner and its axis.
_LOW = np.array([CORNERS[a] for a, _ in EDGES], dtype=np.int64)
_AXIS = np.array([int(np.argmax(np.subtract(CORNERS[b], CORNERS[a]))) for a, b in EDGES])
_EDGE_LOW = np.array([a for a, _ in EDGES], dtype=np.int64)
_EDGE_HIGH = np.array([b for _, b in EDGES], dtype=np.int64)


def _corner_bits(xp: Any, flags: Any) -> Any:
    """Per cell: bit ``c`` set where ``flags`` holds at corner ``c`` (int64)."""
    n0, n1, n2 = flags.shape
    bits = xp.zeros((n0 - 1, n1 - 1, n2 - 1), dtype=xp.int64)
    for c, (di, dj, dk) in enumerate(CORNERS):
        corner = flags[di : di + n0 - 1, dj : dj + n1 - 1, dk : dk + n2 - 1]
        bits |= corner.astype(xp.int64) << c
    return bits


def _inside(vol: Any, level: float) -> Any:
    """Whether each value is at or above ``level``, compared as the fused kernels compare
    (:func:`renderer.contour.parameters.thresholds`: a float32 volume against the float32
    nearest at or above it)."""
    return vol >= thresholds(vol.dtype, level)[0]


def _crossed(xp: Any, inside: Any) -> list:
    """Per axis, ``(n0, n1, n2)`` bool: whether the edge leaving each point is crossed."""
    out = []
    for axis in range(3):
        flags = xp.zeros(inside.shape, dtype=bool)
        ahead = [slice(None)] * 3
        here = [slice(None)] * 3
        ahead[axis] = slice(1, None)
        here[axis] = slice(None, -1)
        flags[tuple(here)] = inside[tuple(here)] != inside[tuple(ahead)]
        out.append(flags)
    return out


def classify_arrays(xp: Any, vol: Any, level: float) -> tuple:
    """:func:`renderer.contour.row_kernels.classify_row` and ``count_row`` for every row: the
    ``(rows, 8)`` table, ``edges``, ``tris`` and ``spans`` (int64)."""
    rows = row_table(xp, vol, *thresholds(vol.dtype, level))
    return (rows, *count_arrays(xp, vol, level, rows))


def row_table(xp: Any, vol: Any, above: Any, at: Any) -> Any:
    """:func:`renderer.contour.row_kernels.classify_row` for every row, with the level as
    :func:`renderer.contour.parameters.thresholds` gives it: ``(rows, 8)`` int64."""
    n0, n1, n2 = vol.shape
    inside = vol >= above
    crossed = inside[:, :, 1:] != inside[:, :, :-1]
    crossings = crossed.sum(axis=2)
    some = crossings > 0
    first = xp.where(some, xp.argmax(crossed, axis=2), -1)
    last = xp.where(some, n2 - 2 - xp.argmax(crossed[:, :, ::-1], axis=2), -1)
    with np.errstate(invalid="ignore"):  # inf - inf
        nonfinite = (vol - vol != 0).sum(axis=2)
    columns = (crossings, first, last, inside[:, :, 0], inside[:, :, -1],
               (vol == at).sum(axis=2), nonfinite, inside.sum(axis=2))  # fmt: skip
    table = xp.stack([xp.asarray(c).astype(xp.int64) for c in columns], axis=2)
    return table.reshape(n0 * n1, len(columns))


def _spans(xp: Any, rows: Any, shape: tuple) -> Any:
    """:func:`renderer.contour.row_kernels._span` of every row over the rows beside it."""
    n0, n1, n2 = shape
    r = xp.arange(n0 * n1, dtype=xp.int64)
    i, j = r // n1, r % n1
    next_i = xp.where(i + 1 < n0, r + n1, r)
    next_j = xp.where(j + 1 < n1, r + 1, r)
    group = xp.stack([r, next_i, next_j, next_i + (next_j - r)], axis=1)
    first, last = rows[group, 1], rows[group, 2]
    crossing = first >= 0
    lo = xp.where(crossing, first, n2).min(axis=1)
    hi = xp.where(crossing, last, -1).max(axis=1)
    side0, side1 = rows[group, 3].sum(axis=1), rows[group, 4].sum(axis=1)
    mixed0 = (side0 != 0) & (side0 != 4)
    mixed1 = (side1 != 0) & (side1 != 4)
    lo = xp.where(mixed0, 0, lo)
    hi = xp.where(mixed1, n2 - 2, hi) + 2
    constant = ~crossing.any(axis=1)
    lo = xp.where(constant, 0, lo)
    hi = xp.where(constant, xp.where(mixed0, n2, 0), hi)
    return xp.stack([lo, hi], axis=1)


def _kept(xp: Any, vol: Any, level: float, case: Any) -> list:
    """Per triangle slot of the case table (five), per cell: whether the cell has that
    triangle and it keeps some area (no two vertices on one grid point)."""
    table = xp.asarray(case_table()).astype(xp.int64)
    equal = _corner_bits(xp, vol == thresholds(vol.dtype, level)[1])
    kept = []
    for s in range(MAX_TRIANGLES):
        edges = table[case, 3 * s : 3 * s + 3]  # (cells..., 3), -1 past the case's last
        valid = edges[..., 0] >= 0
        edges = xp.maximum(edges, 0)
        low = xp.asarray(_EDGE_LOW)[edges]
        high = xp.asarray(_EDGE_HIGH)[edges]
        eq = equal[..., None]
        at = xp.where((eq >> low) & 1 == 1, low, xp.where((eq >> high) & 1 == 1, high, 8 + edges))
        flat = (at[..., 0] == at[..., 1]) | (at[..., 1] == at[..., 2]) | (at[..., 0] == at[..., 2])
        kept.append(valid & ~flat)
    return kept


def count_arrays(xp: Any, vol: Any, level: float, rows: Any) -> tuple:
    """:func:`renderer.contour.row_kernels.count_row` for every row: ``edges``, ``tris``,
    ``spans`` (int64)."""
    n0, n1, n2 = vol.shape
    inside = _inside(vol, level)
    along0, along1, _ = _crossed(xp, inside)
    edges = xp.stack([along0.sum(axis=2), along1.sum(axis=2), rows[:, 0].reshape(n0, n1)], axis=2)
    case = _corner_bits(xp, inside)
    per_cell = sum(k.astype(xp.int64) for k in _kept(xp, vol, level, case))
    tris = xp.zeros((n0, n1), dtype=xp.int64)
    tris[:-1, :-1] = per_cell.sum(axis=2)
    spans = _spans(xp, rows, vol.shape)
    return edges.reshape(n0 * n1, 3).astype(xp.int64), tris.reshape(-1), spans


def _gradients(xp: Any, vol: Any) -> list:
    """Per axis, the negative gradient at every grid point in index units (central
    differences inside, one-sided on the border), float64."""
    values = vol.astype(xp.float64)
    out = []
    for axis in range(3):
        s = xp.moveaxis(values, axis, 0)
        g = xp.empty_like(s)
        g[1:-1] = 0.5 * (s[:-2] - s[2:])
        g[0] = s[0] - s[1]
        g[-1] = s[-2] - s[-1]
        out.append(xp.moveaxis(g, 0, axis))
    return out


def _vertices(xp: Any, vol: Any, level: float, geometry: tuple, flags: list, ids: list,
              n_vertices: int) -> tuple:  # fmt: skip
    """The vertices and unit normals of the crossed edges, at their ids."""
    verts = xp.empty((n_vertices, 3), dtype=xp.float64)
    normals = xp.empty((n_vertices, 3), dtype=xp.float64)
    spacing, origin, inverse, first = geometry[:3], geometry[3:6], geometry[6:9], geometry[9]
    grads = _gradients(xp, vol)
    for axis in range(3):
        at = xp.nonzero(flags[axis])
        ahead = list(at)
        ahead[axis] = ahead[axis] + 1
        ahead = tuple(ahead)
        s0 = vol[at].astype(xp.float64)
        t = (level - s0) / (vol[ahead].astype(xp.float64) - s0)
        v = ids[axis][at]
        for a in range(3):
            p = at[a].astype(xp.float64)
            if a == 0:
                p = p + first  # a slab's planes: their global index
            if a == axis:
                p = p + t
            verts[v, a] = origin[a] + spacing[a] * p
        n = [(g[at] + t * (g[ahead] - g[at])) * inverse[a] for a, g in enumerate(grads)]
        length = xp.sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2])
        scale = 1.0 / xp.where(length > 0, length, 1.0)
        for a in range(3):
            normals[v, a] = xp.where(length > 0, n[a] * scale, n[a])
    return verts, normals


def _faces(xp: Any, vol: Any, level: float, inside: Any, ids: list, tri_starts: Any,
           n_triangles: int, emitted: Any) -> Any:  # fmt: skip
    """The triangles of every cell of the ``emitted`` rows, in cell order and the case
    table's order (``inside``: :func:`_inside`)."""
    n0, n1, n2 = vol.shape
    case = _corner_bits(xp, inside)
    kept = [k & emitted for k in _kept(xp, vol, level, case)]
    per_cell = sum(k.astype(xp.int64) for k in kept)
    starts = xp.cumsum(per_cell, axis=2) - per_cell
    starts += tri_starts.reshape(n0, n1)[:-1, :-1, None]
    table = xp.asarray(case_table()).astype(xp.int64)
    vertex_of = xp.stack(ids)  # (3, n0, n1, n2)
    low, axis = xp.asarray(_LOW), xp.asarray(_AXIS)
    faces = xp.empty((n_triangles, 3), dtype=xp.int64)
    before = xp.zeros_like(per_cell)
    for s in range(MAX_TRIANGLES):
        cell = xp.nonzero(kept[s])
        slot = starts[cell] + before[cell]
        for q in range(3):
            e = table[case[cell], 3 * s + q]
            corner = [cell[a] + low[e, a] for a in range(3)]
            faces[slot, q] = vertex_of[axis[e], corner[0], corner[1], corner[2]]
        before += kept[s]
    return faces


def emit_arrays(xp: Any, vol: Any, level: float, geometry: tuple, rows: Any, offsets: tuple,
                sizes: tuple[int, int]) -> tuple:  # fmt: skip
    """:func:`renderer.contour.row_kernels.emit_row` for every row: ``vertices``, ``normals``
    (V, 3) float64 and ``faces`` (T, 3) int64 (``rows`` is not needed; ``geometry``: the
    spacing and the origin, and for a slab the global index of its first plane; only the
    rows with a span are emitted)."""
    n0, n1, _ = vol.shape
    starts, tri_starts, spans = offsets
    inside = _inside(vol, level)
    flags = _crossed(xp, inside)
    ids = []
    for axis in range(3):
        f = flags[axis].astype(xp.int64)
        ids.append(starts[:, axis].reshape(n0, n1, 1) + xp.cumsum(f, axis=2) - f)
    # a row without a span writes nothing (in a slab, the rows another rank emits)
    emitted = (spans[:, 1] > spans[:, 0]).reshape(n0, n1, 1)
    written = [f & emitted for f in flags]
    geometry = emission_geometry(geometry[:7])
    verts, normals = _vertices(xp, vol, level, geometry, written, ids, sizes[0])
    faces = _faces(xp, vol, level, inside, ids, tri_starts, sizes[1], emitted[:-1, :-1])
    return verts, normals, faces
