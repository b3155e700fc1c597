"""Bad input gives a clear error; degenerate or invisible geometry gives an empty image."""

from __future__ import annotations

import numpy as np
import pytest

import renderer
from renderer.scene.camera import Camera

TRI = (np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]]), np.array([[0, 1, 2]]))


@pytest.mark.parametrize(
    "mesh,match",
    [
        ((np.zeros((0, 3)), np.zeros((0, 3), dtype=int)), "empty"),
        ((np.zeros((3, 3)), np.zeros((0, 3), dtype=int)), "empty"),
        ((np.array([[0.0, 0, 0], [np.nan, 0, 0], [0, 1, 0]]), TRI[1]), "NaN or infinite"),
        ((np.array([[0.0, 0, 0], [np.inf, 0, 0], [0, 1, 0]]), TRI[1]), "NaN or infinite"),
        ((TRI[0] * 1e200, TRI[1]), "too large"),
        ((TRI[0], np.array([[0, 1, 3]])), "out of range"),
        ((TRI[0], np.array([[0, -1, 2]])), "out of range"),
        ((TRI[0][:, :2], TRI[1]), r"shape \(N, 3\)"),
        ((TRI[0], np.array([[0, 1, 2, 0]])), r"shape \(M, 3\)"),
        ((TRI[0], np.array([[0.5, 1, 2]])), "integer"),
    ],
)
def test_bad_mesh_raises(mesh, match, machine):
    with pytest.raises(ValueError, match=match):
        renderer.render(mesh, machine=machine, size=16)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"magnification": "2"}, "magnification must be a number"),
        ({"magnification": None}, "magnification must be a number"),
        ({"camera": "behind"}, "camera must be a renderer.Camera"),
        ({"machine": "numpy"}, "machine must be a simd.Machine"),
    ],
)
def test_options_of_the_wrong_kind_raise_type_error(kwargs, match, machine):
    with pytest.raises(TypeError, match=match):
        renderer.render(TRI, **({"machine": machine} | kwargs))


def test_not_a_mesh_raises_type_error(machine):
    with pytest.raises(TypeError, match="vertices"):
        renderer.render(42, machine=machine)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"size": 0}, "size"),
        ({"size": 5000}, "size"),
        ({"size": "big"}, "size"),
        ({"loop": "fastest"}, "loop"),
        ({"shading": "phong"}, "shading"),
        ({"magnification": 0}, "magnification"),
        ({"view": (1, 2, 3)}, "view"),
        ({"view": (np.nan, 0)}, "finite"),
        ({"mvp": np.eye(3)}, "mvp"),
        ({"size": (10.5, 10)}, "whole numbers"),
        ({"size": True}, "size"),
        ({"clock": "cpu"}, "clock"),
    ],
)
def test_bad_options_raise(kwargs, match, machine):
    with pytest.raises(ValueError, match=match):
        renderer.render(TRI, machine=machine, **kwargs)


def test_object_with_vertices_and_faces_is_accepted(machine):
    class Obj:
        vertices = TRI[0]
        faces = TRI[1]

    frame = renderer.render(Obj(), view=(0, 0), size=16, machine=machine)
    assert frame.coverage.any()


def test_degenerate_triangles_are_skipped(machine):
    verts = np.array([[0.0, 0, 0], [1, 0, 0], [2, 0, 0], [0, 1, 0], [0, 0, 0.5]])
    faces = np.array([[0, 1, 2], [0, 0, 3], [3, 3, 3]])  # collinear, repeated vertices
    frame = renderer.render((verts, faces), view=(0, 0), size=32, machine=machine)
    assert not frame.coverage.any()
    assert frame.stats.counts.degenerate + frame.stats.counts.rejected == 3
    # mixed with a proper triangle, only that one is drawn
    faces = np.concatenate([faces, [[0, 1, 3]]])
    frame = renderer.render((verts, faces), view=(0, 0), size=32, machine=machine)
    assert set(np.unique(frame.face)) == {-1, 3}


def test_mesh_wholly_outside_gives_empty_image(machine):
    cam = Camera(eye=(0, 0, 5), target=(0, 0, 10), near=0.1, far=100)  # looking away
    frame = renderer.render(TRI, camera=cam, size=32, machine=machine)
    assert not frame.coverage.any()
    assert (frame.image == 0).all() and (frame.depth == 1.0).all()
    assert frame.stats.counts.rejected == 1


def test_mesh_beside_the_view_gives_empty_image(machine):
    cam = Camera(eye=(50, 0, 5), target=(50, 0, 0), near=0.1, far=100)
    frame = renderer.render(TRI, camera=cam, size=32, machine=machine)
    assert not frame.coverage.any()


def test_single_point_mesh_does_not_crash(machine):
    verts = np.zeros((3, 3))
    frame = renderer.render((verts, np.array([[0, 1, 2]])), size=8, machine=machine)
    assert not frame.coverage.any()


def test_progress_bar_and_callable_bar(machine, capsys):
    frame = renderer.render(TRI, view=(0, 0), size=16, machine=machine, progress=True)
    assert frame.coverage.any()

    class Bar:
        def __init__(self):
            self.n, self.names = 0, []

        def update(self, k):
            self.n += k

        def set_postfix_str(self, s):
            self.names.append(s)

    bar = Bar()
    renderer.render(TRI, view=(0, 0), size=16, machine=machine, progress=bar)
    assert bar.n == 6
    assert bar.names == ["transform", "clip", "setup", "scan-conversion", "z-buffer", "shading"]
