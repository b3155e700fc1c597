"""The fused setup kernel (renderer.setup_cuda) compiles to PTX for sm_90 without a GPU,
with no fused multiply-add: NVVM contracts ``a * b + c`` into one ``fma`` unless the
product is libdevice's ``dmul_rn``, and an ``fma`` rounds once where the array code (one
CuPy kernel per operation) rounds twice, which would change the last bits.

The compilation runs in a child process with ``NUMBA_ENABLE_CUDASIM=0`` (the simulator
cannot share a process with it). Device functions ask the current GPU for its compute
capability when they compile; with no GPU here, the child answers sm_90 for it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gpu_compile import require_installed

require_installed("numba_cuda", "numba-cuda (the CUDA target of Numba)")

ROOT = Path(__file__).resolve().parents[2]

_SCRIPT = """
import types as pytypes
from unittest import mock

import numpy as np
from numba import cuda, types

from renderer.setup_cuda import build_kernel, kernel_function
from renderer.setup_kernels import OUTPUTS

f64, i64 = types.float64, types.int64
outs = tuple(
    types.Array(i64 if dtype is np.int64 else f64, 2 if per_vertex else 1, "C")
    for _, dtype, per_vertex in OUTPUTS
)
# what setup_device passes: the clip coordinates may be a strided view
sig = (types.Array(f64, 3, "A"), i64, i64, f64, f64, *outs, types.Array(i64, 1, "C"))
assert build_kernel().py_func is kernel_function()
sm90 = pytypes.SimpleNamespace(compute_capability=(9, 0))
with mock.patch("numba.cuda.dispatcher.get_current_device", return_value=sm90):
    ptx, _ = cuda.compile_ptx(build_kernel().py_func, sig, cc=(9, 0))
print(ptx)
"""


@pytest.fixture(scope="module")
def ptx() -> str:
    env = dict(os.environ)
    env["NUMBA_ENABLE_CUDASIM"] = "0"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run(
        [
            sys.executable,
            "-W",
            "error",
            "-W",
            "ignore:The 'generic' unit for NumPy timedelta:DeprecationWarning",
            "-c",
            _SCRIPT,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"PTX compilation failed:\n{proc.stderr[-4000:]}"
    return proc.stdout


def test_ptx_targets_sm90(ptx):
    assert re.search(r"^\.target\s+sm_90\b", ptx, re.M), "PTX does not target sm_90"
    assert re.search(r"^\.address_size\s+64", ptx, re.M)
    assert re.search(r"\.visible\s+\.entry\s+\S+", ptx), "no kernel entry point in the PTX"


def test_no_fused_multiply_add(ptx):
    assert not re.search(r"\bfma\.", ptx), "a product was contracted into an fma"
    # the 30 products of the body, each rounded on its own: 18 of the window transform,
    # 6 of snapping, 6 of the depth plane
    assert len(re.findall(r"\bmul\.rn\.f64\b", ptx)) == 30


def test_rounding_and_count(ptx):
    assert re.search(r"\bcvt\.rni\.f64\.f64\b", ptx), "snapping does not round to nearest even"
    assert re.search(r"\bcvt\.rzi\.s64\.f64\b", ptx), "no float to int64 conversion"
    assert re.search(r"\batom\.global\.add\.u64\b", ptx), "no atomic count of degenerate ones"
    # divisions are IEEE (div.rn / rcp.rn), never the approximate forms
    assert not re.search(r"\b(div|rcp)\.approx", ptx)
    assert not re.search(r"\.ftz\.", ptx)
