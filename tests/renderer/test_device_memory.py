"""Work the GPU's memory cannot hold is refused in one line, naming the bytes and the way
out, before any output is written; a frame that runs out of memory leaves its scene usable.
Run on the counting stand-in for CuPy with a small device (``counting.device_memory``)."""

from __future__ import annotations

import numpy as np
import pytest

import renderer
from kernels import counting
from simd import Machine
from simd.errors import DeviceMemoryError


@pytest.fixture(scope="module")
def volume():
    return renderer.datasets.marschner_lobb(48).astype(np.float32)


def test_a_volume_too_big_is_refused_before_any_work(volume):
    m = Machine(backend="counting")
    with counting.device_memory(volume.nbytes), counting.measure() as c:
        with pytest.raises(DeviceMemoryError) as err:
            renderer.isosurface(volume, 0.5, machine=m)
    message = str(err.value)
    assert "\n" not in message
    assert "the volume (48x48x48) needs 756.0 KiB" in message and "432.0 KiB free" in message
    assert "mpiexec" in message and "--backend numpy" in message
    assert c.total.launches == 0 and c.total.h2d_bytes == 0  # nothing started


def test_a_surface_too_big_is_refused_before_it_is_emitted():
    # noise crosses nearly every cell: a surface larger than its volume
    volume = np.random.default_rng(0).random((48, 48, 48), dtype=np.float32)
    m = Machine(backend="counting")
    # room for the volume and the tables, not for the triangles
    with counting.device_memory(2 * volume.nbytes), counting.measure() as c:
        with pytest.raises(DeviceMemoryError, match=r"the surface \([\d,]+ triangles\) needs"):
            renderer.isosurface(volume, 0.5, machine=m)
    assert c.total.ops["kernel:renderer.contour_emit"] == 0


def test_a_mesh_too_big_for_a_frame_is_refused(volume):
    mesh = renderer.isosurface(volume, 0.5, machine=Machine(backend="numpy"))
    m = Machine(backend="counting")
    with counting.device_memory(mesh.vertices.nbytes), counting.measure() as c:
        with pytest.raises(DeviceMemoryError, match=r"the mesh \([\d,]+ triangles\) needs"):
            renderer.render(mesh, size=64, machine=m)
        with pytest.raises(DeviceMemoryError, match="render a share of the triangles"):
            renderer.Scene(mesh, machine=m)
    assert c.total.h2d_bytes == 0


def test_a_frame_out_of_memory_leaves_the_scene_usable(volume):
    mesh = renderer.isosurface(volume, 0.5, machine=Machine(backend="numpy"))
    m = Machine(backend="counting")
    scene = renderer.Scene(mesh, machine=m)
    big = 1024  # its z-buffer alone (8 bytes a pixel) exceeds the device below
    with counting.device_memory(4 * big * big):
        with pytest.raises(DeviceMemoryError) as err:
            renderer.render(scene, size=big, loop="expand")
        assert str(err.value).startswith("the 1024x1024 frame ran out of GPU memory")
        assert "\n" not in str(err.value)
        frame = renderer.render(scene, size=96, loop="expand")
    want = renderer.render(mesh, size=96, loop="expand", machine=Machine(backend="numpy"))
    np.testing.assert_array_equal(frame.image, want.image)


def test_the_command_says_so_in_one_line_and_writes_nothing(tmp_path, volume, monkeypatch,
                                                            capsys):  # fmt: skip
    from simd.cli import main

    path = tmp_path / "vol.npy"
    np.save(path, volume)
    monkeypatch.setenv("SIMD_BACKEND", "counting")
    out = tmp_path / "frame.png"
    with counting.device_memory(volume.nbytes):
        rc = main(["render", str(path), "--level", "0.5", "--no-progress", "-o", str(out)])
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "GPU memory" in err and "--backend numpy" in err
    assert not out.exists()
