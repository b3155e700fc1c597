"""renderer.isosurface against VTK's vtkMarchingCubes and scikit-image's marching cubes:
the same triangles (as sets of corner positions, winding kept) on smooth, quantised,
integer and label volumes, plateaus and values exactly at the level, anisotropic grids and
volumes one cell thick; closed surfaces watertight with the right Euler characteristic;
the refusals."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import renderer
from renderer.contour.tables import TRIANGLES, case_table, triangle_counts
from simd import Machine
from tests.renderer.contour_oracle import (
    match_vertices,
    triangle_set,
    vtk_case_table,
    vtk_marching_cubes,
)


def needs_vtk():
    pytest.importorskip("vtkmodules.vtkFiltersCore", reason="VTK (the test extra) is the oracle")


@pytest.fixture(scope="module")
def m():
    return Machine(pes=64, backend="numpy")


def smooth(shape, seed, sigma=1.5):
    """A random smooth field (Gaussian-filtered noise), float32."""
    from scipy.ndimage import gaussian_filter

    rng = np.random.default_rng(seed)
    return gaussian_filter(rng.standard_normal(shape), sigma).astype(np.float32)


def assert_same_as_vtk(mesh, volume, level, spacing=(1.0, 1.0, 1.0), origin=(0.0, 0.0, 0.0)):
    needs_vtk()
    points, faces, normals = vtk_marching_cubes(volume, level, spacing, origin)
    assert mesh.n_faces == len(faces)
    scale = max(1.0, float(np.abs(points).max()))
    if spacing == (1.0, 1.0, 1.0) and origin == (0.0, 0.0, 0.0):
        # VTK rounds i + t to float32 once, as the float32 of our float64 does
        assert triangle_set(mesh.vertices, mesh.faces) == triangle_set(points, faces)
    else:  # VTK scales its float32 points again: match within float32 rounding
        index = match_vertices(mesh.vertices, points, 4e-7 * scale)
        ours = {tuple(np.roll(t, -int(np.argmin(t)))) for t in index[mesh.faces].tolist()}
        theirs = {tuple(np.roll(t, -int(np.argmin(t)))) for t in faces.tolist()}
        assert ours == theirs
    index = match_vertices(mesh.vertices, points, 4e-7 * scale)
    length = np.linalg.norm(normals[index], axis=1, keepdims=True)
    unit = np.divide(normals[index], length, out=np.zeros_like(mesh.normals), where=length > 0)
    np.testing.assert_allclose(mesh.normals, unit, atol=1e-6)


def test_case_table_is_vtks():
    needs_vtk()
    assert vtk_case_table() == list(TRIANGLES)
    assert case_table().shape == (256, 16)
    assert triangle_counts().max() == 5
    # complementary cases cross the same edges
    for case in range(256):
        assert sorted(set(TRIANGLES[case])) == sorted(set(TRIANGLES[255 - case]))


@pytest.mark.parametrize(
    ("kind", "level"),
    [
        ("smooth", 0.0),
        ("smooth", 0.1),  # not a float32: the kernels compare with the float32 above it
        ("quantised", 0.0),  # plateaus at the level, values exactly at it
        ("int16", 3),
        ("labels", 1),  # every inside value at the level: corners shared by many edges
        ("labels", 0.5),
        ("float64", -0.05),
    ],
)
def test_same_triangles_as_vtk(m, kind, level):
    volume = smooth((14, 15, 16), seed=len(kind))
    if kind == "quantised":
        volume = np.round(volume * 8) / 8
    elif kind == "int16":
        volume = np.round(volume * 40).astype(np.int16)
    elif kind == "labels":
        volume = (volume > 0).astype(np.uint8)
    elif kind == "float64":
        volume = volume.astype(np.float64)
    mesh = renderer.isosurface(volume, level, machine=m)
    assert_same_as_vtk(mesh, volume, level)


def test_plateaus_at_the_level(m):
    # a cube of values exactly at the level inside zeros, and one inside a plateau
    cube = np.pad(np.ones((5, 5, 5), np.float32), 3)
    assert_same_as_vtk(renderer.isosurface(cube, 1.0, machine=m), cube, 1.0)
    shelf = np.pad(np.full((6, 6, 6), 0.5), 3) + np.pad(np.ones((2, 2, 2)), 5)
    assert_same_as_vtk(renderer.isosurface(shelf, 0.5, machine=m), shelf, 0.5)


def test_anisotropic_spacing_and_origin(m):
    volume = smooth((12, 13, 14), seed=5)
    spacing, origin = (0.5, 1.5, 2.25), (-3.0, 1.0, 0.25)
    mesh = renderer.isosurface(volume, 0.0, spacing=spacing, origin=origin, machine=m)
    assert_same_as_vtk(mesh, volume, 0.0, spacing, origin)
    # float64 on request: the positions to float64's precision
    wide = dict(machine=m, dtype=np.float64)
    mesh = renderer.isosurface(volume, 0.0, spacing=spacing, origin=origin, **wide)
    unit = renderer.isosurface(volume, 0.0, **wide)
    np.testing.assert_allclose(mesh.vertices, unit.vertices * spacing + origin, rtol=1e-14)
    assert np.array_equal(mesh.faces, unit.faces)
    # one number: the same step along every axis
    same = renderer.isosurface(volume, 0.0, spacing=2.0, **wide)
    np.testing.assert_allclose(same.vertices, unit.vertices * 2.0, rtol=1e-15)


def test_float32_is_float64_rounded(m):
    volume = smooth((12, 13, 14), seed=6)
    narrow = renderer.isosurface(volume, 0.0, machine=m)
    wide = renderer.isosurface(volume, 0.0, machine=m, dtype=np.float64)
    assert (narrow.vertices.dtype, narrow.normals.dtype, narrow.faces.dtype) == (
        np.float32,
        np.float32,
        np.int32,
    )
    assert np.array_equal(narrow.vertices, wide.vertices.astype(np.float32))
    assert np.array_equal(narrow.normals, wide.normals.astype(np.float32))
    assert np.array_equal(narrow.faces, wide.faces)
    with pytest.raises(ValueError, match="dtype must be float32 or float64"):
        renderer.isosurface(volume, 0.0, machine=m, dtype=np.int32)


@pytest.mark.parametrize("shape", [(2, 11, 12), (11, 2, 12), (11, 12, 2), (2, 2, 9), (2, 2, 2)])
def test_one_cell_thick(m, shape):
    volume = smooth(shape, seed=sum(shape), sigma=1.0)
    volume[0, 0, 0] = 1.0  # a surface even in the smallest volume
    mesh = renderer.isosurface(volume, 0.0, machine=m)
    assert_same_as_vtk(mesh, volume, 0.0)


@given(
    arrays(
        np.float32,
        st.tuples(*[st.integers(2, 6)] * 3),
        elements=st.sampled_from([-1.0, -0.5, 0.0, 0.25, 0.5, 1.0]),
    ),
    st.sampled_from([0.0, 0.25, 0.3]),
)
def test_random_small_volumes_as_vtk(volume, level):
    needs_vtk()
    inside = np.count_nonzero(volume >= level)
    points, faces, _ = vtk_marching_cubes(volume, level)
    if inside in (0, volume.size) or len(faces) == 0:
        with pytest.raises(ValueError, match="no surface|empty"):
            renderer.isosurface(volume, level, machine=Machine(pes=8, backend="numpy"))
        return
    mesh = renderer.isosurface(volume, level, machine=Machine(pes=8, backend="numpy"))
    assert triangle_set(mesh.vertices, mesh.faces) == triangle_set(points, faces)


def test_vertices_and_triangle_count_as_scikit_image(m):
    marching_cubes = pytest.importorskip("skimage.measure").marching_cubes

    volume = smooth((20, 21, 22), seed=3, sigma=2.0)
    mesh = renderer.isosurface(volume, 0.0, machine=m)
    verts, faces, _, _ = marching_cubes(volume, 0.0, method="lorensen")
    # the same crossings (scikit-image keeps float32), as many triangles; scikit-image
    # triangulates a few cases differently
    assert len(mesh.vertices) == len(verts) and mesh.n_faces == len(faces)
    index = match_vertices(mesh.vertices, verts.astype(np.float64), 2e-6 * 22)
    assert len(np.unique(index)) == len(verts)


def ball(n=24, radius=0.7, spacing=None):
    t = np.linspace(-1, 1, n)
    x, y, z = np.meshgrid(t, t, t, indexing="ij")
    return (radius * radius - (x * x + y * y + z * z)).astype(np.float32)


def edge_uses(faces):
    """How many triangles use each undirected edge, and each directed one."""
    directed = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    undirected = np.sort(directed, axis=1)
    _, counts = np.unique(undirected, axis=0, return_counts=True)
    _, directed_counts = np.unique(directed, axis=0, return_counts=True)
    return counts, directed_counts


def test_sphere_is_watertight_and_oriented(m):
    mesh = renderer.isosurface(ball(), 0.0, machine=m)
    counts, directed = edge_uses(mesh.faces)
    assert (counts == 2).all(), "every edge between exactly two triangles"
    assert (directed == 1).all(), "consistently wound"
    v, e, f = len(mesh.vertices), len(counts), mesh.n_faces
    assert v - e + f == 2
    # the normals point outwards (down the gradient: values fall outwards)
    centre = mesh.vertices.mean(axis=0)
    assert (np.einsum("ij,ij->i", mesh.normals, mesh.vertices - centre) > 0).all()
    np.testing.assert_allclose(np.linalg.norm(mesh.normals, axis=1), 1.0, rtol=1e-6)  # float32
    # counter-clockwise seen from outside: the winding agrees with the normals
    a, b, c = (mesh.vertices[mesh.faces[:, k]] for k in range(3))
    facing = np.einsum("ij,ij->i", np.cross(b - a, c - a), mesh.normals[mesh.faces[:, 0]])
    assert (facing > 0).mean() > 0.99


def test_sphere_with_trimesh(m):
    trimesh = pytest.importorskip("trimesh")
    mesh = renderer.isosurface(ball(20), 0.0, spacing=(0.1, 0.2, 0.3), machine=m)
    shape = trimesh.Trimesh(mesh.vertices, mesh.faces, process=False)
    assert shape.is_watertight and shape.is_winding_consistent
    assert shape.euler_number == 2


def test_torus_has_genus_one(m):
    t = np.linspace(-1.2, 1.2, 40)
    x, y, z = np.meshgrid(t, t, t, indexing="ij")
    torus = 0.3**2 - ((np.hypot(x, y) - 0.75) ** 2 + z * z)
    mesh = renderer.isosurface(torus, 0.0, machine=m)
    counts, _ = edge_uses(mesh.faces)
    assert (counts == 2).all()
    assert len(mesh.vertices) - len(counts) + mesh.n_faces == 0


def test_one_vertex_per_crossed_edge(m):
    volume = smooth((10, 11, 12), seed=9)
    mesh = renderer.isosurface(volume, 0.0, machine=m)
    inside = volume >= 0
    crossed = sum(int(np.count_nonzero(np.diff(inside, axis=a))) for a in range(3))
    assert len(mesh.vertices) == crossed
    # every vertex used, the ids in the grid's edge order: rows (i, j), then the axis
    assert np.array_equal(np.unique(mesh.faces), np.arange(crossed))


def test_renders_and_makes_a_scene(m):
    mesh = renderer.isosurface(ball(16), 0.0, machine=m)
    frame = renderer.render(mesh, size=32, machine=m)
    assert frame.image.shape == (32, 32, 3) and (frame.face >= 0).any()
    scene = renderer.Scene(mesh, machine=m)
    assert np.array_equal(renderer.render(scene, size=32).image, frame.image)


def test_volume_type_isosurface_is_turned_by_its_direction(m):
    volume = ball(16)
    turn = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    vol = renderer.Volume(volume, spacing=(1.0, 2.0, 3.0), origin=(1.0, 2.0, 3.0), direction=turn)
    mesh = vol.isosurface(0.0, machine=m)
    plain = renderer.isosurface(volume, 0.0, spacing=(1.0, 2.0, 3.0), machine=m)
    np.testing.assert_allclose(mesh.vertices, plain.vertices @ turn.T + (1.0, 2.0, 3.0))
    np.testing.assert_allclose(mesh.normals, plain.normals @ turn.T, atol=1e-15)


@pytest.mark.parametrize("mirror", [(-1.0, 1.0, 1.0), (-1.0, -1.0, -1.0)])
def test_a_mirrored_direction_keeps_the_triangles_facing_their_normals(m, mirror):
    # the triangles' winding (counter-clockwise seen from outside) and the vertex normals
    # agree, as in the unmirrored surface (files written with them are not inside out)
    vol = renderer.Volume(ball(16), direction=np.diag(mirror))
    for mesh in (vol.isosurface(0.0, machine=m), renderer.isosurface(ball(16), 0.0, machine=m)):
        a, b, c = (mesh.vertices[mesh.faces[:, i]] for i in range(3))
        facing = np.cross(b - a, c - a)
        along = (facing * mesh.normals[mesh.faces].sum(axis=1)).sum(axis=1)
        assert (along > 0).all()


@pytest.mark.parametrize(
    ("volume", "level", "kwargs", "message"),
    [
        (np.zeros((4, 4)), 0.5, {}, "needs a 3-D volume; got a 2-D array of shape"),
        (np.zeros((1, 4, 4)), 0.5, {}, "at least 2 samples along each axis"),
        (np.zeros((3, 3, 3), complex), 0.5, {}, "real numbers; got dtype complex128"),
        (np.ones((3, 3, 3)), 2.0, {}, "no surface at level 2: every value of the volume is below"),
        (np.ones((3, 3, 3)), 1.0, {}, "every value of the volume is at or above it"),
        (np.zeros((3, 3, 3)), float("nan"), {}, "level must be a finite number"),
        (np.zeros((3, 3, 3)), "1", {}, "level must be a number"),
        (np.zeros((3, 3, 3)), 0.5, {"spacing": (1, 0, 1)}, "spacing must be 3 positive"),
        (np.zeros((3, 3, 3)), 0.5, {"spacing": (1, 2)}, "spacing must be 3 positive"),
        (np.zeros((3, 3, 3)), 0.5, {"origin": (0, np.inf, 0)}, "origin must be 3 finite"),
    ],
)
def test_refusals(m, volume, level, kwargs, message):
    with pytest.raises(ValueError, match=message) as err:
        renderer.isosurface(volume, level, machine=m, **kwargs)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_values_refused(m, bad):
    volume = ball(8)
    volume[2, 3, 4] = bad
    with pytest.raises(ValueError, match="the volume has 1 NaN or infinite values"):
        renderer.isosurface(volume, 0.0, machine=m)


def test_a_surface_of_points_only_refused(m):
    # one value at the level among lower ones: every triangle collapses onto it
    volume = np.zeros((3, 3, 3), np.float32)
    volume[1, 1, 1] = 1.0
    with pytest.raises(ValueError, match="is empty: it touches the grid at points only"):
        renderer.isosurface(volume, 1.0, machine=m)


def test_bool_and_big_endian_volumes(m):
    volume = ball(10)
    want = renderer.isosurface(volume > 0, 0.5, machine=m)
    got = renderer.isosurface((volume > 0).astype(">f8"), 0.5, machine=m)
    assert np.array_equal(want.vertices, got.vertices) and np.array_equal(want.faces, got.faces)


@pytest.mark.slow
def test_marschner_lobb_128_as_vtk(m):
    volume = renderer.datasets.marschner_lobb(128)
    mesh = renderer.isosurface(volume, 0.5, machine=m)
    assert mesh.n_faces == 241_498
    assert_same_as_vtk(mesh, volume, 0.5)


@pytest.mark.slow
def test_marschner_lobb_512_drops_what_vtk_drops(m):
    # 8 samples lie exactly at 0.5: vtkMarchingCubes merges their points and drops the 32
    # triangles that become degenerate (Flying Edges and scikit-image keep them)
    needs_vtk()
    volume = renderer.datasets.marschner_lobb(512)
    assert np.count_nonzero(volume == np.float32(0.5)) == 8
    mesh = renderer.isosurface(volume, 0.5, machine=m)
    _, faces, _ = vtk_marching_cubes(volume, 0.5)
    assert mesh.n_faces == len(faces) == 3_986_802
