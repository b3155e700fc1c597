"""``bench/kernel_floors.py`` end to end on the counting stand-in for CuPy: every job timed
beside its copy and the kernels it is compared with, the results checked against the
library's, the budget kept, the missing libraries named."""

from __future__ import annotations

import json

from tests.bench.test_scripts import _load

JOBS = {"scan", "segmented add", "segmented copy", "shift", "get", "send add"}


def test_every_job_is_timed_beside_its_floor_and_checked():
    script = _load("kernel_floors")
    record = script.measure(60.0, backend="counting", sizes=(8, 10))
    rows = record["rows"]
    assert {r["job"] for r in rows} == JOBS and not record["skipped"]
    assert {(r["dtype"], r["n"]) for r in rows if r["job"] == "scan"} == {
        (d, n) for d in ("int32", "int64", "float32") for n in (256, 1024)
    }
    beside = {"scan": {"copy", "cumsum"}, "segmented add": {"copy"}, "shift": {"copy", "roll"},
              "get": {"plain", "take"}, "send add": {"plain"}}  # fmt: skip
    for r in rows:
        assert r["ours_seconds"] > 0
        for name in beside.get(r["job"], {"copy"}):
            assert r[f"vs_{name}"] == r[f"{name}_seconds"] / r["ours_seconds"]
    # ours equals the library's (or the plain kernel's) wherever the result is exact
    checked = [r for r in rows if "equal" in r]
    assert {r["job"] for r in checked} == {"scan", "shift", "get", "send add"}
    assert all(r["equal"] for r in checked)
    libraries = record["libraries"]
    assert "no CUB" in libraries["cub"] and "counting stand-in" in libraries["cccl"]


def test_the_budget_is_kept():
    script = _load("kernel_floors")
    record = script.measure(0.0, backend="counting", sizes=(8,))
    assert record["rows"] == []
    assert "scan int32 2^8" in record["skipped"] and "get and send 2^8" in record["skipped"]


def test_main_writes_a_table_and_json(tmp_path, capsys):
    script = _load("kernel_floors")
    assert script.main(["--backend", "counting", "--quick", "--out", str(tmp_path)]) == 0
    (path,) = tmp_path.glob("kernel-floors-counting-*.json")
    record = json.loads(path.read_text())
    assert {r["job"] for r in record["rows"]} == JOBS
    assert record["goals"]["scan"] == {"beside": "copy", "at_least": 0.85}
    out = capsys.readouterr().out
    assert "ratios (theirs / ours)" in out and "segmented copy" in out
