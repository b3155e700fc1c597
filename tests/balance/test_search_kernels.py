"""The expand form's fused load-balancing search (simd.balance.cost_effective.search_kernels)
against the machine's instructions (load_balancing_search): the same items and tasks, and
the same charges (calls, bytes, model cycles) on every backend. Also in Numba's CUDA
simulator (``search_sim_cases.py``, one child process) and compiled to PTX for sm_90."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from kernels import counting
from simd import Machine
from simd.balance.cost_effective.loops import run_loop
from simd.balance.cost_effective.search import Expansion, load_balancing_search
from simd.balance.cost_effective.search_kernels import search_cpu, search_one
from tests.gpu_compile import (
    ptx_from_child,
    require_installed,
    run_in_simulator,
    simulator_case_names,
)

HERE = Path(__file__).resolve().parent
WORKER = HERE / "search_sim_cases.py"


def workload(n: int, seed: int, empty: float = 0.3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    w = rng.integers(1, 7, size=n)
    w[rng.random(n) < empty] = 0
    return w.astype(np.int64)


def offsets_of(w: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(w)[:-1]]).astype(np.int64)


@pytest.mark.parametrize("seed", range(4))
def test_cpu_search_matches_the_instructions(seed):
    w = workload(500 + seed, seed, empty=0.1 * seed)
    offsets, total = offsets_of(w), int(w.sum())
    m = Machine(backend="numpy")
    for start, stop in [(0, total), (0, 1), (total - 1, total), (17, 400), (250, total)]:
        items, tasks, senders = search_cpu(offsets, start, stop)
        want = load_balancing_search(offsets, offsets + w, start, stop, machine=m)
        np.testing.assert_array_equal(items, want[0])
        np.testing.assert_array_equal(tasks, want[1])
        # the data with tasks in the range: the senders of the instructions' send
        ends = offsets + w
        assert senders == int(((w > 0) & (offsets < stop) & (ends > start)).sum())


def test_one_task_at_a_time_from_any_lower_bound():
    # the body alone: every lower bound at or before the datum finds it (the CPU's loop
    # passes the previous datum, the GPU 0)
    w = np.array([0, 2, 0, 0, 3, 1, 0], dtype=np.int64)
    offsets = offsets_of(w)
    items, tasks = np.empty(1, dtype=np.int64), np.empty(1, dtype=np.int64)
    want_items, want_tasks = np.repeat(np.arange(7), w), np.concatenate([np.arange(k) for k in w])
    for t in range(int(w.sum())):
        for lo in range(int(want_items[t]) + 1):
            assert search_one(offsets, t, 0, lo, items, tasks) == want_items[t]
            assert (items[0], tasks[0]) == (want_items[t], want_tasks[t])


def _stats(m: Machine) -> dict:
    return {k: (dict(v.calls), v.bytes, v.cycles) for k, v in m.stats.phases.items()}


def _expand(m: Machine, w: np.ndarray, chunk: int | None):
    pairs = []

    def body(items, tasks):
        pairs.extend(zip(m.asnumpy(items).tolist(), m.asnumpy(tasks).tolist(), strict=True))

    res = run_loop(m.asarray(w), body, machine=m, form="expand", chunk=chunk)
    return res, sorted(pairs)


@pytest.mark.parametrize("chunk", [None, 97])
@pytest.mark.parametrize("cost", [None, "mp1"])
def test_fused_expansion_charges_what_the_instructions_charge(monkeypatch, chunk, cost):
    w = workload(300, 7)
    runs = {}
    for backend in ("numpy", "counting"):
        for fused in (True, False):
            # SIMD_FORCE_REFERENCE runs the instructions (their reference kernels)
            monkeypatch.setenv("SIMD_FORCE_REFERENCE", "0" if fused else "1")
            m = Machine(backend=backend, pes=64, cost=cost)
            assert Expansion(m.asarray(w), machine=Machine(backend=backend)).fused is fused
            res, pairs = _expand(m, w, chunk)
            runs[backend, fused] = (res.iterations, pairs, m.clock, _stats(m))
    want = np.repeat(np.arange(w.size), w).tolist()
    assert [i for i, _ in runs["numpy", True][1]] == want
    for backend in ("numpy", "counting"):
        assert runs[backend, True] == runs[backend, False], backend
    # the GPU's deferred checks send from every datum, NumPy from those with tasks: only
    # the bytes of the send differ between the backends
    assert runs["numpy", True][:3] == runs["counting", True][:3]


def test_eager_checks_and_per_active_cost_models_run_the_instructions():
    # eager checks on a GPU read the number of senders back; per-active cost models read
    # the senders: the fused search would not charge the same
    for m in (
        Machine(backend="counting", checks="eager"),
        Machine(backend="numpy", pes=64, cost="cm5_calibrated"),
    ):
        assert not Expansion(m.asarray([1, 2]), machine=m).fused


def test_fused_search_is_one_launch_per_range():
    w = workload(400, 3)
    m = Machine(backend="counting", pes=64)
    with counting.measure() as c:
        res, _ = _expand(m, w, 300)
    expansion = c.stage("scan-conversion/expansion")
    # the exclusive add-scan (one kernel) once, then one search per range
    assert expansion.ops["kernel:simd.load_balancing_search"] == res.iterations > 1
    assert expansion.launches == 1 + res.iterations
    assert expansion.syncs == 0


@pytest.mark.cudasim
@pytest.mark.parametrize("case", simulator_case_names(WORKER))
def test_search_in_the_cuda_simulator(sim_results, case):
    assert case in sim_results, f"case {case} did not run"
    error = sim_results[case]
    assert error is None, f"{case} failed in the CUDA simulator:\n{error}"


@pytest.fixture(scope="module")
def sim_results() -> dict[str, str | None]:
    require_installed("numba_cuda", "numba-cuda (the CUDA target of Numba)")
    return run_in_simulator(WORKER)


_PTX_SCRIPT = """
import json
import types as pytypes
from unittest import mock

