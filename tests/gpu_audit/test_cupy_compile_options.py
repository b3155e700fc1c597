"""The CuPy kernels compile with the options CuPy 14 itself adds, within sm_90's limits.

The compile tests of each kernel family pass ``-std=c++17`` and ``-ftz=true``; CuPy's
``RawModule`` / ``RawKernel`` also adds ``--device-as-default-execution-space`` and its
own header folder (``cupy/cuda/compiler.py``), and the caller's options go first. Here
the largest variants (8-byte values, segmented pairs, the 3-D fused diffusion step)
compile with that full list, and ptxas's report shows that their static shared memory
fits the 48 KiB a block gets without an opt-in (a launch asking for more fails) and that
nothing spills.
"""

from __future__ import annotations

import importlib.util
import os
import re

import numpy as np
import pytest

from diffusion import cuda_kernels as pm_src
from kernels import cuda_router_source as router_src
from kernels import cuda_scan_source as scan_src
from tests import gpu_compile
from tests.nvrtc_support import compile_sm90, nvrtc_unavailable

_why = nvrtc_unavailable()
pytestmark = pytest.mark.skipif(_why is not None, reason=_why or "")

STATIC_SHARED_LIMIT = 48 * 1024


def _cupy_options(own: tuple[str, ...]) -> tuple[str, ...]:
    spec = importlib.util.find_spec("cupy")
    if spec is None or not spec.submodule_search_locations:
        gpu_compile.skip("CuPy is not installed")
    include = os.path.join(list(spec.submodule_search_locations)[0], "_core", "include")
    # the caller's options, then what CuPy adds (-arch=sm_90 is compile_sm90's own)
    return (*own, f"-I{include}", "-ftz=true", "--device-as-default-execution-space")


def _check(source: str, own: tuple[str, ...], entries: set[str]) -> None:
    opts = (*_cupy_options(own), "--ptxas-options=-v")
    ptx, log, cubin = compile_sm90(source, options=opts)
    assert set(re.findall(r"\.entry\s+(\w+)", ptx)) == entries
    assert "Compiling entry function" in log, "ptxas did not report resource usage"
    smem = [int(s) for s in re.findall(r"(\d+) bytes smem", log)]  # none when 0
    assert max(smem, default=0) <= STATIC_SHARED_LIMIT, log
    assert all(int(s) == 0 for s in re.findall(r"(\d+) bytes spill stores", log)), log


@pytest.mark.parametrize(
    "op, dtype, pairs",
    [("add", "float64", False), ("max", "int64", True), ("copy", "float64", True)],
)
def test_scan_kernels(op, dtype, pairs):
    dirs = scan_src.cccl_include_dirs()
    if not dirs:
        gpu_compile.skip("CuPy's bundled CUB headers are not installed")
    source = scan_src.scan_source(op, np.dtype(dtype), pairs=pairs)
    own = ("-std=c++17",) + tuple(f"-I{d}" for d in dirs)  # as kernels.cupy_scan passes
    _check(source, own, {scan_src.INIT_KERNEL, scan_src.SCAN_KERNEL})


def test_router_kernels():
    source = router_src.router_source("overwrite", np.dtype(np.float64))
    _check(source, (), {router_src.WINNER_KERNEL, router_src.WRITE_KERNEL})


@pytest.mark.parametrize("ndim, eps", [(3, 2), (2, 1)])
def test_diffusion_kernels(ndim, eps):
    for index64 in (False, True):
        name = pm_src.step_name(1, ndim, eps, 4, index64)
        _check(pm_src.pm_source(1, ndim, eps, 4, index64), ("-std=c++17",), {name})
    _check(pm_src.active_source(), ("-std=c++17",), {pm_src.ACTIVE_NAME})
