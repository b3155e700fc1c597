"""``simd-emu render VOLUME --level L`` and ``simd-emu isosurface``: the pictures and mesh
files they write, and every one-line refusal."""

from __future__ import annotations

import json

import numpy as np
import pytest

import renderer
from simd import Machine
from simd.cli import main
from tests.entry_points import pyproject_commands
from tests.mpi_support import run_ranks

FAST = ["--backend", "numpy", "--pes", "32"]


def cli(*argv) -> int:
    """The command line with this tree's commands (``isosurface`` among them)."""
    return main([str(a) for a in argv], commands=pyproject_commands())


def ball(n=14, dtype=np.float32):
    x, y, z = np.mgrid[-1:1:14j, -1:1:14j, -1 : 1 : 1j * n]
    return (x * x + 1.5 * y * y + z * z).astype(dtype)


@pytest.fixture
def volume(tmp_path):
    path = tmp_path / "ball.npy"
    np.save(path, ball())
    return path


def error_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    return lines[0]


def test_render_a_volume_is_the_frame_of_its_isosurface(tmp_path, volume, capsys):
    out, js = tmp_path / "f.png", tmp_path / "f.json"
    assert cli("render", volume, "--level", 0.6, "--size", 48, "-o", out, "--json", js,
               "--verbose", "--no-progress", *FAST) == 0  # fmt: skip
    text = capsys.readouterr().out
    for line in ("mesh     : ball.npy", "isosurface", "  classify", "  scan", "  emit"):
        assert line in text
    assert "extracted in" in text and text.count("wrote") == 1
    from PIL import Image

    mesh = renderer.read_volume(volume).isosurface(0.6, machine=Machine(backend="numpy"))
    frame = renderer.render(mesh, view=(45, 45), size=48, machine=Machine(pes=32, backend="numpy"))
    with Image.open(out) as img:
        np.testing.assert_array_equal(np.asarray(img), frame.image)
    assert f"{mesh.n_faces} triangles" in text
    assert json.loads(js.read_text())["triangles"] == mesh.n_faces


@pytest.mark.parametrize("suffix", [".ply", ".obj", ".stl"])
def test_isosurface_writes_the_mesh(tmp_path, volume, capsys, suffix):
    import trimesh

    out = tmp_path / f"ball{suffix}"
    assert cli("isosurface", volume, "--level", 0.6, "-o", out, *FAST) == 0
    mesh = renderer.isosurface(ball(), 0.6, machine=Machine(backend="numpy"))
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"wrote {out}: {mesh.n_faces} triangles, {len(mesh.vertices)} vertices")
    assert "on the emulated machine" in line
    got = trimesh.load(out, process=False)
    assert len(got.faces) == mesh.n_faces
    if suffix != ".stl":  # STL keeps no shared vertices, nor vertex normals
        np.testing.assert_allclose(got.vertices, mesh.vertices, atol=1e-6)
        assert np.array_equal(got.faces, mesh.faces)
        np.testing.assert_allclose(got.vertex_normals, mesh.normals, atol=1e-6)
    # again: refused, unless --force, and then a line says so
    assert cli("isosurface", volume, "--level", 0.6, "-o", out, *FAST) == 2
    assert "exists; add --force to replace it" in capsys.readouterr().err
    assert cli("isosurface", volume, "--level", 0.6, "-o", out, "--verbose", "--force", *FAST) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"replacing {out}\n") and "  emit" in text


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--level", "0.6"], "--level extracts the isosurface of a VOLUME file"),
        (["{vol}"], "a volume needs --level L"),
        (["{vol}", "--level", "9"], "--level 9 has no surface: the volume's values run from"),
        (["{vol}", "--level", "0"], "--level 0 has no surface"),
        (["{flat}", "--level", "0"], "holds a 2-D array of shape (4, 5), not one 3-D volume"),
        (["{vol}", "--level", "0.6", "--mesh", "x.ply"], "not with --mesh"),
        (["{vol}", "--level", "0.6", "--dataset", "unbalanced"], "not with --dataset"),
        (["--mesh", "x.ply", "--level", "1"], "--level extracts the isosurface of a VOLUME"),
        (["{tmp}/part.ply", "--level", "1"], "not a volume file (.npy, .tif"),
        (["{tmp}/none.npy", "--level", "1"], "none.npy: file not found"),
        (["{vol}", "--level", "0.6", "--depth", "{vol}"], "is this command's input"),
        (["{dots}", "--level", "0.5"], "the surface at level 0.5 is empty"),
        (["{nan}", "--level", "0.5"], "NaN or infinite values"),
    ],
)
def test_render_refuses_in_one_line(tmp_path, volume, capsys, argv, says):
    np.save(tmp_path / "flat.npy", np.zeros((4, 5)))
    dots = np.zeros((5, 5, 5), np.float32)
    dots[2, 2, 2] = 0.5  # at the level: a surface of one point, no area
    np.save(tmp_path / "dots.npy", dots)
    nan = ball()
    nan[3, 3, 3] = np.nan
    np.save(tmp_path / "nan.npy", nan)
    (tmp_path / "part.ply").write_text("ply\n")
    paths = {"vol": volume, "tmp": tmp_path, "flat": tmp_path / "flat.npy",
             "dots": tmp_path / "dots.npy", "nan": tmp_path / "nan.npy"}  # fmt: skip
    argv = [a.format(**paths) for a in argv]
    out = tmp_path / "out.png"
    assert cli("render", *argv, "-o", out, "--size", 16, *FAST) == 2
    assert says in error_line(capsys)
    assert not out.exists()


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--level", "9"], "--level 9 has no surface"),
        (["-o", "{vol}"], "unknown format '.npy'; use .ply, .obj or .stl"),
        (["-o", "{tmp}/mesh.off"], "unknown format '.off'"),
        (["-o", "{tmp}/missing/mesh.ply"], "does not exist"),
    ],
)
def test_isosurface_refuses_in_one_line(tmp_path, volume, capsys, argv, says):
    argv = [a.format(vol=volume, tmp=tmp_path) for a in argv]
    level = [] if "--level" in argv else ["--level", "0.6"]
    assert cli("isosurface", volume, *level, *argv, *FAST) == 2
    assert says in error_line(capsys)
    assert not list(tmp_path.glob("*.ply"))


