"""The clip stage: the same output as before its rewrite, and host syncs that do not grow
with the number of clipped triangles."""

from __future__ import annotations

import math

import numpy as np
import pytest

import renderer
from kernels import counting
from renderer.scene.camera import Camera
from renderer.stages.clip import GUARD_BAND, clip_triangles
from simd import Machine
from tests.renderer.clip_oracle import legacy_clip_triangles
from tests.renderer.reference_raster import reference_render

SIZE = (32, 24)


def random_clip_scene(seed: int, n_vert: int = 60, n_tri: int = 80):
    """Clip-space vertices across every clipping plane (near, far, the guard band, w <= 0),
    some exactly on a plane, and triangles of them sharing vertices."""
    rng = np.random.default_rng(seed)
    w = rng.uniform(-1.0, 4.0, n_vert)
    gx = 1.0 + 2.0 * GUARD_BAND / SIZE[0]
    gy = 1.0 + 2.0 * GUARD_BAND / SIZE[1]
    scale = rng.choice([1.0, 2.0, gx, 3 * gx], n_vert)[:, None]
    clip = np.empty((n_vert, 4))
    clip[:, :3] = rng.uniform(-1.5, 1.5, (n_vert, 3)) * scale * np.abs(w)[:, None]
    clip[:, 3] = w
    on = rng.random(n_vert) < 0.15  # exactly on the near, far or a guard-band plane
    which = rng.integers(0, 4, n_vert)
    clip[on & (which == 0), 2] = -w[on & (which == 0)]
    clip[on & (which == 1), 2] = w[on & (which == 1)]
    clip[on & (which == 2), 0] = gx * w[on & (which == 2)]
    clip[on & (which == 3), 1] = -gy * w[on & (which == 3)]
    faces = rng.integers(0, n_vert, (n_tri, 3))
    attrs = rng.uniform(0, 1, (n_vert, 3))
    return clip, faces, attrs


def _run_clip(fn, clip, faces, attrs, backend="numpy"):
    m = Machine(pes=64, backend=backend)
    out = fn(m.xp, m.asarray(clip), m.asarray(faces), m.asarray(attrs), *SIZE, machine=m)
    return out, m


@pytest.mark.parametrize("seed", range(12))
def test_same_triangles_as_before_the_rewrite(seed):
    clip, faces, attrs = random_clip_scene(seed)
    want, m_want = _run_clip(legacy_clip_triangles, clip, faces, attrs)
    got, m_got = _run_clip(clip_triangles, clip, faces, attrs)
    assert want.n_clipped > 0
    assert (got.n_clipped, got.n_rejected) == (want.n_clipped, want.n_rejected)
    np.testing.assert_array_equal(got.face, want.face)
    np.testing.assert_array_equal(got.clip, want.clip)
    np.testing.assert_array_equal(got.attrs, want.attrs)
    assert m_got.stats.total.cycles == m_want.stats.total.cycles


def test_same_triangles_on_the_counting_backend():
    clip, faces, attrs = random_clip_scene(99)
    want, _ = _run_clip(legacy_clip_triangles, clip, faces, attrs)
    with counting.measure() as c:
        got, m = _run_clip(clip_triangles, clip, faces, attrs, backend="counting")
    assert not c.total.implicit, dict(c.total.implicit)
    for a, b in [(got.face, want.face), (got.clip, want.clip), (got.attrs, want.attrs)]:
        np.testing.assert_array_equal(m.asnumpy(a), b)


@pytest.mark.parametrize("case", ["empty", "all rejected", "none clipped", "all clipped away"])
def test_edge_cases_as_before(case):
    clip, faces, attrs = random_clip_scene(5)
    if case == "empty":
        faces = faces[:0]
    elif case == "all rejected":
        clip[:, 2] = 2 * np.abs(clip[:, 3]) + 1  # beyond the far plane
    elif case == "none clipped":
        clip = np.abs(clip) * 0 + [0.1, 0.2, 0.3, 1.0]
        clip[:, :3] += np.random.default_rng(1).uniform(-0.5, 0.5, (len(clip), 3))
    else:
        # triangles beyond the guard band's corner (x > gx w or y > gy w everywhere, but not
        # wholly outside one plane of the view volume): clipped to nothing
        gx = 1.0 + 2.0 * GUARD_BAND / SIZE[0]
        gy = 1.0 + 2.0 * GUARD_BAND / SIZE[1]
        w = np.random.default_rng(2).uniform(0.5, 3.0, (20, 1))
        corner = np.array([[3 * gx, 0, 0, 1], [0, 3 * gy, 0, 1], [3 * gx, 3 * gy, 0.5, 1]])
        clip = corner[None] * w[:, :, None]  # (20, 3, 4)
        clip[1::2, :, :2] *= -1  # and some at the opposite corner
        clip = clip.reshape(-1, 4)
        faces = np.arange(len(clip)).reshape(-1, 3)
        attrs = np.random.default_rng(3).uniform(0, 1, (len(clip), 3))
    want, m_want = _run_clip(legacy_clip_triangles, clip, faces, attrs)
    got, m_got = _run_clip(clip_triangles, clip, faces, attrs)
    assert (got.n_clipped, got.n_rejected) == (want.n_clipped, want.n_rejected)
    np.testing.assert_array_equal(got.face, want.face)
    np.testing.assert_array_equal(got.clip, want.clip)
    np.testing.assert_array_equal(got.attrs, want.attrs)
    assert got.clip.shape[1:] == (3, 4) and got.attrs.shape[1:] == (3, 3)
    if case == "all clipped away":
        assert got.n_clipped == len(faces) and got.face.shape == (0,)
    assert m_got.stats.total.cycles == m_want.stats.total.cycles


