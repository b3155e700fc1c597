"""Shared edges: no gaps and no pixel written twice (OpenGL's fill rule)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import renderer
from simd import Machine
from tests.renderer.meshes import grid_mesh, window_mvp


def _expected_rect(width, height, x0, y0, x1, y1):
    """Pixels whose centre lies strictly inside the rectangle (none on its border)."""
    i = np.arange(width) + 0.5
    j = np.arange(height) + 0.5
    inside = ((i[None, :] > x0) & (i[None, :] < x1)) & ((j[:, None] > y0) & (j[:, None] < y1))
    return inside[::-1]  # GL rows go up, image rows go down


@settings(max_examples=20)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(2, 12), jitter=st.floats(0.0, 0.3))
def test_grid_has_no_gaps_and_no_double_writes(seed, n, jitter):
    width, height = 40, 32
    # a rectangle whose border misses every pixel centre, cut into 2 n^2 triangles (jitter
    # below 0.3 cells never folds a triangle over)
    rect = (3.3, 2.7, 35.6, 29.2)
    mesh = grid_mesh(n, n, *rect, jitter=jitter, seed=seed)
    frame = renderer.render(
        mesh,
        size=(width, height),
        mvp=window_mvp(width, height),
        loop="expand",
        machine=Machine(pes=64, backend="numpy"),
        count_writes=True,
    )
    expected = _expected_rect(width, height, *rect)
    np.testing.assert_array_equal(frame.writes, expected.astype(np.int64))
    np.testing.assert_array_equal(frame.coverage, expected)


def test_fan_of_pixel_aligned_triangles(machine):
    # a fan around a pixel centre with every vertex on a pixel centre: edges through
    # centres everywhere, each centre must still be written exactly once
    w = h = 24
    centre = (12.5, 12.5)
    ring = [
        (4.5, 4.5),
        (12.5, 3.5),
        (20.5, 4.5),
        (21.5, 12.5),
        (20.5, 20.5),
        (12.5, 21.5),
        (4.5, 20.5),
        (3.5, 12.5),
    ]
    verts = np.array([centre, *ring])
    verts = np.concatenate([verts, np.zeros((len(verts), 1))], axis=1)
    faces = np.array([[0, 1 + k, 1 + (k + 1) % 8] for k in range(8)])
    frame = renderer.render(
        (verts, faces),
        size=(w, h),
        mvp=window_mvp(w, h),
        loop="expand",
        machine=machine,
        count_writes=True,
    )
    assert frame.writes.max() == 1
    # the octagon's interior pixels (centre strictly inside) are all written
    assert frame.writes[h - 1 - 12, 12] == 1
    assert frame.writes.sum() > 200


@pytest.mark.parametrize("view", [(0, 0), (30, 60), (-70, 10)])
def test_closed_surface_perspective_no_double_writes_per_layer(view, machine):
    # a finely triangulated quad seen in perspective: every pixel written at most once
    verts, faces = grid_mesh(16, 16, -1, -1, 1, 1, jitter=0.3, seed=5)
    frame = renderer.render(
        (verts, faces), view=view, size=64, loop="expand", machine=machine, count_writes=True
    )
    assert frame.writes.max() <= 1
    # and there is no hole: the covered region (a projected quad) is simply connected
    from scipy.ndimage import binary_fill_holes

    np.testing.assert_array_equal(binary_fill_holes(frame.coverage), frame.coverage)
    assert frame.coverage.sum() > 100
