"""The data-parallel renderer against the naive serial rasteriser (bit for bit)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import renderer
from renderer.scene.camera import Camera
from simd import Machine
from tests.renderer.meshes import grid_mesh, window_mvp
from tests.renderer.reference_raster import reference_render


def _check(mesh, mvp, size, machine, loop="expand"):
    frame = renderer.render(mesh, size=size, mvp=mvp, loop=loop, machine=machine, count_writes=True)
    face, depth, writes = reference_render(mesh[0], mesh[1], mvp, size)
    np.testing.assert_array_equal(frame.writes, writes)
    np.testing.assert_array_equal(frame.face, face)
    np.testing.assert_array_equal(frame.depth, depth)
    return frame


def random_mesh(seed: int, n_tri: int = 12, spread: float = 1.0):
    rng = np.random.default_rng(seed)
    verts = rng.uniform(-spread, spread, (3 * n_tri, 3))
    faces = rng.permutation(3 * n_tri).reshape(n_tri, 3)
    return verts, faces


@settings(max_examples=25)
@given(
    seed=st.integers(0, 2**31 - 1),
    view=st.sampled_from([(0, 0), (45, 45), (120, -30)]),
    mag=st.sampled_from([1.0, 3.0]),
)
def test_random_triangles_match_reference(seed, view, mag):
    mesh = random_mesh(seed)
    cam = renderer.default_camera(renderer.as_mesh(mesh), view, mag)
    _check(mesh, cam.mvp(48 / 40), (48, 40), Machine(pes=64, backend="numpy"))


def test_pixel_aligned_vertices_match_reference(machine):
    # vertices on pixel centres and corners: many centres lie exactly on edges
    rng = np.random.default_rng(7)
    verts = np.zeros((60, 3))
    verts[:, :2] = rng.integers(0, 32, (60, 2)) / 2.0
    verts[:, 2] = rng.uniform(-0.9, 0.9, 60)
    faces = np.arange(60).reshape(20, 3)
    _check((verts, faces), window_mvp(16, 16), (16, 16), machine)


def test_near_plane_clipping_matches_reference(machine):
    # a camera inside a jittered grid: the near plane cuts through many triangles
    verts, faces = grid_mesh(8, 8, -2, -2, 2, 2, jitter=0.3, seed=3)
    verts = verts[:, [0, 2, 1]]  # a floor at y = 0
    cam = Camera(eye=(0.0, 0.4, 0.5), target=(0.0, 0.0, -1.0), fovy=70, near=0.3, far=10)
    frame = _check((verts, faces), cam.mvp(1.0), (40, 40), machine)
    assert frame.stats.counts.clipped > 0
    assert frame.coverage.any()


@pytest.mark.parametrize("loop", ["original", "cost-effective"])
def test_loop_forms_match_reference(loop, machine):
    mesh = random_mesh(11, n_tri=30)
    cam = renderer.default_camera(renderer.as_mesh(mesh), (30, 20), 1.5)
    _check(mesh, cam.mvp(1.0), (40, 40), machine, loop=loop)


def test_huge_triangles_beyond_guard_band_match_reference(machine):
    # vertices hundreds of thousands of pixels away are clipped against the guard band
    verts = np.array(
        [
            [-3e5, -2e5, 0.1],
            [4e5, 10.0, -0.2],
            [5.0, 3e5, 0.3],
            [2.5, 2.5, 0.0],
            [30.5, 8, 0],
            [9, 30.5, 0.0],
        ]
    )
    faces = np.array([[0, 1, 2], [3, 4, 5]])
    frame = _check((verts, faces), window_mvp(32, 32), (32, 32), machine)
    assert frame.stats.counts.clipped == 1
    assert frame.coverage.all()


def test_far_plane_clipping_matches_reference(machine):
    # a floor running away from the camera, cut by a close far plane: the triangles across
    # it are clipped (not dropped), the ones wholly beyond it are rejected
    verts, faces = grid_mesh(8, 8, -2, -6, 2, 0, jitter=0.3, seed=12)
    verts = verts[:, [0, 2, 1]]  # a floor at y = 0 from z = 0 to z = -6
    cam = Camera(eye=(0.0, 0.5, 0.5), target=(0.0, 0.0, -1.5), fovy=70, near=0.1, far=3.0)
    frame = _check((verts, faces), cam.mvp(1.0), (40, 40), machine)
    counts = frame.stats.counts
    assert counts.clipped > 0 and counts.rejected > 0
    assert frame.coverage.any()
    assert frame.depth[frame.coverage].max() > 0.99  # drawn right up to the far plane
