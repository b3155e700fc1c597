"""``simd-emu bench mimd`` and bench/mimd.py."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mimd import cli
from mimd.report import format_table, run
from simd.cli import main
from tests.entry_points import pyproject_commands


def test_register_adds_bench_mimd():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    cli.register(sub)
    args = parser.parse_args(["bench", "mimd", "--quick", "--only", "table1"])
    assert args.quick and args.only == "table1" and args.func is cli._run


def _other_bench(args):
    return "other"


def test_register_beside_another_bench():
    # another program made ``bench`` first, with its own table of benchmarks
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    bench = sub.add_parser("bench")
    other = bench.add_subparsers(dest="which", required=True).add_parser("render")
    other.add_argument("--frames", type=int, default=1)
    other.set_defaults(func=_other_bench)
    cli.register(sub)
    cli.register(sub)  # a second registration changes nothing
    args = parser.parse_args(["bench", "render", "--frames", "3"])
    assert args.func is _other_bench and args.frames == 3
    args = parser.parse_args(["bench", "mimd", "--quick"])
    assert args.func is cli._run and args.quick
    assert list(sub.choices) == ["bench"]


def test_run_writes_json(tmp_path, capsys):
    res = run(quick=True, parts=("gradient",), out=tmp_path, plots=False, echo=print)
    data = json.loads((tmp_path / "mimd-quick.json").read_text())
    assert data["benchmark"] == "mimd" and "gradient" in data
    assert res["gradient"]["rows"][0]["farmer"] > 0
    assert "GM/farmer" in capsys.readouterr().out


def test_unknown_part():
    with pytest.raises(ValueError, match="unknown benchmark part"):
        run(parts=("table9",), plots=False)


def test_format_table():
    t = format_table([{"a": 1.5, "b": "x"}], [("a", "A", ".1f"), ("b", "B", "")])
    assert t.splitlines()[0].split() == ["A", "B"] and "1.5" in t


@pytest.mark.slow
def test_quick_benchmark_end_to_end(tmp_path):
    res = run(quick=True, out=tmp_path)
    assert len(res["plots"]) == 4  # farmer, figure1, figure2, figure3
    assert res["figure1"]["summary"]["mean_abs_error_pct"] < 5.0


def test_backend_option_and_unavailable_backend(monkeypatch, capsys):
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    cli.register(sub)
    args = parser.parse_args(["bench", "mimd", "--only", "compare", "--backend", "auto"])
    assert args.backend == "auto"
    with pytest.raises(SystemExit):
        parser.parse_args(["bench", "mimd", "--backend", "tpu"])

    from simd.errors import BackendUnavailableError

    def unavailable(**kw):
        raise BackendUnavailableError("backend 'cupy' was asked for but is unavailable: test")

    monkeypatch.setattr("mimd.report.run", unavailable)
    monkeypatch.setattr("simd.backend.resolve_backend", lambda backend: ("cupy", None))
    args = parser.parse_args(["bench", "mimd", "--backend", "cupy"])
    assert args.func(args) == 2
    assert "bench mimd: backend 'cupy'" in capsys.readouterr().err


def test_unavailable_backend_and_empty_parts_are_refused_before_any_work(
    tmp_path, monkeypatch, capsys
):
    from simd.errors import BackendUnavailableError

    def unavailable(backend):
        raise BackendUnavailableError(f"backend {backend!r} was asked for but is unavailable")

    def no_work(**kw):
        raise AssertionError("the benchmark ran")

    monkeypatch.setattr("simd.backend.resolve_backend", unavailable)
    monkeypatch.setattr("mimd.report.run", no_work)
    out = tmp_path / "new"
    for argv, problem in (
        (["--backend", "cupy", "--only", "compare"], "backend 'cupy' was asked for"),
        (["--only", ","], "--only names no part"),
        (["--only", "nosuch"], "unknown part(s) ['nosuch']"),
    ):
        assert cli.main(["--quick", "--out", str(out), *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and problem in err and "Traceback" not in err
    assert not out.exists()  # refused before the output folder was made


def test_simgrid_asked_for_but_missing_is_one_line_before_any_work(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("mimd.on_simgrid._locate", lambda: None)
    monkeypatch.setattr("mimd.report.run", lambda **kw: pytest.fail("the benchmark ran"))
    out = tmp_path / "new"
    assert cli.main(["--quick", "--out", str(out), "--only", "table1,simgrid"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "apt-get install python3-simgrid" in err
    assert "leave out --only simgrid" in err and not out.exists()


def test_progress_lines_before_each_part(tmp_path):
    lines = []
    # one part may be named by a plain string
    run(quick=True, parts="gradient", out=tmp_path, plots=False, echo=lines.append)
    assert lines[0] == "\n[gradient] running ..."


def test_results_go_to_the_current_folder(tmp_path, monkeypatch, capsys):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    argv = ["bench", "mimd", "--quick", "--only", "gradient", "--no-plots"]
    assert main(argv, commands=pyproject_commands()) == 0
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["mimd-quick.json", "work"]
    data = json.loads((work / "mimd-quick.json").read_text())
    assert data["quick"] and data["gradient"]["rows"]
    assert f"wrote {work / 'mimd-quick.json'}" in capsys.readouterr().out


def test_results_go_to_out(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    out = tmp_path / "new" / "results"  # made if missing
    argv = ["bench", "mimd", "--quick", "--only", "gradient", "--no-plots", "--out", str(out)]
    assert main(argv, commands=pyproject_commands()) == 0
    assert [p.name for p in out.iterdir()] == ["mimd-quick.json"]
    assert list(work.iterdir()) == []


def test_unwritable_out_fails_before_any_work(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")

    def no_work(**kw):  # pragma: no cover - must not be reached
        raise AssertionError("the benchmark ran")

    monkeypatch.setattr("mimd.report.run", no_work)
    argv = ["bench", "mimd", "--quick", "--out", str(blocker / "sub")]
    assert main(argv, commands=pyproject_commands()) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip().splitlines() == [
        f"simd-emu bench mimd: cannot write results to '{blocker / 'sub'}': '{blocker}' is a "
        "file, not a folder"
    ]


SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "mimd.py"


def test_bench_script_runs_from_anywhere(tmp_path):
    # bench/mimd.py must not shadow the mimd package it drives; from a folder other than the
    # source tree's root, the root on PYTHONPATH (as the scripts' own workers have it)
    env = {**os.environ, "PYTHONPATH": str(SCRIPT.parents[1])}
    proc = subprocess.run(
        [sys.executable, "-m", "bench.mimd", "--quick", "--only", "gradient", "--no-plots"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["mimd-quick.json"]


def test_bench_script_save_writes_to_the_source_trees_results(tmp_path, monkeypatch):
    script = importlib.import_module("bench.mimd")
    assert script.SAVE_DIR == SCRIPT.parent / "results"
    monkeypatch.setattr(script, "SAVE_DIR", tmp_path / "results")
    monkeypatch.chdir(tmp_path)
    assert script.main(["--quick", "--only", "gradient", "--no-plots", "--save"]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["results"]
    assert (tmp_path / "results" / "mimd-quick.json").is_file()
    with pytest.raises(SystemExit):
        script.main(["--save", "--out", str(tmp_path)])
