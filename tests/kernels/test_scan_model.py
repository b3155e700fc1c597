"""A NumPy/Python model of the CUDA scan kernel's block decomposition, against an oracle.

The GPU scan (``kernels.cuda_scan_source``) cannot run here, and compiling it proves only
that it is valid CUDA. This model repeats, step by step and with the kernel's own index
arithmetic, what every thread block does: striped loads in scan order (reverse included),
the striped-to-blocked exchange, the segment heads (flags and row starts, the row position
advanced per item), CUB's raking block scan (serial per-thread reduction, scan of the
thread aggregates, serial per-thread scan seeded with the prefix; thread 0 of tile 0 gets
an *undefined* prefix, modelled as random garbage), the decoupled look-back over windows of
predecessor tiles whose status is randomly "aggregate only" or "inclusive prefix known"
(CUB's ``TilePrefixCallbackOp``), and the epilogue (initial, exclusive heads). Block size,
items per thread and the look-back window are parameters, so small values cross many tile
and window boundaries. The model is compared with a serial oracle written from the
contract, and with ``kernels.reference.scan``.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernels import cuda_scan_source as src
from kernels import reference

# --- scalar operators, exactly the C expressions of the kernel ------------------------------


def _wrap(v: int, dtype: np.dtype) -> int:
    bits = dtype.itemsize * 8
    return (v + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))


def _value_op(op: str, dtype: np.dtype):
    isint = dtype.kind == "i"

    def f(a, b):
        if op == "add":
            return _wrap(a + b, dtype) if isint else a + b
        if op == "and":
            return a & b
        if op == "or":
            return a | b
        if op == "xor":
            return a ^ b
        if op == "copy":
            return a
        if op == "max":
            return a if a != a else (b if b != b else (b if b > a else a))
        if op == "min":
            return a if a != a else (b if b != b else (b if b < a else a))
        raise AssertionError(op)

    return f


def _pair_op(vop):
    """Schwartz's segmented operator on (flag, value) pairs."""

    def f(a, b):
        return (a[0] | b[0], b[1] if b[0] else vop(a[1], b[1]))

    return f


# --- the model of the kernel ----------------------------------------------------------------


def model_scan(x, flags, row_len, op, *, exclusive, reverse, initial, block, items, window, rng):
    """Plan the scan as ``kernels.cupy_scan`` does, then run the model kernel."""
    dtype = x.dtype
    n = x.size
    out = np.empty_like(x)
    if n == 0:
        return out
    plan = src.plan_scan(
        n,
        row_len,
        dtype,
        op,
        exclusive=exclusive,
        reverse=reverse,
        segmented=flags is not None,
        has_initial=initial is not None,
    )
    fill = src.scan_fill(op, dtype, exclusive=exclusive, initial=initial)
    flags = None if flags is None else flags.astype(np.uint8)
    model_kernel(
        x,
        flags,
        out,
        n,
        row_len,
        fill,
        plan.form,
        key=plan.key,
        block=block,
        items=items,
        window=window,
        rng=rng,
    )
    return out


