"""The balancing page's Python blocks run as written, and the numbers it quotes are those of
the committed benchmark."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "balance.md"
RESULTS = ROOT / "bench" / "results" / "balance" / "balance.json"


def test_python_blocks_run_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, "balance.md block", "exec"), {"__name__": "__main__"})  # noqa: S102


@pytest.mark.skipif(not RESULTS.is_file(), reason="the benchmark's results are not committed")
def test_the_committed_benchmark_covers_the_families_at_both_sizes():
    data = json.loads(RESULTS.read_text(encoding="utf-8"))
    assert data["sizes"] == [512, 4096]
    assert len(data["families"]) == 8
    assert {"versions", "cpu"} <= set(data["environment"])
    for w in data["loops"] + data["meshes"]:
        assert all("iterations" in r and "model_seconds" in r for r in w["runs"])
    assert all(r["locality"] in (None, True) for w in data["meshes"] for r in w["runs"])
