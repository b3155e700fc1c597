"""Every instruction against the serial oracles of ``oracle.py`` (NumPy backend)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simd import XNET, CollisionError, Machine
from tests.simd import oracle

DTYPES = [np.int32, np.int64, np.float32, np.float64]
OPS = ["add", "max", "min", "and", "or", "xor", "copy"]


@pytest.fixture(autouse=True, scope="module", params=["compiled", "reference"])
def implementation(request):
    """Run every test twice: the NumPy backend's Numba kernels, then the xp reference."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SIMD_FORCE_REFERENCE", "1" if request.param == "reference" else "0")
        yield request.param


def machine(pes=8):
    return Machine(pes=pes, backend="numpy")


@st.composite
def scan_cases(draw):
    dtype = np.dtype(draw(st.sampled_from(DTYPES + [np.bool_])))
    op = draw(st.sampled_from(OPS))
    if dtype.kind == "f" and op in ("and", "or", "xor"):
        op = "max"
    n = draw(st.integers(0, 70))
    if dtype.kind == "b":
        values = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    else:
        # Small integers keep float sums exact, so the oracle can compare with ==; floats
        # also get NaN and infinities, which max and min must propagate like NumPy.
        element = st.integers(-50, 50)
        if dtype.kind == "f":
            element = element | st.sampled_from([np.nan, np.inf, -np.inf])
        values = draw(st.lists(element, min_size=n, max_size=n))
    flags = draw(st.none() | st.lists(st.booleans(), min_size=n, max_size=n))
    initial = draw(st.none() | st.integers(-5, 5))
    if dtype.kind == "b" and initial is not None:
        initial = bool(initial)
    return dict(
        values=np.array(values, dtype=dtype),
        op=op,
        flags=None if flags is None else np.array(flags, dtype=bool),
        exclusive=draw(st.booleans()),
        reverse=draw(st.booleans()),
        initial=initial,
        pes=draw(st.sampled_from([1, 4, 512])),
    )


def expected_line(values, op, flags, exclusive, reverse, initial):
    dtype = values.dtype
    if dtype.kind == "b" and op == "add":
        dtype = np.dtype(np.int64)
    work = values.astype(dtype).tolist()
    if dtype.kind == "b" and op in ("and", "or", "xor"):
        work = [int(v) for v in work]
        initial = None if initial is None else int(initial)
    out = oracle.scan_line(
        work,
        op,
        flags=None if flags is None else flags.tolist(),
        exclusive=exclusive,
        reverse=reverse,
        initial=initial,
        dtype=dtype,
    )
    return np.array(out).astype(dtype)


@settings(max_examples=300)
@given(scan_cases())
def test_scan_1d_matches_serial_oracle(case):
    m = machine(case["pes"])
    if case["op"] == "copy" and not case["exclusive"] and case["initial"] is not None:
        # An inclusive copy-scan has nothing to combine `initial` with: refused.
        with pytest.raises(ValueError, match="inclusive copy-scan takes no initial"):
            m.scan(case["values"], "copy", initial=case["initial"], segments=case["flags"])
        return
    with np.errstate(invalid="ignore"):  # inf + -inf: NumPy's reductions warn, as cumsum does
        got = m.scan(
            case["values"],
            case["op"],
            exclusive=case["exclusive"],
            reverse=case["reverse"],
            segments=case["flags"],
            initial=case["initial"],
        )
    want = expected_line(
        case["values"],
        case["op"],
        case["flags"],
        case["exclusive"],
        case["reverse"],
        case["initial"],
    )
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@given(
    shape=st.lists(st.integers(0, 6), min_size=2, max_size=3).map(tuple),
    axis=st.integers(-3, 2),
    op=st.sampled_from(OPS),
    segmented=st.booleans(),
    exclusive=st.booleans(),
    reverse=st.booleans(),
    seed=st.integers(0, 2**31),
)
def test_scan_along_axis_scans_every_line(shape, axis, op, segmented, exclusive, reverse, seed):
    if not -len(shape) <= axis < len(shape):
        axis = 0
    rng = np.random.default_rng(seed)
    x = rng.integers(-9, 10, size=shape).astype(np.int64)
    flags = rng.random(shape) < 0.3 if segmented else None
    got = machine().scan(x, op, axis=axis, segments=flags, exclusive=exclusive, reverse=reverse)
    moved = np.moveaxis(x, axis, -1)
    moved_flags = None if flags is None else np.moveaxis(flags, axis, -1)
    want = np.empty_like(moved)
    for index in np.ndindex(*moved.shape[:-1]):
        line_flags = None if moved_flags is None else moved_flags[index]
        want[index] = expected_line(moved[index], op, line_flags, exclusive, reverse, None)
    np.testing.assert_array_equal(got, np.moveaxis(want, -1, axis))


