"""``simd-emu render``."""

from __future__ import annotations

import json

import numpy as np
import pytest

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
            "--verbose",
        ]
    )
    assert rc == 0
    # the written image is the frame that renderer.render draws with the same arguments
    # (the CLI's defaults: balanced data set, view (45, 45), magnification 1, Gouraud)
    from PIL import Image

    import renderer
    from renderer.datasets.builtin import load_dataset
    from simd import Machine

    frame = renderer.render(
        load_dataset("balanced", 24),
        view=(45, 45),
        magnification=1.0,
        size=64,
        loop="cost-effective",
        machine=Machine(pes=32, backend="numpy"),
    )
    with Image.open(out) as img:
        assert img.format == "PNG" and img.mode == "RGB" and img.size == (64, 64)
        png = np.asarray(img)
    np.testing.assert_array_equal(png, frame.image)
    # and it is a picture: the surface covers much of it, is lit, on a black background
    drawn = png.any(axis=2)
    assert frame.coverage.sum() > 500
    assert not drawn[~frame.coverage].any()
    assert drawn[frame.coverage].mean() > 0.9
    text = capsys.readouterr().out
    for word in (
        "scan-conversion",
        "z-buffer",
        "iter",
        "max",
        "avg",
        "decisions",
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


def _render_fails(args, capsys) -> str:
    """Run ``simd-emu render ARGS``; it must exit 2 with a one-line message, no traceback."""
    rc = main(["render", "--backend", "numpy", "--no-progress", *args])
    assert rc == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert captured.err.startswith("simd-emu render: ")
    assert "loop form" not in captured.out  # it stopped before rendering
    return captured.err


def test_bad_mesh_files_give_clear_errors(tmp_path, capsys):
    err = _render_fails(["--mesh", str(tmp_path / "missing.ply")], capsys)
    assert "file not found" in err
    assert "is a directory" in _render_fails(["--mesh", str(tmp_path)], capsys)
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    assert "not a mesh format" in _render_fails(["--mesh", str(text)], capsys)
    obj = tmp_path / "bad.obj"
    obj.write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 5\n")  # vertex 5 does not exist
    assert "bad.obj" in _render_fails(["--mesh", str(obj)], capsys)


def test_bad_output_paths_fail_before_rendering(tmp_path, capsys):
    small = ["--dataset-size", "16", "--size", "16"]
    err = _render_fails([*small, "-o", str(tmp_path / "frame.xyz")], capsys)
    assert "unknown format '.xyz'; use .png, .jpg, .tif" in err
    assert "is a folder" in _render_fails([*small, "-o", str(tmp_path)], capsys)
    err = _render_fails([*small, "-o", str(tmp_path / "no" / "f.png")], capsys)
    assert "does not exist" in err
    out = tmp_path / "f.png"
    err = _render_fails([*small, "-o", str(out), "--json", str(tmp_path / "no" / "s.json")], capsys)
    assert "does not exist" in err
    assert not out.exists()


def test_unavailable_backend_is_reported(capsys):
    from simd.backend import cupy_status

    if cupy_status()[0]:
        pytest.skip("CuPy works here")
    rc = main(["render", "--backend", "cupy", "--dataset-size", "16", "--no-progress"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "backend 'cupy'" in err


@pytest.mark.parametrize(
    "args",
    [["--view", "nan", "0"], ["--view", "0", "inf"], ["-M", "inf"], ["-M", "-1"], ["-M", "x"]],
)
def test_bad_view_arguments_are_usage_errors(args, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["render", *args])
    assert exc.value.code == 2
    assert "must be a" in capsys.readouterr().err  # "must be a (finite ...) number"


@pytest.mark.parametrize("pes", ["99999999999999", "16777217", "0", "-4"])
def test_pes_beyond_the_machine_is_refused_before_any_work(pes, capsys, monkeypatch):
    """--pes names the limit (2**24 PEs, simd.operands.MAX_PES) in one line, when the
    arguments are read: no mesh is loaded, no machine made."""
    import renderer.cli.render

    def no_work(*args, **kwargs):
        raise AssertionError("work started")

    monkeypatch.setattr(renderer.cli.render, "_load", no_work)
    with pytest.raises(SystemExit) as exc:
        main(["render", "--pes", pes, "--dataset-size", "16", "--no-progress"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert (
        f"argument --pes: must be 1 to 16,777,216 PEs (2**24, the machine's limit), got {pes}"
        in err
    )


def test_pes_at_the_limit_is_accepted(tmp_path):
    out = tmp_path / "f.png"
    rc = main(["render", "--pes", str(2**24), "--dataset-size", "8", "--size", "16",
               "--no-progress", "-o", str(out)])  # fmt: skip
    assert rc == 0 and out.exists()


def test_depth_buffer_output(tmp_path, capsys):
    from PIL import Image

    import renderer
    from renderer.datasets.builtin import load_dataset
    from simd import Machine

    common = ["render", "--dataset-size", "16", "--size", "40x30", "--pes", "32"]
    common += ["--backend", "numpy", "--no-progress"]
    assert main([*common, "-o", str(tmp_path / "f.png"), "--depth", str(tmp_path / "d.png")]) == 0
    assert main([*common, "-o", str(tmp_path / "g.png"), "--depth", str(tmp_path / "d.npy")]) == 0
    frame = renderer.render(
        load_dataset("balanced", 16), size=(40, 30), machine=Machine(pes=32, backend="numpy")
    )
    exact = np.load(tmp_path / "d.npy")
    np.testing.assert_array_equal(exact, frame.depth)
    png = np.asarray(Image.open(tmp_path / "d.png"))
    assert png.dtype == np.uint16 and png.shape == (30, 40)
    np.testing.assert_allclose(png / 65535.0, frame.depth, atol=0.5 / 65535 + 1e-7)
    assert (png[~frame.coverage] == 65535).all()
