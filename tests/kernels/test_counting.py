"""The counting stand-in for CuPy (``kernels.counting``): each rule counts as modelled.

Every counted operation must give NumPy's result, and count exactly the launches, syncs
and bytes its module docstring promises; the machine on it (``backend="counting"``) runs
the CuPy backend's own kernels (scan, router, shift, halo) through their emulations and
agrees with the NumPy machine.
"""

from __future__ import annotations

import numpy as np
import pytest

from kernels import counting
from kernels.counting import DeviceArray, measure
from kernels.counting import cupy as xp
from simd import Machine
from simd.stats import DeviceInterval


def counts(fn):
    """(result, Counts) of calling ``fn``."""
    with measure() as c:
        result = fn()
    return result, c.total


@pytest.fixture
def a():
    return xp.asarray(np.arange(12, dtype=np.int64))


def test_upload_counts_bytes_and_no_launch():
    host = np.arange(10, dtype=np.float64)
    dev, c = counts(lambda: xp.asarray(host))
    assert isinstance(dev, DeviceArray) and (dev == host).all()
    assert (c.h2d_bytes, c.h2d_copies, c.launches, c.syncs) == (80, 1, 0, 0)
    host[0] = 99.0  # the device copy is a copy
    assert dev[0] == 0.0
    same, c = counts(lambda: xp.asarray(dev))
    assert same is dev and (c.h2d_bytes, c.launches) == (0, 0)
    _, c = counts(lambda: xp.asarray(dev, dtype=np.float32))
    assert (c.launches, c.h2d_bytes) == (1, 0)


def test_ufunc_is_one_launch_and_returns_a_device_array(a):
    out, c = counts(lambda: a * 2 + 1)
    assert isinstance(out, DeviceArray)
    assert (out.view(np.ndarray) == np.arange(12) * 2 + 1).all()
    assert (c.launches, c.syncs, c.h2d_bytes) == (2, 0, 0)
    assert c.ops == {"multiply": 1, "add": 1}
    assert c.traffic_bytes == 4 * 96  # two kernels, each reads 96 bytes and writes 96


def test_in_place_ufunc_keeps_the_array(a):
    def add():
        b = a
        b += 1
        return b

    b, c = counts(add)
    assert b is a and c.launches == 1 and int(a[0]) == 1


def test_reduction_is_one_launch_and_reading_it_one_sync(a):
    total, c = counts(lambda: a.sum())
    assert isinstance(total, DeviceArray) and total.ndim == 0
    assert (c.launches, c.syncs) == (1, 0)
    value, c = counts(lambda: int(total))
    assert value == 66 and (c.launches, c.syncs, c.d2h_bytes) == (0, 1, 8)
    for read in (float, bool, lambda t: t.item(), lambda t: range(100)[t]):
        _, c = counts(lambda read=read: read(total))
        assert (c.syncs, c.launches) == (1, 0)
    _, c = counts(lambda: (a.max(), a.min(), a.any(), xp.count_nonzero(a), a.mean()))
    assert (c.launches, c.syncs) == (5, 0)


def test_data_dependent_shapes_sync_once(a):
    mask = a % 3 == 0
    picked, c = counts(lambda: a[mask])
    assert picked.tolist() == [0, 3, 6, 9]
    assert (c.syncs, c.launches, c.d2h_bytes) == (1, 2, 8)
    for fn, expect in (
        (lambda: xp.nonzero(mask)[0], [0, 3, 6, 9]),
        (lambda: mask.nonzero()[0], [0, 3, 6, 9]),
        (lambda: xp.flatnonzero(mask), [0, 3, 6, 9]),
        (lambda: xp.where(mask)[0], [0, 3, 6, 9]),
        (lambda: xp.unique(a % 4), [0, 1, 2, 3]),
        (lambda: xp.bincount(a % 2), [6, 6]),
    ):
        got, c = counts(fn)
        assert got.view(np.ndarray).tolist() == expect
        assert c.syncs == 1, fn


