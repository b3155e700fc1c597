"""``simd-emu bench balance``: its runs, its outputs, and bad input refused in one line (exit
status 2) before any work."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from mimd import cli
from simd.cli import main
from tests.entry_points import pyproject_commands

PROG = "simd-emu bench balance"


def run(argv, capsys):
    status = main(["bench", "balance", "--quiet", *argv], commands=pyproject_commands())
    out, err = capsys.readouterr()
    return status, out, err


def test_registered_beside_bench_mimd():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    cli.register(sub)
    cli.register(sub)  # a second registration changes nothing
    args = parser.parse_args(["bench", "balance", "w.npy", "--machines", "mp1"])
    assert args.file == "w.npy" and args.func is cli._run_balance
    assert parser.parse_args(["bench", "mimd", "--quick"]).func is cli._run


def test_a_file_runs_with_its_table_json_and_pictures(tmp_path, capsys):
    np.save(tmp_path / "tasks.npy", np.array([100, 19, 0, 0, 0, 0, 0]))
    out_json = tmp_path / "res.json"
    argv = [str(tmp_path / "tasks.npy"), "--machines", "cm5,mp1", "--task-cost", "1e4",
            "--overestimate", "5", "--balancers", "none,cost-effective,diffusion",
            "--json", str(out_json), "--plots", str(tmp_path / "pics")]  # fmt: skip
    status, out, err = run(argv, capsys)
    assert status == 0, err
    assert "tasks: 7 entries, 119 tasks, max 100" in out
    rows = [line.split() for line in out.splitlines() if line.startswith("tasks ")]
    assert [(r[2], r[3], r[4]) for r in rows] == [
        ("cm5", "none", "100"),
        ("cm5", "cost-effective", "20"),
        ("mp1", "none", "100"),
        ("mp1", "cost-effective", "20"),
        ("cluster", "none", "-"),
        ("cluster", "diffusion", "-"),
    ]
    data = json.loads(out_json.read_text())
    assert data["benchmark"] == "balance" and "versions" in data["environment"]
    (w,) = data["workloads"]
    assert w["tasks"] == 119 and w["balancers"]["cm5/cost-effective"]["iterations"] == 20
    assert all("model_seconds" in r and "iterations" in r for r in w["runs"])
    assert sorted(p.name for p in (tmp_path / "pics").iterdir()) == ["balance-tasks-7.png"]


def test_families_on_a_mesh_with_the_what_if(tmp_path, capsys):
    argv = ["--family", "step", "--grid", "2", "--pes", "4x4", "--machines", "mp1",
            "--every", "1,4", "--sweep", "scan,shift", "--factors", "1/4,4",
            "--plots", str(tmp_path)]  # fmt: skip
    status, out, err = run(argv, capsys)
    assert status == 0, err
    assert "locality held" in out
    assert "step on 4x4 mp1: speed-up over no balancing" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "balance-step-4x4.png",
        "whatif-step-4x4-mp1.png",
    ]


def test_files_that_exist_are_refused_or_with_force_named_before_the_work(tmp_path, capsys):
    (tmp_path / "old.json").write_text("{}")
    argv = ["--family", "uniform", "--pes", "8", "--balancers", "none", "--machines", "cm5",
            "--json", str(tmp_path / "old.json")]  # fmt: skip
    status, out, err = run(argv, capsys)
    assert status == 2 and out == "" and (tmp_path / "old.json").read_text() == "{}"
    assert err.endswith(f"{tmp_path / 'old.json'}: exists; add --force to replace it, or choose "
                        "another name\n")  # fmt: skip
    status, out, _ = run([*argv, "--force"], capsys)
    assert status == 0
    assert out.splitlines()[0] == f"replacing {tmp_path / 'old.json'}"


@pytest.mark.parametrize(
    ("text", "suffix", "message"),
    [
        ("3 -1 2\n", ".txt", "negative count (-1 at index 1)"),
        ("3 1.5 2\n", ".txt", "fractional count (1.5 at index 1)"),
        ("", ".txt", "is empty"),
        ("1,nan\n", ".csv", "holds NaN at index 1"),
        ("1 3000000000\n", ".txt", "more than the 2**31 - 1 one processor can hold"),
        ("2000000000 2000000000\n", ".txt", "tasks in all, more than"),
        ("one,two\n", ".csv", "not a workload file"),
    ],
)
def test_bad_workloads_get_one_line_before_any_work(tmp_path, capsys, monkeypatch, text,
                                                    suffix, message):  # fmt: skip
    monkeypatch.setattr("mimd.balance_runner.Runner.run", _no_work)
    path = tmp_path / f"w{suffix}"
    path.write_text(text)
    status, out, err = run([str(path)], capsys)
    assert status == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith(f"{PROG}: {path}")
    assert message in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--family", "gauss"], "unknown family 'gauss'"),
        (["--family", "zipf", "--param", "0.5"], "exponent above 1"),
        (["--balancers", "magic"], "unknown balancer 'magic'"),
        (["--machines", "cray"], "unknown machine 'cray'"),
        (["--pes", "0"], "--pes: '0' is not a number of processors"),
        (["--pes", "4x4"], "needs --grid"),
        (
            ["--family", "step", "--grid", "1", "--pes", "4", "--balancers", "expand"],
            "does not run a 2-D grid",
        ),
        (["--balancers", "scan-directed"], "does not run a 1-D workload"),
        (["--every", "0"], "--every: '0' must be above 0"),
        (["--sweep", "disk"], "--sweep: unknown kind 'disk'"),
        (["--json", "out.txt"], "out.txt: unknown format '.txt'; use .json"),
        (["--render", "unbalanced", "--family", "step"], "give one workload"),
        (["--mimd-task-seconds", "0"], "--mimd-task-seconds must be above 0"),
        (["--task-cost", "nan"], "--task-cost must be a finite number >= 0, got nan"),
        (["--overestimate", "-2"], "--overestimate must be a finite number >= 0, got -2"),
        (["--sweep", "scan", "--sweep-machine", "wall"], "'wall' is a wall clock"),
        (["--sweep", "scan", "--sweep-machine", "cm7"], "unknown machine 'cm7'"),
        (["--sweep", "scan", "--factors", "1/0"], "--factors: '1/0' is not a number"),
    ],
)
def test_bad_options_get_one_line_before_any_work(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("mimd.balance_runner.Runner.run", _no_work)
    status, out, err = run(argv, capsys)
    assert status == 2, err
    assert len(err.splitlines()) == 1 and err.startswith(f"{PROG}: ") and message in err
    assert not list(tmp_path.iterdir())


def test_a_missing_mesh_file(capsys):
    status, _, err = run(["--render", "no/such/mesh.ply"], capsys)
    assert status == 2 and "no such mesh file, and not a built-in data set" in err


def _no_work(*args, **kwargs):
    raise AssertionError("a run started")


def test_a_workload_too_large_for_memory_is_refused_before_any_run(capsys, monkeypatch):
    monkeypatch.setattr("mimd.balance_baselines._free_memory", lambda: 10**6)
    monkeypatch.setattr("mimd.balance_runner.Runner.run", _no_work)
    status, out, err = run(["--family", "zipf", "--pes", "256"], capsys)
    assert status == 2 and out == "" and len(err.splitlines()) == 1
    assert "the MIMD simulation of" in err and "more than the 0.0 GB free here" in err
    assert "leave the MIMD baselines out (--balancers none,cost-effective" in err


def test_rows_come_as_they_are_made_and_ctrl_c_keeps_them(tmp_path, capsys, monkeypatch):
    # the 4th run is interrupted: the header and 3 rows are out, and in the JSON
    from simd.balance import comparison

    made = []
    real = comparison.Plan._simd_run

    def run_or_stop(self, *a):
        if len(made) == 3:
            raise KeyboardInterrupt
        made.append(real(self, *a))
        return made[-1]

    monkeypatch.setattr(comparison.Plan, "_simd_run", run_or_stop)
    out_json = tmp_path / "res.json"
    argv = ["--family", "zipf", "--pes", "64", "--machines", "cm5,mp1", "--json", str(out_json)]
    status, out, err = run(argv, capsys)
    assert status == 130 and err.strip() == f"{PROG}: interrupted"
    lines = out.splitlines()
    assert lines[1].startswith("workload") and len([x for x in lines if x.startswith("zipf ")]) == 3
    assert lines[-1] == f"wrote {out_json} (3 runs done before the interruption)"
    data = json.loads(out_json.read_text())
    assert data["interrupted"] and len(data["workloads"][0]["runs"]) == 3


def test_the_json_keeps_the_users_options_and_every_option_has_help(tmp_path, capsys):
    out_json = tmp_path / "res.json"
    status, _, err = run(["--family", "step", "--pes", "16", "--balancers", "none",
                          "--machines", "cm5", "--json", str(out_json)], capsys)  # fmt: skip
    assert status == 0, err
    options = json.loads(out_json.read_text())["options"]
    assert options["family"] == "step" and options["quiet"] is True
    assert not [k for k in options if k.startswith("_") or k in ("func", "command", "bench")]
    parser = argparse.ArgumentParser()
    from mimd.bench_balance import add_arguments

    add_arguments(parser)
    assert all(a.help for a in parser._actions)


def test_the_what_if_says_why_a_row_does_not_move(capsys):
    argv = ["--family", "zipf", "--pes", "64", "--balancers", "none,cost-effective",
            "--machines", "cm5_calibrated", "--sweep", "scan,shift",
            "--factors", "1/4,4"]  # fmt: skip
    status, out, err = run(argv, capsys)
    assert status == 0, err
    shift = [line for line in out.splitlines() if line.startswith("shift ")]
    assert shift and all(
        line.endswith("the same at every factor: the preset charges nothing for shift")
        for line in shift
    )
    scan = [line for line in out.splitlines() if line.startswith("scan ")]
    assert scan and not any("the same at every factor" in line for line in scan)


@pytest.mark.slow
def test_the_renderers_loop(capsys):
    argv = ["--render", "unbalanced", "--size", "32", "--image", "128", "--pes", "64",
            "--machines", "cm5", "--balancers", "none,cost-effective,expand"]  # fmt: skip
    status, out, err = run(argv, capsys)
    assert status == 0, err
    assert "unbalanced scan:" in out and "cost-effective" in out
