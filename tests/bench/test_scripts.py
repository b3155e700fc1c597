"""The benchmark scripts ``bench/*.py``: how they run, and where their results go.

They are modules of the source tree's ``bench`` package, run as ``python -m bench.<name>``
from the root (no ``sys.path`` preamble: see ``bench/__init__.py``) and imported so here.

Each script writes to the current folder, to ``--out DIR`` or, with ``--save``, to the
source tree's ``bench/results``; it checks the folder before any work and names a file it
replaces. The measurements themselves are stubbed (``measure``, or ``run`` for
primitives.py) so that these tests check the option handling in well under a second; one
script also runs its quickest real mode.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
RESULTS = BENCH / "results"

#: script -> (the function doing the work, the JSON it writes with --quick)
SCRIPTS = {
    "render": ("measure", "render-quick.json"),
    "diffusion": ("measure", "diffusion-quick.json"),
    "primitives": ("run", None),  # primitives-<backend>-<host>.json
    "kernel_floors": ("measure", None),  # kernel-floors-counting-<host>.json (GPU or stand-in)
    "opengl_agreement": ("measure", "opengl_agreement-quick.json"),
    "render_speed": ("measure", "render_speed-quick.json"),
    "render_scale": ("measure", "render_scale-quick.json"),
    "gpu_budget": ("measure", "gpu_budget-quick.json"),
    "isosurface": ("measure", "isosurface-quick.json"),
    "balance": ("measure", "balance-quick.json"),
    "balance_speed": ("measure", "balance_speed-quick.json"),
    "scaling": ("measure", "scaling-quick.json"),
    "table1": ("measure", "table1-quick.json"),
    "view": ("measure", "view-quick.json"),
}


def _load(name: str):
    return importlib.import_module(f"bench.{name}")


def _snapshot() -> dict[str, float]:
    return {p.name: p.stat().st_mtime_ns for p in RESULTS.iterdir()}


def _stub(calls: list):
    def work(*args, **kwargs):
        calls.append(args)
        # the keys the scripts read back from their records
        return {"seconds": 0.0, "goal_met": True, "backend": "numpy", "stub": True}

    return work


def _expected_name(name: str, default: str | None) -> str:
    if default is not None:
        return default
    import platform

    if name == "kernel_floors":
        return f"kernel-floors-counting-{platform.node() or 'host'}.json"
    return f"primitives-numpy-{platform.node() or 'host'}.json"


def _quick(name: str) -> list[str]:
    """The quickest options of a script (kernel_floors runs on a GPU or its stand-in)."""
    if name == "gpu_budget":
        return ["--quick"]
    quick = ["--quick", "--backend", "counting" if name == "kernel_floors" else "numpy"]
    return quick + (["--without-simgrid"] if name == "balance_speed" else [])  # optional


def test_every_script_is_covered():
    # mimd: tests/mimd; gpu_check (the GPU check, a folder of logs): tests/bench/test_gpu_check.py
    # gpu_frames: a part of gpu_check, no script of its own
    scripts = {p.stem for p in BENCH.glob("*.py")} - {"mimd", "gpu_check", "gpu_frames", "__init__"}
    assert scripts == set(SCRIPTS)


@pytest.mark.parametrize("name", [*sorted(SCRIPTS), "mimd", "cm5.fit", "gpu_check"])
def test_the_readme_command_runs_from_the_root_with_nothing_on_the_path(name):
    """``python -m bench.<name>`` from the source tree's root, PYTHONPATH unset: the root is
    first on the path, so ``bench/diffusion.py`` and ``bench/mimd.py`` do not shadow the
    packages they are named after (they did as ``python bench/<name>.py``)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-m", f"bench.{name}", "--help"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"usage: python -m bench.{name} ")


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_results_go_to_the_current_folder_then_out_then_save(name, tmp_path, monkeypatch, capsys):
    func, default = SCRIPTS[name]
    script = _load(name)
    assert script.SAVE_DIR in (RESULTS, RESULTS / name)  # a folder of its own for many pictures
    calls: list = []
    monkeypatch.setattr(script, func, _stub(calls))
    before = _snapshot()
    quick = _quick(name)
    expected = _expected_name(name, default)

    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert script.main(quick) in (0, None)
    assert [p.name for p in work.iterdir()] == [expected]
    assert json.loads((work / expected).read_text())["stub"] is True
    out = capsys.readouterr().out
    assert "replacing" not in out and str(work / expected) in out

    # a second run refuses to replace the file, unless --force, and then says so
    with pytest.raises(SystemExit) as refused:
        script.main(quick)
    assert refused.value.code == 2
    assert f"{work / expected}: exists; add --force" in capsys.readouterr().err
    assert script.main([*quick, "--force"]) in (0, None)
    assert f"replacing {work / expected}" in capsys.readouterr().out
    assert [p.name for p in work.iterdir()] == [expected]

    # --out DIR, made if missing
    dest = tmp_path / "new" / "folder"
    assert script.main([*quick, "--out", str(dest)]) in (0, None)
    assert [p.name for p in dest.iterdir()] == [expected]

    # --save: the source tree's bench/results (here redirected)
    monkeypatch.setattr(script, "SAVE_DIR", tmp_path / "saved")
    assert script.main([*quick, "--save"]) in (0, None)
    assert [p.name for p in (tmp_path / "saved").iterdir()] == [expected]
    with pytest.raises(SystemExit):
        script.main([*quick, "--save", "--out", str(dest)])

    assert len(calls) == 4
    assert _snapshot() == before  # the committed results were not touched


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_unwritable_out_fails_before_any_work(name, tmp_path, monkeypatch, capsys):
    func, _ = SCRIPTS[name]
    script = _load(name)
    calls: list = []
    monkeypatch.setattr(script, func, _stub(calls))
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        script.main(["--quick", "--out", str(blocker / "sub")])
    assert exc.value.code == 2
    captured = capsys.readouterr()
    assert calls == [] and captured.out == ""
    assert captured.err.strip().splitlines() == [
        f"python -m bench.{name}: cannot write results to '{blocker / 'sub'}': '{blocker}' is a "
        "file, not a folder"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_gpu_budget_quickest_real_run(tmp_path, monkeypatch, capsys):
    script = _load("gpu_budget")
    before = _snapshot()
    monkeypatch.chdir(tmp_path)
    # --no-pool: the test process keeps glibc's settings
    argv = ["--quick", "--forms", "expand", "--no-unbalanced", "--repeat", "1", "--no-pool"]
    assert script.main(argv) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["gpu_budget-quick.json"]
    data = json.loads((tmp_path / "gpu_budget-quick.json").read_text())
    assert data["benchmark"] == "gpu_budget" and data["frames"]
    assert _snapshot() == before


def test_render_scale_quickest_real_run(tmp_path, monkeypatch):
    script = _load("render_scale")
    before = _snapshot()
    monkeypatch.chdir(tmp_path)
    argv = ["--quick", "--sets", "24", "--forms", "expand", "--images", "64", "--frames", "1"]
    assert script.main(argv) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "render_scale-quick.json",
        "render_scale-quick.png",
    ]
    data = json.loads((tmp_path / "render_scale-quick.json").read_text())
    (row,) = data["rows"]
    assert row["triangles"] > 0 and row["median_s"] > 0 and row["peak_bytes"] > 0
    assert row["bytes_per_triangle"] == row["peak_bytes"] / row["triangles"]
    assert _snapshot() == before