def test_gathers_views_and_copies(a):
    idx = xp.asarray(np.array([3, 1]))
    got, c = counts(lambda: a[idx])
    assert got.tolist() == [3, 1] and (c.launches, c.syncs) == (1, 0)
    got, c = counts(lambda: a[np.array([3, 1])])  # a host index is uploaded first
    assert (c.launches, c.syncs, c.h2d_bytes) == (1, 0, 16)
    _, c = counts(lambda: (a.reshape(3, 4).T, a[2:5], a[::2], xp.broadcast_to(a, (2, 12))))
    assert (c.launches, c.syncs) == (0, 0)
    element, c = counts(lambda: a[4])
    assert isinstance(element, DeviceArray) and element.ndim == 0 and c.launches == 0
    _, c = counts(lambda: (a.copy(), a.astype(np.float32), xp.zeros(5), xp.where(a > 2, a, 0)))
    assert (c.launches, c.syncs) == (5, 0)  # the comparison is a launch too
    _, c = counts(lambda: (a.astype(np.int64, copy=False), xp.empty(8)))
    assert c.launches == 0
    _, c = counts(lambda: xp.concatenate([a, a, a]))
    assert c.launches == 3


def test_setitem(a):
    b = a.copy()
    mask = b > 8
    _, c = counts(lambda: b.__setitem__(mask, 0))
    assert (c.launches, c.syncs) == (1, 0) and b.tolist()[-3:] == [0, 0, 0]
    _, c = counts(lambda: b.__setitem__(mask, xp.asarray(np.array([7, 8, 9]))))
    assert c.syncs == 1 and b.tolist()[-3:] == [7, 8, 9]
    _, c = counts(lambda: b.__setitem__(xp.asarray(np.array([0, 1])), 5))
    assert (c.launches, c.syncs) == (1, 0) and b.tolist()[:2] == [5, 5]


def test_reads_to_the_host(a):
    host, c = counts(lambda: a.get())
    assert type(host) is np.ndarray and (host == np.arange(12)).all()
    assert (c.syncs, c.d2h_bytes) == (1, 96)
    host, c = counts(lambda: xp.asnumpy(a))
    assert type(host) is np.ndarray and (c.syncs, c.d2h_bytes) == (1, 96)
    _, c = counts(lambda: a.tolist())
    assert (c.syncs, c.d2h_bytes) == (1, 96)


def test_host_arrays_mixed_into_device_work_are_flagged(a):
    _, c = counts(lambda: a + np.ones(12, dtype=np.int64))
    assert c.implicit == {"add": 1} and c.h2d_bytes == 96
    _, c = counts(lambda: a + 1)
    assert not c.implicit


def test_arrays_name_the_counting_namespace_and_cost_nothing_for_it(a):
    """``__array_namespace__`` gives the stand-in's ``cupy`` (as a CuPy array gives
    ``cupy``), for every array it makes, views included; asking counts nothing."""
    views = (a, a[1:4], a.reshape(3, 4), a.sum(), a.astype(np.float32))
    spaces, c = counts(lambda: [v.__array_namespace__() for v in views])
    assert all(s is xp for s in spaces)
    assert (c.launches, c.syncs, c.h2d_bytes, c.d2h_bytes) == (0, 0, 0, 0)
    assert a.__array_namespace__(api_version="2023.12") is xp
    assert np.arange(3).__array_namespace__() is np  # host arrays keep NumPy's


def test_events_time_without_a_sync_until_read():
    with measure() as c:
        interval = DeviceInterval(xp.cuda)
        interval.stop()
    assert c.total.syncs == 0
    with measure() as c:
        first = interval.seconds
        second = interval.seconds
    assert first == second >= 0 and c.total.syncs == 1
    _, c = counts(lambda: xp.cuda.get_current_stream().synchronize())
    assert c.syncs == 1


def test_scopes_and_nested_measurements(a):
    with measure() as outer:
        with counting.scope("stage"):
            with measure() as inner:
                a + 1
                with counting.scope("inner"):
                    int(a.sum())
    assert outer.total.launches == inner.total.launches == 2
    assert outer.stage("stage").syncs == 1 and outer.scopes["stage/inner"].launches == 1
    assert set(outer.stages()) == {"stage"}


