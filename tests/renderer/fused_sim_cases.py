"""Cases for the fused kernels in Numba's CUDA simulator (run as a script).

``tests/renderer/test_fused_cudasim.py`` runs this file in a subprocess with
``NUMBA_ENABLE_CUDASIM=1`` (the simulator is chosen when ``numba.cuda`` is first imported;
see ``tests/kernels/test_numba_shift_cudasim.py`` for why a subprocess). Each case runs
:func:`renderer.stages.cuda_kernels.setup_device` or ``classify_device`` on host arrays (the
simulator copies them in and back) and compares every output, bit for bit, with the array
code: :func:`renderer.stages.scan.setup_triangles_arrays`,
:func:`renderer.stages.clip.classify_arrays`,
:func:`renderer.stages.zbuffer.fragments_arrays` and the others.
Prints one JSON line ``{case: null | "error message"}``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

# (triangles, width, height, threads per block, grid cap): a capped grid makes every
# thread's grid-stride loop take several triangles
CASES = {
    "random-64x48": (192, 64, 48, 32, None),
    "grid-stride-17x5": (150, 17, 5, 16, 2),
    "one-pixel": (40, 1, 1, 32, None),
    "empty": (0, 8, 8, 32, None),
}
# clipping tests: (faces, width, height, threads per block, grid cap)
CLIP_CASES = {
    "clip-64x48": (300, 64, 48, 32, None),
    "clip-grid-stride": (150, 5, 300, 16, 2),
    "clip-empty": (0, 8, 8, 32, None),
}
# spans: (triangles, tasks, width, threads per block, grid cap)
SPAN_CASES = {
    "spans-64": (80, 400, 64, 32, None),
    "spans-grid-stride": (30, 150, 9, 16, 2),
}
# shading: (triangles, pixels, width, threads per block, grid cap)
SHADE_CASES = {
    "shade-32": (60, 400, 32, 32, None),
    "shade-grid-stride": (20, 150, 7, 16, 2),
}
# z-buffer fragments: (spans, tasks, width, threads per block, grid cap)
FRAGMENT_CASES = {
    "fragments-64": (90, 500, 64, 32, None),
    "fragments-grid-stride": (25, 160, 9, 16, 2),
}
# compaction of the kept spans: (triangles, tasks, width, threads per block, grid cap)
COMPACT_CASES = {
    "compact-64": (80, 400, 64, 32, None),
    "compact-grid-stride": (30, 150, 9, 16, 2),
}
# decoding of depth keys: (pixels, index bits, threads per block, grid cap)
DECODE_CASES = {
    "decode-500": (500, 13, 32, None),
    "decode-grid-stride": (160, 31, 16, 2),
}
# the transform to clip space: (vertices, threads per block, grid cap)
TRANSFORM_CASES = {
    "transform-400": (400, 32, None),
    "transform-grid-stride": (150, 16, 2),
}


def case_names() -> list[str]:
    return (
        list(CASES)
        + list(CLIP_CASES)
        + list(SHADE_CASES)
        + list(SPAN_CASES)
        + list(FRAGMENT_CASES)
        + list(COMPACT_CASES)
        + list(DECODE_CASES)
        + list(TRANSFORM_CASES)
    )


def _shape(threads: int, grid: int | None):
    from renderer.stages import cuda_kernels

    saved = cuda_kernels._THREADS, cuda_kernels._MAX_GRID
    cuda_kernels._THREADS = threads
    cuda_kernels._MAX_GRID = grid or saved[1]
    return saved


def run_case(name: str) -> None:
    from numba import config

    from renderer.stages import cuda_kernels
    from renderer.stages.scan import TriangleSetup, setup_triangles_arrays
    from tests.renderer.test_fused_kernels import (
        FIELDS,
        assert_same_setup,
        random_triangles,
        vertex_table,
    )

    assert config.ENABLE_CUDASIM, "run with NUMBA_ENABLE_CUDASIM=1"
    if name in CLIP_CASES:
        run_clip_case(name)
        return
    if name in SHADE_CASES:
        run_shade_case(name)
        return
    if name in SPAN_CASES:
        run_span_case(name)
        return
    if name in FRAGMENT_CASES:
        run_fragment_case(name)
        return
    if name in COMPACT_CASES:
        run_compact_case(name)
        return
    if name in DECODE_CASES:
        run_decode_case(name)
        return
    if name in TRANSFORM_CASES:
        run_transform_case(name)
        return
    n, width, height, threads, grid = CASES[name]
    clip = random_triangles(max(n, 8), seed=len(name))[:n]
    saved = _shape(threads, grid)
    try:
        got = cuda_kernels.setup_device(np, *vertex_table(clip), width, height)
    finally:
        cuda_kernels._THREADS, cuda_kernels._MAX_GRID = saved
    got = TriangleSetup(**{f: np.asarray(got[f]) for f in FIELDS})
    assert_same_setup(got, setup_triangles_arrays(np, clip, width, height))


def run_clip_case(name: str) -> None:
    from renderer.stages import cuda_kernels
    from renderer.stages.clip import classify_arrays
    from tests.renderer.test_fused_kernels import clip_space_vertices

    m, width, height, threads, grid = CLIP_CASES[name]
    clip = clip_space_vertices(200, seed=m)
    faces = np.random.default_rng(m).integers(0, len(clip), size=(m, 3))
    gx = 1.0 + 2.0 * 8192 / width
    gy = 1.0 + 2.0 * 8192 / height
    saved = _shape(threads, grid)
    try:
        rej, cross, counts = cuda_kernels.classify_device(np, clip, faces, gx, gy)
        n_clipped, n_rejected = np.asarray(counts).tolist()
    finally:
        cuda_kernels._THREADS, cuda_kernels._MAX_GRID = saved
    want_rej, want_cross = classify_arrays(np, clip, faces, gx, gy)
    np.testing.assert_array_equal(rej, want_rej)
    np.testing.assert_array_equal(cross, want_cross)
    assert [n_clipped, n_rejected] == [int(want_cross.sum()), int(want_rej.sum())]
    if m:
        assert 0 < n_clipped < m and 0 < n_rejected < m


def run_shade_case(name: str) -> None:
    from renderer.stages import cuda_kernels
    from renderer.stages.shading import shade_pixels_arrays
    from tests.renderer.test_fused_kernels import shading_case, vertex_table

    n_tri, n_pix, width, threads, grid = SHADE_CASES[name]
    tri, pix, setup, clip, colours = shading_case(n_tri, n_pix, width, seed=n_pix)
    saved = _shape(threads, grid)
    try:
        with np.errstate(all="ignore"):
            got = cuda_kernels.shade_device(
                np, tri, pix, width, setup, *vertex_table(clip, colours)
            )
    finally:
        cuda_kernels._THREADS, cuda_kernels._MAX_GRID = saved
    with np.errstate(all="ignore"):
        want = shade_pixels_arrays(np, tri, pix, width, setup, clip, colours)
    np.testing.assert_array_equal(got, want)


def run_span_case(name: str) -> None:
    from renderer.stages import cuda_kernels
    from renderer.stages.scan import spans_arrays
    from tests.renderer.test_fused_kernels import spans_case

    n_tri, n_tasks, width, threads, grid = SPAN_CASES[name]
    setup, items, tasks = spans_case(n_tri, n_tasks, width, seed=n_tasks)
    saved = _shape(threads, grid)
    try:
        got = cuda_kernels.spans_device(np, setup, items, tasks)
    finally:
        cuda_kernels._THREADS, cuda_kernels._MAX_GRID = saved
    for g, w in zip(got, spans_arrays(np, setup, items, tasks), strict=True):
        np.testing.assert_array_equal(g, w)
    assert (got[2] > 0).any() and (got[2] <= 0).any()


def run_fragment_case(name: str) -> None:
    from renderer.stages import cuda_kernels
    from renderer.stages.zbuffer import fragments_arrays
    from tests.renderer.test_fused_kernels import fragments_case

    n_spans, n_tasks, width, threads, grid = FRAGMENT_CASES[name]
    spans, items, tasks = fragments_case(n_spans, n_tasks, width, seed=n_tasks)
    saved = _shape(threads, grid)
    try:
        got = cuda_kernels.fragments_device(np, spans, items, tasks, width, 11, 5)
    finally:
        cuda_kernels._THREADS, cuda_kernels._MAX_GRID = saved
    for g, w in zip(got, fragments_arrays(np, spans, items, tasks, width, 11, 5), strict=True):
        np.testing.assert_array_equal(g, w)


def run_compact_case(name: str) -> None:
    from renderer.stages import cuda_kernels
    from renderer.stages.scan import compact_spans_arrays
    from tests.renderer.test_fused_kernels import assert_same_arrays, compact_case

    n_tri, n_tasks, width, threads, grid = COMPACT_CASES[name]
    setup, sel, items, row, lo, length = compact_case(n_tri, n_tasks, width, seed=n_tasks)
    saved = _shape(threads, grid)
    try:
        got = cuda_kernels.compact_device(np, setup, sel, items, row, lo, length)
    finally:
        cuda_kernels._THREADS, cuda_kernels._MAX_GRID = saved
    assert_same_arrays(got, compact_spans_arrays(np, setup, sel, items, row, lo, length))
    assert 0 < sel.size < items.size


def run_decode_case(name: str) -> None:
    from renderer.stages import cuda_kernels
    from renderer.stages.zbuffer import decode_keys_arrays
    from tests.renderer.test_fused_kernels import assert_same_arrays, decode_case

    n, bits, threads, grid = DECODE_CASES[name]
    keys = decode_case(n, bits, seed=n)
    saved = _shape(threads, grid)
    count = np.full(1, 5, dtype=np.int64)  # counted into: the covered pixels are added
    try:
        got = cuda_kernels.decode_device(np, keys, bits, count)
    finally:
        cuda_kernels._THREADS, cuda_kernels._MAX_GRID = saved
    want = decode_keys_arrays(np, keys, bits)
    assert_same_arrays(got, want)
    assert int(count[0]) == 5 + int(np.count_nonzero(want[0]))


def run_transform_case(name: str) -> None:
    from renderer.stages import cuda_kernels
    from renderer.stages.transform import to_clip_arrays
    from tests.renderer.test_fused_kernels import assert_same_arrays, transform_case

    n, threads, grid = TRANSFORM_CASES[name]
    vertices, mvp = transform_case(n, seed=n)
    saved = _shape(threads, grid)
    try:
        got = cuda_kernels.transform_device(np, vertices, mvp)
    finally:
        cuda_kernels._THREADS, cuda_kernels._MAX_GRID = saved
    assert_same_arrays([got], [to_clip_arrays(np, vertices, mvp)])


if __name__ == "__main__":
    from tests.gpu_compile import report_cases

    report_cases(case_names(), run_case)