def test_scan_whole_kd_array_in_c_order():
    m = machine()
    x = np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(m.scan(x), np.cumsum(x).reshape(3, 4))


def test_scan_float_sums_agree_with_cumsum_to_rounding():
    rng = np.random.default_rng(1)
    x = rng.standard_normal(10_000).astype(np.float32)
    flags = rng.random(x.size) < 0.01
    got = machine().scan(x, "add", segments=flags)
    want = np.empty_like(x, dtype=np.float64)
    starts = np.flatnonzero(np.r_[True, flags[1:]])
    for a, b in zip(starts, np.r_[starts[1:], x.size], strict=True):
        want[a:b] = np.cumsum(x[a:b].astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


def test_paper_scan_addition_variant():
    # Ahrens & Hansen's "scan addition variant": each element gets the sum before it.
    m = machine()
    got = m.scan(np.array([100, 19, 0, 0, 0, 0, 0]), "add", exclusive=True, initial=0)
    np.testing.assert_array_equal(got, [0, 100, 119, 119, 119, 119, 119])


def test_scan_mask_contributes_identity():
    m = machine()
    x = np.array([5, 1, 7, 2])
    mask = np.array([True, False, True, True])
    np.testing.assert_array_equal(m.scan(x, "add", mask=mask), [5, 5, 12, 14])
    np.testing.assert_array_equal(m.scan(x, "min", mask=~mask), [np.iinfo(x.dtype).max, 1, 1, 1])


@given(
    values=st.lists(st.integers(-100, 100), max_size=40),
    op=st.sampled_from(["add", "max", "min", "and", "or", "xor"]),
)
def test_reduce_matches_serial_fold(values, op):
    x = np.array(values, dtype=np.int64)
    got = machine().reduce(x, op)
    acc = oracle.identity(op, np.int64)
    for v in values:
        acc = oracle.BINARY[op](acc, v)
    assert int(got) == acc


@given(
    values=st.lists(st.integers(-100, 100), max_size=40),
    mask_bits=st.lists(st.booleans(), min_size=40, max_size=40),
    op=st.sampled_from(["add", "max", "min", "and", "or", "xor"]),
)
def test_masked_reduce_and_scan_skip_masked_elements(values, mask_bits, op):
    x = np.array(values, dtype=np.int64)
    mask = np.array(mask_bits[: x.size], dtype=bool)
    m = machine()
    kept = [v for v, k in zip(values, mask_bits, strict=False) if k]
    acc = oracle.identity(op, np.int64)
    for v in kept:
        acc = oracle.BINARY[op](acc, v)
    assert int(m.reduce(x, op, mask=mask)) == acc
    identity = oracle.identity(op, np.int64)
    work = [v if k else identity for v, k in zip(values, mask_bits, strict=False)]
    want = oracle.scan_line(work, op) if values else []
    assert m.scan(x, op, mask=mask).tolist() == want


@given(
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple),
    data=st.data(),
)
def test_spread_copies_one_slice_along_its_axis(shape, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    index = data.draw(st.integers(-shape[axis], shape[axis] - 1))
    x = np.arange(np.prod(shape)).reshape(shape)
    got = machine().spread(x, axis, index=index)
    for pos in np.ndindex(*shape):
        src = list(pos)
        src[axis] = index % shape[axis]
        assert got[pos] == x[tuple(src)]


def test_reduce_along_axis():
    x = np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(machine().reduce(x, "max", axis=1), [3, 7, 11])
    np.testing.assert_array_equal(machine().reduce(x, "xor", axis=0), np.bitwise_xor.reduce(x, 0))


@given(st.lists(st.booleans(), max_size=60), st.lists(st.booleans(), max_size=60))
def test_enumerate_pack_count(mask_list, seg_list):
    m = machine()
    mask = np.array(mask_list, dtype=bool)
    ranks = m.enumerate(mask)
    assert ranks.tolist() == [sum(mask_list[:i]) for i in range(len(mask_list))]
    values = np.arange(mask.size) * 3
    assert m.pack(values, mask).tolist() == [v for v, k in zip(values, mask_list, strict=True) if k]
    assert m.count(mask) == sum(mask_list)
    segs = np.array((seg_list + [False] * mask.size)[: mask.size], dtype=bool)
    seg_ranks = m.enumerate(mask, segments=segs)
    want = oracle.scan_line([int(v) for v in mask_list], "add", flags=segs.tolist(), exclusive=True)
    assert seg_ranks.tolist() == want


def test_spread_and_broadcast():
    m = machine()
    x = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(m.spread(x, 1, index=2), [[2, 2, 2], [5, 5, 5]])
    b = m.broadcast(7, (2, 2), dtype=np.int32)
    assert b.dtype == np.int32 and b.tolist() == [[7, 7], [7, 7]]


@st.composite
def send_cases(draw):
    size = draw(st.integers(1, 20))
    n = draw(st.integers(0, 40))
    dest = draw(st.lists(st.integers(0, size - 1), min_size=n, max_size=n))
    values = draw(st.lists(st.integers(-50, 50), min_size=n, max_size=n))
    mask = draw(st.none() | st.lists(st.booleans(), min_size=n, max_size=n))
    combine = draw(st.sampled_from(["overwrite", "add", "max", "min", "and", "or"]))
    into = draw(st.booleans())
    return (
        size,
        np.array(dest, dtype=np.int64),
        np.array(values, dtype=np.int64),
        (None if mask is None else np.array(mask, dtype=bool)),
        combine,
        into,
    )


@given(send_cases())
def test_send_matches_serial_router(case):
    size, dest, values, mask, combine, into = case
    m = machine()
    start = np.arange(size, dtype=np.int64) * 7 - 30
    fill = -99
    if into:
        got = m.send(values, dest, combine=combine, mask=mask, into=start.copy())
    else:
        got = m.send(values, dest, size, combine=combine, mask=mask, fill=fill)
    want = start.copy() if into else np.full(size, fill, dtype=np.int64)
    received = {}
    for i in range(dest.size):  # sender order: the highest index is the last
        if mask is not None and not mask[i]:
            continue
        d = int(dest[i])
        if d not in received or combine == "overwrite":
            received[d] = int(values[i])
        else:
            received[d] = oracle.BINARY[combine](received[d], int(values[i]))
    for d, v in received.items():
        if into and combine != "overwrite":
            want[d] = oracle.BINARY[combine](int(start[d]), v)
        else:
            want[d] = v
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("combine", ["max", "min"])
def test_send_float_max_min_propagate_nan(combine):
    m = machine()
    values = np.array([1.0, np.nan, 3.0, 2.0, np.nan, -1.0])
    dest = np.array([0, 0, 0, 1, 2, 2])
    with np.errstate(invalid="ignore"):
        got = m.send(values, dest, 4, combine=combine, fill=9.0)
        into = m.send(np.array([5.0]), np.array([3]), combine=combine, into=np.array([np.nan] * 4))
    want_b = 2.0
    np.testing.assert_array_equal(got, [np.nan, want_b, np.nan, 9.0])
    assert np.isnan(into[3])


def test_scan_max_min_propagate_nan_like_numpy():
    m = machine()
    x = np.array([1.0, np.nan, 3.0, 5.0, 2.0])
    np.testing.assert_array_equal(m.scan(x, "max"), np.maximum.accumulate(x))
    np.testing.assert_array_equal(m.scan(x, "min", reverse=True), [np.nan, np.nan, 2.0, 2.0, 2.0])
    seg = np.array([True, False, True, False, False])
    np.testing.assert_array_equal(m.scan(x, "max", segments=seg), [1.0, np.nan, 3.0, 5.0, 5.0])
    assert np.isnan(m.reduce(x, "max")) and np.isnan(m.reduce(x, "min"))


def test_send_into_updates_in_place_and_float_min():
    m = machine()
    zbuf = np.full((2, 2), 1.0)
    out = m.send(np.array([0.5, 0.25, 0.75]), np.array([3, 3, 0]), combine="min", into=zbuf)
    assert out is zbuf
    np.testing.assert_array_equal(zbuf, [[0.75, 1.0], [1.0, 0.25]])


def test_send_unique_raises_on_collision_and_passes_without():
    m = machine()
    ok = m.send(np.array([1, 2, 3]), np.array([2, 0, 1]), 3, combine="unique")
    assert ok.tolist() == [2, 3, 1]
    with pytest.raises(CollisionError, match="address 1"):
        m.send(np.array([1, 2, 3]), np.array([1, 0, 1]), 3, combine="unique")


def test_send_and_get_reject_bad_addresses():
    m = machine()
    with pytest.raises(IndexError, match="out of range"):
        m.send(np.array([1]), np.array([5]), 3)
    with pytest.raises(IndexError, match="out of range"):
        m.get(np.arange(3), np.array([-1]))
    with pytest.raises(TypeError, match="integer"):
        m.get(np.arange(3), np.array([0.5]))
    with pytest.raises(ValueError, match="exactly one"):
        m.send(np.array([1]), np.array([0]))


@given(st.lists(st.integers(0, 9), max_size=30), st.none() | st.booleans())
def test_get_matches_indexing(index_list, masked):
    m = machine()
    source = np.arange(10) * 11
    index = np.array(index_list, dtype=np.int64)
    if masked is None:
        assert m.get(source, index).tolist() == [source[i] for i in index_list]
    else:
        mask = np.arange(index.size) % 2 == int(masked)
        got = m.get(source, index, mask=mask, fill=-1)
        assert got.tolist() == [source[i] if k else -1 for i, k in zip(index, mask, strict=True)]


BOUNDARIES = ["wrap", "zero", "edge", 3]


@given(
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple),
    seed=st.integers(0, 2**31),
    boundary=st.sampled_from(BOUNDARIES),
    dtype=st.sampled_from(DTYPES + [np.bool_]),
)
def test_shift_matches_serial_mesh(shape, seed, boundary, dtype):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 9, size=shape).astype(dtype)
    offsets = tuple(int(k) for k in rng.integers(-6, 7, size=len(shape)))
    got = machine(shape).shift(x, offsets, boundary=boundary)
    want = oracle.shift_nd(x, offsets, boundary)
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got, want)