def test_unknown_kernels_need_an_emulation():
    kernel = xp.RawKernel('extern "C" __global__ void no_such_kernel() {}', "no_such_kernel")
    with pytest.raises(NotImplementedError, match="no NumPy emulation"):
        kernel((1,), (1,), ())


# ----------------------------------------------------------------- the machine on it


@pytest.fixture
def pair():
    return Machine(pes=16, backend="numpy"), Machine(pes=16, backend="counting")


def test_machine_on_the_counting_device(pair):
    cpu, dev = pair
    assert dev.backend == "cupy" and dev.xp is xp and dev.backend_spec == "counting"
    assert "counting" in repr(dev)
    x = dev.asarray(np.arange(5))
    assert isinstance(x, DeviceArray) and type(dev.asnumpy(x)) is np.ndarray


@pytest.mark.parametrize("op", ["add", "max", "min", "or", "copy"])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("segmented", [False, True])
def test_scan_runs_the_cupy_kernels(pair, op, exclusive, segmented):
    cpu, dev = pair
    rng = np.random.default_rng(1)
    x = rng.integers(-50, 50, 300).astype(np.int32)
    seg = rng.random(300) < 0.1
    kw = dict(exclusive=exclusive, segments=seg if segmented else None, reverse=segmented)
    want = cpu.scan(x, op, **{**kw, "segments": kw["segments"]})
    with measure() as c:
        got = dev.scan(
            dev.asarray(x), op, **{**kw, "segments": dev.asarray(seg) if segmented else None}
        )
    assert (dev.asnumpy(got) == want).all()
    # One launch and no sync; the first scan of a size class on a stream sets up its
    # look-back scratch (one more launch, once per process: a set-up, not a launch).
    assert c.total.ops["kernel:simd_scan"] == 1 and c.total.setups <= 1
    assert (c.total.launches, c.total.syncs) == (1, 0)
    with measure() as again:
        dev.scan(dev.asarray(x), op, **{**kw, "segments": dev.asarray(seg) if segmented else None})
    assert (again.total.launches, again.total.setups, again.total.syncs) == (1, 0, 0)


def test_scan_along_an_axis_and_reduce(pair):
    cpu, dev = pair
    x = np.arange(24, dtype=np.float64).reshape(4, 6) % 5
    for axis in (0, 1):
        want = cpu.scan(x, "max", axis=axis, reverse=True)
        got = dev.scan(dev.asarray(x), "max", axis=axis, reverse=True)
        assert (dev.asnumpy(got) == want).all()
    xi = np.arange(1, 13, dtype=np.int64).reshape(3, 4)
    assert int(dev.reduce(dev.asarray(xi), "xor")) == int(cpu.reduce(xi, "xor"))
    assert (
        dev.asnumpy(dev.reduce(dev.asarray(xi), "or", axis=1)) == cpu.reduce(xi, "or", axis=1)
    ).all()


@pytest.mark.parametrize("combine", ["overwrite", "add", "max", "min", "or"])
def test_send_runs_the_router_kernels(pair, combine):
    cpu, dev = pair
    rng = np.random.default_rng(2)
    values = rng.integers(0, 100, 200).astype(np.int64)
    dest = rng.integers(0, 30, 200)
    want = cpu.send(values, dest, 30, combine=combine)
    with measure() as c:
        got = dev.send(dev.asarray(values), dev.asarray(dest), 30, combine=combine)
    assert (dev.asnumpy(got) == want).all()
    kernels = {k for k in c.total.ops if k.startswith("kernel:")}
    if combine == "overwrite":
        assert kernels == {"kernel:simd_send_winner", "kernel:simd_send_write"}
    else:
        assert kernels == {"kernel:simd_send_combine"}
    # the range check is deferred: the send itself reads nothing back (asnumpy does)
    assert c.total.syncs == 0


