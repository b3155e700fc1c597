"""Cases for the marching-cubes kernels in Numba's CUDA simulator (run as a script).

``tests/renderer/test_isosurface_cuda.py`` runs this file in a subprocess with
``NUMBA_ENABLE_CUDASIM=1``. Each case runs
:func:`renderer.contour.cuda_kernels.classify_device`
and ``emit_device`` on host arrays (the simulator copies them in and back), with small
blocks and a capped grid so that every thread's grid-stride loop takes several rows, and
compares every output, bit for bit, with the array code of :mod:`renderer.contour.arrays`.
Prints one JSON line ``{case: null | "error message"}``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

# (shape, level, quantised, threads per block, grid cap)
CASES = {
    "smooth-5x6x7": ((5, 6, 7), 0.0, False, 16, 2),
    "plateaus-6x5x4": ((6, 5, 4), 0.0, True, 8, None),
    "thin-2x5x6": ((2, 5, 6), 0.05, False, 4, 3),
    "float64-4x4x9": ((4, 4, 9), -0.02, False, 32, None),
}


def case_names() -> list[str]:
    return list(CASES)


def run_case(name: str) -> None:
    from numba import config
    from scipy.ndimage import gaussian_filter

    from renderer.contour import arrays as contour_arrays
    from renderer.contour import cuda_kernels as contour_cuda

    assert config.ENABLE_CUDASIM, "run with NUMBA_ENABLE_CUDASIM=1"
    shape, level, quantised, threads, grid = CASES[name]
    rng = np.random.default_rng(len(name))
    volume = gaussian_filter(rng.standard_normal(shape), 1.0)
    volume = volume if name.startswith("float64") else volume.astype(np.float32)
    if quantised:
        volume = np.round(volume * 4) / 4
    saved = contour_cuda._THREADS, contour_cuda._MAX_GRID
    contour_cuda._THREADS, contour_cuda._MAX_GRID = threads, grid or saved[1]
    try:
        got = contour_cuda.classify_device(np, volume, level)
        want = contour_arrays.classify_arrays(np, volume, level)
        for field, a, b in zip(("rows", "edges", "tris", "spans"), got, want, strict=True):
            assert np.array_equal(np.asarray(a), b), field
        rows, edges, tris, spans = want
        flat = edges.reshape(-1)
        starts = (np.cumsum(flat) - flat).reshape(edges.shape)
        where = (starts, np.cumsum(tris) - tris, spans)
        sizes = (int(edges.sum()), int(tris.sum()))
        geometry = (0.5, 1.0, 2.0, -1.0, 0.0, 3.0)
        wide = (np.float64, np.int64)
        got = contour_cuda.emit_device(np, volume, level, geometry, rows, where, sizes, wide)
        want = contour_arrays.emit_arrays(np, volume, level, geometry, rows, where, sizes)
        for field, a, b in zip(("vertices", "normals", "faces"), got, want, strict=True):
            assert np.array_equal(np.asarray(a), b), field
        # the default float32 and int32: the same values rounded where they are stored
        got = contour_cuda.emit_device(np, volume, level, geometry, rows, where, sizes)
        for field, a, b in zip(("vertices", "normals", "faces"), got, want, strict=True):
            a = np.asarray(a)
            assert a.dtype.itemsize == 4 and np.array_equal(a, b.astype(a.dtype)), field
        assert sizes[1] > 0
    finally:
        contour_cuda._THREADS, contour_cuda._MAX_GRID = saved


if __name__ == "__main__":
    from tests.gpu_compile import report_cases

    report_cases(case_names(), run_case)
