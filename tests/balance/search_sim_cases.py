"""Cases for the fused load-balancing search in Numba's CUDA simulator (run as a script).

``tests/balance/test_search_kernels.py`` runs this file in a subprocess with
``NUMBA_ENABLE_CUDASIM=1`` (see ``tests/kernels/test_numba_shift_cudasim.py`` for why a
subprocess). Each case runs :func:`simd.balance.cost_effective.search_kernels.search_device`
on host arrays (the simulator copies them in and back) and compares its items and tasks
with the machine's instructions (:func:`simd.balance.cost_effective.search.load_balancing_search`).
Prints one JSON line ``{case: null | "error message"}``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

# (data, largest workload, share of empty data, first task, tasks, threads, grid cap): a
# capped grid makes every thread's grid-stride loop take several tasks
CASES = {
    "search-300": (300, 6, 0.3, 0, None, 32, None),
    "search-range": (200, 9, 0.5, 37, 150, 32, None),
    "search-grid-stride": (120, 5, 0.2, 0, None, 16, 2),
    "search-one-datum": (1, 40, 0.0, 3, 20, 8, None),
}


def case_names() -> list[str]:
    return list(CASES)


def run_case(name: str) -> None:
    from numba import config

    from simd import Machine
    from simd.balance.cost_effective import search_kernels
    from simd.balance.cost_effective.search import load_balancing_search

    assert config.ENABLE_CUDASIM, "run with NUMBA_ENABLE_CUDASIM=1"
    n, high, empty, start, count, threads, grid = CASES[name]
    rng = np.random.default_rng(n)
    w = rng.integers(1, high + 1, size=n)
    w[rng.random(n) < empty] = 0
    offsets = np.concatenate([[0], np.cumsum(w)[:-1]]).astype(np.int64)
    total = int(w.sum())
    stop = total if count is None else start + count
    saved = search_kernels._THREADS, search_kernels._MAX_GRID
    search_kernels._THREADS, search_kernels._MAX_GRID = threads, grid or saved[1]
    try:
        items, tasks = search_kernels.search_device(np, offsets, start, stop)
    finally:
        search_kernels._THREADS, search_kernels._MAX_GRID = saved
    m = Machine(backend="numpy")
    want = load_balancing_search(offsets, offsets + w, start, stop, machine=m)
    np.testing.assert_array_equal(items, want[0])
    np.testing.assert_array_equal(tasks, want[1])


if __name__ == "__main__":
    from tests.gpu_compile import report_cases

    report_cases(case_names(), run_case)
