"""Correctly rounded float sums (kernels.exact_sum) against independent oracles.

The oracles: ``math.fsum`` (correctly rounded for float64), and for float32 (and where
fsum overflows) the exact ``Fraction`` sum rounded by picking the nearest float32 by exact
distance, ties to the even significand. Then what the machine relies on: the same bits
in any order, over any split of the data into blocks whose limb vectors are added (as the
ranks do), with a carry step every few values (small ``CHUNK``), on the CuPy code path
(the counting backend, one read back) and through ``Machine.reduce``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernels import counting, exact_sum
from kernels.exact_sum import FORMATS, finish, limbs
from simd import Machine

F32_MAX = Fraction(float(np.finfo(np.float32).max))
F32_OVERFLOW = F32_MAX + Fraction(2) ** (127 - 24)  # max + half an ulp: rounds to inf


def nearest_float32(exact: Fraction) -> np.float32:
    """``exact`` rounded to float32 by exact comparison (ties to even), an oracle
    independent of the limb arithmetic."""
    if abs(exact) >= F32_OVERFLOW:
        return np.float32(math.inf if exact > 0 else -math.inf)
    if abs(exact) <= F32_MAX:
        guess = np.float32(float(exact))
    else:  # between max and the overflow threshold: max
        guess = np.float32(float(F32_MAX) if exact > 0 else -float(F32_MAX))
    with np.errstate(over="ignore"):  # the neighbours of max include inf
        candidates = [
            np.nextafter(guess, np.float32(-np.inf)),
            guess,
            np.nextafter(guess, np.float32(np.inf)),
        ]
    candidates = [c for c in candidates if np.isfinite(c)]
    best = min(abs(Fraction(float(c)) - exact) for c in candidates)
    ties = [c for c in candidates if abs(Fraction(float(c)) - exact) == best]
    return min(ties, key=lambda c: int(c.view(np.uint32)) & 1)  # the even significand


def oracle(values: np.ndarray) -> np.floating:
    """The correctly rounded sum of finite ``values`` (float32 or float64)."""
    exact = sum((Fraction(float(v)) for v in values.tolist()), Fraction(0))
    if values.dtype == np.float32:
        out = nearest_float32(exact)
    else:
        try:
            out = np.float64(math.fsum(values.tolist()))
        except OverflowError:  # fsum's intermediate overflow: round the Fraction instead
            try:
                out = np.float64(float(exact))  # int / int: correctly rounded
            except OverflowError:
                out = np.float64(math.inf if exact > 0 else -math.inf)
    if values.size and not exact and all(math.copysign(1, v) < 0 for v in values.tolist()):
        return values.dtype.type(-0.0)  # only -0.0: IEEE gives -0.0
    return values.dtype.type(abs(out) if not exact else out)


def bits(a) -> bytes:
    return np.asarray(a).tobytes()


def floats(dtype, **kw):
    width = 32 if np.dtype(dtype) == np.float32 else 64
    return st.floats(width=width, allow_nan=False, allow_infinity=False, **kw)


def arrays(dtype, max_size=60, **kw):
    return st.lists(floats(dtype, **kw), max_size=max_size).map(lambda v: np.array(v, dtype))


DTYPES = [np.float32, np.float64]


@settings(max_examples=300, deadline=None)
@given(data=st.data(), dtype=st.sampled_from(DTYPES))
def test_sum_is_the_correctly_rounded_exact_sum(data, dtype):
    x = data.draw(arrays(dtype))
    got = exact_sum.exact_sum(np, x)
    assert got.dtype == x.dtype and got.shape == ()
    assert bits(got) == bits(oracle(x)), (x, got, oracle(x))


@settings(max_examples=150, deadline=None)
@given(data=st.data(), dtype=st.sampled_from(DTYPES))
def test_sums_near_the_extremes(data, dtype):
    # Subnormals with huge values, and sums that overflow (or come back from beyond max).
    info = np.finfo(dtype)
    tiny = floats(dtype, min_value=-float(info.tiny), max_value=float(info.tiny))
    huge = st.sampled_from([float(info.max), -float(info.max), float(info.max) / 3])
    x = np.array(data.draw(st.lists(tiny | huge | floats(dtype), max_size=30)), dtype)
    assert bits(exact_sum.exact_sum(np, x)) == bits(oracle(x)), x


def test_known_sums():
    assert float(exact_sum.exact_sum(np, np.array([0.1] * 10))) == 1.0
    assert float(exact_sum.exact_sum(np, np.array([1e100, 1.0, -1e100]))) == 1.0
    big = np.finfo(np.float64).max
    assert float(exact_sum.exact_sum(np, np.array([big, big, -big]))) == big
    assert float(exact_sum.exact_sum(np, np.array([big, big]))) == math.inf
    assert float(exact_sum.exact_sum(np, np.array([-big, -big]))) == -math.inf
    # Ties round to even: 1 + 2**-53 is halfway between 1 and its successor.
    assert float(exact_sum.exact_sum(np, np.array([1.0, 2.0**-53]))) == 1.0
    assert float(exact_sum.exact_sum(np, np.array([1.0, 2.0**-53, 2.0**-1074]))) > 1.0
    # The least subnormals add exactly.
    assert float(exact_sum.exact_sum(np, np.array([5e-324] * 3))) == 1.5e-323
    assert float(exact_sum.exact_sum(np, np.array([1e-45] * 3, np.float32))) == float(
        np.float32(4e-45)
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_special_values(dtype):
    def total(*values):
        return exact_sum.exact_sum(np, np.array(values, dtype))

    nan, inf = np.nan, np.inf
    assert np.isnan(total(1.0, nan)) and np.isnan(total(inf, -inf, 1.0))
    assert np.isnan(total(nan, inf)) and np.isnan(total(-inf, nan))
    assert total(inf, 1.0, inf) == inf and total(-inf, -5.0) == -inf
    assert bits(total(-0.0, -0.0)) == bits(dtype(-0.0))
    assert bits(total(-0.0)) == bits(dtype(-0.0))
    assert bits(total(-0.0, 0.0)) == bits(dtype(0.0))
    assert bits(total(2.0, -2.0)) == bits(dtype(0.0))
    assert bits(total(-0.0, -1.0, 1.0)) == bits(dtype(0.0))
    assert bits(exact_sum.exact_sum(np, np.empty(0, dtype))) == bits(dtype(0.0))


@settings(max_examples=80, deadline=None)
@given(
    data=st.data(),
    dtype=st.sampled_from(DTYPES),
    specials=st.lists(st.sampled_from([np.nan, np.inf, -np.inf, -0.0]), max_size=3),
)
def test_special_values_mixed_in(data, dtype, specials):
    finite = data.draw(arrays(dtype, max_size=20))
    x = np.concatenate([finite, np.array(specials, dtype)])
    x = x[data.draw(st.permutations(range(x.size)))] if x.size else x
    got = exact_sum.exact_sum(np, x)
    signs = {s for s in specials if np.isinf(s)}
    if any(np.isnan(s) for s in specials) or len(signs) == 2:
        assert np.isnan(got)
    elif signs:
        assert got == signs.pop()
    else:
        assert bits(got) == bits(oracle(x))


@settings(max_examples=150, deadline=None)
@given(data=st.data(), dtype=st.sampled_from(DTYPES))
def test_any_order_and_any_split_give_the_same_bits(data, dtype):
    x = data.draw(arrays(dtype) | arrays(dtype, min_value=-1e3, max_value=1e3))
    want = exact_sum.exact_sum(np, x)
    shuffled = x[data.draw(st.permutations(range(x.size)))] if x.size else x
    assert bits(exact_sum.exact_sum(np, shuffled)) == bits(want)
    # Blocks summed apart and their limb vectors added (what the ranks' Allreduce does).
    cuts = sorted(data.draw(st.lists(st.integers(0, x.size), max_size=4)))
    blocks = np.split(shuffled, cuts)
    total = sum(limbs(np, b) for b in blocks)
    assert bits(finish(total, dtype, x.size).reshape(())) == bits(want)


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    dtype=st.sampled_from(DTYPES),
    piece=st.integers(1, 3),
    pieces=st.integers(1, 3),
)
def test_pieces_and_carry_steps_keep_the_sum(data, dtype, piece, pieces):
    # A carry step every piece * pieces values, the CPU's pieces of piece values.
    x = data.draw(arrays(dtype, max_size=40))
    want = exact_sum.exact_sum(np, x)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(exact_sum, "CPU_PIECE", piece)
        patch.setattr(exact_sum, "CHUNK", piece * pieces)
        assert bits(exact_sum.exact_sum(np, x)) == bits(want)
        both = x.reshape(2, -1) if x.size % 2 == 0 else x.reshape(1, -1)
        for axis in (0, 1):
            got = exact_sum.exact_sum(np, both, axis=axis)
            assert bits(got) == bits(np.array([oracle(r) for r in np.moveaxis(both, axis, -1)]))


def test_many_equal_large_values_carry_into_high_limbs():
    # 2**20 copies of the largest float64 (and as many negated but one): every limb's sum
    # far beyond 2**32, exact after the carries.
    big = np.finfo(np.float64).max
    x = np.full(1 << 20, big)
    assert float(exact_sum.exact_sum(np, x)) == math.inf
    y = np.concatenate([x, -x[:-1]])
    assert float(exact_sum.exact_sum(np, y)) == big
    z = np.concatenate([np.full(1 << 20, 2.0**-1074), np.full(1 << 20, -(2.0**-1074))])
    assert bits(exact_sum.exact_sum(np, z)) == bits(np.float64(0.0))


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    dtype=st.sampled_from(DTYPES),
    shape=st.lists(st.integers(0, 4), min_size=1, max_size=3).map(tuple),
)
def test_axis_sums_are_each_slices_sum(data, dtype, shape):
    n = math.prod(shape)
    x = np.array(data.draw(st.lists(floats(dtype), min_size=n, max_size=n)), dtype).reshape(shape)
    axis = data.draw(st.integers(0, len(shape) - 1))
    got = exact_sum.exact_sum(np, x, axis=axis)
    moved = np.moveaxis(x, axis, -1)
    assert got.shape == moved.shape[:-1] and got.dtype == x.dtype
    for index in np.ndindex(*moved.shape[:-1]):
        assert bits(got[index]) == bits(oracle(moved[index])), (index, moved[index])


@settings(max_examples=40, deadline=None)
@given(data=st.data(), dtype=st.sampled_from(DTYPES), axis=st.sampled_from([None, 0, 1]))
def test_cupy_code_path_gives_the_same_bits(data, dtype, axis):
    rows = data.draw(st.integers(0, 5))
    x = np.array(data.draw(st.lists(floats(dtype), min_size=rows * 3, max_size=rows * 3)), dtype)
    x = x.reshape(rows, 3)
    if data.draw(st.booleans()):
        x[x > 0] = np.inf if data.draw(st.booleans()) else -0.0
    want = exact_sum.exact_sum(np, x, axis=axis)
    got = exact_sum.exact_sum(counting.cupy, counting.cupy.asarray(x), axis=axis)
    assert isinstance(got, counting.DeviceArray)
    assert bits(got) == bits(want)


def test_the_cupy_code_path_in_pieces_gives_the_same_bits(monkeypatch):
    x = np.random.default_rng(2).standard_normal((3, 11)) * 1e200
    want = exact_sum.exact_sum(np, x, axis=1)
    monkeypatch.setattr(exact_sum, "DEVICE_PIECE", 2)
    monkeypatch.setattr(exact_sum, "CHUNK", 4)
    got = exact_sum.exact_sum(counting.cupy, counting.cupy.asarray(x), axis=1)
    assert bits(got) == bits(want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_cupy_code_path_reads_back_once(dtype):
    xp = counting.cupy
    x = xp.asarray(np.random.default_rng(0).standard_normal(1000).astype(dtype))
    with counting.measure() as c:
        out = exact_sum.exact_sum(xp, x)
    # One read back of the limb vector (11 or 68 limbs and 4 counts); every step a
    # kernel of the array API (pinned: the count may only go down).
    width = FORMATS[np.dtype(dtype)].width
    assert c.total.syncs == 1
    assert c.total.d2h_bytes == 8 * width
    assert c.total.launches <= {np.float32: 44, np.float64: 51}[dtype], c.total.launches
    assert not c.total.implicit
    assert bits(out) == bits(exact_sum.exact_sum(np, np.asarray(x)))


@pytest.mark.parametrize("backend", ["numpy", "counting"])
def test_machine_reduce_is_correctly_rounded_and_charges_as_before(backend):
    m = Machine(pes=16, backend=backend)
    x = np.random.default_rng(1).standard_normal((50, 3)) * 1e8
    x[0, 0] = 1e30
    x[1, 0] = -1e30
    with m.phase("sum"):
        got = m.reduce(m.asarray(x), "add")
        along = m.reduce(m.asarray(x), "add", axis=0)
        masked = m.reduce(m.asarray(x), "add", mask=m.asarray(x > 0))
    assert bits(m.asnumpy(got)) == bits(oracle(x.reshape(-1)))
    for j in range(3):
        assert bits(m.asnumpy(along)[j]) == bits(oracle(x[:, j]))
    assert bits(m.asnumpy(masked)) == bits(oracle(np.where(x > 0, x, 0.0).reshape(-1)))
    # The model clock: a reduce of 150 values, as for any dtype.
    ints = Machine(pes=16, backend="numpy")
    with ints.phase("sum"):
        for _ in range(3):
            ints.reduce(ints.asarray(np.zeros((50, 3))), "max")
    assert m.stats["sum"].cycles == ints.stats["sum"].cycles
