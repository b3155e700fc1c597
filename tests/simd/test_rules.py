"""The instruction set's rules (docs/instruction-set.md): one test per row, then sweeps.

Every test runs on each implementation of the NumPy backend (the Numba CPU kernels and, with
``SIMD_FORCE_REFERENCE=1``, the xp reference) and, marked ``gpu``, on the CuPy backend. The
``test_rule_*`` tests are the rows of the rules table, in its order; the ``test_sweep_*``
tests check scan, reduce and send over every operator x dtype x form (empty, masked,
segmented, along an axis) against the serial oracles of ``oracle.py``, with modest example
counts; the ``slow`` variants run many more.
"""

from __future__ import annotations

import math
import pathlib
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernels.reference import VALUE_DTYPES, accumulator
from simd import Machine
from tests.simd import oracle

OPS = ("add", "max", "min", "and", "or", "xor", "copy")
COMBINES = ("overwrite", "add", "max", "min", "and", "or")
INTS = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64)]
UINTS = [np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64)]
FLOATS = [np.dtype(np.float32), np.dtype(np.float64)]


@pytest.fixture(
    scope="module",
    params=["compiled", "reference", pytest.param("cupy", marks=pytest.mark.gpu)],
)
def backend(request):
    """The Numba kernels, the xp reference (both on NumPy), and CuPy (real GPU only)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SIMD_FORCE_REFERENCE", "1" if request.param == "reference" else "0")
        yield request.param


def machine(backend, pes=8) -> Machine:
    return Machine(pes=pes, backend="cupy" if backend == "cupy" else "numpy")


def host(m: Machine, a) -> np.ndarray:
    return m.asnumpy(a)


def valid(op: str, dtype) -> bool:
    """Whether ``op`` takes ``dtype`` (bitwise operators need integers or bool)."""
    return not (op in ("and", "or", "xor") and np.dtype(dtype).kind == "f")


def domain(op: str, dtype) -> np.dtype:
    """The dtype a scan or reduction computes and returns in."""
    dtype = np.dtype(dtype)
    return dtype if dtype.kind == "b" and op != "add" else accumulator(op, dtype)


# --------------------------------------------------------------------- the rules, row by row


def test_rule_value_dtypes(backend):
    m = machine(backend)
    for dtype in VALUE_DTYPES:
        x = m.asarray(np.ones(3, dtype=dtype))
        for op in OPS:
            if valid(op, dtype):
                assert m.scan(x, op).shape == (3,)
                if op != "copy":
                    assert m.reduce(x, op).shape == ()
    for dtype in (np.float16, np.complex64):
        for call in (lambda x: m.scan(x), lambda x: m.reduce(x)):
            with pytest.raises(TypeError, match="astype|numbers"):
                call(m.asarray(np.ones(3, dtype=dtype)))


def test_rule_add_result_dtype(backend):
    m = machine(backend)
    for dtype in VALUE_DTYPES:
        x = np.ones(4, dtype=dtype)
        scanned = m.scan(m.asarray(x), "add")
        total = m.reduce(m.asarray(x), "add")
        want = accumulator("add", dtype)
        assert scanned.dtype == want and total.dtype == want, dtype
        if dtype.itemsize < 4 or dtype.kind == "b":  # NumPy's rule below the 32-bit word
            assert want == np.cumsum(x).dtype == np.sum(x).dtype
        else:  # 32 and 64 bits keep their type
            assert want == dtype
    # uint8 [200, 100] sums to 300 in both, where it used to wrap to 44 in reduce.
    x = m.asarray(np.array([200, 100], dtype=np.uint8))
    assert int(m.reduce(x, "add")) == 300 and host(m, m.scan(x, "add")).tolist() == [200, 300]
    # The word types wrap around, identically on every backend.
    big = m.asarray(np.array([2**31 - 1, 1], dtype=np.int32))
    assert int(m.reduce(big, "add")) == -(2**31)
    assert host(m, m.scan(big, "add")).tolist() == [2**31 - 1, -(2**31)]


def test_rule_other_ops_keep_dtype(backend):
    m = machine(backend)
    for dtype in VALUE_DTYPES:
        x = m.asarray(np.ones((2, 3), dtype=dtype))
        for op in OPS[1:]:
            if not valid(op, dtype):
                continue
            assert m.scan(x, op).dtype == dtype, (op, dtype)
            assert m.scan(x, op, axis=1, exclusive=True).dtype == dtype, (op, dtype)
            if op != "copy":
                assert m.reduce(x, op).dtype == dtype and m.reduce(x, op, axis=0).dtype == dtype


def test_rule_identities(backend):
    m = machine(backend)
    for dtype in VALUE_DTYPES:
        empty = m.asarray(np.zeros((0, 3), dtype=dtype))
        for op in OPS[:-1]:
            if not valid(op, dtype):
                continue
            want = oracle.identity(op, domain(op, dtype))
            got = host(m, m.reduce(empty, op))
            assert got.tolist() == want, (op, dtype)
            assert host(m, m.reduce(empty, op, axis=0)).tolist() == [want] * 3, (op, dtype)
            assert host(m, m.reduce(empty, op, axis=1)).shape == (0,)
            # An exclusive scan puts the identity at the start.
            one = m.asarray(np.ones(1, dtype=dtype))
            assert host(m, m.scan(one, op, exclusive=True)).tolist() == [want], (op, dtype)
    for dtype in UINTS:  # `and` is all bits set, also for unsigned types (was OverflowError)
        x = m.asarray(np.array([5, 6], dtype=dtype))
        assert int(m.reduce(x, "and", mask=m.asarray([False, False]))) == np.iinfo(dtype).max
        got = m.send(x[:0], m.asarray(np.zeros(0, np.int64)), 2, combine="and", fill=7)
        assert host(m, got).tolist() == [7, 7]
        got = m.send(x, m.asarray([1, 1]), 2, combine="and")
        assert host(m, got).tolist() == [0, 4]


def test_rule_empty_input(backend):
    m = machine(backend)
    for dtype in VALUE_DTYPES:
        for op in OPS:
            if valid(op, dtype):
                out = m.scan(m.asarray(np.zeros((2, 0), dtype=dtype)), op, axis=1)
                assert out.shape == (2, 0) and out.dtype == domain(op, dtype)


def test_rule_reduce_returns_0d_array(backend):
    m = machine(backend)
    array_type = type(m.asarray([0]))
    x = m.asarray(np.arange(12).reshape(3, 4))
    for op in OPS[:-1]:
        whole = m.reduce(x, op)
        assert type(whole) is array_type and whole.ndim == 0, op
        assert int(whole) == oracle.fold(range(12), op, np.int64)
        assert m.reduce(x, op, axis=1).shape == (3,)
    assert type(m.reduce(x[:0], "max")) is array_type
    assert float(m.reduce(m.asarray([1.5, 2.5]), "add")) == 4.0


def test_rule_mask_contributes_identity(backend):
    m = machine(backend)
    x = m.asarray(np.array([5, 1, 7, 2], dtype=np.uint16))
    keep = m.asarray([True, False, True, True])
    assert int(m.reduce(x, "add", mask=keep)) == 14
    assert int(m.reduce(x, "min", mask=keep)) == 2
    assert int(m.reduce(x, "min", mask=m.asarray([False] * 4))) == np.iinfo(np.uint16).max
    assert host(m, m.scan(x, "max", mask=~keep)).tolist() == [0, 1, 1, 1]
    assert host(m, m.scan(x, "and", mask=keep, exclusive=True)).tolist() == [65535, 5, 5, 5]
    b = m.asarray([True, False, True])
    assert bool(m.reduce(b, "and", mask=m.asarray([True, False, True])))
    # Masked-off senders send nothing; masked-off VPs of a get read `fill`.
    sent = m.send(x, m.asarray([0, 0, 0, 2]), 3, combine="add", mask=keep, fill=9)
    assert host(m, sent).tolist() == [12, 9, 2]
    got = m.get(x, m.asarray([3, 0]), mask=m.asarray([True, False]), fill=9)
    assert host(m, got).tolist() == [2, 9]


def test_rule_copy_scan_takes_no_mask_or_inclusive_initial(backend):
    m = machine(backend)
    x = m.asarray([4, 5, 6])
    seg = m.asarray([True, False, True])
    with pytest.raises(ValueError, match="copy-scan takes no mask"):
        m.scan(x, "copy", mask=seg)
    with pytest.raises(ValueError, match="inclusive copy-scan takes no initial"):
        m.scan(x, "copy", initial=9)
    got = m.scan(x, "copy", segments=seg, exclusive=True, initial=9)
    assert host(m, got).tolist() == [9, 4, 9]


def test_rule_initial_starts_every_segment(backend):
    m = machine(backend)
    x = m.asarray(np.array([1, 2, 3, 4], dtype=np.int8))
    seg = m.asarray([True, False, True, False])
    assert host(m, m.scan(x, "add", segments=seg, initial=10)).tolist() == [11, 13, 13, 17]
    got = m.scan(x, "add", segments=seg, initial=10, exclusive=True, reverse=True)
    assert host(m, got).tolist() == [12, 10, 14, 10]
    # The initial value is checked against the result's dtype (int64 for an int8 sum).
    assert host(m, m.scan(x, "add", initial=1000)).tolist() == [1001, 1003, 1006, 1010]
    with pytest.raises(ValueError, match="initial 1000 is out of range for int8"):
        m.scan(x, "max", initial=1000)


def test_rule_scalar_operands_refuse_truncation(backend):
    m = machine(backend)
    x = m.asarray(np.arange(4, dtype=np.int32))
    index = m.asarray([0, 1])
    # Integral values of any number type are exact, so they are taken.
    assert host(m, m.scan(x, "add", initial=2.0)).tolist() == [2, 3, 5, 8]
    assert host(m, m.shift(x, 1, 0, boundary=np.float32(7))).tolist() == [7, 0, 1, 2]
    assert host(m, m.shift(x, 1, 0, boundary=m.asarray(7.0))).tolist() == [7, 0, 1, 2]
    assert host(m, m.scan(x, "max", initial=m.reduce(x, "max"))).tolist() == [3] * 4
    for bad in (2.5, math.nan, math.inf):
        for name, call in [
            ("initial", lambda v: m.scan(x, initial=v)),
            ("boundary", lambda v: m.shift(x, 1, 0, boundary=v)),
            ("fill", lambda v: m.get(x, index, mask=m.asarray([True, False]), fill=v)),
            ("fill", lambda v: m.send(x[:2], index, 3, fill=v)),
            ("values", lambda v: m.send(v, index, into=m.asarray(np.zeros(2, np.int32)))),
            ("broadcast value", lambda v: m.broadcast(v, 3, np.int32)),
        ]:
            with pytest.raises(ValueError, match=f"{name} for int32 values must be an integer"):
                call(bad)
    for bad in ("1", [1], np.ones(2)):
        with pytest.raises(TypeError, match="initial must be a number or a bool"):
            m.scan(x, initial=bad)


def test_rule_out_of_range_constants(backend):
    m = machine(backend)
    x32 = m.asarray(np.arange(4, dtype=np.int32))
    for call, name in [
        (lambda: m.scan(x32, initial=2**40), "initial 1099511627776"),
        (lambda: m.shift(x32, 1, 0, boundary=2**40), "boundary 1099511627776"),
        (lambda: m.scan(m.asarray(np.ones(2, np.uint8)), "max", initial=-1), "initial -1"),
        (lambda: m.send(m.asarray(np.ones(1, np.uint8)), m.asarray([0]), 2, fill=256), "fill 256"),
        (lambda: m.shift(m.asarray(np.ones(3, np.float32)), 1, boundary=1e300), "boundary 1e+300"),
        (lambda: m.shift(m.asarray(np.ones(3)), 1, boundary=2**1100), "boundary 1"),
    ]:
        with pytest.raises(ValueError, match=re.escape(name) + ".* out of range"):
            call()
    # The edges of the range are fine, and so are infinities for floats.
    u64 = m.asarray(np.zeros(2, np.uint64))
    assert host(m, m.scan(u64, "max", initial=2**64 - 1)).tolist() == [2**64 - 1] * 2
    assert host(m, m.shift(m.asarray(np.ones(2, np.float32)), 1, boundary=-math.inf))[0] < 0


def test_rule_bool_constants_are_truth_values(backend):
    m = machine(backend)
    b = m.asarray([True, False, True])
    assert host(m, m.shift(b, 1, boundary=True)).tolist() == [True, True, False]
    assert host(m, m.shift(b, -1, boundary=np.False_)).tolist() == [False, True, False]
    assert host(m, m.shift(b, 1, boundary=3)).tolist() == [True, True, False]
    assert host(m, m.scan(b, "and", initial=0)).tolist() == [False] * 3
    assert host(m, m.scan(b, "add", initial=True)).tolist() == [2, 2, 3]  # counts in int64


def test_rule_send_casts_only_same_kind(backend):
    m = machine(backend)
    dest = m.asarray([0, 1])
    i32 = m.asarray(np.zeros(2, np.int32))
    got = m.send(m.asarray(np.array([7, 9], np.int64)), dest, into=i32)
    assert got.dtype == np.int32 and host(m, got).tolist() == [7, 9]
    got = m.send(m.asarray([True, True]), dest, into=i32, combine="add")
    assert host(m, got).tolist() == [8, 10]
    f32 = m.send(m.asarray([0.5, 1.5]), dest, into=m.asarray(np.zeros(2, np.float32)))
    assert host(m, f32).tolist() == [0.5, 1.5]
    for values, into in [
        (np.array([2.5, 1.0]), np.zeros(2, np.int64)),  # float into int
        (np.array([1, 0]), np.zeros(2, bool)),  # int into bool
        (np.array([1, 2], np.int64), np.zeros(2, np.uint8)),  # signed into unsigned
    ]:
        with pytest.raises(TypeError, match="same-kind"):
            m.send(m.asarray(values), dest, into=m.asarray(into))
    # A scalar message is a scalar operand: exact values are taken.
    got = m.send(3, dest, into=m.asarray(np.zeros(2, np.uint8)), combine="add")
    assert host(m, got).tolist() == [3, 3]


def test_rule_send_combiners_by_dtype(backend):
    m = machine(backend)
    dest = m.asarray([0, 0])
    with pytest.raises(TypeError, match="logical or"):
        m.send(m.asarray([True, True]), dest, 1, combine="add")
    with pytest.raises(TypeError, match="logical or"):
        m.send(m.asarray([True, True]), dest, into=m.asarray([False]), combine="add")
    for combine in ("and", "or"):
        with pytest.raises(TypeError, match="integer or bool"):
            m.send(m.asarray([1.0, 2.0]), dest, 1, combine=combine)
    assert host(m, m.send(m.asarray([True, False]), dest, 1, combine="or")).tolist() == [True]


def test_rule_send_combines_in_destination_dtype(backend):
    m = machine(backend)
    got = m.send(m.asarray(np.array([200, 100], np.uint8)), m.asarray([0, 0]), 1, combine="add")
    assert got.dtype == np.uint8 and host(m, got).tolist() == [44]
    wide = m.send(
        m.asarray(np.array([200, 100], np.uint8)),
        m.asarray([0, 0]),
        into=m.asarray(np.zeros(1, np.int64)),
        combine="add",
    )
    assert host(m, wide).tolist() == [300]


def test_rule_argument_types_are_named(backend):
    m = machine(backend)
    x = m.asarray(np.arange(6).reshape(2, 3))
    for call in (
        lambda: m.scan(x, axis=1.0),
        lambda: m.reduce(x, axis=True),
        lambda: m.spread(x, "0"),
        lambda: m.shift(x, 1, axis=np.float64(0)),
    ):
        with pytest.raises(TypeError, match="axis must be an int or None"):
            call()
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        m.scan(x, axis=2)
    with pytest.raises(TypeError, match="offset must be an int or a tuple of ints, got 1.5"):
        m.shift(m.asarray([1, 2]), 1.5)
    with pytest.raises(TypeError, match="offset must be an int or a tuple of ints, got True"):
        m.shift(m.asarray([1, 2]), True)


def test_rule_bitwise_ops_need_integers(backend):
    m = machine(backend)
    x = m.asarray([1.0])
    for op in ("and", "or", "xor"):
        for instruction in (m.scan, m.reduce):
            with pytest.raises(TypeError, match="integer or bool"):
                instruction(x, op)


def test_rule_max_min_propagate_nan(backend):
    m = machine(backend)
    for dtype in FLOATS:
        x = m.asarray(np.array([1.0, np.nan, 3.0], dtype=dtype))
        for op in ("max", "min"):
            assert np.isnan(float(m.reduce(x, op)))
            got = host(m, m.scan(x, op))
            assert got[0] == 1.0 and np.isnan(got[1:]).all()


def test_rule_float_sums_are_correctly_rounded(backend):
    m = machine(backend)
    # numpy.sum gives 0.0 for the first (1e16 + 1 rounds back to 1e16 twice).
    cases = [
        ([1e16, 1.0, 1.0, -1e16], 2.0),
        ([0.1] * 10, 1.0),
        ([1.0, np.nan], np.nan),
        ([np.inf, -np.inf], np.nan),
        ([np.inf, 1.0], np.inf),
        ([-0.0, -0.0], -0.0),
        ([-0.0, 0.0], 0.0),
        ([1.0, -1.0], 0.0),
        ([np.finfo(np.float64).max] * 2, np.inf),
    ]
    for values, want in cases:
        got = float(m.reduce(m.asarray(np.array(values)), "add"))
        assert np.array_equal([got], [want], equal_nan=True), (values, got)
        assert math.copysign(1, got) == math.copysign(1, want), (values, got)
    # float32: 2**24 + 1 + 1 is 2**24 + 2 exactly (a left-to-right float32 sum gives 2**24).
    x = m.asarray(np.array([2.0**24, 1.0, 1.0], np.float32))
    assert host(m, m.reduce(x, "add")).tobytes() == np.float32(2.0**24 + 2).tobytes()


def test_rules_table_links_every_rule_test():
    """docs/instruction-set.md has one row per ``test_rule_*`` test, in order."""
    doc = pathlib.Path(__file__).parents[2] / "docs" / "instruction-set.md"
    rows = re.findall(r"^\| \d+ \|.*\[`(test_rule_\w+)`\]", doc.read_text(), re.M)
    tests = [name for name in globals() if name.startswith("test_rule_")]
    assert rows == tests


# ----------------------------------------------------------------- sweeps against the oracle


def elements(dtype: np.dtype, op: str, wide: bool):
    """Values for ``dtype``: small ones, or (``wide``) the whole range, which wraps sums."""
    if dtype.kind == "b":
        return st.booleans()
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if wide:
            return st.integers(int(info.min), int(info.max))
        return st.integers(max(-20, int(info.min)), 20)
    # Integral floats keep any summation order exact; max and min also meet NaN and inf.
    small = st.integers(-50, 50).map(float)
    if op in ("max", "min", "copy", "overwrite"):
        return small | st.sampled_from([math.nan, math.inf, -math.inf])
    return small


def flags_like(draw, shape):
    bits = draw(st.lists(st.booleans(), min_size=math.prod(shape), max_size=math.prod(shape)))
    return np.array(bits, dtype=bool).reshape(shape)


@st.composite
def scan_cases(draw):
    dtype = np.dtype(draw(st.sampled_from(VALUE_DTYPES)))
    op = draw(st.sampled_from([o for o in OPS if valid(o, dtype)]))
    ndim = draw(st.integers(1, 3))
    top = 30 if ndim == 1 else 5
    shape = tuple(draw(st.lists(st.integers(0, top), min_size=ndim, max_size=ndim)))
    axis = draw(st.none() | st.integers(-ndim, ndim - 1))
    wide = draw(st.booleans())
    n = math.prod(shape)
    values = draw(st.lists(elements(dtype, op, wide), min_size=n, max_size=n))
    exclusive = draw(st.booleans())
    initial = None
    if not (op == "copy" and not exclusive) and draw(st.booleans()):
        dom = domain(op, dtype)
        initial = draw(st.booleans() if dom.kind == "b" else st.integers(0, 5))
    return dict(
        x=np.array(values, dtype=dtype).reshape(shape),
        op=op,
        axis=axis,
        segments=flags_like(draw, shape) if draw(st.booleans()) else None,
        mask=flags_like(draw, shape) if op != "copy" and draw(st.booleans()) else None,
        exclusive=exclusive,
        reverse=draw(st.booleans()),
        initial=initial,
    )


def expected_scan(case) -> np.ndarray:
    x, op, axis = case["x"], case["op"], case["axis"]
    dom = domain(op, x.dtype)
    work = x.astype(dom)
    if case["mask"] is not None:
        work = np.where(case["mask"], work, dom.type(oracle.identity(op, dom)))
    seg = case["segments"]
    if axis is None:
        lines, seg_lines = work.reshape(1, -1), None if seg is None else seg.reshape(1, -1)
    else:
        lines = np.moveaxis(work, axis, -1)
        seg_lines = None if seg is None else np.moveaxis(seg, axis, -1)
    out = np.empty(lines.shape, dtype=dom)
    for index in np.ndindex(*lines.shape[:-1]):
        line = oracle.scan_line(
            lines[index].tolist(),
            op,
            flags=None if seg_lines is None else seg_lines[index].tolist(),
            exclusive=case["exclusive"],
            reverse=case["reverse"],
            initial=case["initial"],
            dtype=dom,
        )
        out[index] = [oracle.wrap(v, dom) for v in line]
    if axis is None:
        return out.reshape(x.shape)
    return np.moveaxis(out, -1, axis)


def check_scan(backend, case):
    m = machine(backend)
    kw = {k: case[k] for k in ("axis", "exclusive", "reverse", "initial")}
    for name in ("segments", "mask"):
        kw[name] = None if case[name] is None else m.asarray(case[name])
    with np.errstate(invalid="ignore", over="ignore"):
        got = host(m, m.scan(m.asarray(case["x"]), case["op"], **kw))
    want = expected_scan(case)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@settings(max_examples=150)
@given(scan_cases())
def test_sweep_scan_matches_serial_oracle(backend, case):
    check_scan(backend, case)


@st.composite
def reduce_cases(draw):
    dtype = np.dtype(draw(st.sampled_from(VALUE_DTYPES)))
    op = draw(st.sampled_from([o for o in OPS[:-1] if valid(o, dtype)]))
    ndim = draw(st.integers(1, 3))
    shape = tuple(
        draw(st.lists(st.integers(0, 30 if ndim == 1 else 5), min_size=ndim, max_size=ndim))
    )
    n = math.prod(shape)
    values = draw(st.lists(elements(dtype, op, draw(st.booleans())), min_size=n, max_size=n))
    return dict(
        x=np.array(values, dtype=dtype).reshape(shape),
        op=op,
        axis=draw(st.none() | st.integers(-ndim, ndim - 1)),
        mask=flags_like(draw, shape) if draw(st.booleans()) else None,
    )


def check_reduce(backend, case):
    m = machine(backend)
    x, op, axis, mask = case["x"], case["op"], case["axis"], case["mask"]
    with np.errstate(invalid="ignore", over="ignore"):
        got = m.reduce(m.asarray(x), op, axis=axis, mask=None if mask is None else m.asarray(mask))
    assert type(got) is type(m.asarray([0]))
    got = host(m, got)
    dom = domain(op, x.dtype)
    keep = np.ones(x.shape, bool) if mask is None else mask
    if axis is None:
        want = np.array(oracle.fold(x[keep].astype(dom).tolist(), op, dom), dtype=dom)
    else:
        lines, keeps = np.moveaxis(x.astype(dom), axis, -1), np.moveaxis(keep, axis, -1)
        want = np.empty(lines.shape[:-1], dtype=dom)
        for index in np.ndindex(*want.shape):
            want[index] = oracle.fold(lines[index][keeps[index]].tolist(), op, dom)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@settings(max_examples=150)
@given(reduce_cases())
def test_sweep_reduce_matches_serial_fold(backend, case):
    check_reduce(backend, case)


@st.composite
def send_cases(draw):
    dtype = np.dtype(draw(st.sampled_from(VALUE_DTYPES)))
    combines = [c for c in COMBINES if valid(c, dtype) and not (c == "add" and dtype.kind == "b")]
    combine = draw(st.sampled_from(combines))
    size = draw(st.integers(1, 12))
    n = draw(st.integers(0, 30))
    element = elements(dtype, combine, draw(st.booleans()))
    return dict(
        values=np.array(draw(st.lists(element, min_size=n, max_size=n)), dtype=dtype),
        dest=np.array(draw(st.lists(st.integers(0, size - 1), min_size=n, max_size=n)), np.int64),
        mask=np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool)
        if draw(st.booleans())
        else None,
        combine=combine,
        into=np.array(draw(st.lists(element, min_size=size, max_size=size)), dtype=dtype)
        if draw(st.booleans())
        else None,
        size=size,
        fill=draw(element),
    )


def check_send(backend, case):
    m = machine(backend)
    values, dest, mask, combine = case["values"], case["dest"], case["mask"], case["combine"]
    dtype = values.dtype
    kw = dict(combine=combine, mask=None if mask is None else m.asarray(mask))
    with np.errstate(invalid="ignore", over="ignore"):
        if case["into"] is not None:
            got = m.send(
                m.asarray(values), m.asarray(dest), into=m.asarray(case["into"].copy()), **kw
            )
        else:
            got = m.send(m.asarray(values), m.asarray(dest), case["size"], fill=case["fill"], **kw)
    got = host(m, got)
    start = case["into"] if case["into"] is not None else np.full(case["size"], case["fill"], dtype)
    want = start.tolist()
    received: dict[int, object] = {}
    for i in range(dest.size):  # sender order: the highest sender is the last
        if mask is not None and not mask[i]:
            continue
        d, v = int(dest[i]), values[i].item()
        if d not in received or combine == "overwrite":
            received[d] = v
        else:
            received[d] = oracle.wrap(oracle.BINARY[combine](received[d], v), dtype)
    for d, v in received.items():
        if case["into"] is not None and combine != "overwrite":
            v = oracle.wrap(oracle.BINARY[combine](want[d], v), dtype)
        want[d] = v
    want = np.array(want, dtype=dtype)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)


@settings(max_examples=150)
@given(send_cases())
def test_sweep_send_matches_serial_router(backend, case):
    check_send(backend, case)


@pytest.mark.slow
@settings(max_examples=3000)
@given(scan_cases(), reduce_cases(), send_cases())
def test_sweep_thorough(backend, scan_case, reduce_case, send_case):
    check_scan(backend, scan_case)
    check_reduce(backend, reduce_case)
    check_send(backend, send_case)


def test_broadcast_and_asarray_refuse_what_no_device_holds(backend):
    m = machine(backend)
    assert host(m, m.broadcast(m.asarray(2.5), 2)).tolist() == [2.5, 2.5]  # a 0-d array
    for shape, error in [
        (-4, ValueError),
        (2.5, TypeError),
        ("4", TypeError),
        ((2, -1), ValueError),
    ]:
        with pytest.raises(error, match="broadcast shape"):
            m.broadcast(1.0, shape)
    for value in (None, "1", [1, 2]):
        with pytest.raises(TypeError, match="broadcast value must be a bool or a number"):
            m.broadcast(value, 4)
    with pytest.raises(TypeError, match="asarray needs numbers or bools"):
        m.asarray([{}])
