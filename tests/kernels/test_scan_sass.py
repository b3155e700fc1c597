"""The look-back of segmented and axis scans carries no more fences than the plain scan.

Segmented scans and scans along an axis scan (flag, value) pairs. Packed as
``cub::KeyValuePair<int, T>`` on ``cub::ReduceByKeyScanTileState``, a tile's descriptor is one
16-byte word polled and written with single relaxed accesses, as for the plain scan's
``cub::ScanTileState<T>``. A struct pair made ``cub::ScanTileState`` fall back to three arrays
guarded by full fences: ``MEMBAR.SC.GPU`` x4, ``MEMBAR.ALL.GPU`` x5 and ``CCTL.IVALL`` x4 in
the SASS (``membar.gl`` x4 in the PTX), against ``MEMBAR.SC.CTA`` x6 (the block's own
barriers) for the plain scan. Now: ``MEMBAR.SC.CTA`` x2 for the pair variants.

Each variant is compiled for sm_90 with NVRTC (no GPU needed). The PTX check always runs;
the SASS check needs a disassembler: ``nvdisasm`` or ``cuobjdump`` on the PATH, next to
``nvcc``, in ``$CUDA_HOME/bin``, in the ``nvidia-cuda-nvdisasm`` / ``nvidia-cuda-cuobjdump``
wheels, or named by ``$SIMD_NVDISASM``; it is skipped without one.
"""

from __future__ import annotations

import collections
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest

from kernels import cuda_scan_source as scan_src
from tests import gpu_compile
from tests.nvrtc_support import compile_sm90, nvrtc_unavailable

_why = nvrtc_unavailable()
pytestmark = pytest.mark.skipif(_why is not None, reason=_why or "")

# Fences and cache invalidations in SASS; GPU- or system-scope fences in PTX.
_SASS_FENCE = re.compile(r"\b((?:MEMBAR|CCTL|FENCE)\.[A-Z0-9_.]+)")
_PTX_GPU_FENCE = re.compile(r"\b(membar\.(?:gl|sys)|fence\.[\w.]*(?:gpu|sys))\b")


def _disassembler() -> list[str] | None:
    """Command that prints the SASS of a cubin file appended to it, or None."""
    named = os.environ.get("SIMD_NVDISASM")
    if named:
        return [named, "-c"] if "nvdisasm" in os.path.basename(named) else [named, "-sass"]
    dirs = []
    nvcc = shutil.which("nvcc")
    if nvcc:
        dirs.append(os.path.dirname(os.path.realpath(nvcc)))
    if os.environ.get("CUDA_HOME"):
        dirs.append(os.path.join(os.environ["CUDA_HOME"], "bin"))
    dirs.append("/usr/local/cuda/bin")
    for site in sys.path:
        dirs.extend(glob.glob(os.path.join(site, "nvidia", "cu*", "bin")))
        dirs.extend(glob.glob(os.path.join(site, "nvidia", "cuda_*", "bin")))
    for tool, flag in (("nvdisasm", "-c"), ("cuobjdump", "-sass")):
        found = shutil.which(tool)
        for d in dirs:
            if found:
                break
            path = os.path.join(d, tool)
            if os.access(path, os.X_OK):
                found = path
        if found:
            return [found, flag]
    return None


def _compile(op: str, dtype: str, pairs: bool) -> tuple[str, bytes]:
    dirs = scan_src.cccl_include_dirs()
    if not dirs:
        gpu_compile.skip(f"CuPy's bundled CUB headers are not installed ({gpu_compile.EXTRA})")
    source = scan_src.scan_source(op, np.dtype(dtype), pairs=pairs)
    ptx, _, cubin = compile_sm90(source, include_dirs=dirs, options=("-ftz=true",))
    return ptx, cubin


def _scan_kernel_text(text: str, start: str, stop: str) -> str:
    """The part of a PTX / SASS listing that belongs to the scan kernel (not the init one)."""
    i = text.index(start)
    j = text.find(stop, i + len(start))
    return text[i:] if j < 0 else text[i:j]


def _sass_fences(cubin: bytes, tool: list[str]) -> collections.Counter:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "scan.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        sass = subprocess.run([*tool, path], capture_output=True, text=True, check=True).stdout
    # nvdisasm: ".text.simd_scan:" ... ".text.simd_scan_init"; cuobjdump: "Function : name".
    marker = f".text.{scan_src.SCAN_KERNEL}:" if tool[1] == "-c" else "Function : simd_scan\n"
    if marker in sass:
        sass = _scan_kernel_text(sass, marker, scan_src.INIT_KERNEL)
    return collections.Counter(_SASS_FENCE.findall(sass))


VARIANTS = [
    ("add", "int32"),
    ("add", "float64"),
    pytest.param(("max", "float32"), marks=pytest.mark.slow),
    pytest.param(("xor", "int64"), marks=pytest.mark.slow),
]


@pytest.mark.parametrize("variant", VARIANTS, ids="-".join)
def test_pair_lookback_has_no_more_fences_than_plain(variant):
    op, dtype = variant
    ptx_plain, cubin_plain = _compile(op, dtype, pairs=False)
    ptx_pairs, cubin_pairs = _compile(op, dtype, pairs=True)

    # PTX: no GPU-scope fence in either (the look-back is relaxed loads and stores).
    entry = f".entry {scan_src.SCAN_KERNEL}("
    for ptx in (ptx_plain, ptx_pairs):
        body = _scan_kernel_text(ptx, entry, ".entry")
        assert _PTX_GPU_FENCE.findall(body) == []

    tool = _disassembler()
    if tool is None:
        gpu_compile.skip(f"no nvdisasm / cuobjdump found for the SASS check ({gpu_compile.EXTRA})")
    plain = _sass_fences(cubin_plain, tool)
    pairs = _sass_fences(cubin_pairs, tool)
    print(f"{op} {dtype}: plain {dict(plain)}, pairs {dict(pairs)}")
    assert sum(pairs.values()) <= sum(plain.values()), (plain, pairs)
    # Nothing GPU-wide: only the block-scope barriers CUB's block primitives use.
    for counts in (plain, pairs):
        assert all(name.endswith(".CTA") for name in counts), counts
