"""Camera and views: OpenGL matrices, the default camera fits the bounding sphere."""

from __future__ import annotations

import math

import numpy as np
import pytest

from renderer.scene.camera import Camera, default_camera, look_at, perspective, viewport_matrix
from renderer.scene.mesh import as_mesh
from tests.renderer.meshes import grid_mesh


def test_perspective_matches_glu_formula():
    p = perspective(90.0, 2.0, 1.0, 3.0)
    expected = np.array([[0.5, 0, 0, 0], [0, 1, 0, 0], [0, 0, -2, -3], [0, 0, -1, 0]])
    np.testing.assert_allclose(p, expected, atol=1e-15)
    # near and far planes land on NDC -1 and +1
    for z, ndc in ((-1.0, -1.0), (-3.0, 1.0)):
        c = p @ [0, 0, z, 1]
        assert c[2] / c[3] == pytest.approx(ndc)


def test_look_at_is_a_rigid_motion_to_minus_z():
    v = look_at((1, 2, 3), (1, 2, 0), (0, 1, 0))
    np.testing.assert_allclose(v @ [1, 2, 0, 1], [0, 0, -3, 1], atol=1e-12)
    np.testing.assert_allclose(v[:3, :3] @ v[:3, :3].T, np.eye(3), atol=1e-12)


def test_look_at_rejects_bad_input():
    with pytest.raises(ValueError, match="coincide"):
        look_at((0, 0, 0), (0, 0, 0), (0, 1, 0))
    with pytest.raises(ValueError, match="parallel"):
        look_at((0, 0, 0), (0, 1, 0), (0, 1, 0))


@pytest.mark.parametrize("view", [(0, 0), (45, 45), (90, 0), (0, 90), (200, -90), (10, -30)])
@pytest.mark.parametrize("aspect", [1.0, 2.0, 0.5])
def test_default_camera_fits_bounding_sphere(view, aspect):
    rng = np.random.default_rng(1)
    mesh = as_mesh(
        (rng.normal(size=(200, 3)) * [3, 1, 2] + [5, -2, 1], np.arange(198).reshape(66, 3))
    )
    cam = default_camera(mesh, view, aspect=aspect)
    clip = np.c_[mesh.vertices, np.ones(200)] @ cam.mvp(aspect).T
    ndc = clip[:, :3] / clip[:, 3:]
    assert (clip[:, 3] > 0).all()
    assert (np.abs(ndc) <= 1.0).all()
    # the sphere touches the frame in the narrower direction: the mesh is not tiny
    assert np.abs(ndc[:, :2]).max() > 0.3
    # looking at the bounding-box centre
    centre = mesh.bounds().mean(axis=0)
    c = cam.mvp(aspect) @ np.r_[centre, 1]
    np.testing.assert_allclose(c[:2] / c[3], 0, atol=1e-12)


def test_view_0_0_looks_down_minus_z_and_magnification_narrows():
    mesh = as_mesh((np.array([[-1.0, -1, -1], [1, 1, 1], [0, 1, 0]]), np.array([[0, 1, 2]])))
    cam = default_camera(mesh, (0, 0))
    assert cam.eye[2] > 0 and cam.eye[0] == pytest.approx(0) and cam.eye[1] == pytest.approx(0)
    cam2 = default_camera(mesh, (0, 0), 2.0)
    assert math.tan(math.radians(cam2.fovy) / 2) == pytest.approx(
        math.tan(math.radians(cam.fovy) / 2) / 2
    )
    assert cam2.eye == cam.eye


def test_viewport_matrix_maps_ndc_corners_to_pixel_edges():
    vp = viewport_matrix(640, 480)
    np.testing.assert_allclose(vp @ [-1, -1, -1, 1], [0, 0, 0, 1])
    np.testing.assert_allclose(vp @ [1, 1, 1, 1], [640, 480, 1, 1])


def test_camera_light_is_unit():
    cam = Camera(eye=(0, 0, 5), target=(0, 0, 0))
    assert np.linalg.norm(cam.light_direction()) == pytest.approx(1.0)


