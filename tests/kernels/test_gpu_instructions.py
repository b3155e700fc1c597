"""Every instruction on ``Machine(backend="cupy")`` against the NumPy backend (real GPU).

Marked ``gpu``: skipped without a GPU, a failure with ``REQUIRE_GPU=1`` (tests/conftest.py).
Every test runs twice, against the NumPy backend as it is (``kernels.numba_cpu`` where it
registers a primitive) and against ``kernels.reference``, the oracle, in its place (the
``machines`` fixture); the CuPy backend runs the scan and router kernels of
``kernels.cupy_scan`` / ``kernels.cupy_router`` and Numba's shift kernels.
Float sums use integer-valued data so that any summation order is exact.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.gpu_standin import needs_real_gpu

pytestmark = pytest.mark.gpu

OPS = ("add", "max", "min", "and", "or", "xor", "copy")
DTYPES = ("int32", "int64", "float32", "float64")


@pytest.fixture(scope="module")
def _machine_pair():
    from simd import Machine

    return Machine(pes=512, backend="cupy"), Machine(pes=512, backend="numpy")


@pytest.fixture(params=["numba_cpu", "reference"])
def machines(request, monkeypatch, _machine_pair):
    """(CuPy machine, NumPy machine); with "reference" the NumPy machine's instructions run
    ``kernels.reference`` (looked up per instruction), whatever ``kernels.numba_cpu`` has."""
    if request.param == "reference":
        _use_reference(monkeypatch)
    return _machine_pair


def _use_reference(monkeypatch):
    """The NumPy machine's instructions run ``kernels.reference`` from here on."""
    import simd.machine
    from kernels import reference

    lookup = simd.machine.lookup

    def oracle(primitive, backend):
        return getattr(reference, primitive) if backend == "numpy" else lookup(primitive, backend)

    monkeypatch.setattr(simd.machine, "lookup", oracle)


def _data(rng, shape, dtype, op):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        x = rng.integers(-1000, 1000, shape).astype(dtype)
        if op in ("max", "min") and x.size:
            # NaN and inf must propagate as in numpy.maximum / minimum.
            flat = x.reshape(-1)
            flat[rng.random(flat.size) < 0.001] = np.inf
            flat[rng.random(flat.size) < 0.0005] = np.nan
        return x
    if op in ("add",):
        return rng.integers(
            np.iinfo(dtype).min, np.iinfo(dtype).max, shape, dtype=dtype, endpoint=True
        )  # wraps around, identically on both backends
    return rng.integers(-(2**20), 2**20, shape).astype(dtype)


def _compare(gpu, cpu, got, expected):
    got = gpu.asnumpy(got)
    expected = cpu.asnumpy(expected)
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def test_kernels_are_registered(machines):
    from kernels.registry import lookup

    assert lookup("scan", "cupy").__module__ == "kernels.cupy_scan"
    assert lookup("send", "cupy").__module__ == "kernels.cupy_router"


# --- scan: every op x dtype x form, lengths around the tile size and far beyond -------------

_LENGTHS = [0, 1, 2, 127, 2047, 2048, 2049, 1536 * 3 + 1, 100_003, (1 << 22) + 7]


def _valid(op, dtype):
    return not (op in ("and", "or", "xor") and np.dtype(dtype).kind == "f")


