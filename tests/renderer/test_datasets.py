"""Built-in isosurfaces, their cache, mesh files and PNG output."""

from __future__ import annotations

import numpy as np
import pytest

import renderer
from renderer.datasets import builtin as datasets


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
    monkeypatch.setenv("SIMD_EMU_CACHE_DIR", str(tmp_path))
    builds = []
    build = datasets._build

    def counting_build(kind, n):
        builds.append((kind, n))
        return build(kind, n)

    monkeypatch.setattr(datasets, "_build", counting_build)
    mesh = datasets.load_dataset("balanced", 24)
    assert builds == [("balanced", 24)]
    assert mesh.normals is not None and mesh.normals.shape == mesh.vertices.shape
    # the file holds this mesh
    (path,) = tmp_path.glob("*.npz")
    with np.load(path) as d:
        np.testing.assert_array_equal(d["faces"], mesh.faces)
        np.testing.assert_array_equal(d["vertices"], mesh.vertices)
        np.testing.assert_array_equal(d["normals"], mesh.normals)
    # the second load reads it instead of building the surface again
    again = datasets.load_dataset("balanced", 24)
    assert builds == [("balanced", 24)]
    np.testing.assert_array_equal(again.faces, mesh.faces)
    np.testing.assert_array_equal(again.vertices, mesh.vertices)
    np.testing.assert_array_equal(again.normals, mesh.normals)
    # cache=False neither reads nor writes it
    datasets.load_dataset("balanced", 24, cache=False)
    assert builds == [("balanced", 24)] * 2
    path.unlink()
    datasets.load_dataset("balanced", 24, cache=False)
    assert builds == [("balanced", 24)] * 3
    assert not list(tmp_path.iterdir())
    # a broken cache file is rebuilt, and then read again
    datasets.load_dataset("balanced", 24)
    path.write_bytes(b"garbage")
    np.testing.assert_array_equal(datasets.load_dataset("balanced", 24).faces, mesh.faces)
    assert builds == [("balanced", 24)] * 5
    np.testing.assert_array_equal(datasets.load_dataset("balanced", 24).faces, mesh.faces)
    assert builds == [("balanced", 24)] * 5


def test_default_size_is_about_250k():
    assert datasets.SIZES["250k"] == 128  # 241,498 triangles (checked in the slow test)


@pytest.mark.parametrize("kind", datasets.DATASETS)
def test_data_sets_are_scikit_images_surfaces_but_for_ambiguous_cells(kind):
    from scipy.spatial import cKDTree

    from tests.renderer.dataset_oracle import skimage_dataset

    n = 40
    ours = datasets.load_dataset(kind, n, cache=False)
    vertices, faces, ambiguous = skimage_dataset(kind, n)
    # every vertex of ours is one of scikit-image's (to its float32 rounding) ...
    distance, _ = cKDTree(vertices).query(ours.vertices)
    assert distance.max() < 1e-5
    # ... which has at most one more, inside a cell, per ambiguous cell (Lewiner's)
    assert 0 <= len(vertices) - len(ours.vertices) <= ambiguous
    # and the triangulations differ in ambiguous cells only (1 to 5 triangles a cell in
    # VTK's table, up to 12 in Lewiner's)
    assert abs(len(faces) - ours.n_faces) <= 11 * ambiguous
    # the same surface, facing the same way: normals along scikit-image's gradient
    assert (ours.normals * ours.normals).sum(axis=1).min() > 1 - 1e-9


@pytest.mark.parametrize("kind", datasets.DATASETS)
def test_slabs_are_the_whole_surface_bit_for_bit(kind):
    whole = datasets.load_dataset(kind, 21, cache=False)
    corners, normals = whole.vertices[whole.faces], whole.normals[whole.faces]
    for p in (2, 3, 7):
        slabs = [datasets.load_dataset_slab(kind, 21, r, p) for r in range(p)]
        # in rank order, the whole surface's triangles in its order, with its normals
        assert np.array_equal(np.concatenate([s.vertices[s.faces] for s in slabs]), corners)
        assert np.array_equal(np.concatenate([s.normals[s.faces] for s in slabs]), normals)


