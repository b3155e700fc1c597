"""The fused kernels (renderer.stages.cuda_kernels) compile to PTX for sm_90 without a GPU, with
no fused multiply-add: NVVM contracts ``a * b + c`` into one ``fma`` unless the
product is libdevice's ``dmul_rn``, and an ``fma`` rounds once where the array code (one
CuPy kernel per operation) rounds twice, which would change the last bits.

The compilation runs in a child process with ``NUMBA_ENABLE_CUDASIM=0`` (the simulator
cannot share a process with it). Device functions ask the current GPU for its compute
capability when they compile; with no GPU here, the child answers sm_90 for it.
"""

from __future__ import annotations

import re

import pytest

from tests.gpu_compile import ptx_from_child, require_installed

require_installed("numba_cuda", "numba-cuda (the CUDA target of Numba)")


_SCRIPT = """
import json
import types as pytypes
from unittest import mock

import numpy as np
from numba import cuda, types
from numba.np import numpy_support

from renderer.stages.cuda_kernels import build_kernels, kernel_functions
from renderer.stages.setup_kernels import OUTPUTS

f64, i64 = types.float64, types.int64
outs = tuple(
    types.Array(numpy_support.from_dtype(np.dtype(dtype)), 2 if per_vertex else 1, "C")
    for _, dtype, per_vertex in OUTPUTS
)
flags = types.Array(types.bool_, 1, "C")
ints, int2 = types.Array(i64, 1, "C"), types.Array(i64, 2, "C")
int32_2 = types.Array(types.int32, 2, "C")  # setup's snapped vertices
floats = types.Array(f64, 1, "C")
span_ints = types.Array(types.int32, 1, "C")  # the kept spans' integer fields
sigs = {
    # what setup_device passes: the vertex table (the transform's output, or columns of
    # the clipped table: a strided view) and the triangles' corner indices
    "setup": (
        types.Array(f64, 2, "A"), types.Array(i64, 2, "C"), i64, i64, f64, f64, *outs,
        types.Array(i64, 1, "C"),
    ),
    "classify": (
        types.Array(f64, 2, "C"), types.Array(i64, 2, "C"), f64, f64, flags, flags,
        types.Array(i64, 1, "C"),
    ),
    # the vertices' clip coordinates and colours (tables, maybe strided) and the triangles'
    # corner indices into them
    "shade": (
        ints, ints, i64, int32_2, int32_2, types.Array(types.int8, 2, "C"),
        types.Array(f64, 2, "A"), types.Array(f64, 2, "A"), int2,
        types.Array(types.uint8, 2, "C"),
    ),
    # the loops' task arrays may be strided views
    "spans": (
        types.Array(i64, 1, "A"), types.Array(i64, 1, "A"), span_ints, span_ints, span_ints,
        int32_2, int32_2, ints, ints, ints,
    ),
    # spans' fields, the loops' (maybe strided) tasks, the keys and addresses
    "fragments": (
        types.Array(i64, 1, "A"), types.Array(i64, 1, "A"), span_ints, span_ints, span_ints,
        floats, floats, floats, i64, i64, i64, ints, ints,
    ),
    # the kept spans' positions, the tasks (maybe strided) and their spans, setup's fields
    "compact": (
        ints, types.Array(i64, 1, "A"), ints, ints, ints, floats, floats, floats, span_ints,
        span_ints, span_ints, span_ints, floats,
    ),
    # the z-buffer's keys and the index bits; covered, triangle index, float32 depth;
    # the covered pixels' count
    "decode": (
        ints, i64, flags, ints, types.Array(types.float32, 1, "C"), ints,
    ),
    # the vertices, the matrix's 16 entries (arguments, not an array), clip coordinates
    "transform": (
        types.Array(f64, 2, "C"), types.UniTuple(f64, 16), types.Array(f64, 2, "C"),
    ),
}
kernels = build_kernels()
sm90 = pytypes.SimpleNamespace(compute_capability=(9, 0))
out = {}
for name, sig in sigs.items():
    assert kernels[name].py_func is kernel_functions()[name]
    with mock.patch("numba.cuda.dispatcher.get_current_device", return_value=sm90):
        out[name] = cuda.compile_ptx(kernels[name].py_func, sig, cc=(9, 0))[0]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def ptx_all() -> dict[str, str]:
    return ptx_from_child(_SCRIPT)


@pytest.fixture(scope="module")
def ptx(ptx_all) -> str:
    return ptx_all["setup"]


@pytest.mark.parametrize(
    "kernel",
    ["setup", "classify", "shade", "spans", "fragments", "compact", "decode", "transform"],
)
def test_ptx_targets_sm90(ptx_all, kernel):
    ptx = ptx_all[kernel]
    assert re.search(r"^\.target\s+sm_90\b", ptx, re.M), "PTX does not target sm_90"
    assert re.search(r"^\.address_size\s+64", ptx, re.M)
    assert re.search(r"\.visible\s+\.entry\s+\S+", ptx), "no kernel entry point in the PTX"
    assert not re.search(r"\bfma\.", ptx), "a product was contracted into an fma"
    assert not re.search(r"\b(div|rcp)\.approx|\.ftz\.", ptx), "approximate float division"
    if kernel in ("setup", "classify", "decode"):
        assert re.search(r"\batom\.global\.add\.u64\b", ptx), "no atomic count"


def test_shading_rounds_every_product(ptx_all):
    ptx = ptx_all["shade"]
    # 3 perspective weights, 3 channels x (3 colour products + the scaling to 255); the
    # channel loop may be unrolled or not
    assert len(re.findall(r"\bmul\.rn\.f64\b", ptx)) in (7, 15)
    assert re.search(r"\bcvt\.rmi\.f64\.f64\b", ptx), "no floor"
    assert re.search(r"\bst\.global\.u8\b", ptx), "no 8-bit colour store"


def test_clip_tests_round_the_guard_band_products(ptx_all):
    # gx w and gy w of the three corners, each rounded on its own
    assert len(re.findall(r"\bmul\.rn\.f64\b", ptx_all["classify"])) == 6


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


def test_spans_are_integer_only(ptx_all):
    ptx = ptx_all["spans"]
    assert not re.search(r"\.f64\b", ptx), "float arithmetic in the span kernel"
    assert re.search(r"\bdiv\.s64\b", ptx), "no int64 division for the span bounds"


def test_fragments_round_the_depth_product_and_to_float32(ptx_all):
    ptx = ptx_all["fragments"]
    # per copy of the body (NVVM peels the grid-stride loop): dz/dx times the distance
    # from x0 rounded on its own (then added: no fma), and one rounding to float32
    products = len(re.findall(r"\bmul\.rn\.f64\b", ptx))
    assert products >= 1
    assert len(re.findall(r"\bcvt\.rn\.f32\.f64\b", ptx)) == products
    assert len(re.findall(r"\badd\.f64\b", ptx)) == products
    assert re.search(r"\bshl\.b64\b", ptx), "no shift of the depth bits above the index"
    # the spans' int32 scan line and index are widened before the address and key are made
    assert re.search(r"\b(cvt\.s64\.s32|mul\.wide\.s32)\b", ptx), "no widening of int32 fields"


def test_compaction_rounds_the_depth_product(ptx_all):
    ptx = ptx_all["compact"]
    # per copy of the body: dz/dy times the distance from y0, rounded on its own, then added
    products = len(re.findall(r"\bmul\.rn\.f64\b", ptx))
    assert products >= 1
    assert len(re.findall(r"\badd\.f64\b", ptx)) == products


def test_decoding_moves_the_depth_bits_without_conversion(ptx_all):
    ptx = ptx_all["decode"]
    # the float32 is the key's bits moved (int_as_float), never a converted number
    assert not re.search(r"\bcvt\.rn\.f32\.", ptx), "the depth bits were converted"
    assert re.search(r"\bmov\.b32\s+%f\d+, %r\d+;", ptx), "no move of the bits to a float32"
    assert re.search(r"\bst\.global\.f32\b", ptx), "no float32 depth store"
    # the covered pixels are summed per block in shared memory before the global atomic
    assert re.search(r"\batom\.shared\.add\.u64\b", ptx), "no per-block sum of the count"


def test_transform_rounds_every_product(ptx_all):
    ptx = ptx_all["transform"]
    # per copy of the body: 12 products, each rounded on its own, and 12 sums (no fma)
    products = len(re.findall(r"\bmul\.rn\.f64\b", ptx))
    assert products >= 12 and products % 12 == 0
    assert len(re.findall(r"\badd\.f64\b", ptx)) == products
