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

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gpu_compile import require_installed

require_installed("numba_cuda", "numba-cuda (the CUDA target of Numba)")

pytestmark = pytest.mark.cudasim

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
WORKER = HERE / "numba_shift_sim_cases.py"


def _case_names() -> list[str]:
    spec = importlib.util.spec_from_file_location("numba_shift_sim_cases", WORKER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.case_names()


@pytest.fixture(scope="module")
def sim_results() -> dict[str, str | None]:
    env = dict(os.environ)
    env["NUMBA_ENABLE_CUDASIM"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run(
        [sys.executable, str(WORKER)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"simulator run failed:\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", _case_names())
def test_kernel_in_simulator_matches_reference(sim_results, case):
    assert case in sim_results, f"case {case} did not run"
    error = sim_results[case]
    assert error is None, f"{case} failed in the CUDA simulator:\n{error}"
