"""The host side of the CuPy kernels, run without a GPU.

``kernels.cupy_scan.scan`` and ``kernels.cupy_router.send`` are run with CuPy replaced by
NumPy and the compiled kernels replaced by models of what they compute from their launch
arguments: the scan kernel by the block-decomposition model of ``test_scan_model`` (small
tiles, so that the wrapper's launch plan crosses many tiles), the router kernels by
``numpy.ufunc.at``. This checks everything the wrapper does (axis moves, flag conversion,
the initial value and its type, launch grids, argument order) against the reference.
The wrappers take their namespace from ``xp``, so the shim is simply passed in; they no
longer import CuPy, and these tests run whether or not it is installed.
"""

from __future__ import annotations

import importlib.util
import pathlib
import random
import types

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernels import cuda_router_source as router_src
from kernels import cuda_scan_source as scan_src
from kernels import cupy_router, cupy_scan, reference  # noqa: E402


def _load_model():
    # The block-decomposition model lives beside this file (tests/kernels is no package).
    path = pathlib.Path(__file__).with_name("test_scan_model.py")
    spec = importlib.util.spec_from_file_location("_simd_scan_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.model_kernel


model_kernel = _load_model()


class _FakeDevice:
    id = 0


class _NumpyAsCupy(types.ModuleType):
    """A stand-in for the ``cupy`` module with NumPy behind every attribute."""

    def __init__(self):
        super().__init__("cupy_shim")
        stream = types.SimpleNamespace(ptr=0, is_capturing=lambda: False)
        self.cuda = types.SimpleNamespace(
            Device=_FakeDevice,
            get_current_stream=lambda: stream,
            runtime=types.SimpleNamespace(getDevice=lambda: 0),
        )

    def __getattr__(self, name):
        return getattr(np, name)


def _numpy_as_cupy():
    return _NumpyAsCupy()


SMALL_TUNING = {4: (4, 3), 8: (2, 5)}


@pytest.fixture
def fake_scan(monkeypatch):
    shim = _numpy_as_cupy()
    monkeypatch.setattr(scan_src, "_TUNING", SMALL_TUNING)
    rng = random.Random(0)
    launches = []
    ready = set()  # the control words of the scratches set up

    def module(namespace, key, device_id):
        def init(stream, grid, block, args):
            regions, region_bytes, capacity, control = args
            assert block == (scan_src.INIT_BLOCK, 1, 1)
            assert grid[0] * block[0] >= int(capacity)
            assert regions.dtype == np.uint8 and regions.size == 2 * int(region_bytes)
            assert int(region_bytes) >= scan_src.tile_state_bytes(int(capacity))
            assert isinstance(region_bytes, np.uint64) and isinstance(capacity, np.int32)
            assert control.dtype == np.uint64 and control.size == 1
            control[0] = 0
            ready.add(id(control))

        def scan(stream, grid, block, args):
            x, flags, out, n, row_len, fill, form, regions, region_bytes, tiles, cap, control = args
            assert isinstance(form, np.int32)
            assert id(control) in ready, "the scratch was not set up before the scan"
            assert isinstance(n, np.int64) and isinstance(row_len, np.int64)
            # The kernel's `value_t initial` is read as exactly x's type: a wider scalar
            # (a Python int is passed as 8 bytes) would shift every later argument.
            assert type(fill) is x.dtype.type, (type(fill), x.dtype)
            assert flags is None or flags.dtype == np.uint8 or flags is x
            assert x.flags.c_contiguous and out.flags.c_contiguous and x.ndim == 1
            b, items = SMALL_TUNING[x.dtype.itemsize]
            assert block == (b, 1, 1) and grid == (int(tiles), 1, 1)
            assert int(tiles) * b * items >= int(n) > (int(tiles) - 1) * b * items
            # the other region's reset by the scan's blocks covers the scratch
            assert int(tiles) <= int(cap) <= b * int(tiles)
            launches.append(key)
            model_kernel(
                x,
                flags,
                out,
                int(n),
                int(row_len),
                fill,
                int(form),
                key=key,
                block=b,
                items=items,
                window=2,
                rng=rng,
            )

        return init, scan

    monkeypatch.setattr(cupy_scan, "_module", module)
    # launch plans memoised with the real tuning (by scans that ran earlier in this
    # process) would not match SMALL_TUNING: plan afresh, and leave no small plan behind
    cupy_scan._launch.cache_clear()
    yield shim, launches
    cupy_scan._launch.cache_clear()


OPS = scan_src.OPS


# The fixture's patches hold for every example; nothing in it is per-example state.
@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    shape=st.lists(st.integers(0, 9), min_size=0, max_size=3),
    op=st.sampled_from(OPS),
    dtype=st.sampled_from(scan_src.DTYPES),
    axis=st.one_of(st.none(), st.integers(-3, 2)),
    exclusive=st.booleans(),
    reverse=st.booleans(),
    segmented=st.booleans(),
    initial=st.one_of(st.none(), st.integers(-5, 5)),
    seed=st.integers(0, 2**31),
)
def test_scan_wrapper_matches_reference(
    fake_scan, shape, op, dtype, axis, exclusive, reverse, segmented, initial, seed
):
    shim, launches = fake_scan
    if op in ("and", "or", "xor") and dtype.kind == "f":
        return
    shape = tuple(shape)
    if axis is not None:
        if not shape:
            axis = None
        else:
            axis = axis % len(shape)
    rng = np.random.default_rng(seed)
    x = rng.integers(-50, 50, shape).astype(dtype)
    seg = (rng.random(shape) < 0.3) if segmented else None
    kw = dict(exclusive=exclusive, reverse=reverse, segments=seg, axis=axis, initial=initial)
    expected = reference.scan(np, x, op, **kw)
    before = len(launches)
    got = cupy_scan.scan(shim, x, op, **kw)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    assert len(launches) - before == (1 if x.size else 0)


