"""GPU budgets of a frame, counted without a GPU (the counting backend, ``kernels.counting``).

A small fixed frame (the balanced isosurface at resolution 16, 1,162 triangles, 64x64) is
rendered in each loop form on ``Machine(backend="counting")``, which runs the CuPy code
path on NumPy and counts kernel launches, host syncs and transfers. The budgets below are
the counts measured when they were pinned: work on the pipeline may
only lower them. When a change lowers a count, lower its budget in the same commit.

``bench/gpu_budget.py`` prints the same counts per stage for the full-size frame.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import renderer
from kernels import counting
from simd import Machine

#: Per frame: kernel launches, host syncs, device-to-host bytes (pinned: they may only go
#: down). The syncs: clipping's counts (a second only when a triangle is clipped), one read
#: back of the scan-conversion loop's workload sum, maximum and minimum, one per
#: scan-conversion body call (the number of spans kept, with their lengths' sum and
#: maximum: the z-buffer loop's workload figures), the original form's and each
#: redistribution's table of live counts, and one read back of the frame's results with
#: the deferred address checks. The launches: the transform, triangle setup, clipping's
#: per-face tests, each scan-conversion body call's spans, the gathering of the kept spans,
#: the z-buffer's per-task work, decoding and shading are one fused kernel each; the expand
#: form's load-balancing search is one kernel per loop; a scan is one kernel (the set-up of
#: its scratch, once per process, is not counted); the router's kernels fold the address
#: checks in (the machine's table of check rows is filled when first used); each minimum
#: of a workload is reduced, then copied into its slot (``simd.machine.min_into``). The
#: cost-effective loop keeps no per-processor state before its first redistribution.
BUDGETS = {
    "expand": {"launches": 42, "syncs": 4, "d2h_bytes": 61_536},
    "cost-effective": {"launches": 145, "syncs": 11, "d2h_bytes": 61_784},
    "original": {"launches": 145, "syncs": 11, "d2h_bytes": 61_784},
    # the original form on the unbalanced set (many loop iterations)
    "original/unbalanced": {"launches": 505, "syncs": 32, "d2h_bytes": 62_648},
    # expand with the near plane through the surface (clipping in depth)
    "expand/near-clip": {"launches": 282, "syncs": 5, "d2h_bytes": 61_544},
}
SIZE = 64
RESOLUTION = 16


@pytest.fixture(scope="module")
def meshes():
    return {
        "balanced": renderer.load_dataset("balanced", RESOLUTION, cache=False),
        "unbalanced": renderer.load_dataset("unbalanced", RESOLUTION, cache=False),
    }


def near_clip_camera(mesh):
    """The default view with the near plane through the middle of the surface."""
    cam = renderer.default_camera(mesh, (45.0, 45.0))
    distance = math.dist(cam.eye, cam.target)
    return renderer.Camera(
        eye=cam.eye, target=cam.target, up=cam.up, fovy=cam.fovy, near=distance, far=cam.far
    )


def frame_counts(target, loop, **kw):
    machine = Machine(backend="counting")
    with counting.measure() as c:
        frame = renderer.render(target, size=SIZE, loop=loop, machine=machine, **kw)
    return frame, c


@pytest.mark.parametrize("case", sorted(BUDGETS))
def test_frame_within_budget(meshes, case):
    loop, _, variant = case.partition("/")
    kw = {}
    mesh = meshes["unbalanced" if variant == "unbalanced" else "balanced"]
    if variant == "near-clip":
        kw["camera"] = near_clip_camera(mesh)
    frame, c = frame_counts(mesh, loop, **kw)
    if variant == "near-clip":
        assert frame.stats.counts.clipped > 0
    budget = BUDGETS[case]
    got = {"launches": c.total.launches, "syncs": c.total.syncs, "d2h_bytes": c.total.d2h_bytes}
    over = {k: (got[k], budget[k]) for k in budget if got[k] > budget[k]}
    assert not over, f"{case}: over budget (counted, budget): {over}; syncs by cause " + str(
        dict(c.total.sync_ops)
    )
    # Real CuPy refuses host arrays inside device operations: there must be none.
    assert not c.total.implicit, dict(c.total.implicit)
    # The one-off frame uploads the mesh; its size is known.
    mesh_bytes = mesh.vertices.nbytes + mesh.faces.nbytes
    assert c.total.h2d_bytes >= mesh_bytes


def test_counting_frames_equal_numpy_frames(meshes):
    mesh = meshes["balanced"]
    for loop in renderer.LOOP_FORMS:
        want = renderer.render(mesh, size=SIZE, loop=loop, machine=Machine(backend="numpy"))
        got, _ = frame_counts(mesh, loop)
        np.testing.assert_array_equal(got.image, want.image, err_msg=loop)
        np.testing.assert_array_equal(got.depth, want.depth, err_msg=loop)
        np.testing.assert_array_equal(got.face, want.face, err_msg=loop)
        assert got.stats.machine.total.cycles == want.stats.machine.total.cycles
        # the counters the GPU path counts on the device (degenerate, covered pixels)
        assert got.stats.counts == want.stats.counts
        assert got.stats.counts.pixels == int(np.count_nonzero(want.face >= 0))
        # the read back reversed the rows into plain host arrays (Frame's contract)
        for a in (got.image, got.depth, got.face, want.image, want.depth, want.face):
            assert a.flags.c_contiguous and a.flags.aligned
    # supersampled: the covered pixels of the resolved image
    want = renderer.render(mesh, size=SIZE, loop="expand", supersample=2,
                           machine=Machine(backend="numpy"))  # fmt: skip
    got, _ = frame_counts(mesh, "expand", supersample=2)
    np.testing.assert_array_equal(got.image, want.image)
    assert got.stats.counts == want.stats.counts


@pytest.mark.parametrize("shading", ["gouraud", "flat"])
def test_scene_uploads_no_mesh_data_on_the_second_frame(meshes, shading):
    mesh = meshes["balanced"]
    machine = Machine(backend="counting")
    with counting.measure() as prepare:
        scene = renderer.Scene(mesh, machine=machine)
    assert prepare.total.h2d_bytes == mesh.vertices.nbytes + mesh.faces.nbytes
    direct = renderer.render(mesh, size=SIZE, loop="expand", shading=shading)
    frames = []
    for _ in range(2):
        with counting.measure() as c:
            frames.append(renderer.render(scene, size=SIZE, loop="expand", shading=shading))
    first, second = frames
    # The first frame uploads the vertex colours of its light; the second nothing of the
    # mesh (a few scalars at most: no array of the mesh's size).
    assert c.stage("transform").h2d_bytes == 0
    assert c.stage("clip").h2d_bytes == 0
    assert c.total.h2d_bytes < 64
    for f in (first, second):
        np.testing.assert_array_equal(f.image, direct.image)
        np.testing.assert_array_equal(f.depth, direct.depth)
        np.testing.assert_array_equal(f.face, direct.face)


def test_scene_renders_on_its_own_machine(meshes):
    scene = renderer.Scene(meshes["balanced"], machine=Machine(backend="numpy"))
    with pytest.raises(ValueError, match="machine it was prepared on"):
        renderer.render(scene, size=16, machine=Machine(backend="numpy"))
    frame = renderer.render(scene, size=16, machine=scene.machine)
    assert frame.image.shape == (16, 16, 3)
    assert "triangles" in repr(scene)


@pytest.mark.parametrize("loop", renderer.LOOP_FORMS)
def test_scene_frames_replay_with_the_device_work_stubbed(meshes, loop, monkeypatch):
    """bench/gpu_budget.py's replayed host time: a later frame of a scene, run again from
    a recording of the device's answers, asks for the same work and gives the same frame
    (the host reads device data only through counted read backs). The frame's host code
    runs each time: no CUDA graphs (renderer.replays)."""
    monkeypatch.setenv("SIMD_GRAPHS", "0")
    scene = renderer.Scene(meshes["balanced"], machine=Machine(backend="counting"))
    renderer.render(scene, size=SIZE, loop=loop)
    with counting.measure() as recorded, counting.recording() as tape:
        want = renderer.render(scene, size=SIZE, loop=loop)
    with counting.measure() as replayed, counting.replaying(tape):
        got = renderer.render(scene, size=SIZE, loop=loop)
    for c in (recorded, replayed):
        c.total.device_seconds = 0.0
    assert replayed.total == recorded.total
    np.testing.assert_array_equal(got.image, want.image)
    np.testing.assert_array_equal(got.depth, want.depth)
    np.testing.assert_array_equal(got.face, want.face)

    def charged(frame):  # the model clock's charges of the frame, stage by stage
        return {k: (r.cycles, dict(r.calls)) for k, r in frame.stats.stages.items()}

    assert charged(got) == charged(want)