@pytest.mark.slow
def test_250k_isosurface_triangle_count():
    mesh = datasets.load_dataset("balanced", "250k")
    assert 235_000 < mesh.n_faces < 250_000


def _ml(x, y, z):
    """The Marschner-Lobb signal, written out independently of renderer.datasets.builtin."""
    r = np.hypot(x, y)
    radial = np.cos(12 * np.pi * np.cos(np.pi * r / 2))
    return (1 - np.sin(np.pi * z / 2) + 0.25 * (1 + radial)) / 2.5


def _triangles(vertices, faces):
    return {tuple(sorted(map(tuple, t))) for t in np.round(vertices[faces], 9)}


def test_unbalanced_fine_block_is_the_balanced_half():
    n = 32
    bal = datasets.load_dataset("balanced", n, cache=False)
    unb = datasets.load_dataset("unbalanced", n, cache=False)
    x_mid = -1 + (n - 1) // 2 * 2 / (n - 1)
    half = (bal.vertices[bal.faces][:, :, 0] <= x_mid + 1e-9).all(axis=1)
    k = int(half.sum())
    # the first k triangles are exactly the balanced surface's x <= 0 half
    assert _triangles(unb.vertices, unb.faces[:k]) == _triangles(bal.vertices, bal.faces[half])


def test_unbalanced_slivers_are_a_height_field_on_the_end_planes():
    n = 32
    h = 2 / (n - 1)
    mid, ysplit = (n - 1) // 2, round(datasets.SPLIT_Y * (n - 1))
    unb = datasets.load_dataset("unbalanced", n, cache=False)
    bal = datasets.load_dataset("balanced", n, cache=False)
    n_fine = int((bal.vertices[bal.faces][:, :, 0] <= -1 + mid * h + 1e-9).all(axis=1).sum())
    slivers = unb.faces[n_fine:]
    # two triangles per coarse cell: (n-1-mid) cells along x, (n-1-ysplit) along y
    assert len(slivers) == 2 * (n - 1 - mid) + 2 * (n - 1 - ysplit)
    # world (x, up, -y) back to the signal's (x, y, z)
    corners = unb.vertices[slivers]
    x, y, z = corners[..., 0], -corners[..., 2], corners[..., 1]
    extent = np.stack([np.ptp(x, axis=1), np.ptp(y, axis=1)], axis=1)
    along_y = np.isclose(extent, [h, ysplit * h]).all(axis=1)
    along_x = np.isclose(extent, [(n - 1 - mid) * h, h]).all(axis=1)
    assert along_y.sum() == 2 * (n - 1 - mid) and along_x.sum() == 2 * (n - 1 - ysplit)
    # every vertex sits on the z edge through its (x, y), where marching cubes interpolates
    # the signal linearly between the planes z = -1 and z = 1
    lo, hi = _ml(x, y, -1.0), _ml(x, y, 1.0)
    np.testing.assert_allclose(z, -1 + 2 * (lo - 0.5) / (lo - hi), atol=1e-5)


def test_unbalanced_is_unbalanced():
    views = {"(0,0)": ((0, 0), 1.0), "(45,45)": ((45, 45), 1.0)}
    table = {
        kind: {
            r["view"]: r
            for r in datasets.workload_table(datasets.load_dataset(kind, 32), size=128, views=views)
        }
        for kind in datasets.DATASETS
    }
    bal, unb = table["balanced"], table["unbalanced"]
    for view in views:
        assert bal[view]["scan_max"] / bal[view]["scan_avg"] < 4
        assert bal[view]["zbuf_max"] / bal[view]["zbuf_avg"] < 4
        # averages stay small (single digits in the paper's Table 1)
        assert unb[view]["scan_avg"] < 3 and unb[view]["zbuf_avg"] < 3
    # slivers along y span many scan lines in the (45, 45) view, staying narrow
    assert unb["(45,45)"]["scan_max"] > 8 * bal["(45,45)"]["scan_max"]
    assert unb["(45,45)"]["scan_max"] / unb["(45,45)"]["scan_avg"] > 20
    # in the side view the sheet is too flat for tall polygons; slivers along x make long
    # spans instead
    assert unb["(0,0)"]["scan_max"] > 3 * bal["(0,0)"]["scan_max"]
    assert unb["(0,0)"]["zbuf_max"] > 8 * bal["(0,0)"]["zbuf_max"]


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