@pytest.mark.parametrize("n", _LENGTHS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_scan_1d_all_forms(machines, op, dtype, n):
    if not _valid(op, dtype):
        pytest.skip("bitwise ops need integers")
    gpu, cpu = machines
    rng = np.random.default_rng(n * 31 + len(op))
    x = _data(rng, n, dtype, op)
    seg = rng.random(n) < (0.5 if n < 5000 else 0.0005)
    forms = [
        (e, r, s, i)
        for e in (False, True)
        for r in (False, True)
        for s in (False, True)
        for i in (None, 3)
        if not (op == "copy" and i is not None and not e)  # refused: combines nothing in
    ]
    if n > 200_000:
        forms = forms[::3]  # keep the big case quick; every flag still appears
    for exclusive, reverse, segmented, initial in forms:
        kw = dict(exclusive=exclusive, reverse=reverse, initial=initial)
        s_cpu = cpu.asarray(seg) if segmented else None
        s_gpu = gpu.asarray(seg) if segmented else None
        expected = cpu.scan(cpu.asarray(x), op, segments=s_cpu, **kw)
        got = gpu.scan(gpu.asarray(x), op, segments=s_gpu, **kw)
        _compare(gpu, cpu, got, expected)


@pytest.mark.parametrize("oracle", ["numba_cpu", "reference"])
def test_scan_kd_axis(_machine_pair, oracle):
    """Random shapes, axes and forms (hypothesis) against each NumPy oracle."""
    with pytest.MonkeyPatch.context() as patch:
        if oracle == "reference":
            _use_reference(patch)
        _scan_kd_axis(_machine_pair)


@settings(max_examples=80, deadline=None)
@given(
    shape=st.lists(st.integers(0, 40), min_size=1, max_size=4),
    op=st.sampled_from(OPS),
    dtype=st.sampled_from(DTYPES),
    axis=st.one_of(st.none(), st.integers(-4, 3)),
    exclusive=st.booleans(),
    reverse=st.booleans(),
    segmented=st.booleans(),
    initial=st.one_of(st.none(), st.integers(-5, 5)),
    masked=st.booleans(),
    seed=st.integers(0, 2**31),
)
def _scan_kd_axis(
    machines, shape, op, dtype, axis, exclusive, reverse, segmented, initial, masked, seed
):
    if not _valid(op, dtype) or (op == "copy" and initial is not None and not exclusive):
        return
    gpu, cpu = machines
    if axis is not None:
        axis = axis % len(shape)
    rng = np.random.default_rng(seed)
    x = _data(rng, tuple(shape), dtype, op)
    seg = rng.random(tuple(shape)) < 0.3
    mask = rng.random(tuple(shape)) < 0.7
    kw = dict(exclusive=exclusive, reverse=reverse, initial=initial, axis=axis)
    if masked and op != "copy":
        kw_c = dict(kw, mask=cpu.asarray(mask))
        kw_g = dict(kw, mask=gpu.asarray(mask))
    else:
        kw_c = kw_g = kw
    expected = cpu.scan(
        cpu.asarray(x), op, segments=cpu.asarray(seg) if segmented else None, **kw_c
    )
    got = gpu.scan(gpu.asarray(x), op, segments=gpu.asarray(seg) if segmented else None, **kw_g)
    _compare(gpu, cpu, got, expected)


@pytest.mark.parametrize("op", ["and", "or", "xor", "max", "add"])
def test_scan_bool(machines, op):
    gpu, cpu = machines
    x = np.random.default_rng(3).random(5000) < 0.5
    _compare(gpu, cpu, gpu.scan(gpu.asarray(x), op), cpu.scan(cpu.asarray(x), op))


def test_scan_float_add_random(machines):
    """Non-integer floats: a parallel sum rounds differently; close, not equal."""
    gpu, cpu = machines
    x = np.random.default_rng(5).random(1 << 20)
    for dtype, rtol in (("float64", 1e-9), ("float32", 2e-3)):
        got = gpu.asnumpy(gpu.scan(gpu.asarray(x.astype(dtype)), "add"))
        expected = cpu.asnumpy(cpu.scan(cpu.asarray(x.astype(dtype)), "add"))
        np.testing.assert_allclose(got, expected, rtol=rtol)


def test_scan_repeated_large_is_stable(machines):
    """The look-back under load: many runs of a 2^24 segmented scan give one answer."""
    gpu, cpu = machines
    rng = np.random.default_rng(11)
    n = 1 << 24
    x = rng.integers(-5, 5, n).astype(np.int32)
    seg = rng.random(n) < 1e-4
    expected = cpu.asnumpy(cpu.scan(cpu.asarray(x), "add", segments=cpu.asarray(seg)))
    xg, sg = gpu.asarray(x), gpu.asarray(seg)
    for _ in range(5):
        got = gpu.asnumpy(gpu.scan(xg, "add", segments=sg))
        np.testing.assert_array_equal(got, expected)
    plain = gpu.asnumpy(gpu.scan(xg, "add"))
    np.testing.assert_array_equal(plain, np.cumsum(x, dtype=np.int32))


@pytest.mark.slow
def test_scan_beyond_2_to_the_31_elements(machines):
    """64-bit index math of the scan kernel: positions, reverse reads ``n - 1 - q`` and the
    reverse flags ``seg[n - q]`` past 2^31 (about 20 GiB of device memory)."""
    needs_real_gpu("40 GiB of device memory")
    import cupy

    gpu, _ = machines
    if cupy.cuda.Device().mem_info[1] < 40 * 2**30:
        pytest.skip("needs 40 GiB of device memory")
    n = 2**31 + 4099  # not a whole number of tiles
    k = 2**20 + 3  # segment length
    chunk = 2**28

    def positions(start):
        return cupy.arange(start, min(start + chunk, n), dtype=cupy.int64)

    ones = cupy.ones(n, dtype=cupy.int32)
    out = gpu.scan(ones, "add", exclusive=True, reverse=True)
    del ones
    for start in range(0, n, chunk):
        i = positions(start)
        assert bool((out[start : start + chunk] == (n - 1 - i).astype(cupy.int32)).all()), start
    del out
    x = cupy.empty(n, dtype=cupy.int32)
    seg = cupy.empty(n, dtype=cupy.bool_)
    for start in range(0, n, chunk):
        i = positions(start)
        x[start : start + chunk] = (i * 7).astype(cupy.int32)
        seg[start : start + chunk] = i % k == 0
    for reverse in (False, True):
        out = gpu.scan(x, "copy", segments=seg, reverse=reverse)
        for start in range(0, n, chunk):
            i = positions(start)
            head = cupy.minimum((i // k + 1) * k, n) - 1 if reverse else i // k * k
            want = (head * 7).astype(cupy.int32)
            assert bool((out[start : start + chunk] == want).all()), (reverse, start)
        del out


# --- the other instructions -----------------------------------------------------------------


@pytest.mark.parametrize("op", ["add", "max", "min", "and", "or", "xor"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_reduce(machines, op, dtype, axis):
    if not _valid(op, dtype):
        pytest.skip("bitwise ops need integers")
    gpu, cpu = machines
    x = _data(np.random.default_rng(2), (37, 129), dtype, op)
    _compare(
        gpu,
        cpu,
        gpu.reduce(gpu.asarray(x), op, axis=axis),
        cpu.reduce(cpu.asarray(x), op, axis=axis),
    )


def test_spread_enumerate_pack_count_broadcast(machines):
    gpu, cpu = machines
    rng = np.random.default_rng(4)
    x = rng.integers(0, 100, (13, 17, 5))
    mask = rng.random((13, 17, 5)) < 0.4
    flat_mask = mask.reshape(-1)
    seg = rng.random(flat_mask.size) < 0.1
    for axis in range(3):
        _compare(
            gpu,
            cpu,
            gpu.spread(gpu.asarray(x), axis, index=2),
            cpu.spread(cpu.asarray(x), axis, index=2),
        )
    _compare(gpu, cpu, gpu.enumerate(gpu.asarray(flat_mask)), cpu.enumerate(cpu.asarray(flat_mask)))
    _compare(
        gpu,
        cpu,
        gpu.enumerate(gpu.asarray(flat_mask), segments=gpu.asarray(seg)),
        cpu.enumerate(cpu.asarray(flat_mask), segments=cpu.asarray(seg)),
    )
    _compare(
        gpu,
        cpu,
        gpu.pack(gpu.asarray(x), gpu.asarray(mask)),
        cpu.pack(cpu.asarray(x), cpu.asarray(mask)),
    )
    assert gpu.count(gpu.asarray(mask)) == cpu.count(cpu.asarray(mask))
    _compare(gpu, cpu, gpu.broadcast(7, (3, 4), np.int32), cpu.broadcast(7, (3, 4), np.int32))


_COMBINES = ("overwrite", "add", "max", "min", "and", "or", "unique")


@pytest.mark.parametrize(
    "n_msgs,size", [(0, 5), (1, 1), (1000, 37), (200_000, 50_000), (1 << 20, 1 << 10)]
)
@pytest.mark.parametrize("dtype", DTYPES + ("bool",))
@pytest.mark.parametrize("combine", _COMBINES)
def test_send(machines, combine, dtype, n_msgs, size):
    from simd import CollisionError

    gpu, cpu = machines
    if combine in ("and", "or") and np.dtype(dtype).kind == "f":
        pytest.skip("and/or need integers")
    rng = np.random.default_rng(n_msgs + size)
    if dtype == "bool" and combine == "add":
        # A bool sum would be a logical or: refused on both backends.
        for m in (gpu, cpu):
            with pytest.raises(TypeError, match="logical or"):
                ones, zeros = m.asarray(np.ones(n_msgs, bool)), m.asarray(np.zeros(n_msgs, int))
                m.send(ones, zeros, size, combine="add")
        return
    if dtype == "bool":
        values = rng.random(n_msgs) < 0.5
    else:
        values = _data(rng, n_msgs, dtype, "max" if combine != "add" else "add")
        if np.dtype(dtype).kind == "f" and combine == "add":
            values = rng.random(n_msgs).astype(dtype)
    if combine == "unique":
        dest = rng.permutation(size)[: min(n_msgs, size)]
        values = values[: dest.size]
    else:
        dest = rng.integers(0, size, n_msgs)
    mask = rng.random(dest.size) < 0.8
    into = _data(rng, size, dtype, "max") if dtype != "bool" else rng.random(size) < 0.5
    for kw_name in ("size", "into", "mask"):
        if kw_name == "size":
            args_c = dict(size=size, fill=0)
            args_g = dict(size=size, fill=0)
        elif kw_name == "into":
            args_c = dict(into=cpu.asarray(into.copy()))
            args_g = dict(into=gpu.asarray(into.copy()))
        else:
            args_c = dict(size=size, mask=cpu.asarray(mask))
            args_g = dict(size=size, mask=gpu.asarray(mask))
        expected = cpu.send(cpu.asarray(values), cpu.asarray(dest), combine=combine, **args_c)
        got = gpu.send(gpu.asarray(values), gpu.asarray(dest), combine=combine, **args_g)
        if combine == "add" and np.dtype(dtype).kind == "f":
            # Float sums of colliding messages: same messages, another summation order.
            tol = dict(rtol=1e-3, atol=1e-2) if dtype == "float32" else dict(rtol=1e-10, atol=1e-9)
            np.testing.assert_allclose(gpu.asnumpy(got), cpu.asnumpy(expected), **tol)
            continue
        _compare(gpu, cpu, got, expected)
    if combine == "unique" and size >= 2 and n_msgs >= 2:
        with pytest.raises(CollisionError):
            gpu.send(
                gpu.asarray(values[:2]), gpu.asarray(np.array([1, 1])), size=size, combine="unique"
            )


def test_get(machines):
    gpu, cpu = machines
    rng = np.random.default_rng(6)
    src = rng.random((50, 41))
    index = rng.integers(0, src.size, (300, 7))
    mask = rng.random(index.shape) < 0.5
    _compare(
        gpu,
        cpu,
        gpu.get(gpu.asarray(src), gpu.asarray(index)),
        cpu.get(cpu.asarray(src), cpu.asarray(index)),
    )
    _compare(
        gpu,
        cpu,
        gpu.get(gpu.asarray(src), gpu.asarray(index), mask=gpu.asarray(mask), fill=-1.0),
        cpu.get(cpu.asarray(src), cpu.asarray(index), mask=cpu.asarray(mask), fill=-1.0),
    )


@pytest.mark.parametrize("boundary", ["wrap", "zero", "edge", 2.5])
@pytest.mark.parametrize("shape", [(1000,), (33, 65), (7, 9, 11)])
def test_shift(machines, shape, boundary):
    from simd import XNET

    gpu, cpu = machines
    rng = np.random.default_rng(7)
    x = rng.random(shape)
    for axis in range(len(shape)):
        for k in (1, -1, 3, -(shape[axis] + 2), 0):
            _compare(
                gpu,
                cpu,
                gpu.shift(gpu.asarray(x), k, axis, boundary=boundary),
                cpu.shift(cpu.asarray(x), k, axis, boundary=boundary),
            )
    if len(shape) == 2:
        for direction in XNET.values():
            _compare(
                gpu,
                cpu,
                gpu.shift(gpu.asarray(x), direction, boundary=boundary),
                cpu.shift(cpu.asarray(x), direction, boundary=boundary),
            )
    b = x > 0.5
    _compare(
        gpu,
        cpu,
        gpu.shift(gpu.asarray(b), 1, 0, boundary="zero"),
        cpu.shift(cpu.asarray(b), 1, 0, boundary="zero"),
    )


@pytest.mark.parametrize("boundary", ["edge", "zero", "wrap", 1.5])
def test_halo_exchange(machines, boundary):
    gpu, cpu = machines
    rng = np.random.default_rng(8)
    R, C, B = 3, 4, 9
    heights = [9, 5, 7]
    widths = [4, 9, 6, 2]
    tiles = rng.random((R, C, B, B))
    for width in (1, 2):
        _compare(
            gpu,
            cpu,
            gpu.halo_exchange(gpu.asarray(tiles), heights, widths, width=width, boundary=boundary),
            cpu.halo_exchange(cpu.asarray(tiles), heights, widths, width=width, boundary=boundary),
        )


@pytest.mark.slow
@pytest.mark.parametrize("op", ["add", "max"])
@pytest.mark.parametrize("dtype", ["int64", "float64"])
def test_plain_8_byte_scans_at_scale(op, dtype):
    """Plain 8-byte scans look back over a 16-byte status word: stress it over ~87k tiles
    (2**27 elements and a partial tile), exact data so every order gives one answer."""
    import cupy

    from kernels import cupy_scan

    n = (1 << 27) + 12345
    x = (cupy.arange(n, dtype=cupy.int64) % 7 - 3).astype(dtype)
    for reverse in (False, True):
        got = cupy_scan.scan(cupy, x, op, reverse=reverse)
        src = x[::-1] if reverse else x
        want = cupy.cumsum(src) if op == "add" else cupy.asarray(np.maximum.accumulate(src.get()))
        if reverse:
            want = want[::-1]
        assert bool((got == want).all()), (op, dtype, reverse)
