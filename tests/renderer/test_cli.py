"""``simd-emu render``."""

from __future__ import annotations

import json

from simd.cli import main


def test_render_command_writes_png_and_prints_tables(tmp_path, capsys):
    out = tmp_path / "f.png"
    js = tmp_path / "f.json"
    rc = main(
        [
            "render",
            "--dataset-size",
            "24",
            "--size",
            "64",
            "--pes",
            "32",
            "--backend",
            "numpy",
            "-o",
            str(out),
            "--json",
            str(js),
            "--no-progress",
        ]
    )
    assert rc == 0
    assert out.exists()
    text = capsys.readouterr().out
    for word in (
        "scan-conversion",
        "z-buffer",
        "iter",
        "max",
        "avg",
        "decis",
        "model s",
        "wall s",
        "information gathering",
        "solution",
    ):
        assert word in text
    data = json.loads(js.read_text())
    assert set(data["forms"]) == {"cost-effective"}


def test_render_compare_checks_images(tmp_path, capsys):
    rc = main(
        [
            "render",
            "--dataset",
            "unbalanced",
            "--dataset-size",
            "24",
            "--size",
            "64x48",
            "--pes",
            "32",
            "--backend",
            "numpy",
            "--compare",
            "--view",
            "0",
            "0",
            "-o",
            str(tmp_path / "f.png"),
            "--no-progress",
        ]
    )
    assert rc == 0
    text = capsys.readouterr().out
    assert "images identical across loop forms: yes" in text
    assert "speedup" in text


def test_render_mesh_file_and_errors(tmp_path, capsys):
    import trimesh

    path = tmp_path / "box.stl"
    trimesh.creation.box().export(path)
    rc = main(
        [
            "render",
            "--mesh",
            str(path),
            "--size",
            "32",
            "--backend",
            "numpy",
            "-o",
            str(tmp_path / "b.png"),
            "--no-progress",
            "--loop",
            "expand",
        ]
    )
    assert rc == 0
    rc = main(
        [
            "render",
            "--mesh",
            str(tmp_path / "missing.ply"),
            "--backend",
            "numpy",
            "-o",
            str(tmp_path / "c.png"),
        ]
    )
    assert rc == 2
    assert "simd-emu render" in capsys.readouterr().err


def test_render_table1(capsys):
    rc = main(
        [
            "render",
            "--table1",
            "--dataset-size",
            "24",
            "--size",
            "64",
            "--pes",
            "32",
            "--backend",
            "numpy",
        ]
    )
    assert rc == 0
    lines = capsys.readouterr().out.splitlines()
    assert "scan max" in lines[0]
    assert sum(line.startswith(("balanced", "unbalanced")) for line in lines) == 8
