"""Built-in isosurfaces, their cache, mesh files and PNG output."""

from __future__ import annotations

import numpy as np
import pytest

import renderer
from renderer import datasets


def test_marschner_lobb_formula():
    n = 9
    vol = datasets.marschner_lobb(n)
    t = np.linspace(-1, 1, n)
    for idx in [(0, 0, 0), (4, 4, 4), (8, 3, 1), (2, 7, 5)]:
        x, y, z = t[list(idx)]
        r = np.hypot(x, y)
        rho = (
            1 - np.sin(np.pi * z / 2) + 0.25 * (1 + np.cos(12 * np.pi * np.cos(np.pi * r / 2)))
        ) / 2.5
        assert vol[idx] == pytest.approx(rho, rel=1e-5)
    assert vol.min() >= 0 and vol.max() <= 1


def test_load_dataset_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMD_EMU_CACHE", str(tmp_path))
    mesh = datasets.load_dataset("balanced", 24)
    files = list(tmp_path.glob("*.npz"))
    assert len(files) == 1
    again = datasets.load_dataset("balanced", 24)
    np.testing.assert_array_equal(again.faces, mesh.faces)
    np.testing.assert_array_equal(again.vertices, mesh.vertices)
    assert mesh.normals is not None and mesh.normals.shape == mesh.vertices.shape
    # a broken cache file is rebuilt
    files[0].write_bytes(b"garbage")
    np.testing.assert_array_equal(datasets.load_dataset("balanced", 24).faces, mesh.faces)


def test_default_size_is_about_250k():
    assert datasets.SIZES["250k"] == 128  # 241,802 triangles (checked in the slow test)


@pytest.mark.slow
def test_250k_isosurface_triangle_count():
    mesh = datasets.load_dataset("balanced", "250k")
    assert 235_000 < mesh.n_faces < 250_000


def test_unbalanced_is_unbalanced():
    table = {
        kind: datasets.workload_table(
            datasets.load_dataset(kind, 32), size=128, views={"(45,45)": ((45, 45), 1.0)}
        )[0]
        for kind in datasets.DATASETS
    }
    bal, unb = table["balanced"], table["unbalanced"]
    assert unb["scan_max"] > 3 * bal["scan_max"]
    assert unb["scan_max"] / unb["scan_avg"] > 5
    assert bal["scan_max"] / max(bal["scan_avg"], 1e-9) < 8


def test_bad_dataset_arguments():
    with pytest.raises(ValueError, match="dataset"):
        datasets.load_dataset("lopsided")
    with pytest.raises(ValueError, match="size"):
        datasets.load_dataset("balanced", "huge")
    with pytest.raises(ValueError, match="resolution"):
        datasets.load_dataset("balanced", 2)


@pytest.mark.parametrize("suffix", ["ply", "obj", "stl"])
def test_load_mesh_files(tmp_path, suffix, machine):
    import trimesh

    box = trimesh.creation.box()
    path = tmp_path / f"box.{suffix}"
    box.export(path)
    mesh = renderer.load_mesh(path)
    assert mesh.n_faces == 12
    frame = renderer.render(mesh, size=32, machine=machine)
    assert frame.coverage.any()


def test_load_mesh_without_triangles(tmp_path):
    path = tmp_path / "points.ply"
    path.write_text(
        "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\n"
        "property float y\nproperty float z\nend_header\n0 0 0\n"
    )
    with pytest.raises(ValueError):
        renderer.load_mesh(path)


def test_save_png_roundtrip(tmp_path, machine):
    from PIL import Image

    mesh = datasets.load_dataset("balanced", 16)
    frame = renderer.render(mesh, size=(40, 30), machine=machine)
    frame.save(tmp_path / "f.png")
    back = np.asarray(Image.open(tmp_path / "f.png"))
    np.testing.assert_array_equal(back, frame.image)
    with pytest.raises(ValueError, match="uint8"):
        renderer.save_image(frame.depth, tmp_path / "d.png")
