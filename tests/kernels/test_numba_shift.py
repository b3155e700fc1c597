"""Numba shift / halo kernels: registration, lazy import and input checks (no GPU needed).

The kernels themselves are checked in the CUDA simulator
(``test_numba_shift_cudasim.py``), compiled for sm_90 (``test_numba_shift_ptx.py``) and run
on a GPU (``test_numba_shift_gpu.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kernels import numba_shift, registry

ROOT = Path(__file__).resolve().parents[2]


def test_registered_for_cupy_backend():
    table = registry.registered("cupy")
    assert table["shift"] == "kernels.numba_shift"
    assert table["halo_exchange"] == "kernels.numba_shift"
    assert registry.lookup("shift", "numpy").__module__ == "kernels.reference"


def test_import_does_not_import_numba_cuda():
    code = (
        "import sys, kernels, simd, kernels.numba_shift\n"
        "bad = [m for m in ('numba.cuda', 'numba_cuda', 'cupy') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    ("offset", "axis", "boundary", "error", "match"),
    [
        ((1, 0), None, "mirror", ValueError, "boundary"),
        ((1, 0), None, [1, 2], TypeError, "scalar"),
        ((1,), None, "wrap", ValueError, "one entry per axis"),
        (1, None, "wrap", ValueError, "needs an axis"),
        (1, 2, "wrap", ValueError, "out of range"),
        ((1, 2), (0,), "wrap", ValueError, "2 offsets for 1 axes"),
        ((1.5, 0), None, "wrap", TypeError, "integers"),
    ],
)
def test_shift_rejects_bad_arguments(offset, axis, boundary, error, match):
    with pytest.raises(error, match=match):
        numba_shift.shift(np.zeros((3, 4)), offset, axis, boundary=boundary)


def test_shift_rejects_unsupported_dtype():
    with pytest.raises(TypeError, match="complex128"):
        numba_shift.shift(np.zeros((3, 4), dtype=np.complex128), (1, 0))


@pytest.mark.parametrize(
    ("shape", "heights", "widths", "width", "match"),
    [
        ((2, 2, 4), [4, 4], [4, 4], 1, "shape"),
        ((2, 2, 4, 4), [4, 4], [4, 4], 0, "positive"),
        ((2, 2, 4, 4), [4], [4, 4], 1, "entries"),
        ((2, 2, 4, 4), [4, 5], [4, 4], 1, "heights must lie"),
        ((2, 2, 4, 4), [4, 4], [1, 4], 2, "widths must lie"),
        ((2, 2, 4, 4), [4.0, 4.0], [4, 4], 1, "ints"),
    ],
)
def test_halo_rejects_bad_arguments(shape, heights, widths, width, match):
    with pytest.raises(ValueError, match=match):
        numba_shift.halo_exchange(np.zeros(shape), heights, widths, width=width)


def test_halo_rejects_bad_boundary():
    with pytest.raises(ValueError, match="boundary"):
        numba_shift.halo_exchange(np.zeros((1, 1, 2, 2)), [2], [2], boundary="reflect")
