"""The GPU machine check (``python -m bench.gpu_check``): what it runs and how it compares.

Its whole dry run on the counting stand-in is CI's GPU machine rehearsal (``.ci/run``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench import gpu_check

ROOT = Path(__file__).resolve().parents[2]


def test_the_lease_runs_every_file_of_gpu_tests():
    marked = {
        str(path.relative_to(ROOT))
        for path in (ROOT / "tests").rglob("test_*.py")
        if path != Path(__file__) and "pytest.mark.gpu" in path.read_text(encoding="utf-8")
    }
    assert marked == set(gpu_check.TESTS)


def test_frames_compare_pixel_for_pixel():
    a = np.zeros((4, 5, 3), np.uint8)
    b = a.copy()
    b[1, 2, 0] = 7
    assert gpu_check._compare(a, a) == {"equal": True, "pixels_differ": 0, "first": []}
    assert gpu_check._compare(a, b) == {"equal": False, "pixels_differ": 1, "first": [[1, 2]]}
    depth = np.full((2, 2), np.nan, np.float32)
    assert gpu_check._compare(depth, depth.copy())["equal"]  # NaN (no surface) equals NaN
    assert not gpu_check._compare(depth, depth.astype(np.float64))["equal"]


def test_at_most_eight_files_come_back():
    assert len({"summary.txt", "results.json", "tests.xml", *gpu_check.LOGS}) == 9


def test_an_output_that_is_a_file_is_refused_before_any_work(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(SystemExit, match="cannot write results to"):
        gpu_check.main(["--out", str(blocker / "out"), "--backend", "counting"])
    assert blocker.read_text() == ""


def test_the_frames_step_fails_on_a_part_that_failed(tmp_path, monkeypatch):
    from bench import gpu_frames

    got = {"orbit": {"expand": {"frames_per_second": 9.0}}, "view": {"error": "OSError: x"}}
    monkeypatch.setattr(gpu_frames, "measure", lambda *a, **k: got)
    with pytest.raises(SystemExit, match=r"parts failed: \['view'\]"):
        gpu_check.step_frames(tmp_path, "counting")


@pytest.mark.slow  # about 40 s; CI's GPU machine rehearsal runs this step, failing on an error
def test_the_frames_step_measures_every_part_on_the_stand_in(monkeypatch):
    from bench import gpu_frames

    monkeypatch.setenv("SIMD_BACKEND", "counting")
    keys: list[str] = []
    got = gpu_frames.measure("counting", None, keys.append, budget=120)
    assert set(got) == {"replayed", "redistributing", "breakdown", "isosurface", "orbit",
                        "view", "mesh_diffusion", "balance", "scale"}  # fmt: skip
    failed = {name: part for name, part in got.items() if "error" in part or "skipped" in part}
    assert not failed, failed
    assert all(got["replayed"][form]["replayed"] for form in gpu_frames.FORMS)
    assert sum(v["decisions"] for v in got["redistributing"]["usual"]["loops"].values()) > 0
    assert not any("budget" in k or "met" in k for k in keys)  # no verdicts without a GPU
    assert got["view"]["page"]["drag"]["frames"] > 0  # the scripted page got frames