def test_xnet_directions_fetch_from_the_named_neighbour():
    m = Machine(pes=(3, 3), backend="numpy")
    x = np.arange(9).reshape(3, 3)
    centre = (1, 1)
    neighbour = {
        "n": (0, 1),
        "ne": (0, 2),
        "e": (1, 2),
        "se": (2, 2),
        "s": (2, 1),
        "sw": (2, 0),
        "w": (1, 0),
        "nw": (0, 0),
    }
    for name, (r, c) in neighbour.items():
        assert m.shift(x, XNET[name])[centre] == x[r, c], name


def test_shift_offsets_beyond_the_mesh_are_exact_and_cheap():
    m = Machine(pes=(4,), backend="numpy")
    x = np.arange(6)
    for k in (7, -13, 2**40, -(2**70)):
        np.testing.assert_array_equal(m.shift(x, k, 0), np.roll(x, k % 6))
        np.testing.assert_array_equal(
            m.shift(x, k, 0, boundary="zero"), oracle.shift_nd(x, (max(-6, min(6, k)),), "zero")
        )
    # The model clock charges the short way round the torus, and at most the mesh length.
    before = m.clock
    m.shift(x, 5, 0)  # the same as -1 on a torus of 6
    one_step = m.clock - before
    before = m.clock
    m.shift(x, 1, 0)
    assert one_step == m.clock - before
    before = m.clock
    m.shift(x, 2**40, 0, boundary="zero")
    assert m.clock - before == 6 * one_step


