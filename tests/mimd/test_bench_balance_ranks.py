"""``mpiexec -n N simd-emu bench balance ... --sweep ...``: the runs spread over the ranks,
the table the same as on one rank (wall times aside)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.mpi_support import ROOT, run_ranks

ARGV = ["--family", "zipf,hotspot", "--pes", "64", "--machines", "cm5,mp1",
        "--balancers", "none,cost-effective,expand", "--sweep", "scan,shift",
        "--factors", "1/4,1,4", "--quiet"]  # fmt: skip


def _table(text: str) -> list[list[str]]:
    """The printed lines, without the wall-time column (the 7th of a run's row)."""
    rows = []
    for line in text.splitlines():
        cells = line.split()
        if cells and cells[0] in ("zipf", "hotspot") and len(cells) > 6:
            cells = cells[:6] + cells[7:]
        rows.append(cells)
    return rows


@pytest.mark.mpi
def test_the_same_table_on_three_ranks_as_on_one(tmp_path):
    one = subprocess.run(
        [sys.executable, "-m", "simd.cli", "bench", "balance", *ARGV, "--json",
         str(tmp_path / "one.json")],
        capture_output=True, text=True, timeout=300, cwd=ROOT, check=True,
    )  # fmt: skip
    ranks = run_ranks(3, "-m simd.cli", "bench", "balance", *ARGV, "--json",
                      str(tmp_path / "three.json"), timeout=300, cwd=ROOT)  # fmt: skip
    out = ranks.stdout.replace(str(tmp_path / "three.json"), str(tmp_path / "one.json"))
    assert _table(out) == _table(one.stdout)
    assert "pays up to" in out and "the same at every factor" in out
    a, b = (json.loads((tmp_path / f).read_text()) for f in ("one.json", "three.json"))
    assert a["sweeps"] == b["sweeps"]
    assert [r["model_seconds"] for w in a["workloads"] for r in w["runs"]] == [
        r["model_seconds"] for w in b["workloads"] for r in w["runs"]
    ]
