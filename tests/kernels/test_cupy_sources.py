"""The CUDA sources of the CuPy kernels compile for sm_90 with NVRTC (no GPU needed).

Each source is compiled for a real sm_90 target, so ptxas runs too (register and shared
memory limits, no spills checked from its report); the PTX must name the kernel entry points.
The default run compiles a covering set of the scan variants (every operator, every dtype,
pairs both ways); the other 36 of the 44 variants are marked slow (~2 s each).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from kernels import cuda_router_source as router_src
from kernels import cuda_scan_source as scan_src
from tests import gpu_compile
from tests.nvrtc_support import compile_sm90 as compile_nvrtc
from tests.nvrtc_support import nvrtc_unavailable

_why = nvrtc_unavailable()
pytestmark = pytest.mark.skipif(_why is not None, reason=_why or "")


def compile_sm90(source: str, name: str = "kernel.cu", include_dirs=()) -> tuple[str, str, bytes]:
    """Compile with flush-to-zero (as CuPy does) and ptxas's resource report."""
    return compile_nvrtc(source, name, include_dirs, options=("-ftz=true", "--ptxas-options=-v"))


def _entries(ptx: str) -> set[str]:
    return set(re.findall(r"\.entry\s+(\w+)", ptx))


def _assert_no_spills(log: str):
    spills = re.findall(r"(\d+) bytes spill stores", log)
    assert spills, "ptxas did not report resource usage"
    assert all(int(s) == 0 for s in spills), log
    print(" ".join(re.findall(r"Used \d+ registers", log)))


# A covering set: every operator, every dtype, pairs both ways.
COVERING = [
    ("add", "int32", False),
    ("add", "float64", True),
    ("max", "float32", True),
    ("min", "int64", False),
    ("and", "int32", True),
    ("or", "int64", False),
    ("xor", "int64", True),
    ("copy", "float64", True),
]


def _compile_scan(variant):
    op, dtype, pairs = variant
    dirs = scan_src.cccl_include_dirs()
    if not dirs:
        gpu_compile.skip(f"CuPy's bundled CUB headers are not installed ({gpu_compile.EXTRA})")
    source = scan_src.scan_source(op, np.dtype(dtype), pairs=pairs)
    ptx, log, cubin = compile_sm90(source, include_dirs=dirs)
    assert _entries(ptx) == {scan_src.INIT_KERNEL, scan_src.SCAN_KERNEL}
    assert ".target sm_90" in ptx
    assert cubin[:4] == b"\x7fELF"
    _assert_no_spills(log)


@pytest.mark.parametrize("variant", COVERING, ids=lambda v: "-".join(map(str, v)))
def test_scan_source_compiles(variant):
    _compile_scan(variant)


@pytest.mark.slow
@pytest.mark.parametrize(
    "variant",
    [v for v in scan_src.all_variants() if (v[0], str(v[1]), v[2]) not in COVERING],
    ids=lambda v: "-".join(str(p) for p in v),
)
def test_every_scan_variant_compiles(variant):
    _compile_scan(variant)


def test_covering_set_covers():
    assert {v[0] for v in COVERING} == set(scan_src.OPS)
    assert {np.dtype(v[1]) for v in COVERING} == set(scan_src.DTYPES)
    assert {v[2] for v in COVERING} == {False, True}
    all_keys = set(scan_src.all_variants())
    assert len(all_keys) == 44
    for v in COVERING:
        assert (v[0], np.dtype(v[1]), v[2]) in all_keys


@pytest.mark.parametrize("combine,dtype", list(router_src.all_variants()), ids=str)
def test_router_source_compiles(combine, dtype):
    ptx, log, cubin = compile_sm90(router_src.router_source(combine, dtype))
    if combine == "overwrite":
        assert _entries(ptx) == {router_src.WINNER_KERNEL, router_src.WRITE_KERNEL}
    else:
        assert _entries(ptx) == {router_src.SEND_KERNEL}
    # Every message is one atomic (or a CAS loop for float max/min) in the PTX.
    assert ("atom.global" in ptx) or ("atom.cas" in ptx) or ("red.global" in ptx)
    _assert_no_spills(log)


def test_router_source_rejects():
    with pytest.raises(ValueError, match="no atomic send kernel"):
        router_src.router_source("and", np.float32)
    with pytest.raises(TypeError, match="router kernels support"):
        router_src.router_source("add", np.bool_)
