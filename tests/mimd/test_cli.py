"""``simd-emu bench mimd`` and bench/mimd.py."""

from __future__ import annotations

import argparse
import json

import pytest

from mimd import cli
from mimd.report import format_table, run


def test_register_adds_bench_mimd():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    cli.register(sub)
    args = parser.parse_args(["bench", "mimd", "--quick", "--only", "table1"])
    assert args.quick and args.only == "table1" and args.func is cli._run


def test_register_beside_another_bench():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    cli.register(sub)
    cli.register(sub)  # idempotent on the bench table: a second module may add its own
    assert "bench" in sub.choices


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
    assert len(res["plots"]) == 3
    assert res["figure1"]["summary"]["mean_abs_error_pct"] < 5.0


def test_backend_option_and_unavailable_backend(monkeypatch):
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    cli.register(sub)
    args = parser.parse_args(["bench", "mimd", "--only", "scale", "--backend", "auto"])
    assert args.backend == "auto"
    with pytest.raises(SystemExit):
        parser.parse_args(["bench", "mimd", "--backend", "tpu"])

    from simd.errors import BackendUnavailableError

    def unavailable(**kw):
        raise BackendUnavailableError("backend 'cupy' was asked for but is unavailable: test")

    monkeypatch.setattr("mimd.report.run", unavailable)
    args = parser.parse_args(["bench", "mimd", "--backend", "cupy"])
    with pytest.raises(SystemExit, match="bench mimd: backend 'cupy'"):
        args.func(args)


def test_progress_lines_before_each_part(tmp_path):
    lines = []
    # one part may be named by a plain string
    run(quick=True, parts="gradient", out=tmp_path, plots=False, echo=lines.append)
    assert lines[0] == "\n[gradient] running ..."
