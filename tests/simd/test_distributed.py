"""The instruction set across MPI ranks (simd.distributed) against the one-rank machine.

Each launch runs ``tests/mpi/instructions.py``: hundreds of random cases (global arrays
split unevenly over the ranks, empty blocks, segments across rank borders, every operator,
dtype, combiner, boundary and X-Net direction), each compared bit for bit with a one-rank
``Machine(backend="numpy")`` on the global data, with equal model clocks and errors raised
on every rank alike.
"""

from __future__ import annotations

import pytest

from tests.gpu_standin import needs_real_gpu
from tests.mpi_support import mpiexec, run_ranks

CASES = {1: 300, 2: 300, 3: 300, 4: 300}


@pytest.mark.mpi
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_every_instruction_equals_one_rank(n):
    done = run_ranks(n, "instructions.py", str(100 + n), str(CASES[n]), timeout=150)
    assert done.stdout.count("ok ") == n, done.stdout
    # The model clock: the same on every rank, and the one-rank machine's.
    clocks = {line for line in done.stdout.splitlines() if line.startswith("clock ")}
    assert len(clocks) == 1, clocks
    spread_line, one_line, spread_mesh, one_mesh = map(float, clocks.pop().split()[1:])
    assert spread_line == one_line > 0 and spread_mesh == one_mesh > 0


@pytest.mark.mpi
def test_every_instruction_on_the_cupy_code_path_equals_one_rank():
    # The counting backend runs the CuPy code path (its kernels emulated on NumPy): float
    # add scans and sends agree to rounding there (tree order, atomics), all else exactly.
    done = run_ranks(3, "instructions.py", "203", "200", "counting", timeout=150)
    assert done.stdout.count("ok ") == 3, done.stdout


@pytest.mark.gpu
@pytest.mark.mpi
@pytest.mark.parametrize("path", ["staged", "direct"])
def test_every_instruction_on_a_gpu_equals_one_rank(path):
    # Two ranks on the CuPy backend (sharing one GPU when there is one): GPU arrays go to MPI
    # through the kept pinned host buffers, or directly where the MPI library is CUDA-aware.
    needs_real_gpu("ranks in processes of their own, each reaching the device")
    mpiexec()  # skips (or fails with REQUIRE_MPI=1) where MPI cannot run
    from simd.ranks import cuda_aware

    if path == "direct" and not cuda_aware():
        pytest.skip("the MPI library here is not CUDA-aware")
    env = {"SIMD_MPI_CUDA_AWARE": "1" if path == "direct" else "0"}
    done = run_ranks(2, "instructions.py", "207", "200", "cupy", timeout=300, env=env)
    assert done.stdout.count("ok ") == 2, done.stdout


def test_one_process_machine_has_no_ranks_and_stats_across_ranks_is_stats():
    from simd import Machine

    m = Machine(pes=8, backend="numpy")
    with m.phase("p"):
        m.scan(m.asarray([1, 2, 3]))
    assert m.ranks is None
    assert m.stats_across_ranks().phases.keys() == m.stats.phases.keys()
    assert m.stats_across_ranks()["p"].cycles == m.stats["p"].cycles


def test_counting_backend_still_runs_the_instructions():
    from simd import Machine

    m = Machine(pes=8, backend="counting")
    x = m.asarray([3, 1, 4, 1, 5])
    assert m.asnumpy(m.scan(x, "max")).tolist() == [3, 3, 4, 4, 5]
    assert int(m.reduce(x, "add")) == 14
    assert m.count(x > 1) == 3
    assert m.asnumpy(m.send(x, m.asarray([0, 0, 1, 1, 2]), 3, combine="add")).tolist() == [
        4,
        5,
        5,
    ]