from numba import cuda, types

from simd.balance.cost_effective.search_kernels import kernel_function

i64 = types.int64
sig = (types.Array(i64, 1, "C"), i64, types.Array(i64, 1, "C"), types.Array(i64, 1, "C"))
sm90 = pytypes.SimpleNamespace(compute_capability=(9, 0))
with mock.patch("numba.cuda.dispatcher.get_current_device", return_value=sm90):
    ptx = cuda.compile_ptx(kernel_function(), sig, cc=(9, 0))[0]
print(json.dumps({"search": ptx}))
"""


def test_search_compiles_to_ptx_for_sm90():
    require_installed("numba_cuda", "numba-cuda (the CUDA target of Numba)")
    ptx = ptx_from_child(_PTX_SCRIPT)["search"]
    assert re.search(r"^\.target\s+sm_90\b", ptx, re.M), "PTX does not target sm_90"
    assert re.search(r"\.visible\s+\.entry\s+\S+", ptx), "no kernel entry point in the PTX"
    assert not re.search(r"\.f(32|64)\b", ptx), "float arithmetic in an integer search"
    # the search halves its range with a shift (the one division is the grid-stride
    # loop's trip count)
    assert re.search(r"\bshr\.s64\s+%rd\d+, %rd\d+, 1;", ptx), "no halving by a shift"
    assert re.search(r"\bld\.global\.u64\b|\bld\.global\.nc\.u64\b|\bld\.global\.b64\b", ptx)
    # the block's first datum is shared: written to and read from shared memory, between
    # barriers
    assert re.search(r"\bst\.shared\.u64\b", ptx) and re.search(r"\bld\.shared\.u64\b", ptx)
    assert re.search(r"\bbar\.sync\b|\bbarrier\.sync\b", ptx), "no barrier"
