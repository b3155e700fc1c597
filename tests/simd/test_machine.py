"""The machine as a whole: backends, phases and statistics, the model clock, the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from simd import XNET, BackendUnavailableError, CostModel, Machine
from simd.backend import cupy_status, resolve_backend
from simd.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_numpy_backend_and_repr():
    m = Machine(pes=(4, 4), backend="numpy")
    assert m.backend == "numpy" and m.xp is np
    assert m.pes == (4, 4) and m.npes == 16
    assert m.cost.name == "MP-1/16"
    assert "4x4" in repr(m)


def test_auto_falls_back_to_numpy_without_a_gpu(monkeypatch):
    monkeypatch.delenv("SIMD_BACKEND", raising=False)
    ok, _ = cupy_status()
    assert Machine(backend="auto").backend == ("cupy" if ok else "numpy")


def test_simd_backend_variable_overrides_auto(monkeypatch):
    monkeypatch.setenv("SIMD_BACKEND", "numpy")
    assert Machine(backend="auto").backend == "numpy"
    monkeypatch.setenv("SIMD_BACKEND", "fortran")
    with pytest.raises(ValueError, match="SIMD_BACKEND"):
        Machine(backend="auto")


def test_cupy_without_gpu_raises_a_clear_error():
    ok, reason = cupy_status()
    if ok:
        pytest.skip("a GPU is present")
    with pytest.raises(BackendUnavailableError, match="'cupy' was asked for but is unavailable"):
        resolve_backend("cupy")


@pytest.mark.parametrize("pes", [0, -3, (4, 0), "many", (2.5,)])
def test_bad_machine_shapes(pes):
    with pytest.raises(ValueError, match="pes"):
        Machine(pes=pes, backend="numpy")


def test_phases_count_calls_bytes_cycles_and_wall():
    m = Machine(pes=4, backend="numpy")
    x = np.arange(16, dtype=np.int64)
    with m.phase("gather"):
        m.scan(x)
        m.scan(x, "max")
        with m.phase("inner"):
            m.send(x, x, 16)
    m.reduce(x)
    stats = m.stats
    gather = stats["gather"]
    assert gather.calls == {"scan": 2}
    assert gather.bytes == 2 * 2 * x.nbytes
    assert stats["gather/inner"].calls == {"send": 1}
    assert stats["(no phase)"].calls == {"reduce": 1}
    assert gather.wall >= stats["gather/inner"].wall >= 0
    assert stats.total.cycles == pytest.approx(m.clock)
    assert m.clock == pytest.approx(sum(p.cycles for p in stats.phases.values()))
    table = str(stats)
    assert "gather/inner" in table and "model cycles" in table and "total" in table
    # the JSON form round-trips to the same numbers, checked against the hand counts
    data = json.loads(json.dumps(stats.to_dict()))
    assert data["machine"] == m.cost.name
    assert set(data["phases"]) == {"gather", "gather/inner", "(no phase)"}
    assert data["phases"]["gather"]["calls"] == {"scan": 2}
    assert data["phases"]["gather/inner"]["calls"] == {"send": 1}
    assert data["phases"]["(no phase)"]["calls"] == {"reduce": 1}
    assert data["phases"]["gather"]["bytes"] == 2 * 2 * x.nbytes
    assert sum(p["cycles"] for p in data["phases"].values()) == pytest.approx(m.clock)
    for name, p in data["phases"].items():
        assert p["cycles"] == pytest.approx(stats[name].cycles) and p["cycles"] > 0
        assert p["bytes"] == stats[name].bytes
        assert p["wall_seconds"] == pytest.approx(stats[name].wall)
        assert p["model_seconds"] == pytest.approx(p["cycles"] / m.cost.clock_hz)
    m.reset_stats()
    assert m.clock == 0 and not m.stats.phases


def test_phase_names_are_checked():
    m = Machine(backend="numpy")
    with pytest.raises(ValueError, match="phase name"):
        with m.phase("a/b"):
            pass


def test_model_clock_follows_vp_ratio_and_network_height():
    cm5 = CostModel.cm5(32)
    assert cm5.vp_ratio(1) == 1 and cm5.vp_ratio(33) == 2
    assert cm5.cycles("elementwise", 64, ops=3) == 2 * 3 * cm5.elementwise
    # A scan pays a log2(P) network term on top of its local pass.
    assert cm5.cycles("scan", 32) == cm5.scan_per_vp + 5 * cm5.network_per_level
    big = CostModel.cm5(512)
    assert big.cycles("scan", 512) > cm5.cycles("scan", 32)
    # The router costs more than a mesh shift, which costs more than arithmetic.
    for model in (cm5, CostModel.mp1()):
        n = 100_000
        assert model.cycles("router", n) > model.cycles("shift", n) > model.cycles("elementwise", n)
    mp1 = CostModel.mp1()
    assert mp1.router_per_vp == pytest.approx(18 * mp1.shift_per_vp)
    with pytest.raises(ValueError, match="cost kind"):
        cm5.cycles("teleport", 1)


def test_vp_set_charges_the_declared_set():
    m = Machine(pes=8, backend="numpy")
    packed = np.arange(3)
    with m.vp_set(800):
        m.scan(packed)
    assert m.clock == m.cost.cycles("scan", 800)
    before = m.clock
    assert m.charge("elementwise", 80, ops=2) == 10 * 2 * m.cost.elementwise
    assert m.clock == before + 20


def test_machine_presets_by_shape_and_name():
    assert Machine(pes=32, backend="numpy").cost.name == "CM-5/32"
    assert Machine(pes=(64, 64), backend="numpy").cost.name == "MP-1/4096"
    assert Machine(pes=64, backend="numpy", cost="mp1").cost.name == "MP-1/64"
    m = Machine(pes=128, backend="numpy", cost=CostModel.cm5(32))
    assert m.cost.pes == 128
    with pytest.raises(ValueError, match="cost"):
        Machine(backend="numpy", cost="cray")


def test_cli_info(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "backend" in out and "numpy" in out
    assert main(["info", "--json"]) == 0
    env = json.loads(capsys.readouterr().out)
    assert env["versions"]["numpy"] == np.__version__


# ------------------------------------------------------------------ the API's messages


def test_a_bad_simd_backend_is_named(monkeypatch):
    monkeypatch.setenv("SIMD_BACKEND", "bogus")
    with pytest.raises(ValueError, match=r"unknown backend 'bogus' \(from the environment") as e:
        Machine(backend="auto")
    assert "'auto'" in str(e.value)  # among the expected values, not as the bad one
    assert "unknown backend 'auto'" not in str(e.value)
    monkeypatch.delenv("SIMD_BACKEND")
    with pytest.raises(ValueError, match=r"unknown backend 'fortran'; expected") as e:
        Machine(backend="fortran")
    assert "environment" not in str(e.value)


@pytest.mark.parametrize("pes", [2.5, None, "64x64", (64, 64.0), True, [], (3, -1)])
def test_pes_says_what_it_must_be(pes):
    with pytest.raises(ValueError) as e:
        Machine(pes=pes, backend="numpy")
    message = str(e.value)
    assert message.startswith("pes must be a positive int (a linear array of PEs, e.g. 512)")
    assert "a tuple of positive ints (a mesh, e.g. (64, 64))" in message
    assert message.endswith(f"got {pes!r}")


@pytest.mark.parametrize("pes", [2**24 + 1, 99999999999999, (4097, 4096)])
def test_pes_beyond_the_limit_are_refused(pes):
    from simd.operands import MAX_PES

    total = pes if isinstance(pes, int) else pes[0] * pes[1]
    with pytest.raises(ValueError) as e:
        Machine(pes=pes, backend="numpy")
    assert str(e.value) == f"pes must be at most {MAX_PES:,} PEs (2**24) in all, got {total:,}"
    assert Machine(pes=MAX_PES, backend="numpy").npes == MAX_PES == 2**24


def test_send_with_more_values_than_destinations_says_so():
    m = Machine(pes=4, backend="numpy")
    with pytest.raises(ValueError) as e:
        m.send(m.asarray([1, 2, 3]), m.asarray([0, 1]), 4)
    assert str(e.value).startswith(
        "send has values of shape (3,) for destinations of shape (2,) (3 values, 2 destinations)"
    )
    with pytest.raises(ValueError, match="destinations"):
        m.send(m.asarray([1.0, 2.0]), m.asarray([0, 1, 2]), into=m.asarray([0.0] * 4))
    # what broadcasts is still allowed: a scalar, or values broadcasting to dest's shape
    assert m.send(7, m.asarray([0, 2]), 4).tolist() == [7, 0, 7, 0]
    dest = m.asarray([[0, 1], [2, 3]])
    assert m.send(m.asarray([5, 6]), dest, 4).tolist() == [5, 6, 5, 6]


def test_shift_refuses_fewer_dimensions_than_the_mesh():
    mesh = Machine(pes=(4, 4), backend="numpy")
    with pytest.raises(ValueError) as e:
        mesh.shift(mesh.asarray(np.arange(16)), 1)
    assert str(e.value).startswith(
        "shift: x of shape (16,) cannot move along the 2-D mesh of 4x4 PEs: it needs at "
        "least 2 dimension(s)"
    )
    # what the docs allow: any size (the VP ratio), and extra trailing axes
    big = np.arange(64 * 8).reshape(64, 8)
    assert mesh.shift(big, XNET["n"], boundary=0).shape == (64, 8)
    cube = np.arange(4 * 4 * 3).reshape(4, 4, 3)
    assert np.array_equal(mesh.shift(cube, 1, axis=0), np.roll(cube, 1, axis=0))
    line = Machine(pes=8, backend="numpy")
    assert line.shift(np.arange(100), 1).tolist()[:3] == [99, 0, 1]
    assert line.shift(np.arange(12).reshape(3, 4), 1, axis=0).shape == (3, 4)
    with pytest.raises(ValueError, match="1-D mesh of 8 PEs"):
        line.shift(np.int64(3), 1, axis=0)


def test_the_first_phase_compiles_nothing():
    # In a fresh process: making a NumPy machine imports Numba and compiles (or loads from
    # Numba's cache) the CPU kernels of the common dtypes, so a first phase on them
    # compiles nothing and its wall time is the work's.
    script = """
