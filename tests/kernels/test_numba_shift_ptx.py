"""The Numba shift and halo kernels compile to PTX for sm_90 (H100) without a GPU.

The kernels compiled are the Python functions of the dispatchers that
``kernels.numba_shift`` launches (``tests/kernels/numba_shift_support.py``).

``numba.cuda.compile_ptx`` needs the real ``numba.cuda`` (NVVM from the toolkit wheels),
which cannot coexist with the simulator in one process; the compilation runs in a child
process with ``NUMBA_ENABLE_CUDASIM=0`` so this holds however the suite was started.
"""

from __future__ import annotations

import re

import pytest

from tests.gpu_compile import ptx_from_child, require_installed

require_installed("numba_cuda", "numba-cuda (the CUDA target of Numba)")

KERNELS = [(k, t) for k in ("shift3", "halo") for t in ("uint8", "uint16", "uint32", "uint64")]

_SCRIPT = """
import json
from tests.kernels.numba_shift_support import compile_ptx
print(json.dumps({f"{k}:{t}": ptx for (k, t), ptx in compile_ptx(cc=(9, 0)).items()}))
"""


@pytest.fixture(scope="module")
def ptx() -> dict[str, str]:
    return ptx_from_child(_SCRIPT)


def test_every_specialisation_is_compiled(ptx):
    from tests.kernels.numba_shift_support import ptx_signatures

    assert sorted(ptx) == sorted(f"{k}:{t}" for k, t in ptx_signatures())
    assert sorted(ptx) == sorted(f"{k}:{t}" for k, t in KERNELS)


@pytest.mark.parametrize(("kernel", "view"), KERNELS)
def test_ptx_targets_sm90(ptx, kernel, view):
    text = ptx[f"{kernel}:{view}"]
    assert re.search(r"^\.target\s+sm_90\b", text, re.M), "PTX does not target sm_90"
    assert re.search(r"^\.address_size\s+64", text, re.M)
    assert re.search(r"\.visible\s+\.entry\s+\S+", text), "no kernel entry point in the PTX"
    # The element moves use the view's width: ld/st of u8, u16, u32 or u64.
    bits = {"uint8": "8", "uint16": "16", "uint32": "32", "uint64": "64"}[view]
    assert re.search(rf"\bld\.global\.\S*[ub]{bits}\b", text), f"no {bits}-bit global load"
    assert re.search(rf"\bst\.global\.\S*[ub]{bits}\b", text), f"no {bits}-bit global store"
