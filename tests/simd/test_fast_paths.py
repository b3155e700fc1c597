"""The per-call fast paths of the instructions (their host overhead) change nothing.

The machine memoises what it has checked (operator and dtype pairs, shift plans, int
constants, send identities), skips conversions that change nothing, and reads its deferred
checks with array operations. Each test here drives a memo to a hit first and then asks
for what must still happen: the same errors, the same bits, the first failed check.
"""

from __future__ import annotations

import numpy as np
import pytest

from simd import Machine
from simd.operands import scalar

BACKENDS = ["numpy", "counting"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_checked_operators_still_refuse_bad_ones(backend):
    m = Machine(pes=8, backend=backend)
    x = m.asarray(np.arange(6, dtype=np.int32))
    m.scan(x, "add")
    m.reduce(x, "add")
    with pytest.raises(ValueError, match="unknown operator"):
        m.scan(x, ["add"])  # unhashable: no memo can answer for it
    with pytest.raises(ValueError, match="unknown operator 'copy'"):
        m.reduce(x, "copy")  # checked for scans, not for reductions
    with pytest.raises(TypeError, match="needs integer or bool"):
        m.scan(m.asarray(np.ones(3, np.float32)), "xor")


@pytest.mark.parametrize("backend", BACKENDS)
def test_memoised_shifts_still_refuse_bool_offsets_and_axes(backend):
    m = Machine(pes=4, backend=backend)
    x = m.asarray(np.arange(4, dtype=np.int32))
    np.testing.assert_array_equal(m.asnumpy(m.shift(x, 1, 0)), [3, 0, 1, 2])
    with pytest.raises(TypeError, match="offset must be an int"):
        m.shift(x, True, 0)
    with pytest.raises(TypeError, match="axis must be an int"):
        m.shift(x, 1, False)
    np.testing.assert_array_equal(m.asnumpy(m.shift(x, 1, 0, boundary="zero")), [0, 0, 1, 2])


def test_memoised_scalars_keep_bool_and_int_apart_and_refuse_every_time():
    int32 = np.dtype(np.int32)
    assert type(scalar(1, np.dtype(np.bool_), "x")) is np.bool_
    assert scalar(True, int32, "x") == 1 and type(scalar(True, int32, "x")) is np.int32
    for _ in range(2):
        with pytest.raises(ValueError, match="out of range for int32"):
            scalar(2**40, int32, "boundary")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fill", [0.0, -0.0, 7.0])
def test_a_new_send_keeps_the_bits_of_its_fill(backend, fill):
    # add's identity is +0.0: a fill of -0.0 or 7.0 takes the full path, 0.0 the short one.
    m = Machine(pes=8, backend=backend)
    values = m.asarray(np.array([1.5, 2.0, -0.0], np.float32))
    out = m.asnumpy(m.send(values, m.asarray([0, 0, 2]), 4, combine="add", fill=fill))
    want = np.array([3.5, fill, -0.0, fill], np.float32)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(np.signbit(out[[1, 3]]), np.signbit(want[[1, 3]]))


def test_the_first_failed_deferred_check_raises_among_many():
    m = Machine(pes=8, backend="counting")  # the CuPy code path: checks are deferred
    x = m.asarray(np.arange(4, dtype=np.int32))
    for _ in range(5):
        m.send(x, m.asarray([0, 1, 2, 3]), 4)
    m.send(x, m.asarray([0, 1, 2, 7]), 4)
    m.send(x, m.asarray([-2, 1, 2, 3]), 4)
    with pytest.raises(IndexError, match="send destination 7 is out of range for 4 addresses"):
        m.check()
    m.check()  # read once: nothing is pending any more