@pytest.mark.parametrize(
    "name,text,error,match",
    [
        ("missing.ply", None, FileNotFoundError, "missing.ply: file not found"),
        ("", None, ValueError, "is a directory"),
        ("notes.txt", "hello\n", ValueError, "not a mesh format"),
        # a header that promises a vertex with x only, then no vertex data
        (
            "broken.ply",
            "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nend_header\n1\n",
            ValueError,
            "broken.ply: cannot read the mesh",
        ),
        ("nan.obj", "v 0 0 0\nv 1 0 0\nv nan 0 0\nf 1 2 3\n", ValueError, "nan.obj: mesh has 1"),
    ],
)
def test_load_mesh_bad_files_say_what_is_wrong(tmp_path, name, text, error, match):
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    with pytest.raises(error, match=match):
        renderer.load_mesh(path)


@pytest.mark.parametrize("suffix", [".stl", ".ply", ".obj"])
def test_load_mesh_truncated_files_say_so_in_one_line(tmp_path, suffix):
    """Half of a good file: one line naming the file, whatever the reader raised (for a
    binary STL, trimesh's fallback to text needs an optional package; that is no reason
    to tell the user only "No module named ...")."""
    import trimesh

    whole = trimesh.creation.icosphere(2).export(file_type=suffix[1:])
    whole = whole.encode() if isinstance(whole, str) else whole
    path = tmp_path / f"half{suffix}"
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ValueError) as exc:
        renderer.load_mesh(path)
    message = str(exc.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    assert "cannot read the mesh" in message or "indices out of range" in message


def test_stl_triangle_soup_is_merged_and_shaded_smoothly(tmp_path, machine):
    import trimesh

    sphere = trimesh.creation.icosphere(subdivisions=2)
    path = tmp_path / "sphere.stl"
    sphere.export(path)
    mesh = renderer.load_mesh(path)
    assert len(mesh.vertices) == len(sphere.vertices)  # not 3 per face
    # faces keep the file's order and corners (STL stores float32 coordinates)
    corners = sphere.vertices.astype(np.float32).astype(np.float64)[sphere.faces]
    np.testing.assert_array_equal(mesh.vertices[mesh.faces], corners)
    # so Gouraud shading matches the indexed mesh exactly, instead of one normal per facet
    shared = (sphere.vertices.astype(np.float32).astype(np.float64), sphere.faces)
    a = renderer.render(mesh, view=(20, 30), size=48, machine=machine)
    b = renderer.render(shared, view=(20, 30), size=48, machine=machine)
    np.testing.assert_array_equal(a.image, b.image)


def test_data_sets_share_the_cache_folder_with_calibrations(tmp_path, monkeypatch):
    from simd.balance.cost_effective import user_store_path

    monkeypatch.setenv("SIMD_EMU_CACHE_DIR", str(tmp_path / "c"))
    assert datasets.cache_dir() == tmp_path / "c" == user_store_path().parent
    monkeypatch.delenv("SIMD_EMU_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert datasets.cache_dir() == tmp_path / "xdg" / "simd-emu"


def test_save_depth_rejects_what_is_not_a_depth_buffer(tmp_path):
    with pytest.raises(ValueError, match="float"):
        renderer.save_depth(np.zeros((4, 4), dtype=np.uint8), tmp_path / "d.png")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        renderer.save_depth(np.full((4, 4), 1.5), tmp_path / "d.png")
