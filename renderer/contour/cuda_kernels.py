"""Marching cubes on the GPU: the bodies of :mod:`renderer.contour.row_kernels` as Numba
CUDA kernels over CuPy arrays.

- ``classify`` and ``count`` (:func:`classify_device`, one launch each): a warp per row of
  the volume, its 32 lanes reading consecutive points (coalesced loads), each lane's
  counts (:func:`~renderer.contour.row_kernels.classify_lane`,
  :func:`~renderer.contour.row_kernels.count_lane`) summed across the warp in shared memory
  and written by its first lane (``classify_finish``, ``count_finish``);
- ``emit`` (:func:`emit_device`): :func:`renderer.contour.row_kernels.emit_row`, a thread
  per row, with a cell's 12 vertex ids in its local memory: the vertex ids run along the
  row, so a row's walk is sequential; the caches serve the reads of a warp's 32 rows.

Each is one launch over a grid-stride loop; nothing is read back. On the counting stand-in
for CuPy (:mod:`kernels.counting`) a launch counts one and its emulation runs the array
code of :mod:`renderer.contour.arrays`. This module imports ``numba.cuda`` at the first
real launch only; the tests run the kernels in Numba's CUDA simulator and compile them to
PTX for sm_90.
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
from renderer.contour.parameters import emission_geometry, thresholds
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

# The emission's threads per block, one row each: its body keeps a dozen ids and a few
# coordinates live, so 128 threads leave room for many blocks per multiprocessor.
_THREADS = 128
_MAX_GRID = 2**31 - 1
#: Lanes per row in the classification and the counts: a warp.
LANES = 32
#: Their threads per block: four rows, each lane's counts in shared memory.
ROW_THREADS = 128
#: The fields a lane sums for a row: the six of a classification, the three of a count.
_FIELDS = 6

#: Bound to ``numba.cuda`` (or its simulator) in the kernels' copies: kernel_functions.
cuda: Any = None


def body(*args: Any) -> Any:  # bound to the target's compiled per-row body
    raise NotImplementedError


def lane(*args: Any) -> Any:  # bound to a lane's part of a row (classify_lane, count_lane)
    raise NotImplementedError


def finish(*args: Any) -> Any:  # bound to the row's write (classify_finish, count_finish)
    raise NotImplementedError


def setup(*args: Any) -> Any:  # bound to count_setup
    raise NotImplementedError


def combine_lanes(a, b):  # bound to row_kernels.combine_lanes
    raise NotImplementedError


def _warp_sum(parts, t, lane_id, fields):
    """Sum the lanes' columns of ``parts`` into the warp's first (thread ``t``, lane
    ``lane_id``): a tree over shared memory, every thread of the block stepping together.
    Column ``t`` holds counts in fields 0-3 (summed), the first crossed point in field 4
    (the least) and the last in field 5 (the greatest) where ``fields`` is 6."""
    step = LANES // 2
    while step > 0:
        if lane_id < step:
            for f in range(fields):
                a = parts[f, t]
                b = parts[f, t + step]
                if f == 4 and fields == 6:
                    parts[f, t] = min(a, b)
                elif f == 5 and fields == 6:
                    parts[f, t] = max(a, b)
                else:
                    parts[f, t] = a + b
        cuda.syncthreads()
        step //= 2


def classify_kernel(vol, above, at, rows):
    """A warp per row, rows ``g * 4 + warp`` for blocks ``g = block + k * grid size``."""
    parts = cuda.shared.array((_FIELDS, ROW_THREADS), np.int64)
    t = cuda.threadIdx.x
    lane_id = t % LANES
    per_block = ROW_THREADS // LANES
    n = rows.shape[0]
    n1 = vol.shape[1]
    g = cuda.blockIdx.x
    while g * per_block < n:  # the same trips for every thread of the block
        r = g * per_block + t // LANES
        i = r // n1
        j = r - i * n1
        part = (0, 0, 0, 0, vol.shape[2], -1)
        if r < n:
            part = lane(vol, above, at, i, j, lane_id, LANES)
        for f in range(_FIELDS):
            parts[f, t] = part[f]
        cuda.syncthreads()
        _warp_sum(parts, t, lane_id, _FIELDS)
        if lane_id == 0 and r < n:
            summed = (parts[0, t], parts[1, t], parts[2, t], parts[3, t], parts[4, t],
                      parts[5, t])  # fmt: skip
            finish(vol, above, at, i, j, r, rows, summed)
        cuda.syncthreads()  # the parts are read before the next rows overwrite them
        g += cuda.gridDim.x


def count_kernel(vol, level, rows, table, ntri, edges, tris, spans):
    """A warp per row, as :func:`classify_kernel`."""
    parts = cuda.shared.array((_FIELDS, ROW_THREADS), np.int64)
    t = cuda.threadIdx.x
    lane_id = t % LANES
    per_block = ROW_THREADS // LANES
    n = rows.shape[0]
    g = cuda.blockIdx.x
    while g * per_block < n:
        r = g * per_block + t // LANES
        lo = 0
        hi = 0
        if r < n:
            i, j, lo, hi, check, cells = setup(vol, rows, r)
            part = lane(vol, level, table, ntri, i, j, lo, hi, check, cells, lane_id, LANES)
        else:
            part = (0, 0, 0)
        parts[0, t] = part[0]
        parts[1, t] = part[1]
        parts[2, t] = part[2]
        cuda.syncthreads()
        _warp_sum(parts, t, lane_id, 3)
        if lane_id == 0 and r < n:
            finish(r, rows, edges, tris, spans, lo, hi, (parts[0, t], parts[1, t], parts[2, t]))
        cuda.syncthreads()
        g += cuda.gridDim.x


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
    bodies = ck.bound_bodies(device, fmul, faces_ahead=False)
    # a device function in the simulator too, which gives it the block's syncthreads
    rowwise = {"cuda": cuda, "_warp_sum": cuda.jit(device=True)(bind(_warp_sum, cuda=cuda))}
    return {
        "classify": bind(
            classify_kernel,
            lane=bodies["classify_lane"],
            finish=bodies["classify_finish"],
            **rowwise,
        ),  # fmt: skip
        "count": bind(
            count_kernel,
            setup=bodies["count_setup"],
            lane=bodies["count_lane"],
            finish=bodies["count_finish"],
            **rowwise,
        ),  # fmt: skip
        "emit": bind(emit_kernel, cuda=cuda, body=bodies["emit_row"]),
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
    _launch_rows(xp, "classify", n, (volume, *thresholds(volume.dtype, level), rows))
    edges = xp.empty((n, 3), dtype=xp.int64)
    tris = xp.empty(n, dtype=xp.int64)
    spans = xp.empty((n, 2), dtype=xp.int64)
    table, ntri = _tables(xp)
    _launch_rows(xp, "count", n, (volume, float(level), rows, table, ntri, edges, tris, spans))
    return rows, edges, tris, spans


def emit_device(xp: Any, volume: Any, level: float, geometry: tuple, rows: Any, offsets: tuple,
                sizes: tuple[int, int], dtypes: tuple = ck.DTYPES) -> tuple:  # fmt: skip
    """The fused emission on ``xp``'s device: ``vertices``, ``normals`` (V, 3) and ``faces``
    (T, 3) of ``dtypes`` (arguments as :func:`renderer.contour.cpu_kernels.emit_cpu`)."""
    starts, tri_starts, spans = offsets
    n_vertices, n_triangles = sizes
    verts = xp.empty((n_vertices, 3), dtype=dtypes[0])
    normals = xp.empty((n_vertices, 3), dtype=dtypes[0])
    faces = xp.empty((n_triangles, 3), dtype=dtypes[1])
    geometry = emission_geometry(geometry)
    args = (volume, float(level), geometry, rows, _tables(xp)[0], starts, tri_starts, spans,
            verts, normals, faces)  # fmt: skip
    _launch(xp, "emit", int(rows.shape[0]), args)
    return verts, normals, faces


def _launch_rows(xp: Any, name: str, n: int, args: tuple) -> None:
    """Launch the warp-per-row kernel ``name`` over ``n`` rows (as :func:`_launch`)."""
    per_block = ROW_THREADS // LANES
    grid = max(1, min(_MAX_GRID, -(-n // per_block)))
    fastpaths.launch(xp, KERNEL_NAMES[name], lambda: build_kernels()[name], grid, ROW_THREADS,
                     args)  # fmt: skip


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
