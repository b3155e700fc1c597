"""The Numba shift and halo kernels in Numba's CUDA simulator, against the reference.

Why a subprocess: ``NUMBA_ENABLE_CUDASIM`` is read once, when ``numba.cuda`` is first
imported, and switches the whole process to the simulator. A conftest that set it would
also put the PTX compilation tests and the GPU tests of the same pytest run in the
simulator (where ``compile_ptx`` does not exist and nothing reaches the GPU). So the cases
(``numba_shift_sim_cases.py``, each compared with ``kernels.reference`` and with an
independent ``numpy.pad`` / ``numpy.roll`` oracle) run in one child process with the
variable set, and each case is reported here as its own test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gpu_compile import require_installed, run_in_simulator, simulator_case_names

require_installed("numba_cuda", "numba-cuda (the CUDA target of Numba)")

pytestmark = pytest.mark.cudasim

HERE = Path(__file__).resolve().parent
WORKER = HERE / "numba_shift_sim_cases.py"


@pytest.fixture(scope="module")
def sim_results() -> dict[str, str | None]:
    return run_in_simulator(WORKER)


@pytest.mark.parametrize("case", simulator_case_names(WORKER))
def test_kernel_in_simulator_matches_reference(sim_results, case):
    assert case in sim_results, f"case {case} did not run"
    error = sim_results[case]
    assert error is None, f"{case} failed in the CUDA simulator:\n{error}"
