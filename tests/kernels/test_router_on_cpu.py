"""The router's CUDA kernels (send with every combine, get), run on CPU threads through their
host wrappers, against the reference.

``kernels.cupy_router.send`` and ``get`` run as on a GPU, on a namespace whose kernels are
the generated CUDA source compiled as C++ (:mod:`tests.diffusion.cuda_on_cpu`: a block's
threads are OS threads, the blocks run one after another; the atomics are the host's). So
the kernels' own text runs: the grid-stride loops, the mask, the dropping of addresses
outside the destination, the float compare-and-swap loops, the overwrite's epoch tags,
the gather's wrap of an out-of-range index, and the fold of the addresses into the
machine's deferred range check (a block's reduction in shared memory, then an atomic
minimum and maximum into the check's row).
"""

from __future__ import annotations

import types

import numpy as np
import pytest

from kernels import cupy_router, reference
from tests.diffusion.cuda_on_cpu import _RawKernel, unavailable

_why = unavailable()
pytestmark = pytest.mark.skipif(_why is not None, reason=_why or "")

#: The CUDA intrinsics the router kernels use beyond cuda_on_cpu's prelude.
_INTRINSICS = r"""
#include <algorithm>
#include <cstring>
using std::max;
using std::min;
template <class T> static inline T atomicCAS(T* p, T expected, T v) {
    __atomic_compare_exchange_n(p, &expected, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return expected;
}
template <class T> static inline T atomicMin(T* p, T v) {
    T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (v < old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST,
                                                   __ATOMIC_SEQ_CST)) {}
    return old;
}
template <class T> static inline T atomicMax(T* p, T v) {
    T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (v > old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST,
                                                   __ATOMIC_SEQ_CST)) {}
    return old;
}
template <class T> static inline T atomicAnd(T* p, T v) {
    return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST);
}
template <class T> static inline T atomicOr(T* p, T v) {
    return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);
}
template <class F, class W> static inline F float_add(F* p, F v) {
    W* w = reinterpret_cast<W*>(p);
    W old = __atomic_load_n(w, __ATOMIC_SEQ_CST), next;
    F f;
    do {
        std::memcpy(&f, &old, sizeof f);
        f += v;
        std::memcpy(&next, &f, sizeof f);
    } while (!__atomic_compare_exchange_n(w, &old, next, false, __ATOMIC_SEQ_CST,
                                          __ATOMIC_SEQ_CST));
    return f - v;
}
static inline float atomicAdd(float* p, float v) { return float_add<float, unsigned>(p, v); }
static inline double atomicAdd(double* p, double v) {
    return float_add<double, unsigned long long>(p, v);
}
template <class To, class From> static inline To bits(From v) {
    To t;
    std::memcpy(&t, &v, sizeof t);
    return t;
}
static inline float __uint_as_float(unsigned u) { return bits<float>(u); }
static inline unsigned __float_as_uint(float f) { return bits<unsigned>(f); }
static inline double __longlong_as_double(unsigned long long u) { return bits<double>(u); }
static inline long long __double_as_longlong(double d) { return bits<long long>(d); }
"""


class _Module:
    def __init__(self, code: str, options: tuple = (), **kwargs) -> None:
        self.code = code

    def get_function(self, name: str) -> _RawKernel:
        return _RawKernel(self.code, name, prelude=_INTRINSICS)


def _namespace() -> types.ModuleType:
    ns = types.ModuleType("router_on_cpu")
    for name in ("ascontiguousarray", "empty", "zeros", "uint64", "where", "full", "asarray"):
        setattr(ns, name, getattr(np, name))
    ns.RawModule = _Module
    stream = types.SimpleNamespace(ptr=0, is_capturing=lambda: False)
    ns.cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(getDevice=lambda: 0), get_current_stream=lambda: stream
    )
    return ns


@pytest.fixture(scope="module")
def ns():
    cupy_router._kernels.cache_clear()
    cupy_router._gather.cache_clear()
    yield _namespace()
    cupy_router._kernels.cache_clear()
    cupy_router._gather.cache_clear()


