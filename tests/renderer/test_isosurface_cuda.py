"""The marching-cubes CUDA kernels (renderer.contour.cuda_kernels) without a GPU: in Numba's CUDA
simulator bit for bit against the array code (``contour_sim_cases.py``, in a child
process), and compiled to PTX for sm_90 with every product rounded on its own (no fused
multiply-add, whose single rounding would change the vertices' last bits) and IEEE
division and square roots."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.gpu_compile import (
    ptx_from_child,
    require_installed,
    run_in_simulator,
    simulator_case_names,
)

require_installed("numba_cuda", "numba-cuda (the CUDA target of Numba)")

WORKER = Path(__file__).resolve().parent / "contour_sim_cases.py"


@pytest.fixture(scope="module")
def sim_results() -> dict[str, str | None]:
    return run_in_simulator(WORKER)


@pytest.mark.cudasim
@pytest.mark.parametrize("case", simulator_case_names(WORKER))
def test_kernels_in_simulator_match_array_code(sim_results, case):
    assert case in sim_results, f"case {case} did not run"
    error = sim_results[case]
    assert error is None, f"{case} failed in the CUDA simulator:\n{error}"


_SCRIPT = """
import json
import types as pytypes
from unittest import mock

from numba import cuda, types

from renderer.contour.cuda_kernels import build_kernels

i64, f64, f32 = types.int64, types.float64, types.float32
ints, int2 = types.Array(i64, 1, "C"), types.Array(i64, 2, "C")
table = types.Array(types.int8, 2, "C")
out = {}
sm90 = pytypes.SimpleNamespace(compute_capability=(9, 0))
kernels = build_kernels()
for dtype in (f32, f64):
    volume = types.Array(dtype, 3, "C")
    sigs = {
        # the level as the volume's type compares with it (renderer.contour.parameters.thresholds)
        "classify": (volume, dtype, dtype, int2),
        "count": (volume, f64, int2, table, types.Array(types.uint8, 1, "C"), int2, ints,
                  int2),
        # the spacing, origin, inverse spacing and first plane are arguments, not an array;
        # the mesh float32 and int32 (the default) or float64 and int64
        "emit": (volume, f64, types.UniTuple(f64, 10), int2, table, int2, ints, int2,
                 types.Array(f32, 2, "C"), types.Array(f32, 2, "C"),
                 types.Array(types.int32, 2, "C")),
        "emit-wide": (volume, f64, types.UniTuple(f64, 10), int2, table, int2, ints, int2,
                      types.Array(f64, 2, "C"), types.Array(f64, 2, "C"), int2),
    }
    for name, sig in sigs.items():
        kernel = kernels[name.split("-")[0]].py_func
        with mock.patch("numba.cuda.dispatcher.get_current_device", return_value=sm90):
            ptx = cuda.compile_ptx(kernel, sig, cc=(9, 0))[0]
        out[f"{name}-{dtype}"] = ptx
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def ptx_all() -> dict[str, str]:
    return ptx_from_child(_SCRIPT)


@pytest.mark.parametrize("name", ["classify", "count", "emit", "emit-wide"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ptx_targets_sm90_without_fma(ptx_all, name, dtype):
    ptx = ptx_all[f"{name}-{dtype}"]
    assert re.search(r"^\.target\s+sm_90\b", ptx, re.M), "PTX does not target sm_90"
    assert re.search(r"\.visible\s+\.entry\s+\S+", ptx), "no kernel entry point in the PTX"
    assert not re.search(r"\bfma\.", ptx), "a product was contracted into an fma"
    assert not re.search(r"\.approx\b|\.ftz\.", ptx), "approximate float arithmetic"


def test_emission_rounds_every_product(ptx_all):
    ptx = ptx_all["emit-float32"]
    # per vertex: 3 positions, 6 halvings of the central differences, 3 interpolations,
    # 3 scalings, 3 squares and 3 normalisations, in each of the three axes' copies
    assert len(re.findall(r"\bmul\.rn\.f64\b", ptx)) >= 3 * 21
    assert re.search(r"\bsqrt\.rn\.f64\b", ptx) and re.search(r"\bdiv\.rn\.f64\b", ptx)