import json, sys
import numpy as np
from simd import Machine
assert "numba" not in sys.modules
m = Machine(pes=512, backend="numpy")
assert "numba" in sys.modules
from kernels import numba_cpu
dispatchers = (numba_cpu._scan_rows, numba_cpu._send_serial)
before = [len(d.signatures) for d in dispatchers]
for dtype in (np.int64, np.int32, np.float64, np.float32, np.bool_):
    x = m.asarray(np.arange(100) % 3 == 0).astype(dtype)
    with m.phase("first"):
        m.scan(x, "max")
        m.scan(x, "max", segments=m.asarray(np.arange(100) % 7 == 0), exclusive=True)
        m.send(x, m.asarray(np.arange(100) % 10), 10, combine="max")
print(json.dumps([before, [len(d.signatures) for d in dispatchers]]))
"""
    env = {k: v for k, v in os.environ.items() if k != "SIMD_FORCE_REFERENCE"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    before, after = json.loads(proc.stdout.strip().splitlines()[-1])
    assert min(before) >= 5 and after == before


def test_a_reference_machine_does_not_warm_up(monkeypatch):
    from kernels import registry

    monkeypatch.setenv("SIMD_FORCE_REFERENCE", "1")
    monkeypatch.setattr(registry, "_warm", set())
    Machine(pes=4, backend="numpy")
    assert registry._warm == set()
