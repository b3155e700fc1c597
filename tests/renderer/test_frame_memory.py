"""Memory of a frame per triangle (at most 250 bytes a triangle at the peak, so
that one 80 GB GPU holds 300 million triangles): what the stages keep, in bytes, pinned.

Bytes are counts, not times: the arrays' sizes and tracemalloc's peak of NumPy's buffers
are the same on every run. ``bench/render_scale.py`` measures the whole process's peak.
"""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest

import renderer
from renderer.stages.clip import clip_triangles
from renderer.stages.scan import ScanConverter, setup_triangles
from renderer.stages.transform import to_clip
from simd import Machine

#: Bytes a triangle of setup's output (int32 snapped vertices, int32 scan-line and column
#: ranges, float64 depth planes, int8 vertex order), and what shading keeps of it.
SETUP_BYTES = 2 * 12 + 4 * 4 + 5 * 8 + 3
SHADING_BYTES = 2 * 12 + 3
#: tracemalloc's peak of a whole frame's NumPy buffers per triangle (64-resolution set,
#: 57,674 triangles, 128x128): the budget, with some room over today's 124 (expand), 122
#: (original) and 121 (cost-effective). Before: 124, 126 and 181 (int64 live lists, the
#: cost-effective loop's state made before its first redistribution and, in that, an
#: int64 message and the gathering's arrays held through the sends); 151, 145 and 214
#: (int64 setup scan-line ranges, span lengths, expand tasks and cost-effective loop
#: state; 312 while the redistribution, and its dry run for the cost estimate, kept every
#: intermediate array; 155 and 148 with int64 span fields and per-span copies of the
#: depth slope and reference x).
FRAME_PEAK = {"expand": 135, "original": 130, "cost-effective": 130}
#: The same set drawn at 512x512 (about as many pixels a triangle as the 250k set at
#: 1024x1024, where the 250 bytes a triangle are hardest to meet): today 248, 229
#: and 247; 248, 245 and 276 before the changes above; 340, 302 and 412 with the z-buffer
#: kept through shading, every per-pixel array held at the read back, int64 expand tasks
#: and span lengths, and the cost-effective loop's state in int64 and held through its
#: redistribution. The 250k set at 1024x1024 (bench/render_scale.py): cost-effective
#: 277.5 -> 242.6, one z-buffer redistribution of 623,632 spans.
FRAME_PEAK_LARGE = {"expand": 260, "original": 240, "cost-effective": 255}
#: Bytes a span: int32 triangle, scan line, first pixel and length (the z-buffer loop's
#: workload, taken by the loops as it is), float64 depth on its row (the slope and
#: reference x are setup's).
SPAN_BYTES = 4 * 4 + 8


def _field_bytes(setup) -> int:
    return sum(a.nbytes for a in vars(setup).values() if isinstance(a, np.ndarray) and a.ndim)


@pytest.fixture(scope="module")
def mesh():
    return renderer.load_dataset("balanced", 64, cache=False)


def test_unclipped_triangles_are_the_mesh_itself(mesh):
    """Nothing clipped or dropped: the clipper hands on the mesh's faces and the vertex
    arrays as they are (the per-corner copies were the frame's largest arrays)."""
    m = Machine(backend="numpy")
    cam = renderer.default_camera(mesh, (45.0, 45.0))
    clip = to_clip(np, mesh.vertices, cam.mvp(1.0))
    colours = np.ones((len(clip), 3))
    tris = clip_triangles(np, clip, mesh.faces, colours, 64, 64, machine=m)
    assert (tris.n_clipped, tris.n_rejected) == (0, 0)
    assert tris.corners is mesh.faces and tris.points is clip and tris.values is colours
    np.testing.assert_array_equal(tris.clip, clip[mesh.faces])


def test_setup_bytes_per_triangle(mesh):
    cam = renderer.default_camera(mesh, (45.0, 45.0))
    clip = to_clip(np, mesh.vertices, cam.mvp(1.0))
    setup = setup_triangles(np, clip, 128, 128, corners=mesh.faces)
    assert _field_bytes(setup) == SETUP_BYTES * mesh.n_faces
    setup.keep_for_shading()
    assert _field_bytes(setup) == SHADING_BYTES * mesh.n_faces


def test_span_bytes(mesh):
    """The spans' own arrays are SPAN_BYTES a span; the depth slope and reference x are
    setup's per-triangle arrays, not copies."""
    cam = renderer.default_camera(mesh, (45.0, 45.0))
    clip = to_clip(np, mesh.vertices, cam.mvp(1.0))
    setup = setup_triangles(np, clip, 128, 128, corners=mesh.faces)
    scanner = ScanConverter(np, setup, machine=Machine(backend="numpy"))
    workload = setup.workload
    items = np.repeat(np.arange(workload.size), workload)
    tasks = np.arange(items.size) - np.repeat(np.cumsum(workload) - workload, workload)
    scanner(items, tasks)
    spans = scanner.spans()
    assert spans.dzdx is setup.dzdx and spans.x0 is setup.x0
    own = (spans.tri, spans.row, spans.col, spans.length, spans.zrow)
    assert scanner.n_spans > 0
    assert sum(a.nbytes for a in own) == SPAN_BYTES * scanner.n_spans


@pytest.mark.parametrize(
    ("loop", "size"),
    [(loop, 128) for loop in sorted(FRAME_PEAK)] + [(loop, 512) for loop in sorted(FRAME_PEAK)],
)
def test_frame_peak_per_triangle(mesh, loop, size):
    scene = renderer.Scene(mesh, machine=Machine(backend="numpy"))
    renderer.render(scene, size=size, loop=loop)  # compiles, fills caches
    gc.collect()
    tracemalloc.start()
    try:
        renderer.render(scene, size=size, loop=loop)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    budget = (FRAME_PEAK if size == 128 else FRAME_PEAK_LARGE)[loop]
    assert peak / scene.n_faces <= budget, peak / scene.n_faces
