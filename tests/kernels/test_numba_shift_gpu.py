"""Numba shift and halo kernels on a real GPU, against the NumPy backend (marked ``gpu``).

Skipped without a GPU; ``REQUIRE_GPU=1`` turns the skip into a failure (tests/conftest.py).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tests.gpu_standin import needs_real_gpu

pytestmark = pytest.mark.gpu

BOUNDARIES = ("wrap", "zero", "edge", 3)
XNET_MOVES = [m for m in itertools.product((-1, 0, 1), repeat=2) if m != (0, 0)]
DTYPES = ("int32", "int64", "float32", "float64", "bool")


def _sample(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith("float"):
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-1000, 1000, size=shape).astype(dtype)


def _assert_same(gpu, got, exp):
    host = gpu.asnumpy(got)
    assert host.dtype == exp.dtype and host.shape == exp.shape
    np.testing.assert_array_equal(host, exp)


def _equal(got, exp):
    import cupy

    assert isinstance(got, cupy.ndarray), type(got)
    assert got.dtype == exp.dtype and got.shape == exp.shape
    np.testing.assert_array_equal(cupy.asnumpy(got), cupy.asnumpy(exp))


def test_cupy_backend_uses_the_numba_kernels(gpu_machine):
    from kernels import registry

    table = registry.registered("cupy")
    assert table["shift"] == "kernels.numba_shift", table
    assert table["halo_exchange"] == "kernels.numba_shift", table


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("boundary", BOUNDARIES)
def test_xnet_shifts_match_numpy_backend(gpu_machine, cpu_machine, dtype, boundary):
    x = _sample((67, 129), dtype, seed=1)
    xg = gpu_machine.asarray(x)
    for move in [*XNET_MOVES, (5, -70), (-200, 3)]:
        exp = cpu_machine.shift(x, move, boundary=boundary)
        _assert_same(gpu_machine, gpu_machine.shift(xg, move, boundary=boundary), exp)


@pytest.mark.parametrize("boundary", BOUNDARIES)
def test_kd_shifts_match_numpy_backend(gpu_machine, cpu_machine, boundary):
    x = _sample((5, 17, 3, 33), "float32", seed=2)
    xg = gpu_machine.asarray(x)
    for axis, k in itertools.product(range(4), (1, -2)):
        exp = cpu_machine.shift(x, k, axis, boundary=boundary)
        _assert_same(gpu_machine, gpu_machine.shift(xg, k, axis, boundary=boundary), exp)
    for move in [(1, 0, -1, 0), (0, 2, 0, -3), (1, -1, 1, 1)]:
        exp = cpu_machine.shift(x, move, boundary=boundary)
        _assert_same(gpu_machine, gpu_machine.shift(xg, move, boundary=boundary), exp)


@pytest.mark.parametrize("boundary", ["edge", "zero", "wrap", -1.5])
@pytest.mark.parametrize("width", [1, 2])
def test_halo_exchange_matches_numpy_backend(gpu_machine, cpu_machine, boundary, width):
    heights = np.array([16, 9, 13, 2, 16])
    widths = np.array([7, 16, 2, 11])
    tiles = _sample((5, 4, 16, 16), "float32", seed=3)
    exp = cpu_machine.halo_exchange(tiles, heights, widths, width=width, boundary=boundary)
    got = gpu_machine.halo_exchange(
        gpu_machine.asarray(tiles), heights, widths, width=width, boundary=boundary
    )
    _assert_same(gpu_machine, got, exp)


def test_large_grids_use_the_stride_loops(gpu_machine):
    """Extents past the 65535-block limit of grid y and z, direct calls on CuPy arrays."""
    import cupy

    from kernels import numba_shift, reference

    x = cupy.arange(2**24 * 2, dtype=cupy.uint8).reshape(2**24, 2)  # grid y capped
    for boundary in ("wrap", "edge", 7):
        got = numba_shift.shift(cupy, x, (3, -1), boundary)
        _equal(got, reference.shift(cupy, x, (3, -1), boundary))
    tiles = cupy.asarray(_sample((300, 300, 2, 2), "int32", seed=4))  # grid z capped
    hs = np.full(300, 2)
    got = numba_shift.halo_exchange(cupy, tiles, hs, hs, 1, "edge")
    _equal(got, reference.halo_exchange(cupy, tiles, hs, hs, 1, "edge"))


_SLOW_DOUBLE = r"""
extern "C" __global__ void slow_double(const double *x, double *out, long long n,
                                       long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    out[i] = 2.0 * x[i];
  }
}
"""


def test_runs_on_cupys_current_stream(gpu_machine):
    needs_real_gpu("a CUDA kernel source of the test's own, on a second stream")
    import cupy

    from kernels import numba_shift, reference

    x = cupy.asarray(_sample((1024, 1024), "float64", seed=5))
    # A producer that runs long (it spins about 0.1 s before writing): a shift launched on
    # any other stream would read ``big`` before it is written.
    slow_double = cupy.RawKernel(_SLOW_DOUBLE, "slow_double")
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        big = cupy.empty_like(x)
        slow_double((64,), (256,), (x, big, np.int64(x.size), np.int64(200_000_000)))
        got = numba_shift.shift(cupy, big, (1, 1), "zero")
        halo = numba_shift.halo_exchange(
            cupy, big.reshape(4, 256, 4, 256).transpose(0, 2, 1, 3), [256] * 4, [256] * 4
        )
    stream.synchronize()
    exp = reference.shift(cupy, x * 2, (1, 1), "zero")
    _equal(got, exp)
    tiles = (x * 2).reshape(4, 256, 4, 256).transpose(0, 2, 1, 3)
    _equal(halo, reference.halo_exchange(cupy, tiles, [256] * 4, [256] * 4, 1, "edge"))