def test_scaling_without_mpiexec_fails_in_one_line_before_any_launch(tmp_path, monkeypatch, capsys):
    """It printed "strong scaling on 1 rank(s) ..." first, and exited with status 1."""
    script = _load("scaling")
    calls: list = []
    monkeypatch.setattr("simd.launch.find_mpiexec", lambda: None)
    monkeypatch.setattr(script, "launch", _stub(calls))
    with pytest.raises(SystemExit) as exc:
        script.main(["--quick", "--out", str(tmp_path)])
    assert exc.value.code == 2
    captured = capsys.readouterr()
    assert calls == [] and captured.out == ""
    assert captured.err == "python -m bench.scaling: no mpiexec: pip install 'simd-emu[mpi]'\n"
    assert list(tmp_path.iterdir()) == []


def test_diffusion_throughput_without_medpy_measures_ours_alone(monkeypatch, capsys):
    """medpy is an oracle of the test extra; without it the quick run died with a
    ModuleNotFoundError after minutes of work."""
    script = _load("diffusion")
    # import medpy... raises ImportError, also where an earlier test imported its modules
    for name in [n for n in sys.modules if n == "medpy" or n.startswith("medpy.")] + ["medpy"]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setattr(script, "gpu_throughput", lambda quick: None)
    record = script.throughput(quick=True)
    (row,) = record["cpu"]
    assert row["ours_pixels_per_s"] > 0
    assert row["medpy_pixels_per_s"] is None and row["speedup"] is None
    out = capsys.readouterr().out
    assert "ours alone, medpy is not installed" in out and "dense 512x512: ours " in out


def test_view_quickest_real_run():
    """bench.view.measure, as bench.gpu_check may call it: the viewer served, a scripted
    page's drag, full frames and level changes, all measured."""
    pytest.importorskip("starlette", reason="the viewer needs the view extra")
    script = _load("view")
    lines: list[str] = []
    record = script.measure("numpy", 0.2, quick=True, echo=lines.append)
    page = record["page"]
    assert page["drag"]["frames"] >= 1 and page["drag"]["size"] == [64, 64]
    assert page["still"]["fps"] > 0 and page["still"]["size"] == [128, 128]
    level = record["level"]
    assert len(level["seconds"]) == 3 and all(t > 0 for t in level["triangles"])
    assert record["render_only"]["drag"]["fps"] > 0
    assert lines[0].startswith(f"{record['triangles']:,} triangles at 128x128 on numpy")
