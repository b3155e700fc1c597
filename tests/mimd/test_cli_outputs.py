"""``simd-emu bench mimd``: the files it will replace are named before any work."""

from __future__ import annotations

from mimd.cli import result_files
from simd.cli import main
from tests.entry_points import pyproject_commands


def test_result_files_follow_the_parts(tmp_path):
    names = [p.name for p in result_files(tmp_path, quick=True, parts=None, plots=True)]
    assert names == [
        "mimd-quick.json",
        "mimd-quick-farmer.png",
        "mimd-quick-figure1.png",
        "mimd-quick-figure2.png",
        "mimd-quick-figure3.png",
    ]
    names = [p.name for p in result_files(tmp_path, quick=False, parts=("gradient",), plots=True)]
    assert names == ["mimd.json"]


def test_files_that_exist_are_refused_or_with_force_named_before_the_work(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mimd-quick.json").write_text("old")
    (tmp_path / "mimd-quick-figure1.png").write_text("old")  # figure1 is not run: kept
    calls = []

    def work(**kwargs):
        calls.append(kwargs)
        print("working")

    monkeypatch.setattr("mimd.report.run", work)
    argv = ["bench", "mimd", "--quick", "--only", "gradient", "--out", str(tmp_path)]
    assert main(argv, commands=pyproject_commands()) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and not calls
    assert captured.err == (
        f"simd-emu bench mimd: {tmp_path / 'mimd-quick.json'}: exists; add --force to replace "
        "it, or choose another name\n"
    )
    assert main([*argv, "--force"], commands=pyproject_commands()) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"replacing {tmp_path / 'mimd-quick.json'}", "working"]
    assert calls and calls[0]["out"] == tmp_path