@pytest.mark.parametrize("scale", [1e308, 1e-320])
def test_a_huge_or_tiny_light_or_up_is_its_direction(scale):
    """Their squares overflow or underflow: the direction was lost (a NaN light and
    RuntimeWarnings, or "the zero vector"); rescaled, the frame is the plain one's."""
    import warnings

    import renderer
    from renderer.scene.camera import unit_vector
    from simd import Machine

    mesh = as_mesh((np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]]), np.array([[0, 1, 2]])))
    assert np.array_equal(unit_vector((scale, scale, 0.0), "light"), unit_vector((1, 1, 0), "l"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        frames = [
            renderer.render(
                mesh, size=16, light=light, up=up, machine=Machine(pes=8, backend="numpy")
            )
            for light, up in (((scale,) * 3, (0, scale, 0)), ((1, 1, 1), (0, 1, 0)))
        ]
    assert frames[0].image.any()
    assert np.array_equal(frames[0].image, frames[1].image)


def test_cross_product_is_numpys_bit_for_bit():
    from renderer.scene.camera import _cross

    rng = np.random.default_rng(3)
    for _ in range(2000):
        a = rng.normal(size=3) * 10 ** rng.uniform(-8, 8)
        b = rng.normal(size=3) * 10 ** rng.uniform(-8, 8)
        np.testing.assert_array_equal(_cross(a, b).view(np.int64), np.cross(a, b).view(np.int64))


def test_norm_is_numpys_bit_for_bit():
    from renderer.scene.camera import _norm

    rng = np.random.default_rng(4)
    for _ in range(2000):
        v = rng.normal(size=3) * 10 ** rng.uniform(-150, 150)
        assert np.float64(_norm(v)).view(np.int64) == np.linalg.norm(v).view(np.int64)


def test_camera_matrices_are_made_once_and_handed_out_as_copies():
    cam = Camera(eye=(1.0, 2.0, 5.0), target=(0.0, 0.5, 0.0))
    view = cam.view_matrix()
    np.testing.assert_array_equal(view, look_at(cam.eye, cam.target, cam.up))
    view[:] = 0.0  # the caller's copy: the camera's matrices do not change
    np.testing.assert_array_equal(cam.view_matrix(), look_at(cam.eye, cam.target, cam.up))
    np.testing.assert_array_equal(
        cam.mvp(1.5), cam.projection_matrix(1.5) @ look_at(cam.eye, cam.target, cam.up)
    )
    assert cam == Camera(eye=(1.0, 2.0, 5.0), target=(0.0, 0.5, 0.0))  # fields only
    # mvp and the default light are kept too: every caller still gets its own copy
    mvp, light = cam.mvp(1.5), cam.light_direction()
    mvp[:] = light[:] = 0.0
    np.testing.assert_array_equal(
        cam.mvp(1.5), cam.projection_matrix(1.5) @ look_at(cam.eye, cam.target, cam.up)
    )
    assert not np.array_equal(cam.mvp(1.0), cam.mvp(1.5))  # kept per aspect
    fresh = Camera(eye=(1.0, 2.0, 5.0), target=(0.0, 0.5, 0.0))
    np.testing.assert_array_equal(cam.light_direction(), fresh.light_direction((0.3, 0.5, 1.0)))
    assert not np.array_equal(cam.light_direction((1.0, 0.0, 0.0)), cam.light_direction())


def test_a_scene_keeps_the_camera_of_its_last_view():
    """A Scene's later frames of one view reuse its camera (and so its matrices); any
    other view or option makes the camera again, equal to renderer.default_camera's."""
    from renderer.scene.prepared import Scene
    from simd import Machine

    mesh = as_mesh(grid_mesh(4, 4, -1, -1, 1, 1, seed=2))
    scene = Scene(mesh, machine=Machine(backend="numpy"))
    cam = scene.default_camera((30.0, 10.0), 2.0, aspect=1.5, fovy=40.0)
    assert cam == default_camera(mesh, (30.0, 10.0), 2.0, aspect=1.5, fovy=40.0)
    assert scene.default_camera((30.0, 10.0), 2.0, aspect=1.5, fovy=40.0) is cam
    assert scene.default_camera((30, 10), 2, aspect=1.5, fovy=40) is cam  # equal numbers
    for other in (
        scene.default_camera((30.0, 11.0), 2.0, aspect=1.5, fovy=40.0),
        scene.default_camera((30.0, 10.0), 2.0, aspect=0.5, fovy=40.0),  # portrait: farther
        scene.default_camera((30.0, 10.0), 2.0, aspect=1.5, fovy=41.0),
        scene.default_camera((30.0, 10.0), 2.0, aspect=1.5, fovy=40.0, up=(0.0, 0.0, 1.0)),
    ):
        assert other != cam
    # what default_camera refuses is refused however close a kept camera's key is
    scene.default_camera((0.0, 0.0), 1)
    with pytest.raises(TypeError, match="magnification must be a number"):
        scene.default_camera((0.0, 0.0), True)
    # values that are not plain numbers are not kept, but give the same camera
    assert scene.default_camera(np.array([0.0, 0.0]), np.float64(1.0)) == default_camera(
        mesh, (0.0, 0.0)
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"magnification": 1e308}, "magnification 1e+308 is too large"),
        ({"magnification": 1e308, "framing": "fit"}, "magnification 1e+308 is too large"),
        ({"distance": 1e308}, "its near and far planes coincide"),
        ({"fovy": 1e-300}, "its near and far planes coincide"),
    ],
)
def test_a_camera_beyond_floating_point_is_refused(options, message):
    """It was a NaN matrix, RuntimeWarnings and an empty image (or a message about
    gluPerspective's arguments)."""
    tri = (np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]]), np.array([[0, 1, 2]]))
    with pytest.raises(ValueError) as exc:
        default_camera(as_mesh(tri), **options)
    assert message in str(exc.value)