def test_scan_wrapper_non_contiguous_input(fake_scan):
    shim, _ = fake_scan
    x = np.arange(60, dtype=np.int64).reshape(6, 10)[::2, 1::3]
    seg = np.zeros(x.shape, bool)
    seg[1, 1] = True
    for axis in (None, 0, 1):
        got = cupy_scan.scan(shim, x, "max", segments=seg, axis=axis, reverse=True)
        expected = reference.scan(np, x, "max", segments=seg, axis=axis, reverse=True)
        np.testing.assert_array_equal(got, expected)


def test_reduce_wrapper_bitwise(fake_scan):
    shim, _ = fake_scan
    x = np.random.default_rng(1).integers(0, 2**30, (7, 5)).astype(np.int64)
    for op in ("and", "or", "xor"):
        for axis in (None, 0, 1):
            got = cupy_scan.reduce(shim, x, op, axis=axis)
            expected = reference.reduce(np, x, op, axis=axis)
            np.testing.assert_array_equal(got, expected)


# --- router ---------------------------------------------------------------------------------

_UFUNCS = {
    "add": np.add,
    "max": np.fmax,
    "min": np.fmin,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
}


@pytest.fixture
def fake_router(monkeypatch):
    shim = _numpy_as_cupy()
    calls = []

    def module(namespace, combine, dtype, device_id):
        dtype = np.dtype(dtype)
        router_src.router_source(combine, dtype)  # the variant exists

        def checked(dest, mask, size, bounds, row):
            """The messages sent (mask), delivered (inside), and the range check folded."""
            sent = np.ones(dest.shape, bool) if mask is None else mask.astype(bool)
            if bounds is not None:
                assert bounds.dtype == np.int64 and isinstance(row, np.int32)
                if sent.any():
                    b = bounds[int(row)]
                    b[0], b[1] = min(b[0], dest[sent].min()), max(b[1], dest[sent].max())
            return sent & (dest >= 0) & (dest < int(size))

        def combine_kernel(grid, block, args):
            values, dest, mask, out, n, size, bounds, row = args
            assert values.dtype == out.dtype == dtype and dest.dtype == np.int64
            assert isinstance(n, np.int64) and isinstance(size, np.int64)  # `long long`
            assert int(size) == out.size
            assert values.flags.c_contiguous and dest.flags.c_contiguous
            assert grid[0] >= 1 and block == (router_src.BLOCK, 1, 1) and int(n) == dest.size
            keep = checked(dest, mask, size, bounds, row)
            calls.append(combine)
            if combine in ("max", "min") and dtype.kind == "f":
                # The CAS loop's NaN rule: a NaN operand wins (numpy.maximum/minimum).
                ufunc = np.maximum if combine == "max" else np.minimum
            else:
                ufunc = _UFUNCS[combine]
            with np.errstate(invalid="ignore"):
                ufunc.at(out, dest[keep], values[keep])

        def winner_kernel(grid, block, args):
            dest, mask, winner, tag, n, size, bounds, row = args
            assert isinstance(size, np.int64) and int(size) <= winner.size  # tags are reused
            assert winner.dtype == np.uint64 and isinstance(tag, np.uint64)
            # Tags of earlier calls are smaller than this call's: no fill needed.
            assert (winner < tag).all() and int(tag) % (1 << router_src.SENDER_BITS) == 0
            assert dest.dtype == np.int64 and isinstance(n, np.int64)
            keep = checked(dest, mask, size, bounds, row)
            tags = tag | np.arange(int(n), dtype=np.uint64)
            np.maximum.at(winner, dest[keep], tags[keep])

        def write_kernel(grid, block, args):
            values, dest, mask, winner, tag, out, n, size = args
            assert values.dtype == out.dtype == dtype and isinstance(n, np.int64)
            assert int(size) == out.size
            calls.append("overwrite")
            keep = checked(dest, mask, size, None, None)
            i = np.arange(int(n), dtype=np.uint64)
            won = keep.copy()
            won[keep] = winner[dest[keep]] == (tag | i[keep])
            out[dest[won]] = values[won]

        kernels = {
            router_src.SEND_KERNEL: combine_kernel,
            router_src.WINNER_KERNEL: winner_kernel,
            router_src.WRITE_KERNEL: write_kernel,
        }
        return types.SimpleNamespace(get_function=kernels.__getitem__)

    monkeypatch.setattr(cupy_router, "_module", module)
    cupy_router._kernels.cache_clear()
    yield shim, calls
    cupy_router._kernels.cache_clear()