def test_get_with_every_vp_masked_off_reads_nothing():
    m = machine()
    got = m.get(np.array([], dtype=np.int32), np.array([0, 5]), mask=np.zeros(2, bool), fill=-1)
    assert got.tolist() == [-1, -1] and got.dtype == np.int32
    with pytest.raises(IndexError, match="get index 5"):
        m.get(np.arange(3), np.array([0, 5]), mask=np.array([True, True]))
    for mask in (None, np.array([False, True])):
        with pytest.raises(IndexError, match="out of range for 0 addresses"):
            m.get(np.array([], dtype=np.int32), np.array([0, 5]), mask=mask)
    np.testing.assert_array_equal(
        m.get(np.arange(3), np.array([0, 5]), mask=np.array([True, False]), fill=-1), [0, -1]
    )


def test_shift_single_axis_form():
    m = machine()
    x = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(m.shift(x, 1, axis=1, boundary="zero"), [[0, 0, 1], [0, 3, 4]])
    with pytest.raises(ValueError, match="needs axis"):
        m.shift(x, 1)
    with pytest.raises(ValueError, match="boundary"):
        m.shift(x, 1, axis=0, boundary="mirror")


def serial_halo(tiles, heights, widths, width, boundary):
    """Assemble each PE's halo by visiting its neighbours' tiles one point at a time."""
    R, C, BH, BW = tiles.shape
    row_off = np.r_[0, np.cumsum(heights)]
    col_off = np.r_[0, np.cumsum(widths)]
    H, W = row_off[-1], col_off[-1]

    def point(g, h):
        if boundary == "wrap":
            g, h = g % H, h % W
        elif boundary == "edge":
            g, h = min(max(g, 0), H - 1), min(max(h, 0), W - 1)
        elif not (0 <= g < H and 0 <= h < W):
            return 0 if boundary == "zero" else boundary
        r = np.searchsorted(row_off, g, side="right") - 1
        c = np.searchsorted(col_off, h, side="right") - 1
        return tiles[r, c, g - row_off[r], h - col_off[c]]

    out = np.zeros((R, C, BH + 2 * width, BW + 2 * width), dtype=tiles.dtype)
    for r in range(R):
        for c in range(C):
            for a in range(heights[r] + 2 * width):
                for b in range(widths[c] + 2 * width):
                    out[r, c, a, b] = point(row_off[r] + a - width, col_off[c] + b - width)
    return out