def test_float_add_send_is_one_atomic_kernel_on_the_device(pair):
    from kernels import reference

    _, dev = pair
    values = np.linspace(0, 1, 50)
    dest = np.arange(50) % 7
    want = reference.send(np, values, dest, np.zeros(7), "add")
    with measure() as c:
        got = dev.send(dev.asarray(values), dev.asarray(dest), 7, combine="add")
    # The emulation sums in sender order; a GPU rounds in arrival order (documented
    # tolerance in kernels.cuda_router_source).
    np.testing.assert_allclose(dev.asnumpy(got), want, rtol=1e-15)
    assert {k for k in c.total.ops if k.startswith("kernel:")} == {"kernel:simd_send_combine"}
    assert c.total.ops["kernel:simd_send_combine"] == 1
    assert "getitem[mask]" not in c.total.sync_ops  # no sort-based fallback


def test_overwrite_send_fills_no_winner_array_per_call(pair):
    cpu, dev = pair
    rng = np.random.default_rng(4)
    for call, size in enumerate((30, 30, 12, 30)):
        values = rng.integers(0, 100, 200).astype(np.int32)
        dest = rng.integers(0, size, 200)
        want = cpu.send(values, dest, size, combine="overwrite")
        with measure() as c:
            got = dev.send(dev.asarray(values), dev.asarray(dest), size, combine="overwrite")
        assert (dev.asnumpy(got) == want).all()
        assert c.total.ops["kernel:simd_send_winner"] == 1
        assert c.total.ops["kernel:simd_send_write"] == 1
        # The machine's output (size, fill) is the only fill; the tag array is zeroed
        # once, when first made (here or by an earlier test), never per call; the address
        # check is folded into the winner kernel (its table of rows made by the first).
        assert c.total.ops["full"] == 1
        if call > 0:
            assert "zeros" not in c.total.ops and c.total.launches == 3, dict(c.total.ops)


def test_shift_and_halo_run_the_numba_kernels_emulated(pair):
    cpu, dev = pair
    x = np.arange(48, dtype=np.float32).reshape(4, 3, 4)
    for offsets, boundary in (((1, 0, -1), "wrap"), ((0, 2, 1), "edge"), ((-1, 1, 0), 7.0)):
        want = cpu.shift(x, offsets, boundary=boundary)
        with measure() as c:
            got = dev.shift(dev.asarray(x), offsets, boundary=boundary)
        assert (dev.asnumpy(got) == want).all()
        assert c.total.ops["kernel:numba_shift.shift3"] >= 1
    tiles = np.arange(2 * 2 * 3 * 3, dtype=np.int32).reshape(2, 2, 3, 3)
    want = cpu.halo_exchange(tiles, [3, 2], [2, 3])
    got = dev.halo_exchange(dev.asarray(tiles), [3, 2], [2, 3])
    assert (dev.asnumpy(got) == want).all()


def test_phases_are_scopes_and_do_not_sync(pair):
    _, dev = pair
    x = dev.asarray(np.arange(8))
    with measure() as c:
        with dev.phase("outer") as record, dev.phase("inner"):
            dev.scan(x)
    assert c.stage("outer").launches == c.total.launches > 0
    assert c.scopes["outer/inner"].ops["kernel:simd_scan"] == 1
    assert c.total.syncs == 0
    with measure() as c:
        assert record.wall >= 0
    assert c.total.syncs == 1


def test_range_checks_are_deferred_on_the_device_and_raise_once():
    m = Machine(pes=16, backend="counting")
    values = m.asarray(np.arange(4))
    with measure() as c:
        out = m.send(values, m.asarray([0, 1, 7, 2]), 4)  # 7 is out of range
        got = m.get(values, m.asarray([3, -2]))  # so is -2
        masked = m.send(values, m.asarray([0, 9, 2, 3]), 4, mask=m.asarray([1, 0, 1, 1], bool))
    assert c.total.syncs == 0  # nothing read back yet
    # no write out of bounds meanwhile: the router drops the bad message
    assert out.view(np.ndarray).tolist() == [0, 1, 3, 0]
    assert masked.view(np.ndarray).tolist() == [0, 0, 2, 3]  # the masked-off 9 is dropped
    assert got.shape == (2,)
    with measure() as c, pytest.raises(IndexError, match="send destination 7 is out of range"):
        m.check()
    assert c.total.syncs == 1  # every pending check in one transfer
    m.check()  # reported once
    with pytest.raises(IndexError, match="get index -2 is out of range for 4 addresses"):
        m.get(values, m.asarray([-2])), m.asnumpy(values)  # a read back checks too


