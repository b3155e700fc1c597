"""Marching cubes on the GPU: the row bodies of :mod:`renderer.contour.row_kernels` as Numba
CUDA kernels over CuPy arrays, one thread per row of the volume.

- ``classify`` and ``count``: :func:`renderer.contour.row_kernels.classify_row` and
  ``count_row``, one launch each (:func:`classify_device`);
- ``emit``: :func:`renderer.contour.row_kernels.emit_row` (:func:`emit_device`), with a
  cell's 12 vertex ids in each thread's local memory.

Each is one launch over a grid-stride loop; nothing is read back. A thread walks its row
along the volume's last axis, so the threads of a warp read addresses a row apart: the
caches, not coalescing, serve the walk. On the counting stand-in for CuPy
(:mod:`kernels.counting`) a launch counts one and its emulation runs the array code of
:mod:`renderer.contour.arrays`. This module imports ``numba.cuda`` at the first real launch
only; the tests run the kernels in Numba's CUDA simulator and compile them to PTX for
sm_90.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from kernels import fastpaths
from kernels.numba_cuda import cuda_module
from kernels.rebind import bind
from renderer.contour import row_kernels as ck
from renderer.contour.arrays import count_arrays, emit_arrays, row_table
from renderer.contour.tables import case_table, triangle_counts

__all__ = [
    "KERNEL_NAMES",
    "build_kernels",
    "classify_device",
    "emit_device",
    "kernel_functions",
]

#: The kernels' names on the counting stand-in.
KERNEL_NAMES = {
    "classify": "renderer.contour_classify",
    "count": "renderer.contour_count",
    "emit": "renderer.contour_emit",
}

# Threads per block: one row each; the emission body keeps a dozen ids and a few
# coordinates live, so 128 threads leave room for many blocks per multiprocessor.
_THREADS = 128
_MAX_GRID = 2**31 - 1

#: Bound to ``numba.cuda`` (or its simulator) in the kernels' copies: kernel_functions.
cuda: Any = None


def body(*args: Any) -> Any:  # bound to the target's compiled per-row body
    raise NotImplementedError


def classify_kernel(vol, above, at, rows):
    """Rows ``r = grid position + k * grid size``."""
    r = cuda.grid(1)
    stride = cuda.gridsize(1)
    while r < rows.shape[0]:
        body(vol, above, at, r, rows)
        r += stride


def count_kernel(vol, level, rows, table, ntri, edges, tris, spans):
    """Rows ``r = grid position + k * grid size``."""
    r = cuda.grid(1)
    stride = cuda.gridsize(1)
    while r < rows.shape[0]:
        body(vol, level, r, rows, table, ntri, edges, tris, spans)
        r += stride


def emit_kernel(vol, level, geometry, rows, table, starts, tri_starts, spans, verts, normals,
                faces):  # fmt: skip
    """Rows ``r = grid position + k * grid size``."""
    eid = cuda.local.array(12, np.int64)
    r = cuda.grid(1)
    stride = cuda.gridsize(1)
    while r < rows.shape[0]:
        # eid stands in for the row's faces, which a GPU thread never loads ahead
        body(vol, level, r, geometry, rows, table, starts, tri_starts, spans, eid, eid, verts,
             normals, faces)  # fmt: skip
        r += stride


def _sim_fmul(a, b):
    return a * b


@functools.cache
def kernel_functions() -> dict[str, Any]:
    """The kernels' Python functions with the device primitives bound, by name (imports
    ``numba.cuda``): on the GPU ``fmul`` is libdevice's ``dmul_rn``, never contracted
    into an ``fma``; in the simulator the Python functions run as they are."""
    from numba import config

    cuda = cuda_module()
    if config.ENABLE_CUDASIM:

        def device(fn: Any) -> Any:
            return fn

        fmul = _sim_fmul
    else:
        from numba.cuda import libdevice

        device = cuda.jit(device=True)
        fmul = libdevice.dmul_rn
    helpers = ck.bound_helpers(device, fmul, faces_ahead=False)
    bodies = {
        "classify": device(bind(ck.classify_row, **helpers)),
        "count": device(bind(ck.count_row, **helpers)),
        "emit": device(bind(ck.emit_row, **helpers)),
    }
    return {
        "classify": bind(classify_kernel, cuda=cuda, body=bodies["classify"]),
        "count": bind(count_kernel, cuda=cuda, body=bodies["count"]),
        "emit": bind(emit_kernel, cuda=cuda, body=bodies["emit"]),
    }


@functools.cache
def build_kernels() -> dict[str, Any]:
    """The ``cuda.jit`` dispatchers of the kernels, built once per process."""
    cuda = cuda_module()
    return {name: cuda.jit(fn) for name, fn in kernel_functions().items()}


#: The case tables on each device's array module, uploaded once.
_TABLES: dict[Any, tuple[Any, Any]] = {}


def _tables(xp: Any) -> tuple[Any, Any]:
    """The case table and the triangles per case as arrays of ``xp`` (uploaded once)."""
    found = _TABLES.get(xp)
    if found is None:
        found = _TABLES[xp] = (xp.asarray(case_table()), xp.asarray(triangle_counts()))
    return found


def classify_device(xp: Any, volume: Any, level: float) -> tuple:
    """The fused classification and counts on ``xp``'s device, two launches: the
    ``(rows, 8)`` table of :data:`renderer.contour.row_kernels.ROW_FIELDS`, ``edges`` (rows,
    3), ``tris`` (rows,) and ``spans`` (rows, 2), all int64."""
    n0, n1, _ = volume.shape
    n = n0 * n1
    rows = xp.empty((n, len(ck.ROW_FIELDS)), dtype=xp.int64)
    _launch(xp, "classify", n, (volume, *ck.thresholds(volume.dtype, level), rows))
    edges = xp.empty((n, 3), dtype=xp.int64)
    tris = xp.empty(n, dtype=xp.int64)
    spans = xp.empty((n, 2), dtype=xp.int64)
    table, ntri = _tables(xp)
    _launch(xp, "count", n, (volume, float(level), rows, table, ntri, edges, tris, spans))
    return rows, edges, tris, spans


def emit_device(xp: Any, volume: Any, level: float, geometry: tuple, rows: Any, offsets: tuple,
                sizes: tuple[int, int]) -> tuple:  # fmt: skip
    """The fused emission on ``xp``'s device: ``vertices``, ``normals`` (V, 3) float64 and
    ``faces`` (T, 3) int64 (arguments as :func:`renderer.contour.cpu_kernels.emit_cpu`)."""
    starts, tri_starts, spans = offsets
    n_vertices, n_triangles = sizes
    verts = xp.empty((n_vertices, 3), dtype=xp.float64)
    normals = xp.empty((n_vertices, 3), dtype=xp.float64)
    faces = xp.empty((n_triangles, 3), dtype=xp.int64)
    geometry = ck.emission_geometry(geometry)
    args = (volume, float(level), geometry, rows, _tables(xp)[0], starts, tri_starts, spans,
            verts, normals, faces)  # fmt: skip
    _launch(xp, "emit", int(rows.shape[0]), args)
    return verts, normals, faces


def _launch(xp: Any, name: str, n: int, args: tuple) -> None:
    """Launch kernel ``name`` over ``n`` rows on ``xp``'s current stream, or its emulation
    on the counting stand-in (:func:`kernels.fastpaths.launch`)."""
    grid = max(1, min(_MAX_GRID, -(-n // _THREADS)))
    fastpaths.launch(xp, KERNEL_NAMES[name], lambda: build_kernels()[name], grid, _THREADS, args)


# --------------------------------------------------------------------------- emulations
# What each kernel computes, as the array code computes it, on the launch's arguments: run
# for each launch on the counting stand-in for CuPy (kernels.fastpaths.emulates).


@fastpaths.emulates(KERNEL_NAMES["classify"])
def _classify(variant: Any, args: tuple) -> None:
    volume, above, at, rows = args
    rows[...] = row_table(np, np.asarray(volume), above, at)


@fastpaths.emulates(KERNEL_NAMES["count"])
def _count(variant: Any, args: tuple) -> None:
    volume, level, rows, _, _, *outs = args
    got = count_arrays(np, np.asarray(volume), level, np.asarray(rows))
    for dest, value in zip(outs, got, strict=True):
        dest[...] = value


@fastpaths.emulates(KERNEL_NAMES["emit"])
def _emit(variant: Any, args: tuple) -> None:
    volume, level, geometry, rows, _, starts, tri_starts, spans, *outs = args
    geometry = geometry[:6] + geometry[9:]  # emit_arrays takes what emit_device does
    offsets = (np.asarray(starts), np.asarray(tri_starts), np.asarray(spans))
    sizes = (outs[0].shape[0], outs[2].shape[0])
    got = emit_arrays(np, np.asarray(volume), level, geometry, np.asarray(rows), offsets, sizes)
    for dest, value in zip(outs, got, strict=True):
        dest[...] = value
