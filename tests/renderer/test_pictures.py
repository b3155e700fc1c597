"""Pictures under the user's control: camera, colours, light, crease angle,
supersampling. Every test looks at the pixels; the defaults are the paper's frame (the
other renderer tests, the OpenGL agreement and the golden figures pin it)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import renderer
from kernels import counting
from renderer.datasets.builtin import load_dataset
from renderer.scene.camera import FIT_MARGIN
from renderer.scene.mesh import as_mesh, face_normals
from renderer.stages.picture import resolve
from renderer.stages.shading import BASE_COLOUR, vertex_scalars
from simd import Machine

trimesh = pytest.importorskip("trimesh")


def draw(mesh, **kw):
    kw.setdefault("loop", "expand")
    kw.setdefault("size", 96)
    return renderer.render(mesh, machine=Machine(pes=64, backend="numpy"), **kw)


def margins(frame):
    """Free pixels left, right, top, bottom of the drawn bounding box."""
    cov = frame.coverage
    rows, cols = np.nonzero(cov.any(axis=1))[0], np.nonzero(cov.any(axis=0))[0]
    h, w = cov.shape
    return cols[0], w - 1 - cols[-1], rows[0], h - 1 - rows[-1]


@pytest.fixture(scope="module")
def sphere():
    return trimesh.creation.icosphere(subdivisions=3)


@pytest.fixture(scope="module")
def cube():
    return as_mesh(trimesh.creation.box())  # 8 shared vertices: smooth normals smear it


def quad(values=None):
    """A unit square in the z = 0 plane facing +z, 3x3 vertices."""
    g = np.linspace(0.0, 1.0, 3)
    x, y = np.meshgrid(g, g)
    v = np.c_[x.ravel(), y.ravel(), np.zeros(9)]
    f = []
    for j in range(2):
        for i in range(2):
            a = 3 * j + i
            f += [[a, a + 1, a + 4], [a, a + 4, a + 3]]
    return as_mesh((v, np.array(f)))


# -- camera -----------------------------------------------------------------------------


@pytest.mark.parametrize("view", [(45, 45), (0, 0), (30, -60)])
@pytest.mark.parametrize("size", [(96, 96), (120, 80), (64, 100)])
def test_fit_centres_a_sphere_and_leaves_the_margin(sphere, view, size):
    # before: the default frame has the sphere touch the sides of the narrower direction
    before = margins(draw(sphere, view=view, size=size))
    assert before[:2] == (0, 0) if size[0] <= size[1] else before[2:] == (0, 0)
    left, right, top, bottom = margins(draw(sphere, view=view, size=size, framing="fit"))
    assert abs(left - right) <= 1 and abs(top - bottom) <= 1  # centred within a pixel
    want = FIT_MARGIN * min(size)
    tight = min(left, top) if size[0] == size[1] else (left if size[0] < size[1] else top)
    assert abs(tight - want) <= 1, (left, right, top, bottom, want)
    assert min(left, right, top, bottom) >= want - 1


def test_fit_centres_the_isosurface_that_the_default_frame_leaves_low():
    mesh = load_dataset("balanced", 24)
    left, right, top, bottom = margins(draw(mesh, size=128))
    assert top - bottom > 10 and left < 0.05 * 128  # the paper's frame: low, wide
    left, right, top, bottom = margins(draw(mesh, size=128, framing="fit"))
    assert abs(left - right) <= 1 and abs(top - bottom) <= 1
    assert min(left, right) == pytest.approx(FIT_MARGIN * 128, abs=1.5)


def test_fit_with_magnification_zooms_into_the_centre(sphere):
    frame = draw(sphere, framing="fit", magnification=2.0)
    assert frame.coverage.all()  # the sphere now overfills the frame, centred
    assert frame.camera.fovy < 30


def test_distance_and_fov(sphere):
    near = draw(sphere, view=(0, 0), distance=4.0)
    far = draw(sphere, view=(0, 0), distance=8.0)
    assert math.dist(far.camera.eye, far.camera.target) == pytest.approx(8.0)
    assert far.coverage.sum() < 0.4 * near.coverage.sum()  # about a quarter of the area
    wide = draw(sphere, view=(0, 0), fov=60)
    assert wide.camera.fovy == pytest.approx(60)
    # with the sphere framing the camera comes closer: the sphere still touches the sides
    assert margins(wide) == (0, 0, 0, 0)
    assert math.dist(wide.camera.eye, wide.camera.target) < math.dist(
        near.camera.eye, near.camera.target
    )


def test_up_vector_turns_the_view_with_it():
    # a column along z: y-up from (0, 0) sees its square end; z-up sees it standing
    column = as_mesh(trimesh.creation.box(extents=(0.3, 0.3, 2.0)))
    end_on = draw(column, view=(0, 0))
    standing = draw(column, view=(0, 0), up=(0, 0, 1))
    left, right, top, bottom = margins(end_on)
    assert abs((96 - left - right) - (96 - top - bottom)) <= 1
    left, right, top, bottom = margins(standing)
    assert 96 - top - bottom > 3 * (96 - left - right)
    # the camera is the y-up camera of the model turned by the same rotation
    turn = np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]])  # y -> z, z -> -y
    upright = as_mesh((column.vertices @ turn, column.faces))  # turned back: along y
    cam = renderer.default_camera(upright, (30, 20))
    turned = renderer.default_camera(column, (30, 20), up=(0, 0, 1))
    np.testing.assert_allclose(turned.eye, turn @ np.array(cam.eye), atol=1e-12)
    np.testing.assert_allclose(turned.up, (0, 0, 1), atol=1e-12)


def test_camera_options_are_checked(sphere):
    for kw, match in [
        ({"fov": 180}, "field of view"),
        ({"distance": -1.0}, "distance"),
        ({"up": (0, 0, 0)}, "zero vector"),
        ({"framing": "tight"}, "framing"),
        ({"framing": "fit", "distance": 3.0}, "chooses the distance"),
        ({"light": (0, 0, 0)}, "light"),
    ]:
        with pytest.raises(ValueError, match=match):
            draw(sphere, **kw)
    cam = renderer.default_camera(sphere)
    with pytest.raises(ValueError, match="default camera"):
        draw(sphere, camera=cam, fov=40)


def test_fit_frame_agrees_with_gl(gl, machine):
    mesh = load_dataset("balanced", 24)
    frame = renderer.render(
        mesh, view=(20, 35), size=(96, 64), framing="fit", up=(0.2, 1, 0), fov=40,
        machine=machine,
    )  # fmt: skip
    result = gl.compare(frame, gl.render_gl(mesh, frame.mvp, (96, 64)))
    assert result["covered"] > 1000
    assert result["coverage_diff_fraction"] < 1e-3, result


# -- colour, background, light ----------------------------------------------------------


def test_colour_background_and_light_of_a_square():
    square = quad()
    lit = draw(square, view=(0, 0), size=32, light=(0, 0, 1))
    cov = lit.coverage
    assert cov.sum() > 100 and not cov.all()
    full = [math.floor(c * 255 + 0.5) for c in BASE_COLOUR]  # facing the light
    assert (lit.image[cov] == full).all()
    assert (lit.image[~cov] == 0).all()
    edge_on = draw(square, view=(0, 0), size=32, light=(1, 0, 0))
    assert (edge_on.image[cov] == [math.floor(0.15 * c * 255 + 0.5) for c in BASE_COLOUR]).all()
    red = draw(square, view=(0, 0), size=32, light=(0, 0, 1), colour="red", background="white")
    assert (red.image[cov] == [255, 0, 0]).all()
    assert (red.image[~cov] == 255).all()
    np.testing.assert_array_equal(red.coverage, cov)
    # the default light is (0.3, 0.5, 1) in eye space, and an explicit default colour changes
    # nothing
    plain = draw(square, view=(0, 0), size=32)
    np.testing.assert_array_equal(plain.image, draw(square, view=(0, 0), size=32,
                                                    colour=BASE_COLOUR).image)  # fmt: skip
    assert abs(int(plain.image[cov][0, 0]) - int(
        draw(square, view=(0, 0), size=32, light=(0.3, 0.5, 1.0)).image[cov][0, 0]
    )) <= 1  # fmt: skip


def test_light_is_fixed_to_the_camera():
    # lit from the right in eye space: the cube's face on the right of the image is bright
    cube = as_mesh(trimesh.creation.box())
    frame = draw(cube, view=(45, 0), size=64, light=(1, 0, 1), crease_angle=30)
    row = frame.image[32, :, 0].astype(int)
    drawn = np.nonzero(frame.coverage[32])[0]
    assert row[drawn[-3]] > row[drawn[2]] + 50


def test_colormap_of_a_scalar_per_vertex():
    square = quad()
    height = vertex_scalars(square.vertices)  # y: 0 at the bottom, 1 at the top
    frame = draw(square, view=(0, 0), size=48, light=(0, 0, 1), values=height, colormap="gray")
    cov = frame.coverage
    rows = np.nonzero(cov.any(axis=1))[0]
    grey = frame.image[rows, 24, 0].astype(int)
    assert (np.diff(grey) <= 0).all()  # image rows go down: darker towards the bottom
    assert grey[0] > 240 and grey[-1] < 15
    assert (frame.image[cov][:, 0] == frame.image[cov][:, 2]).all()  # grey
    viridis = draw(square, view=(0, 0), size=48, light=(0, 0, 1), values=height)
    top, bottom = viridis.image[rows[0], 24], viridis.image[rows[-1], 24]
    assert top[1] > 200 and top[2] < 80  # viridis ends yellow ...
    assert bottom[2] > bottom[1] and bottom[0] > 40  # ... and starts dark purple


def test_per_vertex_colours_and_their_checks():
    square = quad()
    colours = np.zeros((9, 3))
    colours[square.vertices[:, 0] < 0.5] = (1, 0, 0)
    colours[square.vertices[:, 0] >= 0.5] = (0, 0, 1)
    frame = draw(square, view=(0, 0), size=32, light=(0, 0, 1), colour=colours)
    cov = frame.coverage
    cols = np.nonzero(cov.any(axis=0))[0]
    left, right = frame.image[16, cols[0]], frame.image[16, cols[-1]]
    assert left[0] > 200 and left[2] < 60 and right[2] > 200 and right[0] < 60
    for shading in ("flat", "gouraud"):
        img = draw(square, view=(0, 0), size=32, shading=shading,
                   colour=(colours * 255).astype(np.uint8)).image  # fmt: skip
        assert img[16, cols[0], 0] > img[16, cols[0], 2]
    for kw, match in [
        ({"colour": np.zeros((4, 3))}, "one per vertex"),
        ({"colour": "nocolour"}, "not a colour"),
        ({"colour": (1, 2, 3)}, r"\[0, 1\]"),
        ({"values": np.zeros(4)}, "one number per vertex"),
        ({"values": np.zeros(9), "colormap": "nomap"}, "unknown colormap"),
        ({"colormap": "viridis"}, "scalar per vertex"),
        ({"colour": "red", "values": np.zeros(9)}, "not both"),
        ({"background": "nocolour"}, "not a colour"),
    ]:
        with pytest.raises(ValueError, match=match):
            draw(square, size=8, **kw)


# -- crease angle -----------------------------------------------------------------------


def face_spread(frame, mesh):
    """Per visible cube side (faces grouped by normal): the range of its red channel."""
    fn = face_normals(mesh.vertices, mesh.faces)
    side = np.argmax(np.abs(fn), axis=1) * 2 + (
        fn[np.arange(len(fn)), np.argmax(np.abs(fn), 1)] > 0
    )
    spread = {}
    for s in np.unique(side[frame.face[frame.coverage]]):
        px = np.isin(frame.face, np.nonzero(side == s)[0])
        if px.sum() > 50:
            red = frame.image[px][:, 0].astype(int)
            spread[int(s)] = int(red.max() - red.min())
    return spread


def test_crease_angle_keeps_a_cube_sharp(cube):
    smooth = face_spread(draw(cube, view=(30, 25)), cube)
    sharp_frame = draw(cube, view=(30, 25), crease_angle=30)
    sharp = face_spread(sharp_frame, cube)
    assert len(smooth) == len(sharp) == 3
    assert all(v > 20 for v in smooth.values()), smooth  # averaged normals smear each side
    assert all(v <= 1 for v in sharp.values()), sharp  # each side uniformly lit
    # with the sides apart, the crease-angle image is the flat-shaded one
    flat = draw(cube, view=(30, 25), shading="flat")
    assert np.abs(flat.image.astype(int) - sharp_frame.image).max() <= 1
    np.testing.assert_array_equal(flat.face, sharp_frame.face)
    # 180 degrees smooths across every edge, as without an angle
    whole = draw(cube, view=(30, 25), crease_angle=180)
    assert np.abs(whole.image.astype(int) - draw(cube, view=(30, 25)).image).max() <= 1


def test_crease_angle_leaves_a_smooth_surface_smooth(sphere):
    # the icosphere's neighbouring faces are about 10 degrees apart: nothing to keep sharp
    plain, creased = draw(sphere), draw(sphere, crease_angle=30)
    np.testing.assert_array_equal(plain.face, creased.face)
    assert np.abs(plain.image.astype(int) - creased.image).max() <= 1
    # 180 degrees: exactly the smooth normals, also where a coarse isosurface has ridges
    mesh = load_dataset("balanced", 24)
    mesh = as_mesh((mesh.vertices, mesh.faces))  # no analytic normals: the faces' own
    np.testing.assert_array_equal(draw(mesh).image, draw(mesh, crease_angle=180).image)
    ridged = draw(mesh, crease_angle=60)  # its ridges (up to 134 degrees) stay sharp
    assert np.mean(np.abs(ridged.image.astype(int) - draw(mesh).image) > 2) > 0.05


# -- supersampling ----------------------------------------------------------------------


def test_supersampling_averages_the_frame_rendered_k_times_larger(sphere):
    k = 3
    big = draw(sphere, view=(20, 10), size=(3 * 40, 3 * 32), framing="fit",
               background="navy")  # fmt: skip
    aa = draw(sphere, view=(20, 10), size=(40, 32), framing="fit", background="navy",
              supersample=k)  # fmt: skip
    assert aa.image.shape == (32, 40, 3) and aa.depth.shape == aa.face.shape == (32, 40)
    gl_rows = big.image[::-1].reshape(-1, 3)
    keys = np.zeros(len(gl_rows), dtype=np.int64)  # resolve's keys are not looked at here
    want, _ = resolve(np, gl_rows, keys, 40, 32, k)
    np.testing.assert_array_equal(aa.image, want.reshape(32, 40, 3)[::-1])
    # the edge pixels blend the surface into the background: anti-aliased
    plain = draw(sphere, view=(20, 10), size=(40, 32), framing="fit", background="navy")
    assert len(np.unique(aa.image.reshape(-1, 3), axis=0)) > len(
        np.unique(plain.image.reshape(-1, 3), axis=0)
    )
    # depth and face: the nearest sample's; a pixel is covered when any sample is
    blocks = big.depth.reshape(32, k, 40, k).min(axis=(1, 3))
    np.testing.assert_array_equal(aa.depth, blocks)
    assert (aa.coverage == big.coverage.reshape(32, k, 40, k).any(axis=(1, 3))).all()
    assert aa.stats.counts.pixels == aa.coverage.sum()
    # supersample 1 is the exact (default) frame
    np.testing.assert_array_equal(draw(sphere, supersample=1).image, draw(sphere).image)
    with pytest.raises(ValueError, match="4096"):
        draw(sphere, size=2048, supersample=4)
    with pytest.raises(ValueError, match="whole number"):
        draw(sphere, supersample=1.5)


# -- every backend: the CuPy path on the counting stand-in, and Scenes ------------------


def test_picture_options_on_the_cupy_path_and_in_a_scene():
    mesh = load_dataset("balanced", 16, cache=False)
    kw = dict(size=48, loop="expand", framing="fit", background="white", light=(-1, 1, 1),
              crease_angle=40, supersample=2, values=vertex_scalars(mesh.vertices),
              colormap="plasma")  # fmt: skip
    want = renderer.render(mesh, machine=Machine(backend="numpy"), **kw)
    with counting.measure() as c:
        got = renderer.render(mesh, machine=Machine(backend="counting"), **kw)
    assert not c.total.implicit, dict(c.total.implicit)  # no host arrays in device ops
    np.testing.assert_array_equal(got.image, want.image)
    np.testing.assert_array_equal(got.depth, want.depth)
    np.testing.assert_array_equal(got.face, want.face)
    scene = renderer.Scene(mesh, machine=Machine(backend="counting"))
    renderer.render(scene, **kw)
    with counting.measure() as c:
        again = renderer.render(scene, **kw)
    assert c.total.h2d_bytes < 64  # the colours of these options are kept on the device
    np.testing.assert_array_equal(again.image, want.image)
    flat = renderer.render(scene, **{**kw, "shading": "flat"})
    assert not np.array_equal(flat.image, want.image)