@given(
    R=st.integers(1, 3),
    C=st.integers(1, 3),
    width=st.integers(1, 2),
    boundary=st.sampled_from(BOUNDARIES),
    seed=st.integers(0, 2**31),
)
def test_halo_exchange_matches_serial_neighbour_copy(R, C, width, boundary, seed):
    rng = np.random.default_rng(seed)
    B = 5
    heights = rng.integers(width, B + 1, size=R)
    widths = rng.integers(width, B + 1, size=C)
    tiles = rng.integers(1, 100, size=(R, C, B, B)).astype(np.float32)
    got = Machine(pes=(R, C), backend="numpy").halo_exchange(
        tiles, heights, widths, width=width, boundary=boundary
    )
    np.testing.assert_array_equal(got, serial_halo(tiles, heights, widths, width, boundary))


def test_halo_exchange_rejects_tiles_thinner_than_the_halo():
    m = Machine(pes=(2, 2), backend="numpy")
    with pytest.raises(ValueError, match="exceeds the smallest tile"):
        m.halo_exchange(np.zeros((2, 2, 4, 4)), [1, 4], [4, 4], width=2)
    with pytest.raises(ValueError, match="heights"):
        m.halo_exchange(np.zeros((2, 2, 4, 4)), [5, 4], [4, 4])


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda m: m.scan(np.array([1.0]), "xor"), TypeError, "integer or bool"),
        (lambda m: m.scan(np.array([1]), "mul"), ValueError, "unknown operator"),
        (lambda m: m.scan(np.array([1], dtype=np.float16)), TypeError, "astype"),
        (lambda m: m.scan(np.array([1, 2]), segments=np.array([1, 0])), TypeError, "bool"),
        (lambda m: m.scan(np.array([1, 2]), segments=np.array([True])), ValueError, "shape"),
        (lambda m: m.scan(np.array([1, 2]), axis=3), ValueError, "axis"),
        (
            lambda m: m.scan(np.array([1, 2]), "copy", mask=np.array([True, True])),
            ValueError,
            "copy-scan",
        ),
        (lambda m: m.send(np.array([1.0]), np.array([0]), 1, combine="or"), TypeError, "integer"),
        (lambda m: m.send(np.array([1]), np.array([0]), 1, combine="sum"), ValueError, "combiner"),
        (lambda m: m.scan(np.array(["a"])), TypeError, "numbers"),
        (lambda m: m.shift(np.arange(3), True, 0), TypeError, "offset must be an int"),
        (lambda m: m.shift(np.arange(3), 1, 0, boundary=2.5), ValueError, "must be an integer"),
        (lambda m: m.shift(np.arange(3), 1, 0, boundary=np.nan), ValueError, "must be an integer"),
        (lambda m: m.spread(np.ones((2, 2)), 0, index=1.0), TypeError, "index must be an int"),
    ],
)
def test_bad_input_is_named(call, error, match):
    with pytest.raises(error, match=match):
        call(machine())
