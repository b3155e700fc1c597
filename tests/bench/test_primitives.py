"""``bench/primitives.py``: kernel and call times on the CuPy code path (the counting
backend, whose ``cuda.Event`` works) and on NumPy, and ``--host-overhead``."""

from __future__ import annotations

import json

from tests.bench.test_scripts import _load


def test_run_on_the_cupy_code_path_reports_kernel_and_call_times(capsys):
    script = _load("primitives")
    record = script.run(
        "counting", [1 << 10], budget=0.0, names=["scan-add", "get"], copy_elements=1 << 12
    )
    assert record["backend"] == "cupy"
    assert {r["primitive"] for r in record["results"]} == {"scan-add", "get"}
    for row in record["results"]:
        assert row["kernel_seconds"] > 0 and row["call_seconds"] > 0
        assert row["issue_seconds"] > 0
        assert row["seconds"] == row["kernel_seconds"]
    assert "kernel" in capsys.readouterr().out


def test_run_on_numpy_times_on_the_host_clock():
    script = _load("primitives")
    record = script.run("numpy", [1 << 10], budget=0.0, names=["shift"], copy_elements=1 << 12)
    (row,) = record["results"]
    assert row["kernel_seconds"] == row["call_seconds"] == row["issue_seconds"] > 0


def test_host_overhead_writes_a_table_and_json(tmp_path, monkeypatch, capsys):
    script = _load("primitives")
    monkeypatch.chdir(tmp_path)
    assert script.main(["--host-overhead", "--quick"]) == 0
    (path,) = tmp_path.glob("primitives-host-calls-*.json")
    record = json.loads(path.read_text())
    names = [r["instruction"] for r in record["results"]]
    for name in ("scan", "scan-segmented", "scan-exclusive", "reduce", "send", "get"):
        assert name in names
    for name in ("shift", "count", "enumerate", "pack"):
        assert name in names
    assert record["goal_us"] == 10.0
    for row in record["results"]:
        assert row["host_us_per_call"] >= 0
        assert row["stand_in_us_per_call"] >= 0
        # judged on our own Python: the host time less the counting stand-in's share
        assert row["goal_met"] == (row["ours_us_per_call"] <= 10.0)
    # the launches and library calls of one call, pinned: the router and scan kernels fold
    # their checks and masks in; a scan, a shift and a get are one launch each
    counts = {r["instruction"]: (r["launches_per_call"], r["syncs_per_call"]) for r in
              record["results"]}  # fmt: skip
    for name in ("scan", "scan-segmented", "scan-exclusive", "get", "shift"):
        assert counts[name] == (1.0, 0.0), name
    assert counts["send-add"] == (2.0, 0.0)  # the new array's fill and the send
    assert counts["send"] == (3.0, 0.0)  # the fill, the winners and the writes
    for row in record["results"]:  # a launch is a call (one call may launch two kernels)
        assert row["library_calls_per_call"] >= (row["launches_per_call"] > 0)
    out = capsys.readouterr().out
    assert "host us/call" in out and "scan-segmented" in out