def _no_bounds(rows=4):
    return np.array([reference.NO_BOUNDS] * rows, dtype=np.int64)


def _expected_bounds(addresses, mask):
    sent = addresses if mask is None else addresses[mask]
    return [int(sent.min()), int(sent.max())] if sent.size else list(reference.NO_BOUNDS)


def _send_variants():
    """Every (combine, dtype) with a kernel; the default run compiles four (about 2 s each,
    one per kind of atomic statement), the others are slow."""
    fast = {("add", "int32"), ("overwrite", "float64"), ("max", "float32"), ("or", "int64")}
    for combine in ("overwrite", "add", "max", "min", "and", "or"):
        for dtype in ("int32", "int64", "float32", "float64"):
            if combine in ("and", "or") and dtype.startswith("float"):
                continue
            marks = () if (combine, dtype) in fast else (pytest.mark.slow,)
            yield pytest.param(combine, dtype, marks=marks, id=f"{combine}-{dtype}")


@pytest.mark.parametrize(("combine", "dtype"), list(_send_variants()))
def test_send_kernels_combine_mask_and_fold_the_check(ns, combine, dtype):
    dtype = np.dtype(dtype)
    if combine in ("and", "or") and dtype.kind == "f":
        pytest.skip("no bitwise combine on floats")
    rng = np.random.default_rng(len(combine) + dtype.itemsize)
    n, size = 700, 60
    values = rng.integers(-50, 50, n).astype(dtype)  # integral: float sums exact in any order
    dest = rng.integers(-3, size + 4, n)  # some outside the destination: dropped
    mask = rng.random(n) < 0.7
    for m in (None, mask):
        out0 = rng.integers(-9, 9, size).astype(dtype)
        keep = (dest >= 0) & (dest < size) & (True if m is None else m)
        want = reference.send(np, values[keep], dest[keep], out0.copy(), combine)
        bounds = _no_bounds()
        got = cupy_router.send(ns, values, dest, out0.copy(), combine, mask=m, bounds=(bounds, 2))
        np.testing.assert_array_equal(got, want)
        assert bounds[2].tolist() == _expected_bounds(dest, m)
        assert bounds[[0, 1, 3]].tolist() == [list(reference.NO_BOUNDS)] * 3  # other rows


def test_an_overwrite_after_another_keeps_the_last_sender(ns):
    """The tags of an earlier call always lose: no fill between calls."""
    rng = np.random.default_rng(9)
    for _ in range(3):
        values = rng.integers(0, 100, 300).astype(np.int32)
        dest = rng.integers(0, 25, 300)
        want = reference.send(np, values, dest, np.zeros(25, np.int32), "overwrite")
        got = cupy_router.send(ns, values, dest, np.zeros(25, np.int32), "overwrite")
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "dtype",
    ["bool", "float32", "int64"]
    + [pytest.param(d, marks=pytest.mark.slow) for d in ("uint8", "int16", "float64")],
)
def test_the_get_kernel_gathers_wraps_fills_and_folds_the_check(ns, dtype):
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(dtype.itemsize)
    source = (rng.random((7, 9)) * 100 - 50).astype(dtype)
    index = rng.integers(-5, source.size + 5, (30, 11))  # some out of range
    mask = rng.random(index.shape) < 0.6
    flat = source.reshape(-1)
    fill = dtype.type(3)
    for m in (None, mask):
        want = flat[index % source.size]  # CuPy's take wraps an out-of-range index
        if m is not None:
            want = np.where(m, want, fill)
        bounds = _no_bounds()
        got = cupy_router.get(ns, source, index, mask=m, fill=fill, bounds=(bounds, 1))
        assert got.shape == index.shape and got.dtype == dtype
        np.testing.assert_array_equal(got, want)
        assert bounds[1].tolist() == _expected_bounds(index, m)
    # in range and without a check, as the NumPy backend reads it
    inside = index % source.size
    np.testing.assert_array_equal(cupy_router.get(ns, source, inside), flat[inside])
