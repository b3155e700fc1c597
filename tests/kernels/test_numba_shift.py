"""Numba shift / halo kernels: registration, lazy import and who checks the arguments.

The kernels themselves are checked in the CUDA simulator
(``test_numba_shift_cudasim.py``), compiled for sm_90 (``test_numba_shift_ptx.py``) and run
on a GPU (``test_numba_shift_gpu.py``). ``kernels.numba_shift`` implements the registry's
contract and checks nothing itself: the machine rejects bad arguments before any
registered implementation runs, which the tests here hold it to.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import simd.machine
from kernels import registry
from simd import Machine

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


def test_kernel_module_builds_without_a_gpu():
    """Importing the device code imports ``numba.cuda`` and builds lazy dispatchers only."""
    code = (
        "from kernels.numba_shift_kernels import KERNELS, build_kernels\n"
        "built = build_kernels()\n"
        "assert built is build_kernels(), 'not memoised'\n"
        "assert sorted(built) == ['halo', 'shift3'], sorted(built)\n"
        "assert all(built[k].py_func is KERNELS[k] for k in built)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT), NUMBA_ENABLE_CUDASIM="0")
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    ("extents", "block"),
    [
        ((4, 4, 1), (4, 4, 1)),  # a 4 x 4 window: 16 threads, not (4, 64)
        ((4, 1000, 3), (4, 64, 1)),
        ((1000, 1000, 1), (256, 1, 1)),
        ((100, 3, 1), (128, 2, 1)),
        ((1, 1, 1), (1, 1, 1)),
        ((3, 5, 1), (4, 8, 1)),
    ],
)
def test_launch_block_is_capped_to_the_extent(extents, block):
    from kernels import numba_shift

    grid, got = numba_shift._grid(extents, 256)
    assert got == block
    assert all(g * b >= min(e, 65535 * b) for g, b, e in zip(grid, got, extents, strict=True))
    assert got[0] * got[1] * got[2] <= 256


@pytest.fixture
def kernel_machine(monkeypatch):
    """A NumPy machine whose shift / halo lookups would reach a kernel that must not run."""

    def unreachable(*args, **kwargs):
        raise AssertionError("bad arguments reached the registered implementation")

    monkeypatch.setattr(simd.machine, "lookup", lambda primitive, backend: unreachable)
    return Machine(pes=(3, 4), backend="numpy")


@pytest.mark.parametrize(
    ("offset", "axis", "boundary", "error", "match"),
    [
        ((1, 0), None, "mirror", ValueError, "boundary"),
        ((1, 0), None, [1, 2], TypeError, "boundary"),
        ((1,), None, "wrap", ValueError, "1 offsets given for a 2-D array"),
        (1, None, "wrap", ValueError, "needs axis"),
        (1, 2, "wrap", ValueError, "out of range"),
        ((1, 2), (0,), "wrap", TypeError, "axis must be an int or None"),
        ((1.5, 0), None, "wrap", TypeError, "integers"),
    ],
)
def test_machine_rejects_bad_shift_arguments(kernel_machine, offset, axis, boundary, error, match):
    with pytest.raises(error, match=match):
        kernel_machine.shift(np.zeros((3, 4)), offset, axis, boundary=boundary)


def test_machine_rejects_unsupported_dtype(kernel_machine):
    with pytest.raises(TypeError, match="complex128"):
        kernel_machine.shift(np.zeros((3, 4), dtype=np.complex128), (1, 0))


@pytest.mark.parametrize(
    ("shape", "heights", "widths", "width", "match"),
    [
        ((2, 2, 4), [4, 4], [4, 4], 1, "shape"),
        ((2, 2, 4, 4), [4, 4], [4, 4], 0, "positive"),
        ((2, 2, 4, 4), [4], [4, 4], 1, "heights must be 2 integers"),
        ((2, 2, 4, 4), [4, 5], [4, 4], 1, "heights must lie"),
        ((2, 2, 4, 4), [4, 4], [1, 4], 2, "exceeds the smallest tile"),
        ((2, 2, 4, 4), [4.0, 4.0], [4, 4], 1, "integers"),
    ],
)
def test_machine_rejects_bad_halo_arguments(kernel_machine, shape, heights, widths, width, match):
    with pytest.raises(ValueError, match=match):
        kernel_machine.halo_exchange(np.zeros(shape), heights, widths, width=width)


def test_machine_rejects_bad_halo_boundary(kernel_machine):
    with pytest.raises(ValueError, match="boundary"):
        kernel_machine.halo_exchange(np.zeros((1, 1, 2, 2)), [2], [2], boundary="reflect")
