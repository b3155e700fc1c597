"""``simd-emu render``'s picture options: each one looked at in the image it writes."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import renderer
from renderer.datasets.builtin import load_dataset
from renderer.scene.mesh import face_normals, load_mesh
from renderer.stages.shading import vertex_scalars
from simd import Machine
from simd.cli import main

trimesh = pytest.importorskip("trimesh")

BASE = ["render", "--dataset-size", "16", "--size", "64", "--pes", "32", "--backend", "numpy"]
BASE += ["--loop", "expand", "--no-progress"]


def run(tmp_path, *options, name="f.png"):
    out = tmp_path / name
    base = (
        BASE if "--mesh" not in options else [a for a in BASE if a not in ("--dataset-size", "16")]
    )
    # --force: a test's pictures, one after another, in one file
    assert main([*base, "-o", str(out), "--force", *options]) == 0
    with Image.open(out) as img:
        return np.asarray(img.convert("RGB"))


def frame(**kw):
    return renderer.render(
        load_dataset("balanced", 16),
        size=64,
        loop="expand",
        machine=Machine(pes=32, backend="numpy"),
        **kw,
    )


def test_defaults_are_the_paper_frame(tmp_path):
    np.testing.assert_array_equal(run(tmp_path), frame().image)


def test_camera_options(tmp_path):
    png = run(tmp_path, "--fit")
    np.testing.assert_array_equal(png, frame(framing="fit").image)
    drawn = png.any(axis=2)
    rows, cols = np.nonzero(drawn.any(axis=1))[0], np.nonzero(drawn.any(axis=0))[0]
    assert abs(rows[0] - (63 - rows[-1])) <= 1 and abs(cols[0] - (63 - cols[-1])) <= 1
    assert min(rows[0], cols[0]) == pytest.approx(0.05 * 64, abs=1.5)
    png = run(tmp_path, "--fov", "50", "--distance", "3", "--up", "0", "0", "1")
    np.testing.assert_array_equal(png, frame(fov=50.0, distance=3.0, up=(0, 0, 1)).image)
    assert not np.array_equal(png, run(tmp_path, "--fov", "50", "--distance", "3"))


def test_colour_background_and_light(tmp_path):
    default = run(tmp_path)
    covered = default.any(axis=2)
    png = run(tmp_path, "--colour", "1,0,0", "--background", "white", "--light", "-1", "0", "1")
    np.testing.assert_array_equal(
        png, frame(colour=(1.0, 0, 0), background="white", light=(-1, 0, 1)).image
    )
    assert (png[~covered] == 255).all()  # white background
    assert (png[covered][:, 1:] == 0).all() and png[covered][:, 0].mean() > 60  # red surface
    assert (run(tmp_path, "--color", "#ff0000")[covered][:, 1:] == 0).all()


def test_colormap_by_height(tmp_path):
    mesh = load_dataset("balanced", 16)
    png = run(tmp_path, "--colormap", "viridis", "--light", "0", "0", "1")
    want = frame(values=vertex_scalars(mesh.vertices), colormap="viridis", light=(0, 0, 1))
    np.testing.assert_array_equal(png, want.image)
    # the central hump (high) is yellow, the low rings purple-blue
    covered = png.any(axis=2)
    assert len(np.unique(png[covered], axis=0)) > 100
    assert (png[covered][:, 2] > png[covered][:, 0]).mean() > 0.5  # mostly low: blue-ish
    dist = run(tmp_path, "--colormap", "plasma", "--colour-by", "distance")
    assert not np.array_equal(dist, png)


def test_crease_angle_on_a_cube_file(tmp_path):
    path = tmp_path / "box.stl"
    trimesh.creation.box().export(path)
    cube = load_mesh(path)
    fn = face_normals(cube.vertices, cube.faces)
    side = np.argmax(np.abs(fn), axis=1)

    def spreads(png):
        face = renderer.render(
            cube, view=(30, 25), size=64, loop="expand", machine=Machine(backend="numpy")
        ).face
        out = []
        for s in range(3):
            px = np.isin(face, np.nonzero(side == s)[0])
            red = png[px][:, 0].astype(int)
            out.append(red.max() - red.min())
        return out

    args = ["--mesh", str(path), "--view", "30", "25"]
    assert min(spreads(run(tmp_path, *args))) > 20  # smeared by averaged normals
    assert max(spreads(run(tmp_path, *args, "--crease-angle", "30"))) <= 1  # sharp


def test_supersample(tmp_path):
    png = run(tmp_path, "--supersample", "3", "--background", "0.2,0.2,0.4")
    np.testing.assert_array_equal(png, frame(supersample=3, background=(0.2, 0.2, 0.4)).image)
    assert png.shape == (64, 64, 3)
    assert len(np.unique(png.reshape(-1, 3), axis=0)) > len(
        np.unique(run(tmp_path, "--background", "0.2,0.2,0.4").reshape(-1, 3), axis=0)
    )


def test_orbit_takes_the_picture_options(tmp_path):
    out = tmp_path / "o.gif"
    rc = main([*BASE, "--orbit", "2", "--fit", "--background", "white", "-o", str(out)])
    assert rc == 0
    with Image.open(out) as gif:
        assert gif.n_frames == 2
        assert (np.asarray(gif.convert("RGB"))[0, 0] == 255).all()


@pytest.mark.parametrize(
    "options,message",
    [
        (["--fit", "--distance", "3"], "not allowed with"),
        (["--colour", "red", "--colormap", "viridis"], "not allowed with"),
        (["--colour", "nocolour"], "not a colour"),
        (["--fov", "180"], "between 0 and 180"),
        (["--crease-angle", "-1"], "0 to 180"),
        (["--supersample", "0"], "1..16"),
    ],
)
def test_bad_picture_options_are_usage_errors(tmp_path, capsys, options, message):
    with pytest.raises(SystemExit) as exc:
        main([*BASE, "-o", str(tmp_path / "f.png"), *options])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "f.png").exists()


@pytest.mark.parametrize(
    "options,message",
    [
        (["--size", "2048", "--supersample", "4"], "more than 4096"),
        (["--light", "0", "0", "0"], "zero vector"),
        (["--colormap", "nomap"], "unknown colormap"),
        (["--orbit", "2", "--up", "0", "0", "0"], "zero vector"),
    ],
)
def test_bad_picture_values_end_in_one_line(tmp_path, capsys, options, message):
    out = tmp_path / ("f.gif" if "--orbit" in options else "f.png")
    assert main([*BASE, "-o", str(out), *options]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not out.exists()