def test_fetch_reads_many_arrays_and_the_checks_in_one_sync():
    m = Machine(pes=16, backend="counting")
    a, b = m.asarray(np.arange(6, dtype=np.uint8).reshape(2, 3)), m.asarray([0.5, 1.5])
    m.get(b, m.asarray([1, 0]))
    with measure() as c:
        ha, hb, hc = m.fetch(a, b, m.asarray(True))
    assert c.total.syncs == 1
    assert ha.tolist() == [[0, 1, 2], [3, 4, 5]] and ha.dtype == np.uint8
    assert hb.tolist() == [0.5, 1.5] and bool(hc) is True
    assert not m._pending


@pytest.mark.parametrize("backend", ["numpy", "counting"])
def test_fetch_lands_strided_views_in_their_own_order(backend):
    # The renderer reads its images back with the rows reversed: one copy launch per
    # array (as a concatenate), C-contiguous aligned host arrays, no host copy.
    m = Machine(pes=16, backend=backend)
    rgb = np.arange(24, dtype=np.uint8).reshape(4, 2, 3)
    face = np.arange(8, dtype=np.int64).reshape(4, 2) - 1
    parts = (m.asarray(rgb)[::-1], m.asarray([7], dtype=np.uint8), m.asarray(face)[::-1])
    parts += (m.asarray(np.int64(5)),)
    with measure() as c:
        got = m.fetch(*parts)
    for host, want in zip(got, (rgb[::-1], [7], face[::-1], 5), strict=True):
        assert np.array_equal(host, want) and host.flags.c_contiguous and host.flags.aligned
    assert got[2].dtype == np.int64 and got[3].shape == ()
    if backend == "counting":
        assert (c.total.syncs, c.total.launches) == (1, 4)
        assert c.total.d2h_bytes == 24 + 1 + 7 + 64 + 8  # 7 bytes align the int64 rows
        m.send(m.asarray([1, 2]), m.asarray([0, 5]), 4)  # a failed deferred check rides along
        with pytest.raises(IndexError, match="send destination 5"):
            m.fetch(parts[2])


@pytest.mark.parametrize("backend", ["numpy", "counting"])
def test_eager_checks_raise_at_the_instruction(backend, monkeypatch):
    monkeypatch.setenv("SIMD_CHECKS", "eager")
    m = Machine(pes=16, backend=backend)
    assert m.checks == "eager"
    with pytest.raises(IndexError, match="send destination 5 is out of range for 3"):
        m.send(m.asarray([1]), m.asarray([5]), 3)
    with pytest.raises(IndexError, match="get index 3"):
        m.get(m.asarray([1, 2]), m.asarray([0, 3]), mask=m.asarray([True, True]))
    assert Machine(pes=4, backend=backend, checks="deferred").checks == "deferred"
    with pytest.raises(ValueError, match="checks must be"):
        Machine(pes=4, backend=backend, checks="lazy")


def test_masked_combining_send_on_the_device_needs_no_sync(pair):
    cpu, dev = pair
    values = np.arange(10, dtype=np.int64)
    dest = np.array([0, 3, 3, 1, 9, 9, 2, 0, 5, 4]) % 6
    mask = np.array([1, 0, 1, 1, 0, 1, 1, 0, 1, 1], bool)
    for combine in ("overwrite", "add", "max", "min"):
        want = cpu.send(values, dest, 6, combine=combine, mask=mask, fill=-1)
        with measure() as c:
            got = dev.send(dev.asarray(values), dev.asarray(dest), 6, combine=combine,
                           mask=dev.asarray(mask), fill=-1)  # fmt: skip
        assert c.total.syncs == 0, combine
        assert (dev.asnumpy(got) == want).all(), combine
    # float add goes to the reference on the device: the dropped messages too
    want = cpu.send(values * 0.5, dest, 6, combine="add", mask=mask)
    got = dev.send(dev.asarray(values * 0.5), dev.asarray(dest), 6, combine="add",
                   mask=dev.asarray(mask))  # fmt: skip
    assert (dev.asnumpy(got) == want).all()


