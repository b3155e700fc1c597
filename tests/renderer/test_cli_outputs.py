"""``simd-emu render``: quiet by default, outputs checked first and written together, plain
help texts (also of ``simd-emu bench`` and ``simd-emu bench mimd``)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from simd.cli import main
from tests.entry_points import pyproject_commands

SMALL = ["render", "--dataset-size", "16", "--size", "32", "--pes", "32", "--backend", "numpy"]
SMALL += ["--no-progress"]


def test_quiet_by_default_prints_one_line(tmp_path, capsys):
    out = tmp_path / "f.png"
    assert main([*SMALL, "-o", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"wrote {out}: ") and lines[0].endswith("on the emulated machine)")
    assert " s " in lines[0] and "cost-effective loops on numpy" in lines[0]
    assert out.is_file()


def test_verbose_prints_the_tables(tmp_path, capsys):
    assert main([*SMALL, "-o", str(tmp_path / "f.png"), "--verbose"]) == 0
    text = capsys.readouterr().out
    for word in ("machine  :", "loop form: cost-effective", "decisions", "information gathering"):
        assert word in text
    assert text.splitlines()[-1].startswith("wrote ")


def test_existing_files_are_replaced_only_with_force(tmp_path, capsys):
    out, js = tmp_path / "f.png", tmp_path / "s.json"
    out.write_bytes(b"old")
    js.write_text("old")
    assert main([*SMALL, "-o", str(out), "--json", str(js)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"simd-emu render: {out}: exists; add --force to replace it, or choose another name\n"
    )
    assert out.read_bytes() == b"old" and js.read_text() == "old"
    assert main([*SMALL, "-o", str(out), "--json", str(js), "--force"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == [f"replacing {out}", f"replacing {js}"]
    assert lines[2].startswith(f"wrote {out} and {js}: ")
    from PIL import Image

    with Image.open(out) as img:
        assert img.size == (32, 32) and np.asarray(img).any()
    assert json.loads(js.read_text())["forms"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.png", "s.json"]


def test_a_late_failure_leaves_no_output_half_written(tmp_path, capsys, monkeypatch):
    out, depth, js = tmp_path / "f.png", tmp_path / "d.npy", tmp_path / "s.json"
    out.write_bytes(b"old")

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("renderer.cli.render._jsonable", broken)
    argv = [*SMALL, "-o", str(out), "--depth", str(depth), "--json", str(js), "--force"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("simd-emu render: ") and "No space left" in err
    # the old image is untouched, nothing new appeared, no temporary file is left
    assert out.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.png"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--depth", "d.jpg"], "d.jpg: unknown format '.jpg'; use .png, .npy, .tif or .tiff"),
        (["--json", "f.png"], "f.png: named for two outputs"),
        (["--json", "."], ".: is a folder; give a file name (--json stats.json)"),
        (["--depth", "no/such/d.png"], "does not exist"),
        (["-o", "frame"], "frame: unknown format '(no suffix)'"),
        (["-o", ""], "empty output file name; give a file name (-o frame.png)"),
        (["--json", ""], "empty output file name; give a file name (--json stats.json)"),
    ],
)
def test_bad_outputs_fail_in_one_line_before_any_work(
    tmp_path, capsys, monkeypatch, extra, message
):
    monkeypatch.chdir(tmp_path)

    def no_work(*args, **kwargs):  # pragma: no cover - must not be reached
        raise AssertionError("rendered")

    monkeypatch.setattr("renderer.pipeline.render", no_work)
    assert main([*SMALL, "-o", "f.png", *extra]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("simd-emu render: ") and message in lines[0]
    assert list(tmp_path.iterdir()) == []


JARGON = ("seed 00", "OR/LB", "decis ", "``", "(default: None)")


@pytest.mark.parametrize("command", [["render"], ["bench"], ["bench", "mimd"]])
def test_help_texts_use_plain_words(command, capsys):
    with pytest.raises(SystemExit) as exc:
        main([*command, "--help"], commands=pyproject_commands())
    assert exc.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: simd-emu")
    for token in JARGON:
        assert token not in text, f"{token!r} in simd-emu {' '.join(command)} --help"
    assert "decis" not in text.replace("decisions", "")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--mesh", ""], "--mesh: empty file name"),
        (["--mesh", "m.ply", "--dataset", "oilwell"], "--dataset chooses a built-in data set; "),
        (
            ["--mesh", "m.ply", "--dataset", "unbalanced", "--dataset-size", "16"],
            "--dataset and --dataset-size choose a built-in data set; not with --mesh FILE",
        ),
        (["--table1", "-o", "t.png"], "--table1 prints a table and writes nothing; it takes no -o"),
        (["--table1", "--compare", "--json", "s.json"], "it takes no --json and --compare"),
        (["--table1", "--orbit", "3"], "it takes no --orbit"),
    ],
)
def test_contradicting_options_fail_in_one_line_before_any_work(
    tmp_path, capsys, monkeypatch, argv, message
):
    """An option that would be ignored (a data set beside a mesh file, an output beside
    --table1) is refused rather than silently dropped."""
    monkeypatch.chdir(tmp_path)

    def no_work(*args, **kwargs):  # pragma: no cover - must not be reached
        raise AssertionError("loaded or rendered")

    monkeypatch.setattr("renderer.cli.render._load", no_work)
    monkeypatch.setattr("renderer.pipeline.render", no_work)
    assert main(["render", "--no-progress", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("simd-emu render: ") and message in lines[0]
    assert list(tmp_path.iterdir()) == []


def test_usage_errors_are_one_line(capsys):
    """argparse's own error prints the whole usage block (a dozen lines for render) above
    the line that matters; simd-emu prints that line and where the options are listed."""
    with pytest.raises(SystemExit) as exc:
        main(["render", "--size", "0"], commands=pyproject_commands())
    assert exc.value.code == 2
    assert capsys.readouterr().err == (
        "simd-emu render: error: argument --size: size must be 1..4096 each way, got '0' "
        "(see simd-emu render --help)\n"
    )
