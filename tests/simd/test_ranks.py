"""The MPI layer (simd.ranks): layouts, scatter and gather, collective errors."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from tests.mpi_support import run_ranks


def test_canonical_bounds_split_like_array_split():
    pytest.importorskip("mpi4py")
    from simd.ranks import canonical_bounds

    for n in range(0, 30):
        for p in range(1, 6):
            sizes = [len(part) for part in np.array_split(np.arange(n), p)]
            assert np.diff(canonical_bounds(n, p)).tolist() == sizes


def test_nothing_imports_mpi4py_without_a_communicator():
    code = (
        "import sys, simd, renderer, diffusion; from simd import Machine; "
        "m = Machine(backend='numpy'); m.scan(m.asarray([1, 2])); "
        "assert 'mpi4py' not in sys.modules, 'mpi4py imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.mpi
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_scatter_gather_and_errors_on_ranks(n):
    done = run_ranks(n, "ranks_layer.py", timeout=120)
    assert done.stdout.count("ok") == n


def test_a_communicator_without_mpi4py_says_what_to_install():
    code = (
        "import sys; sys.modules['mpi4py'] = None\n"
        "from simd import Machine\n"
        "try:\n"
        "    Machine(backend='numpy', comm=object())\n"
        "except ImportError as err:\n"
        "    print(err)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert "pip install 'simd-emu[mpi]'" in done.stdout


def test_a_communicator_that_is_not_one_is_refused():
    pytest.importorskip("mpi4py")
    from simd import Machine

    with pytest.raises(TypeError, match="comm must be an mpi4py communicator"):
        Machine(backend="numpy", comm="world")