@pytest.mark.parametrize("dtype", scan_src.DTYPES + (np.dtype(bool),), ids=str)
@pytest.mark.parametrize("combine", ["overwrite", "unique", "add", "max", "min", "and", "or"])
def test_send_wrapper_matches_reference(fake_router, combine, dtype):
    shim, calls = fake_router
    if combine in ("and", "or") and dtype.kind == "f":
        return
    rng = np.random.default_rng(3)
    size = 40
    if combine == "unique":
        dest = rng.permutation(size)[:25]
    else:
        dest = rng.integers(0, size, 300)
    values = rng.integers(-100, 100, dest.size).astype(dtype)
    if dtype.kind == "f":
        values[::17] = np.nan
    out0 = rng.integers(-100, 100, size).astype(dtype)
    target = out0.copy()
    with np.errstate(invalid="ignore"):  # NaN messages
        expected = reference.send(np, values, dest, out0.copy(), combine)
        got = cupy_router.send(shim, values, dest, target, combine)
    assert got is target  # updated in place
    np.testing.assert_array_equal(got, expected)
    assert bool(calls) == (dtype.kind != "b")


# --- every integer type: the wrappers hand what the kernels lack to the reference -


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.uint16, np.uint32, np.uint64], ids=str)
def test_wrappers_take_every_integer_type(fake_scan, fake_router, dtype):
    shim, launches = fake_scan
    router_shim, calls = fake_router
    dtype = np.dtype(dtype)
    x = np.random.default_rng(5).integers(0, np.iinfo(dtype).max, (4, 6), dtype=dtype)
    for op in ("add", "max", "min", "and", "or", "xor"):
        empty = cupy_scan.reduce(shim, x[:0], op)
        assert empty.tolist() == reference.reduce(np, x[:0], op).tolist()
        if op == "and":  # all bits set (was an OverflowError for unsigned types)
            assert empty == (np.iinfo(dtype).max if dtype.kind == "u" else -1)
        for axis in (None, 0, 1):
            got = cupy_scan.reduce(shim, x, op, axis=axis)
            want = reference.reduce(np, x, op, axis=axis)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
        got = cupy_scan.scan(shim, x, op, exclusive=True, axis=1)
        np.testing.assert_array_equal(got, reference.scan(np, x, op, exclusive=True, axis=1))
    assert not launches  # no kernel is compiled for these types
    for combine in ("add", "max", "min", "and", "or"):
        out = np.full(3, 7, dtype=dtype)
        got = cupy_router.send(router_shim, x[0, :0], np.zeros(0, np.int64), out, combine)
        assert got.tolist() == [7, 7, 7]
        dest = np.array([0, 2, 2, 0, 1, 2])
        out = np.arange(3, dtype=dtype)
        want = reference.send(np, x[1], dest, out.copy(), combine)
        np.testing.assert_array_equal(cupy_router.send(router_shim, x[1], dest, out, combine), want)
    assert not calls