def model_kernel(x, flags, out, n, row_len, fill, form, *, key, block, items, window, rng):
    """What the launched kernel computes from its arguments (``simd_scan``'s signature).

    ``key`` is the compiled variant (op, dtype, pairs); ``form`` the runtime bits
    (exclusive, reverse, segmented, initial); ``flags`` is read only when segmented.
    """
    op, dtype, pairs = key
    dtype = np.dtype(dtype)
    exclusive = bool(form & src.FORM_EXCLUSIVE)
    reverse = bool(form & src.FORM_REVERSE)
    segmented = bool(form & src.FORM_SEGMENTED)
    has_initial = bool(form & src.FORM_INITIAL)
    assert x.dtype == dtype and out.dtype == dtype and x.size == n == out.size
    assert np.asarray(fill).dtype == dtype, "the kernel's initial argument has the wrong type"
    fill = np.asarray(fill).item()
    if segmented:
        assert pairs, "a segmented scan must run the pair variant"
        assert flags.dtype == np.uint8 and flags.size == n
    else:
        flags = None
    assert pairs == (segmented or row_len < n)
    tile_len = block * items
    num_tiles = -(-n // tile_len)
    vop = _value_op(op, dtype)
    # The kernel always scans pairs when there are heads besides position 0; the pair
    # operator degenerates to vop when the only head is position 0, so pairs are modelled
    # always, and the unsegmented path is covered by the same arithmetic.
    sop = _pair_op(vop)
    xs = x.reshape(-1).tolist()
    fs = None if flags is None else flags.reshape(-1).tolist()
    aggregates: list = []
    inclusives: list = []
    for tile in range(num_tiles):
        base = tile * tile_len
        # Striped loads: thread t, item i reads scan position base + t + i * block.
        striped_v = [[0] * items for _ in range(block)]
        striped_f = [[0] * items for _ in range(block)]
        for t in range(block):
            for i in range(items):
                q = base + t + i * block
                if q < n:
                    striped_v[t][i] = xs[n - 1 - q if reverse else q]
                    if fs is not None:
                        striped_f[t][i] = (fs[n - q] if q > 0 else 1) if reverse else fs[q]
        # StripedToBlocked: tile offset t + i * block -> thread off // items, item off % items.
        blocked_v = [[0] * items for _ in range(block)]
        blocked_f = [[0] * items for _ in range(block)]
        for t in range(block):
            for i in range(items):
                off = t + i * block
                blocked_v[off // items][off % items] = striped_v[t][i]
                blocked_f[off // items][off % items] = striped_f[t][i]
        # Heads, with the row position advanced per item as the kernel does.
        heads = [[0] * items for _ in range(block)]
        # (head, value) items; named apart from ``pairs``, the compiled variant's flag,
        # which picks the head rule below.
        scan_items = [[None] * items for _ in range(block)]
        for t in range(block):
            q0 = base + t * items
            r = q0 % row_len
            for i in range(items):
                if pairs:
                    h = int(r == 0) | int(blocked_f[t][i] != 0)
                    r += 1
                    if r == row_len:
                        r = 0
                else:
                    h = int(q0 + i == 0)
                heads[t][i] = h
                scan_items[t][i] = (h, blocked_v[t][i])
        # Raking block scan: thread reductions, then an exclusive scan of them.
        thread_aggs = []
        for t in range(block):
            acc = scan_items[t][0]
            for i in range(1, items):
                acc = sop(acc, scan_items[t][i])
            thread_aggs.append(acc)
        tile_agg = thread_aggs[0]
        for a in thread_aggs[1:]:
            tile_agg = sop(tile_agg, a)
        aggregates.append(tile_agg)
        if tile == 0:
            tile_prefix = None
            inclusives.append(tile_agg)
        else:
            tile_prefix = _look_back(tile, aggregates, inclusives, sop, window, rng)
            inclusives.append(sop(tile_prefix, tile_agg))
        thread_prefix = []
        running = tile_prefix
        for t in range(block):
            thread_prefix.append(running)
            running = thread_aggs[t] if running is None else sop(running, thread_aggs[t])
        # Per-thread serial scan; thread 0 of tile 0 has no prefix (CUB: undefined output).
        results = [[None] * items for _ in range(block)]
        for t in range(block):
            prefix = thread_prefix[t]
            if exclusive:
                if prefix is None:
                    # Undefined in CUB: random garbage that must never reach the output.
                    garbage = (rng.randint(0, 1), rng.choice(xs))
                    results[t][0] = garbage
                    acc = scan_items[t][0]
                else:
                    results[t][0] = prefix
                    acc = sop(prefix, scan_items[t][0])
                for i in range(1, items):
                    results[t][i] = acc
                    acc = sop(acc, scan_items[t][i])
            else:
                acc = scan_items[t][0] if prefix is None else sop(prefix, scan_items[t][0])
                results[t][0] = acc
                for i in range(1, items):
                    acc = sop(acc, scan_items[t][i])
                    results[t][i] = acc
        # Epilogue, then BlockedToStriped and the striped store.
        for t in range(block):
            for i in range(items):
                s = results[t][i][1]
                if has_initial:
                    s = vop(fill, s)
                val = fill if exclusive and heads[t][i] else s
                q = base + t * items + i
                if q < n:
                    out[n - 1 - q if reverse else q] = val


def _look_back(tile, aggregates, inclusives, sop, window, rng):
    """CUB's TilePrefixCallbackOp: slide a warp-wide window back over predecessor tiles.

    Each predecessor's status is drawn at random: inclusive prefix known, or only its
    aggregate (tile 0 only ever publishes its inclusive prefix). Within a window, lanes
    are reduced from lane 0 (nearest tile) up to the first lane with an inclusive prefix,
    older values on the left (CUB's swizzled operator).
    """
    known = {0: True}
    for j in range(1, tile):
        known[j] = rng.random() < 0.3
    exclusive = None
    pred = tile - 1
    while True:
        lanes = []
        stop = False
        for lane in range(window):
            j = pred - lane
            if j < 0:
                break  # padding (OOB) lanes lie beyond tile 0, which always stops the window
            if known[j]:
                lanes.append(inclusives[j])
                stop = True
                break
            lanes.append(aggregates[j])
        window_agg = lanes[-1]
        for value in reversed(lanes[:-1]):
            window_agg = sop(window_agg, value)
        exclusive = window_agg if exclusive is None else sop(window_agg, exclusive)
        if stop:
            return exclusive
        pred -= window


# --- the serial oracle, from the contract ---------------------------------------------------


def oracle_scan(x, flags, row_len, op, *, exclusive, reverse, initial):
    """Element by element, row by row, segment by segment."""
    dtype = x.dtype
    vop = _value_op(op, dtype)
    n = x.size
    out = np.empty_like(x)
    xs = x.tolist()
    for r0 in range(0, n, row_len):
        idx = list(range(r0, r0 + row_len))
        starts = set()
        for k, p in enumerate(idx):
            # Segment starts in index order; in reverse the scan starts at a segment's end.
            if k == 0 or (flags is not None and flags[p]):
                starts.add(p)
        if reverse:
            ends = {p - 1 for p in starts if p > r0} | {idx[-1]}
            order, heads = idx[::-1], ends
        else:
            order, heads = idx, starts
        acc = None
        for p in order:
            if p in heads:
                acc = None
            if exclusive:
                if acc is None:
                    out[p] = reference.identity(op, dtype) if initial is None else initial
                elif initial is not None and op != "copy":
                    out[p] = vop(dtype.type(initial).item(), acc)
                else:
                    out[p] = acc
                acc = xs[p] if acc is None else vop(acc, xs[p])
            else:
                acc = xs[p] if acc is None else vop(acc, xs[p])
                if initial is not None and op != "copy":
                    out[p] = vop(dtype.type(initial).item(), acc)
                else:
                    out[p] = acc
    return out


# --- tests ----------------------------------------------------------------------------------

_INT_OPS = src.OPS
_FLOAT_OPS = ("add", "max", "min", "copy")


@st.composite
def scan_cases(draw):
    dtype = np.dtype(draw(st.sampled_from(src.DTYPES)))
    op = draw(st.sampled_from(_INT_OPS if dtype.kind == "i" else _FLOAT_OPS))
    block = draw(st.sampled_from([1, 2, 3, 4, 8]))
    items = draw(st.sampled_from([1, 2, 3, 5]))
    window = draw(st.sampled_from([1, 2, 3, 32]))
    tile = block * items
    # Lengths around multiples of the tile, 0 and 1 included.
    n_rows = draw(st.integers(1, 4))
    row_len = draw(st.one_of(st.integers(1, 3 * tile + 2), st.integers(tile - 1, tile + 1)))
    row_len = max(row_len, 1)
    if draw(st.booleans()):
        n_rows = 1
    n = n_rows * row_len
    if draw(st.integers(0, 20)) == 0:
        n, row_len = 0, 1
    if dtype.kind == "i":
        info = np.iinfo(dtype)
        elem = st.one_of(st.integers(-50, 50), st.integers(int(info.min), int(info.max)))
    else:
        # Integer-valued floats keep add exact in any order; NaN and inf test max/min.
        elem = st.one_of(
            st.integers(-1000, 1000).map(float), st.sampled_from([np.nan, np.inf, -np.inf])
        )
        if op == "add":
            elem = st.integers(-1000, 1000).map(float)
    x = np.array(draw(st.lists(elem, min_size=n, max_size=n)), dtype=dtype)
    flags = None
    if draw(st.booleans()):
        flags = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    exclusive = draw(st.booleans())
    reverse = draw(st.booleans())
    initial = None
    if draw(st.booleans()):
        if op in ("and", "or", "xor"):
            initial = draw(st.integers(0, 255))
        else:
            initial = draw(st.integers(-9, 9))
    return dict(
        x=x,
        flags=flags,
        row_len=row_len,
        op=op,
        exclusive=exclusive,
        reverse=reverse,
        initial=initial,
        block=block,
        items=items,
        window=window,
    )


def _assert_same(a, b):
    assert a.dtype == b.dtype
    np.testing.assert_array_equal(a, b)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=scan_cases(), seed=st.integers(0, 2**32 - 1))
def test_model_matches_oracle(case, seed):
    kw = {k: case[k] for k in ("op", "exclusive", "reverse", "initial")}
    expected = oracle_scan(case["x"], case["flags"], case["row_len"], **kw)
    got = model_scan(
        case["x"],
        case["flags"],
        case["row_len"],
        block=case["block"],
        items=case["items"],
        window=case["window"],
        rng=random.Random(seed),
        **kw,
    )
    _assert_same(got, expected)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=scan_cases())
def test_oracle_matches_reference(case):
    """The oracle agrees with the lead's reference, so the model follows the contract."""
    x, flags, row_len = case["x"], case["flags"], case["row_len"]
    kw = {k: case[k] for k in ("op", "exclusive", "reverse", "initial")}
    expected = oracle_scan(x, flags, row_len, **kw)
    rows = x.reshape(-1, row_len)
    seg = None if flags is None else flags.reshape(rows.shape)
    got = reference.scan(np, rows, segments=seg, axis=1, **kw).reshape(-1)
    _assert_same(got, expected)


@pytest.mark.parametrize("dtype", src.DTYPES, ids=str)
@pytest.mark.parametrize("reverse", [False, True])
def test_model_real_tuning_crosses_tiles(dtype, reverse):
    """The kernel's real block size and items per thread, over four tiles plus a bit."""
    block, items = src.tuning(dtype)
    tile = block * items
    rng = np.random.default_rng(7)
    n = 4 * tile + 37
    x = rng.integers(-100, 100, n).astype(dtype)
    # Segmented (pair variant, heads at the flags) and not (plain variant, one head).
    for flags in (rng.random(n) < 0.001, None):
        for op, exclusive in [("add", False), ("max", True), ("copy", False)]:
            kw = dict(op=op, exclusive=exclusive, reverse=reverse, initial=None)
            expected = oracle_scan(x, flags, n, **kw)
            got = model_scan(
                x, flags, n, block=block, items=items, window=32, rng=random.Random(1), **kw
            )
            _assert_same(got, expected)


def test_plan_keys_and_errors():
    plan = src.plan_scan(
        10, 5, np.int32, "add", exclusive=True, reverse=False, segmented=False, has_initial=True
    )
    assert plan.pairs and plan.num_tiles == 1 and plan.key == ("add", "<i4", True)
    assert plan.form == src.FORM_EXCLUSIVE | src.FORM_INITIAL
    plan = src.plan_scan(
        10,
        10,
        np.float64,
        "max",
        exclusive=False,
        reverse=True,
        segmented=False,
        has_initial=False,
    )
    assert plan.key == ("max", "<f8", False) and plan.form == src.FORM_REVERSE
    # copy never combines initial in.
    plan = src.plan_scan(
        10, 5, np.int32, "copy", exclusive=True, reverse=False, segmented=True, has_initial=True
    )
    assert plan.form == src.FORM_EXCLUSIVE | src.FORM_SEGMENTED
    with pytest.raises(TypeError, match="integer dtype"):
        src.plan_scan(
            4,
            4,
            np.float32,
            "xor",
            exclusive=False,
            reverse=False,
            segmented=False,
            has_initial=False,
        )
    with pytest.raises(ValueError, match="whole number of rows"):
        src.plan_scan(
            5,
            2,
            np.int32,
            "add",
            exclusive=False,
            reverse=False,
            segmented=False,
            has_initial=False,
        )
    with pytest.raises(ValueError, match="unknown scan operator"):
        src.plan_scan(
            4,
            4,
            np.int32,
            "mul",
            exclusive=False,
            reverse=False,
            segmented=False,
            has_initial=False,
        )


def test_tile_state_bytes_bounds_cub_allocation():
    """Our allocation covers CUB's AllocationSize for every payload up to 16 bytes."""
    for num_tiles in (1, 2, 31, 1000, 2**17):
        for desc, payload in ((8, 0), (16, 0), (4, 8), (4, 16)):
            states = num_tiles + 32
            need = (
                sum(
                    (s + 255) // 256 * 256
                    for s in (states * desc, states * payload, states * payload)
                )
                + 255
            )
            assert src.tile_state_bytes(num_tiles) >= need