def test_emulated_exclusive_copy_scan_puts_initial_at_the_heads():
    # The scan kernel puts its fill at the heads of an exclusive scan even when it combines
    # no initial in (copy): the stand-in must do the same as the kernel.
    from simd import Machine

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    seg = np.array([[0, 1, 0], [0, 0, 1]], bool)
    want = Machine(backend="numpy").scan(
        x, "copy", exclusive=True, segments=seg, axis=1, initial=9.0
    )
    m = Machine(backend="counting")
    got = m.scan(m.asarray(x), "copy", exclusive=True, segments=m.asarray(seg), axis=1, initial=9.0)
    assert m.asnumpy(got).tolist() == want.tolist() == [[9.0, 9.0, 1.0], [9.0, 3.0, 9.0]]


def test_pool_host_memory_in_a_child_process():
    import platform
    import subprocess
    import sys

    code = "from kernels.counting import pool_host_memory; print(pool_host_memory())"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    want = "True" if platform.libc_ver()[0] == "glibc" else "False"
    assert proc.stdout.strip() == want


def _frame_of_instructions(m):
    """A few instructions with a data-dependent shape and reads back, as a frame has."""
    x = m.asarray(np.arange(40, dtype=np.int64) % 7)
    with m.phase("work"):
        s = m.scan(x, "add", exclusive=True, initial=0)
        kept = x[x > 2]  # a data-dependent shape: one sync
        total = int(m.reduce(kept, "add"))
    return total, m.fetch(s)[0]


def test_replay_answers_with_the_recorded_results_and_counts_the_same():
    m = Machine(pes=4, backend="counting")
    _frame_of_instructions(m)  # first: the machine's kernels make their scratch buffers
    with measure() as recorded, counting.recording() as tape:
        want = _frame_of_instructions(m)
    with measure() as replayed, counting.replaying(tape):
        got = _frame_of_instructions(m)
    assert got[0] == want[0] and np.array_equal(got[1], want[1])
    for c in (recorded.total, replayed.total):
        c.device_seconds = 0.0
    assert replayed.total == recorded.total


def test_replay_does_no_device_work():
    with counting.recording() as tape:
        out = xp.zeros(5, dtype=np.int64)
        out += 3
    with counting.replaying(tape):
        stub = xp.zeros(5, dtype=np.int64)
        stub += 3  # answered from the tape: nothing computed
    assert out.tolist() == [3] * 5
    assert stub.shape == (5,) and stub.dtype == np.int64 and isinstance(stub, DeviceArray)


def test_replay_of_other_work_raises():
    with counting.recording() as tape:
        int(xp.arange(3).sum())
    with pytest.raises(counting.ReplayError, match="asked for 'max'"):
        with counting.replaying(tape):
            int(xp.arange(3).max())
    with pytest.raises(counting.ReplayError, match="ended after 1 of 3"):
        with counting.replaying(tape):
            xp.arange(3)
    with counting.recording():
        with pytest.raises(RuntimeError, match="already being recorded"):
            with counting.replaying(tape):
                pass


def test_calls_into_the_api_are_counted_once_however_nested():
    """A measurement counts the calls its block makes into the stand-in (the wrapper
    overhead per call taken off its host time, counting.call_overhead): a call made
    inside another, as CuPy's own code calls itself, is not counted again."""
    with measure() as c:
        a = xp.arange(3)  # one call
        total = a.sum()  # one (a method of a device array)
        int(total)  # one (a read back)
    assert c.calls == 3
    with measure() as outer:
        with measure() as inner:
            xp.zeros(4, dtype=np.int64)
        m = Machine(pes=4, backend="counting")
        m.scan(m.asarray([1, 2, 3]))  # the machine's kernels call the API inside
    assert inner.calls == 1 and outer.calls > inner.calls
