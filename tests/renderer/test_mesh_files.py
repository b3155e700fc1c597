"""Mesh files as users bring them: broken ones get one line naming the problem, before any
work; an output is never the input; odd but valid ones render without warnings."""

from __future__ import annotations

import warnings

import pytest

from simd.cli import main
from tests.entry_points import pyproject_commands

pytest.importorskip("trimesh")

HEADER = (
    "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
    "property float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n"
)


def _render(*argv):
    return main(["render", *map(str, argv), "--backend", "numpy", "--no-progress"],
                commands=pyproject_commands())  # fmt: skip


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        ("index.ply", HEADER + "0 0 0\n1 0 0\n0 1 0\n3 0 1 7\n",
         "index.ply: face 0 refers to vertex 7, but the file has 3 vertices"),
        ("garbage.stl", bytes(range(256)) * 2,
         "garbage.stl: cannot read the mesh: the file is broken or truncated"),
    ],
)  # fmt: skip
def test_a_broken_mesh_file_is_one_line(tmp_path, capsys, name, content, says):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    assert _render("--mesh", path, "-o", tmp_path / "out.png") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.strip().endswith(says), err
    assert not (tmp_path / "out.png").exists()


def test_a_mesh_far_from_the_origin_renders_without_warnings(tmp_path, capsys):
    path = tmp_path / "huge.ply"
    path.write_text(HEADER + "0 0 0\n1e30 0 0\n0 1e30 0\n3 0 1 2\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _render("--mesh", path, "--size", 32, "-o", tmp_path / "out.png") == 0
    assert "warning" not in capsys.readouterr().err


def test_an_output_that_is_the_mesh_file_is_refused(tmp_path, capsys):
    path = tmp_path / "box.stl"
    path.write_bytes(b"solid x\nendsolid x\n")
    out = tmp_path / "frame.png"
    assert _render("--mesh", path, "-o", out, "--json", tmp_path / "." / "box.stl") == 2
    assert "box.stl: is this command's input; write the result to another file" in (
        capsys.readouterr().err
    )
    assert path.read_bytes() == b"solid x\nendsolid x\n" and not out.exists()
