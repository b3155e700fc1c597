"""An isosurface extracted on a GPU stays there: ``renderer.isosurface`` gives a DeviceMesh,
read back only when its arrays are read, and ``renderer.render`` (a Scene, ``simd-emu
render VOLUME``) draws it from the device's copy. Checked on the counting stand-in for
CuPy (the GPU code path, its transfers counted) against the NumPy machine's frames."""

from __future__ import annotations

import numpy as np
import pytest

import renderer
from kernels import counting
from simd import Machine


@pytest.fixture(scope="module")
def volume():
    return renderer.datasets.marschner_lobb(40).astype(np.float32)


@pytest.fixture(scope="module")
def host_mesh(volume):
    return renderer.isosurface(volume, 0.5, machine=Machine(backend="numpy"))


def mesh_bytes(mesh):
    return mesh.vertices.nbytes + mesh.normals.nbytes + mesh.faces.nbytes


def test_a_device_mesh_is_read_back_once_when_read(volume, host_mesh):
    m = Machine(backend="counting")
    with counting.measure() as c:
        mesh = renderer.isosurface(volume, 0.5, machine=m)
    assert isinstance(mesh, renderer.DeviceMesh)
    assert (mesh.n_faces, mesh.n_vertices) == (host_mesh.n_faces, host_mesh.n_vertices)
    assert c.total.d2h_bytes < 64  # the sizes and the checks, not the mesh
    with counting.measure() as c:
        for _ in range(2):
            assert np.array_equal(mesh.vertices, host_mesh.vertices)
            assert np.array_equal(mesh.normals, host_mesh.normals)
            assert np.array_equal(mesh.faces, host_mesh.faces)
    assert c.total.syncs == 1
    assert mesh_bytes(host_mesh) <= c.total.d2h_bytes < mesh_bytes(host_mesh) + 64
    assert "DeviceMesh" in repr(mesh) and "triangles" in repr(mesh)


@pytest.mark.parametrize("loop", renderer.LOOP_FORMS)
def test_rendering_an_isosurface_reads_no_mesh_back(volume, host_mesh, loop):
    m = Machine(backend="counting")
    with counting.measure() as c:
        frame = renderer.render(renderer.isosurface(volume, 0.5, machine=m), size=96, loop=loop)
    want = renderer.render(host_mesh, size=96, loop=loop, machine=Machine(backend="numpy"))
    np.testing.assert_array_equal(frame.image, want.image)
    np.testing.assert_array_equal(frame.depth, want.depth)
    np.testing.assert_array_equal(frame.face, want.face)
    assert frame.stats.counts == want.stats.counts
    # uploaded: the volume and a few scalars; read back: the frame, not the mesh
    assert c.total.h2d_bytes < volume.nbytes + 256
    assert c.total.d2h_bytes < frame.image.nbytes + frame.depth.nbytes + frame.face.nbytes + 4096


@pytest.mark.parametrize(
    "options",
    [{"shading": "flat"}, {"crease_angle": 30.0}, {"colour": "#3080c0"}, {"values": "z"}],
    ids=["flat", "crease", "colour", "values"],
)
def test_every_picture_option_gives_the_numpy_frame(volume, host_mesh, options):
    if options.get("values") == "z":
        options = {"values": host_mesh.vertices[:, 2].astype(np.float64)}
    m = Machine(backend="counting")
    scene = renderer.Scene(renderer.isosurface(volume, 0.5, machine=m))
    assert scene.machine is m
    got = renderer.render(scene, size=80, loop="expand", **options)
    want = renderer.render(host_mesh, size=80, loop="expand", machine=Machine(backend="numpy"),
                           **options)  # fmt: skip
    np.testing.assert_array_equal(got.image, want.image)


def test_another_machine_renders_the_host_copy(volume, host_mesh):
    mesh = renderer.isosurface(volume, 0.5, machine=Machine(backend="counting"))
    frame = renderer.render(mesh, size=64, machine=Machine(backend="numpy"))
    want = renderer.render(host_mesh, size=64, machine=Machine(backend="numpy"))
    np.testing.assert_array_equal(frame.image, want.image)


def test_an_oriented_volume_turns_its_surface_on_the_device(volume):
    # a rotation about z with a mirror in x: the winding turns back
    c, s = np.cos(0.4), np.sin(0.4)
    direction = np.array([[-c, -s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])
    vol = renderer.Volume(volume, spacing=(0.5, 1.0, 2.0), origin=(1.0, -2.0, 3.0),
                          direction=direction, name="turned")  # fmt: skip
    got = vol.isosurface(0.5, machine=Machine(backend="counting"))
    want = vol.isosurface(0.5, machine=Machine(backend="numpy"))
    assert isinstance(got, renderer.DeviceMesh) and got.name == want.name == "turned"
    for part in ("vertices", "normals", "faces"):
        assert np.array_equal(getattr(got, part), getattr(want, part)), part
    # the turned surface is where the volume's geometry puts it
    wide = vol.isosurface(0.5, machine=Machine(backend="numpy"), dtype=np.float64)
    plain = renderer.isosurface(volume, 0.5, spacing=(0.5, 1.0, 2.0), dtype=np.float64,
                                machine=Machine(backend="numpy"))  # fmt: skip
    np.testing.assert_allclose(wide.vertices, plain.vertices @ direction.T + (1.0, -2.0, 3.0),
                               atol=1e-12)  # fmt: skip
    np.testing.assert_array_equal(wide.faces, plain.faces[:, ::-1])


def test_render_volume_command_keeps_the_mesh_on_the_device(tmp_path, volume, monkeypatch):
    from simd.cli import main

    path = tmp_path / "vol.npy"
    np.save(path, volume)
    monkeypatch.setenv("SIMD_BACKEND", "counting")
    out = tmp_path / "frame.png"
    args = ["render", str(path), "--level", "0.5", "--size", "64", "--no-progress", "-o", str(out)]
    with counting.measure() as c:
        assert main(args) == 0
    mesh = renderer.isosurface(volume, 0.5, machine=Machine(backend="numpy"))
    assert c.total.d2h_bytes < mesh_bytes(mesh)  # the frame's read back only
    monkeypatch.setenv("SIMD_BACKEND", "numpy")
    host = tmp_path / "host.png"
    assert main([*args[:-1], str(host)]) == 0
    assert out.read_bytes() == host.read_bytes()