def near_and_side_scene(n_clipped: int, n_plain: int = 40, seed: int = 0):
    """Triangles in front of a camera at the origin looking down -z (near = 0.5): ``n_clipped``
    of them cross the near plane (a vertex behind the camera) and the guard band (a vertex
    thousands of units to the side, at small depth), ``n_plain`` lie inside the view."""
    rng = np.random.default_rng(seed)
    tris = []
    for i in range(n_clipped):
        side = 1.0 if i % 2 else -1.0
        behind = [rng.uniform(-0.3, 0.3), rng.uniform(-0.3, 0.3), rng.uniform(-0.2, 0.4)]
        far_side = [side * rng.uniform(2e3, 6e3), rng.uniform(-1e3, 1e3), -rng.uniform(0.8, 3)]
        front = [rng.uniform(-1, 1), rng.uniform(-1, 1), -rng.uniform(2, 6)]
        tris.append([behind, far_side, front] if i % 3 else [front, behind, far_side])
    for _ in range(n_plain):
        c = [rng.uniform(-1.5, 1.5), rng.uniform(-1.5, 1.5), -rng.uniform(2, 8)]
        tris.append([np.add(c, rng.uniform(-0.6, 0.6, 3)) for _ in range(3)])
    verts = np.asarray(tris, dtype=np.float64).reshape(-1, 3)
    faces = np.arange(len(verts), dtype=np.int64).reshape(-1, 3)
    cam = Camera(eye=(0.0, 0.0, 0.0), target=(0.0, 0.0, -1.0), fovy=60, near=0.5, far=20)
    return (verts, faces), cam.mvp(SIZE[0] / SIZE[1])


def _crosses_near_and_side(mesh, mvp):
    verts, faces = mesh
    clip = np.c_[verts, np.ones(len(verts))] @ np.asarray(mvp).T
    x, z, w = clip[faces, 0], clip[faces, 2], clip[faces, 3]
    gx = 1.0 + 2.0 * GUARD_BAND / SIZE[0]
    near = (z + w < 0).any(axis=1)
    side = ((gx * w - x < 0) | (gx * w + x < 0)).any(axis=1)
    return int((near & side).sum())


def test_near_and_guard_band_clipping_match_reference(machine):
    mesh, mvp = near_and_side_scene(60, n_plain=30, seed=3)
    assert _crosses_near_and_side(mesh, mvp) == 60
    frame = renderer.render(mesh, size=SIZE, mvp=mvp, machine=machine, count_writes=True)
    assert frame.stats.counts.clipped == 60
    face, depth, writes = reference_render(mesh[0], mesh[1], mvp, SIZE)
    np.testing.assert_array_equal(frame.writes, writes)
    np.testing.assert_array_equal(frame.face, face)
    np.testing.assert_array_equal(frame.depth, depth)
    assert frame.coverage.mean() > 0.5
    clipped_faces = set(np.unique(frame.face[frame.face >= 0]).tolist()) & set(range(60))
    assert len(clipped_faces) > 5  # the clipped triangles are drawn


def _clip_stage_counts(n_clipped):
    mesh, mvp = near_and_side_scene(n_clipped, seed=8)
    assert _crosses_near_and_side(mesh, mvp) == n_clipped
    machine = Machine(backend="counting")
    with counting.measure() as c:
        frame = renderer.render(mesh, size=SIZE, mvp=mvp, loop="expand", machine=machine)
    assert frame.stats.counts.clipped == n_clipped
    assert not c.total.implicit, dict(c.total.implicit)
    return c.stage("clip")


def test_clip_syncs_and_launches_do_not_grow_with_clipped_triangles():
    few, many = _clip_stage_counts(5), _clip_stage_counts(200)
    assert (many.syncs, many.launches) == (few.syncs, few.launches)
    assert many.sync_ops == few.sync_ops
    # one read sizes the clipping (crossing and rejected counts), one the output
    assert many.syncs <= 2, dict(many.sync_ops)
    assert math.isclose(many.d2h_bytes, few.d2h_bytes)