def test_isosurface_keeps_an_input_it_would_replace(tmp_path, capsys):
    import trimesh

    path = tmp_path / "ball.ply"  # a mesh file is no volume: refused as such
    trimesh.creation.box().export(path)
    before = path.read_bytes()
    assert cli("isosurface", path, "--level", "0.5", "-o", path, *FAST) == 2
    assert "not a volume file" in error_line(capsys)
    assert path.read_bytes() == before


@pytest.mark.mpi
def test_render_a_volume_on_three_ranks_is_the_one_rank_image(tmp_path):
    from scipy.ndimage import gaussian_filter

    rng = np.random.default_rng(2)
    field = gaussian_filter(rng.standard_normal((20, 16, 18)), 1.5).astype(np.float32)
    np.save(tmp_path / "field.npy", field)
    common = ["render", "field.npy", "--level", "0.02", "--size", "48", "--pes", "32"]
    run_ranks(1, "-m simd.cli", *common, "-o", "one.png", cwd=tmp_path, timeout=120)
    three = run_ranks(3, "-m simd.cli", *common, "-o", "three.png", "--verbose",
                      cwd=tmp_path, timeout=120)  # fmt: skip
    assert (tmp_path / "one.png").read_bytes() == (tmp_path / "three.png").read_bytes()
    assert three.stdout.count("wrote") == 1 and "3 MPI ranks" in three.stdout
    assert "  emit" in three.stdout


@pytest.mark.mpi
def test_isosurface_on_three_ranks_writes_the_one_rank_file(tmp_path):
    from scipy.ndimage import gaussian_filter

    rng = np.random.default_rng(3)
    field = gaussian_filter(rng.standard_normal((21, 15, 17)), 1.5).astype(np.float32)
    np.save(tmp_path / "field.npy", field)
    common = ["isosurface", "field.npy", "--level", "0.02", "--pes", "32"]
    run_ranks(1, "-m simd.cli", *common, "-o", "one.ply", cwd=tmp_path, timeout=120)
    three = run_ranks(3, "-m simd.cli", *common, "-o", "three.ply", cwd=tmp_path, timeout=120)
    assert (tmp_path / "one.ply").read_bytes() == (tmp_path / "three.ply").read_bytes()
    assert three.stdout.count("wrote") == 1 and "3 MPI ranks" in three.stdout
    # a bad output ends every rank, in one line from rank 0, before any work
    bad = run_ranks(3, "-m simd.cli", *common, "-o", "no/such/folder.ply", cwd=tmp_path,
                    timeout=120, check=False)  # fmt: skip
    assert bad.returncode != 0
    assert bad.stderr.count("simd-emu isosurface: ") == 1 and "does not exist" in bad.stderr
