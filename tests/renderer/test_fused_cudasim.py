"""The fused kernels (renderer.stages.cuda_kernels) in Numba's CUDA simulator, bit for bit against
the array code. The cases run in one child process with ``NUMBA_ENABLE_CUDASIM=1``
(``fused_sim_cases.py``; see ``tests/kernels/test_numba_shift_cudasim.py`` for why)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gpu_compile import require_installed, run_in_simulator, simulator_case_names

require_installed("numba_cuda", "numba-cuda (the CUDA target of Numba)")

pytestmark = pytest.mark.cudasim

HERE = Path(__file__).resolve().parent
WORKER = HERE / "fused_sim_cases.py"


@pytest.fixture(scope="module")
def sim_results() -> dict[str, str | None]:
    return run_in_simulator(WORKER)


@pytest.mark.parametrize("case", simulator_case_names(WORKER))
def test_kernel_in_simulator_matches_array_code(sim_results, case):
    assert case in sim_results, f"case {case} did not run"
    error = sim_results[case]
    assert error is None, f"{case} failed in the CUDA simulator:\n{error}"
