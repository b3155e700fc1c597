"""Marching cubes on the CPU: the loops of :mod:`renderer.contour.row_kernels` over the
volume's rows compiled with its row bodies inlined (``numba.njit``).

- :func:`classify_cpu`: :func:`~renderer.contour.row_kernels.classify_row` and
  :func:`~renderer.contour.row_kernels.count_row` in one loop, a plane of rows apart;
- :func:`emit_cpu`: :func:`~renderer.contour.row_kernels.emit_row`, each row's faces loaded
  ahead in one pass the vector unit runs (:func:`~renderer.contour.row_kernels.bound_bodies`).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from kernels.rebind import bind, cpu_inline, cpu_loop, cpu_primitives
from renderer.contour.parameters import emission_geometry, thresholds
from renderer.contour.row_kernels import DTYPES, ROW_FIELDS, bound_bodies
from renderer.contour.tables import case_table, triangle_counts

__all__ = ["classify_cpu", "emit_cpu"]


@functools.cache
def _cpu_bodies() -> dict[str, Any]:
    """The row bodies compiled to be inlined, each row's faces loaded ahead."""
    return bound_bodies(cpu_inline, cpu_primitives()["fmul"], faces_ahead=True)


@functools.cache
def _cpu_kernel(name: str) -> Any:
    """The CPU's loop ``name`` with its row bodies inlined."""
    bodies = _cpu_bodies()
    calls = {"classify": bodies["classify_row"], "count": bodies["count_row"],
             "emit": bodies["emit_row"]}  # fmt: skip
    loop = classify_rows if name == "classify" else emit_rows
    return cpu_loop(bind(loop, **calls))


def classify_cpu(volume: np.ndarray, level: float) -> tuple:
    """The fused classification and counts on the CPU: the ``(rows, 8)`` table of
    :data:`ROW_FIELDS`, ``edges`` (rows, 3), ``tris`` (rows,) and ``spans`` (rows, 2),
    all int64, one row per grid row.

    Examples
    --------
    >>> vol = np.zeros((2, 2, 3)); vol[0, 0, 2] = 1.0
    >>> rows, edges, tris, spans = classify_cpu(vol, 0.5)
    >>> rows[0].tolist()   # one crossing, between points 1 and 2
    [1, 1, 1, 0, 1, 0, 0, 1]
    >>> edges[0].tolist(), int(tris.sum()), spans[0].tolist()
    ([1, 1, 1], 1, [1, 3])
    """
    n0, n1, _ = volume.shape
    n = n0 * n1
    rows = np.empty((n, len(ROW_FIELDS)), dtype=np.int64)
    edges = np.empty((n, 3), dtype=np.int64)
    tris = np.empty(n, dtype=np.int64)
    spans = np.empty((n, 2), dtype=np.int64)
    _cpu_kernel("classify")(volume, *thresholds(volume.dtype, level), float(level), rows,
                            case_table(), triangle_counts(), edges, tris, spans)  # fmt: skip
    return rows, edges, tris, spans


def emit_cpu(volume: np.ndarray, level: float, geometry: tuple, rows: np.ndarray,
             offsets: tuple, sizes: tuple[int, int], dtypes: tuple = DTYPES) -> tuple:  # fmt: skip
    """The fused emission on the CPU: ``vertices``, ``normals`` (V, 3) and ``faces`` (T,
    3), of ``dtypes`` (the vertices' and normals', the faces'; computed in float64 and
    int64, rounded where stored). ``geometry``: the spacing and the origin (6 floats), and
    for a slab the global index of its first plane (:func:`emission_geometry`);
    ``offsets``: the rows' first vertex per axis, first triangle and spans; ``sizes``:
    ``(V, T)``."""
    starts, tri_starts, spans = offsets
    n_vertices, n_triangles = sizes
    verts = np.empty((n_vertices, 3), dtype=dtypes[0])
    normals = np.empty((n_vertices, 3), dtype=dtypes[0])
    faces = np.empty((n_triangles, 3), dtype=dtypes[1])
    eid = np.empty(12, dtype=np.int64)
    row_faces = np.empty(volume.shape[2], dtype=np.int64)
    _cpu_kernel("emit")(volume, float(level), emission_geometry(geometry), rows,
                        case_table(), starts, tri_starts, spans, eid, row_faces, verts,
                        normals, faces)  # fmt: skip
    return verts, normals, faces


# ------------------------------------------------------------------------ the CPU's loops
# (compiled with the row bodies inlined: _cpu_kernel)


def classify_rows(vol, above, at, level, rows, table, ntri, edges, tris, spans):
    """Every row classified and counted, a plane of rows ahead: the rows of plane ``i``
    are counted while the plane after it, which the counting reads, is in the cache."""
    n0 = vol.shape[0]
    n1 = vol.shape[1]
    for r in range(n1):
        classify(vol, above, at, r, rows)
    for i in range(n0):
        if i + 1 < n0:
            for r in range((i + 1) * n1, (i + 2) * n1):
                classify(vol, above, at, r, rows)
        for r in range(i * n1, (i + 1) * n1):
            count(vol, level, r, rows, table, ntri, edges, tris, spans)


def emit_rows(vol, level, geometry, rows, table, starts, tri_starts, spans, eid, row_faces,
               verts, normals, faces):  # fmt: skip
    for r in range(rows.shape[0]):
        emit(vol, level, r, geometry, rows, table, starts, tri_starts, spans, eid, row_faces,
             verts, normals, faces)  # fmt: skip


def classify(*args: Any) -> None:  # the loops' bodies, bound to compiled ones on the CPU
    raise NotImplementedError


def count(*args: Any) -> None:
    raise NotImplementedError


def emit(*args: Any) -> None:
    raise NotImplementedError
