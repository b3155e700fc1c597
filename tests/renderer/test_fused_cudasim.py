"""The fused kernels (renderer.fused_cuda) in Numba's CUDA simulator, bit for bit against
the array code. The cases run in one child process with ``NUMBA_ENABLE_CUDASIM=1``
(``fused_sim_cases.py``; see ``tests/kernels/test_numba_shift_cudasim.py`` for why)."""

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
WORKER = HERE / "fused_sim_cases.py"


def _case_names() -> list[str]:
    spec = importlib.util.spec_from_file_location("fused_sim_cases", WORKER)
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
def test_kernel_in_simulator_matches_array_code(sim_results, case):
    assert case in sim_results, f"case {case} did not run"
    error = sim_results[case]
    assert error is None, f"{case} failed in the CUDA simulator:\n{error}"
