"""No user's file is lost to an output: every output option of every command refuses a file
that exists, in one line naming it and the way out, before any work; ``--force`` replaces it.

The benchmark scripts of ``bench/`` are checked the same way in
``tests/bench/test_scripts.py``; this file covers the ``simd-emu`` commands and the GPU
check script.
"""

from __future__ import annotations

import numpy as np
import pytest

from simd.cli import main
from tests.entry_points import pyproject_commands

#: What an existing file holds before the command runs (and must hold after a refusal).
OLD = b"the user's own data"

FAST = ["--backend", "numpy"]
RENDER = ["render", "--dataset-size", "16", "--size", "24", "--pes", "16", "--no-progress", *FAST]
DIFFUSE = ["diffuse", "in.npy", "--pes", "2", "2", "--niter", "1", "--no-progress", *FAST]
BALANCE = ["bench", "balance", "--family", "uniform", "--pes", "8", "--balancers", "none",
           "--machines", "cm5", "--quiet"]  # fmt: skip

#: (command line, the outputs it names, the one that exists already).
CASES = {
    "render -o": ([*RENDER, "-o", "f.png"], ["f.png"], "f.png"),
    "render --depth": ([*RENDER, "-o", "f.png", "--depth", "d.npy"], ["f.png", "d.npy"], "d.npy"),
    "render --json": ([*RENDER, "-o", "f.png", "--json", "s.json"], ["f.png", "s.json"], "s.json"),
    "render --orbit": ([*RENDER, "--orbit", "2", "-o", "t.gif"], ["t.gif"], "t.gif"),
    "render VOLUME": (
        ["render", "ball.npy", "--level", "0.5", "-o", "f.png", "--no-progress", *FAST],
        ["f.png"],
        "f.png",
    ),
    "isosurface -o": (
        ["isosurface", "ball.npy", "--level", "0.5", "-o", "m.ply", *FAST],
        ["m.ply"],
        "m.ply",
    ),
    "diffuse -o": ([*DIFFUSE, "-o", "o.npy"], ["o.npy"], "o.npy"),
    "diffuse --plot-load": (
        [*DIFFUSE, "-o", "o.npy", "--plot-load", "l.png"],
        ["o.npy", "l.png"],
        "l.png",
    ),
    "diffuse --activity-map": (
        [*DIFFUSE, "-o", "o.npy", "--activity-map", "a.png"],
        ["o.npy", "a.png"],
        "a.png",
    ),
    "diffuse --method dense": (
        [*DIFFUSE[:2], "--method", "dense", "--niter", "1", *FAST, "-o", "o.npy"],
        ["o.npy"],
        "o.npy",
    ),
    "bench balance --json": ([*BALANCE, "--json", "b.json"], ["b.json"], "b.json"),
    "bench balance --plots": (
        [*BALANCE, "--plots", "pics"],
        ["pics/balance-uniform-8.png"],
        "pics/balance-uniform-8.png",
    ),
}


@pytest.fixture
def inputs(tmp_path, monkeypatch):
    """The inputs the command lines name, in a folder of their own."""
    monkeypatch.chdir(tmp_path)
    x, y, z = np.mgrid[-1:1:8j, -1:1:8j, -1:1:8j]
    np.save(tmp_path / "ball.npy", (x * x + y * y + z * z).astype(np.float32))
    np.save(tmp_path / "in.npy", np.arange(64, dtype=np.float32).reshape(8, 8))
    (tmp_path / "pics").mkdir()
    return tmp_path


def _files(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


@pytest.mark.parametrize("case", list(CASES))
def test_an_output_that_exists_is_refused_before_any_work_unless_forced(inputs, capsys, case):
    argv, outputs, existing = CASES[case]
    (inputs / existing).write_bytes(OLD)
    before = _files(inputs)
    assert main(argv, commands=pyproject_commands()) == 2
    captured = capsys.readouterr()
    command = " ".join(argv[:2] if argv[0] == "bench" else argv[:1])
    assert captured.err == (
        f"simd-emu {command}: {existing}: exists; add --force to replace it, or choose "
        "another name\n"
    )
    assert captured.out == ""
    assert (inputs / existing).read_bytes() == OLD and _files(inputs) == before

    assert main([*argv, "--force"], commands=pyproject_commands()) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"replacing {existing}\n")
    assert (inputs / existing).read_bytes() != OLD
    assert all((inputs / name).is_file() for name in outputs)


def test_a_depth_map_never_replaces_the_users_volume(tmp_path, capsys, monkeypatch):
    """``simd-emu render --mesh ico.stl --depth torus.npy -o r.png``: a slip of the hand
    that named the user's volume for the depth map."""
    trimesh = pytest.importorskip("trimesh")
    monkeypatch.chdir(tmp_path)
    trimesh.creation.icosphere(1).export("ico.stl")
    x, y, z = np.mgrid[-1:1:8j, -1:1:8j, -1:1:8j]
    torus = (x * x + y * y + z * z).astype(np.float32)
    np.save("torus.npy", torus)
    argv = ["render", "--mesh", "ico.stl", "--depth", "torus.npy", "-o", "r.png", *FAST]
    assert main([*argv, "--no-progress"], commands=pyproject_commands()) == 2
    captured = capsys.readouterr()
    assert captured.err == (
        "simd-emu render: torus.npy: exists; add --force to replace it, or choose another name\n"
    )
    assert np.array_equal(np.load("torus.npy"), torus)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ico.stl", "torus.npy"]


def test_bench_mimd_refuses_its_results_that_exist(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mimd-quick.json").write_bytes(OLD)
    ran = []
    monkeypatch.setattr("mimd.report.run", lambda **kwargs: ran.append(kwargs))
    argv = ["bench", "mimd", "--quick", "--only", "gradient"]
    assert main(argv, commands=pyproject_commands()) == 2
    results = tmp_path / "mimd-quick.json"
    assert capsys.readouterr().err == (
        f"simd-emu bench mimd: {results}: exists; add --force to replace it, or choose "
        "another name\n"
    )
    assert not ran and results.read_bytes() == OLD
    assert main([*argv, "--force"], commands=pyproject_commands()) == 0
    assert ran and capsys.readouterr().out == f"replacing {results}\n"


def test_the_gpu_check_refuses_an_earlier_runs_files(tmp_path, capsys):
    from bench import gpu_check

    (tmp_path / "summary.txt").write_bytes(OLD)
    with pytest.raises(SystemExit) as refused:
        gpu_check.main(["--out", str(tmp_path), "--backend", "counting", "--budget", "1"])
    assert str(refused.value) == (
        f"python -m bench.gpu_check: {tmp_path / 'summary.txt'}: exists; add --force to "
        "replace it, or choose another name"
    )
    assert (tmp_path / "summary.txt").read_bytes() == OLD


def test_every_command_with_an_output_takes_force():
    """Every ``simd-emu`` command that writes a file offers ``--force``."""
    from simd.cli import build_parser

    parser = build_parser(pyproject_commands())
    writers = [
        ["render"],
        ["isosurface"],
        ["diffuse"],
        ["bench", "mimd"],
        ["bench", "balance"],
    ]
    for path in writers:
        node = parser
        for name in path:
            sub = next(a for a in node._actions if a.__class__.__name__ == "_SubParsersAction")
            node = sub.choices[name]
        assert "--force" in node._option_string_actions, path
