"""Run on N ranks by tests/simd/test_distributed.py: every instruction against one rank.

Usage: ``instructions.py SEED CASES [BACKEND]``. Every rank draws the same random cases
from the seed (global arrays, and a random split of them over the ranks: uneven, often with empty
blocks), runs each instruction on the machine spread over the ranks, and compares its
block of the result with the same block of a one-rank ``Machine(backend="numpy")`` on the
global data: bit for bit (float ``add`` reductions too: correctly rounded, whatever the
split), and the model clocks equal. Errors must be raised on every rank alike. Prints
``ok RANK COUNTS`` at the end; an unexpected exception aborts every rank (so the launch
fails rather than hangs).
"""

from __future__ import annotations

import sys
import traceback

import numpy as np
from mpi4py import MPI

from kernels.registry import force_reference
from simd import XNET, Machine

comm = MPI.COMM_WORLD
SEED, CASES = int(sys.argv[1]), int(sys.argv[2])
# The spread machine's backend (the third argument): "numpy", "counting" for the CuPy code
# path on the counting stand-in, or "cupy" on a GPU; the oracle is always the one-rank NumPy
# machine.
BACKEND = sys.argv[3] if len(sys.argv) > 3 else "numpy"
rng = np.random.default_rng(SEED)  # the same draws on every rank
DTYPES = [np.int32, np.int64, np.uint8, np.bool_, np.float32, np.float64]
OPS = ["add", "max", "min", "and", "or", "xor", "copy"]

line = Machine(pes=16, backend=BACKEND, comm=comm)
mesh = Machine(pes=(4, 4), backend=BACKEND, comm=comm)
one_line = Machine(pes=16, backend="numpy")
one_mesh = Machine(pes=(4, 4), backend="numpy")
counts: dict[str, int] = {}


def fail(what: str, detail: str) -> None:
    raise AssertionError(f"rank {comm.rank}: {what}: {detail}")


def same(got, want, what: str, close: bool = False) -> None:
    if hasattr(got, "__cuda_array_interface__"):  # a CuPy array: NumPy cannot take it
        got = got.get()
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype != want.dtype or got.shape != want.shape:
        fail(what, f"got {got.dtype} {got.shape}, want {want.dtype} {want.shape}")
    if close:
        if not np.allclose(got, want, rtol=1e-4, atol=1e-4, equal_nan=True):
            fail(what, f"got {got}, want {want}")
    elif got.tobytes() != want.tobytes():
        fail(what, f"got {got.tolist()}, want {want.tolist()}")


def split(n: int) -> np.ndarray:
    """Random block offsets of ``n`` rows over the ranks (often with empty blocks)."""
    if rng.random() < 0.3:
        return line.ranks.bounds(n)
    cuts = np.sort(rng.integers(0, n + 1, size=comm.size - 1))
    return np.concatenate([[0], cuts, [n]]).astype(np.int64)


def block(a, bounds):
    return None if a is None else a[bounds[comm.rank] : bounds[comm.rank + 1]]


def values(shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind == "f":
        out = (rng.standard_normal(shape) * 10).astype(dtype)
        if rng.random() < 0.1:  # NaN propagates through max, min and add alike
            out[rng.random(shape) < 0.2] = np.nan
        return out
    if dtype == np.uint8:
        return rng.integers(0, 256, size=shape).astype(dtype)
    return rng.integers(-1000, 1000, size=shape).astype(dtype)


def flags(shape, p=0.3):
    return rng.random(shape) < p


def tick(name: str, m: Machine, oracle: Machine) -> None:
    counts[name] = counts.get(name, 0) + 1
    if m.clock != oracle.clock:
        fail(name, f"model clock {m.clock} != one-rank clock {oracle.clock}")


def expect_error(name, run_here, run_oracle, m, oracle):
    """Both raise the same exception type; the one-rank message is in every rank's."""
    try:
        run_oracle()
    except Exception as exc:  # noqa: BLE001 (the error under test)
        want = exc
    else:
        fail(name, "the one-rank machine raised nothing")
    try:
        run_here()
    except Exception as exc:  # noqa: BLE001
        if type(exc) is not type(want) or str(want) not in str(exc):
            fail(name, f"raised {type(exc).__name__}: {exc}; want {type(want).__name__}: {want}")
    else:
        fail(name, "raised nothing")
    tick(name, m, oracle)


# ----------------------------------------------------------------------------- cases


def scan_case():
    dtype = np.dtype(DTYPES[rng.integers(len(DTYPES))])
    ops = [o for o in OPS if not (dtype.kind == "f" and o in ("and", "or", "xor"))]
    op = ops[rng.integers(len(ops))]
    n = int(rng.integers(0, 14))
    shape = (n,) if rng.random() < 0.6 else (n, int(rng.integers(1, 4)))
    axis = [None, 0, 1][rng.integers(len(shape) + 1)]
    x = values(shape, dtype)
    kw = dict(exclusive=bool(rng.random() < 0.5), reverse=bool(rng.random() < 0.5))
    if rng.random() < 0.6:
        kw["segments"] = flags(shape)
    if op != "copy" and rng.random() < 0.3:
        kw["mask"] = flags(shape, 0.7)
    if rng.random() < 0.4 and (op != "copy" or kw["exclusive"]):
        if dtype.kind == "b":
            kw["initial"] = bool(rng.random() < 0.5)
        elif dtype.kind == "f":
            kw["initial"] = float(rng.standard_normal())
        else:
            kw["initial"] = int(rng.integers(0, 100))
    bounds = split(n)
    want = one_line.scan(x, op, axis=axis, **kw)
    got = line.scan(
        block(x, bounds),
        op,
        axis=axis,
        **{k: block(v, bounds) if k in ("segments", "mask") else v for k, v in kw.items()},
    )
    # The reference kernels (SIMD_FORCE_REFERENCE=1) and CuPy's add floats in tree order,
    # not serially: there the chained float add agrees to rounding only.
    close = op == "add" and dtype.kind == "f" and (force_reference() or BACKEND != "numpy")
    what = f"scan {op} {dtype} {shape} axis={axis} {kw} {bounds}"
    same(got, block(want, bounds), what, close=close)
    tick("scan", line, one_line)


def reduce_case():
    dtype = np.dtype(DTYPES[rng.integers(len(DTYPES))])
    ops = [o for o in OPS[:-1] if not (dtype.kind == "f" and o in ("and", "or", "xor"))]
    op = ops[rng.integers(len(ops))]
    n = int(rng.integers(0, 12))
    shape = (n,) if rng.random() < 0.5 else (n, int(rng.integers(1, 4)))
    axis = [None, 0, 1][rng.integers(len(shape) + 1)]
    x = values(shape, dtype)
    mask = flags(shape, 0.7) if rng.random() < 0.3 else None
    bounds = split(n)
    want = one_line.reduce(x, op, axis=axis, mask=mask)
    got = line.reduce(block(x, bounds), op, axis=axis, mask=block(mask, bounds))
    if axis == 1:
        want = block(want, bounds)
    same(got, want, f"reduce {op} {dtype} {shape} axis={axis} {bounds}")
    tick("reduce", line, one_line)


def float_sum_case():
    """Float ``add`` reductions of values that rounding in any fixed order would get
    wrong (cancelling giants, values 2**±60 apart, subnormals, -0.0, infinities, sums
    that overflow): the one-rank result bit for bit, on every split."""
    dtype = np.dtype([np.float32, np.float64][rng.integers(2)])
    info = np.finfo(dtype)
    n = int(rng.integers(0, 16))
    shape = (n,) if rng.random() < 0.6 else (n, int(rng.integers(1, 3)))
    scale = np.array([1.0, 2.0**60, 2.0**-60, float(info.max) / 4, float(info.smallest_subnormal)])
    x = np.clip(rng.standard_normal(shape), -3.9, 3.9) * scale[rng.integers(len(scale), size=shape)]
    x = np.concatenate([x, -x[::-1]]) if rng.random() < 0.3 else x  # exact cancellation
    x = x.astype(dtype)
    bounds = split(x.shape[0])
    if rng.random() < 0.3:
        x[rng.random(x.shape) < 0.5] = [-0.0, np.inf, -np.inf, np.nan][rng.integers(4)]
    axis = [None, 0][rng.integers(2)]
    mask = flags(x.shape, 0.8) if rng.random() < 0.3 else None
    want = one_line.reduce(x, "add", axis=axis, mask=mask)
    got = line.reduce(block(x, bounds), "add", axis=axis, mask=block(mask, bounds))
    same(got, want, f"float sum {dtype} {x.tolist()} axis={axis} {bounds}")
    tick("float sum", line, one_line)


def count_enumerate_pack_case():
    n = int(rng.integers(0, 12))
    shape = (n,) if rng.random() < 0.5 else (n, 2)
    mask = flags(shape, 0.5)
    bounds = split(n)
    same(line.count(block(mask, bounds)), one_line.count(mask), "count")
    tick("count", line, one_line)
    segments = flags(shape) if rng.random() < 0.5 else None
    want = one_line.enumerate(mask, segments=segments)
    got = line.enumerate(block(mask, bounds), segments=block(segments, bounds))
    same(got, block(want, bounds), "enumerate")
    tick("enumerate", line, one_line)
    x = values(shape, DTYPES[rng.integers(len(DTYPES))])
    want = one_line.pack(x, mask)
    got = line.pack(block(x, bounds), block(mask, bounds))
    same(got, block(want, line.ranks.bounds(want.shape[0])), "pack (canonical layout)")
    tick("pack", line, one_line)


def spread_broadcast_case():
    n = int(rng.integers(1, 10))
    shape = (n, int(rng.integers(1, 4)))
    x = values(shape, DTYPES[rng.integers(len(DTYPES))])
    axis = int(rng.integers(2))
    index = int(rng.integers(-shape[axis], shape[axis]))
    bounds = split(n)
    want = one_line.spread(x, axis, index=index)
    same(line.spread(block(x, bounds), axis, index=index), block(want, bounds), "spread")
    tick("spread", line, one_line)
    shape = (int(rng.integers(0, 9)), 2) if rng.random() < 0.5 else int(rng.integers(0, 9))
    want = one_line.broadcast(7, shape, dtype=np.int16)
    got = line.broadcast(7, shape, dtype=np.int16)
    same(got, block(want, line.ranks.bounds(want.shape[0])), "broadcast")
    tick("broadcast", line, one_line)


def send_case():
    combine = ["overwrite", "add", "max", "min", "and", "or", "unique"][rng.integers(7)]
    dtypes = [np.int32, np.int64, np.uint8, np.float32, np.float64, np.bool_]
    if combine in ("and", "or"):
        dtypes = [np.int32, np.int64, np.uint8, np.bool_]
    if combine == "add":
        dtypes = [np.int32, np.int64, np.uint8, np.float32, np.float64]
    dtype = np.dtype(dtypes[rng.integers(len(dtypes))])
    out_n = int(rng.integers(1, 10))
    out_shape = (out_n,) if rng.random() < 0.5 else (out_n, 2)
    size = int(np.prod(out_shape))
    senders = int(rng.integers(0, 14))
    if combine == "unique":
        senders = min(senders, size)
        dest = rng.permutation(size)[:senders]
    else:
        dest = rng.integers(0, size, size=senders)
    msgs = values((senders,), dtype)
    mask = flags((senders,), 0.7) if rng.random() < 0.4 else None
    sb = split(senders)
    fill = 0 if dtype.kind != "f" else -1.5
    # The CuPy router adds floats with atomics, in no fixed order: to rounding there.
    atomic_float_add = combine == "add" and dtype.kind == "f" and BACKEND != "numpy"
    if rng.random() < 0.5:  # a new array (canonical layout)
        want = one_line.send(msgs, dest, out_shape, combine=combine, mask=mask, fill=fill)
        got = line.send(
            block(msgs, sb),
            block(dest, sb),
            out_shape,
            combine=combine,
            mask=block(mask, sb),
            fill=fill,
        )
        same(
            got,
            block(want, line.ranks.bounds(out_n)),
            f"send size= {combine} {dtype}",
            close=atomic_float_add,
        )
    else:
        into = values(out_shape, dtype)
        ob = split(out_n)
        mine = block(into, ob).copy()
        want = one_line.send(msgs, dest, combine=combine, mask=mask, into=into.copy())
        got = line.send(
            block(msgs, sb), block(dest, sb), combine=combine, mask=block(mask, sb), into=mine
        )
        same(got, block(want, ob), f"send into= {combine} {dtype}", close=atomic_float_add)
    tick("send", line, one_line)


def get_case():
    n = int(rng.integers(0, 10))
    shape = (n,) if rng.random() < 0.5 else (n, 3)
    source = values(shape, DTYPES[rng.integers(len(DTYPES))])
    size = int(np.prod(shape))
    k = int(rng.integers(0, 12))
    mask = flags((k,), 0.6) if rng.random() < 0.4 or size == 0 else None
    if size == 0 and mask is not None:
        mask[:] = False
    index = rng.integers(0, max(size, 1), size=k)
    fill = 1 if source.dtype != np.bool_ else True
    sb, ib = split(n), split(k)
    want = one_line.get(source, index, mask=mask, fill=fill)
    got = line.get(block(source, sb), block(index, ib), mask=block(mask, ib), fill=fill)
    same(got, block(want, ib), "get")
    tick("get", line, one_line)


def shift_case():
    n = int(rng.integers(0, 10))
    shape = (n, int(rng.integers(1, 5))) + ((2,) if rng.random() < 0.3 else ())
    dtype = np.dtype(DTYPES[rng.integers(len(DTYPES))])
    x = values(shape, dtype)
    boundary = ["wrap", "zero", "edge", 3][rng.integers(4)]
    if rng.random() < 0.5:
        direction = list(XNET)[rng.integers(8)]
        scale = int(rng.integers(1, 4))
        offset = tuple(scale * k for k in XNET[direction]) + (0,) * (len(shape) - 2)
        axis = None
    else:
        axis = int(rng.integers(len(shape)))
        offset = int(rng.integers(-12, 13))
    here, oracle = mesh, one_mesh
    if rng.random() < 0.25:  # a linear array of PEs: 1-D VP sets
        here, oracle = line, one_line
        shape, axis, offset = (n,), None, int(rng.integers(-12, 13))
        x = values(shape, dtype)
    bounds = split(n)
    want = oracle.shift(x, offset, axis, boundary=boundary)
    got = here.shift(block(x, bounds), offset, axis, boundary=boundary)
    same(got, block(want, bounds), f"shift {offset} axis={axis} {boundary} {shape} {bounds}")
    tick("shift", here, oracle)


def halo_case():
    R, C = int(rng.integers(0, 6)), int(rng.integers(1, 4))
    BH, BW = int(rng.integers(2, 5)), int(rng.integers(2, 5))
    width = int(rng.integers(1, 3))
    heights = rng.integers(width, BH + 1, size=R) if BH >= width else None
    widths = rng.integers(width, BW + 1, size=C) if BW >= width else None
    if heights is None or widths is None:
        return
    tiles = values((R, C, BH, BW), [np.float32, np.int64][rng.integers(2)])
    boundary = ["wrap", "zero", "edge", 2][rng.integers(4)]
    bounds = split(R)
    want = one_mesh.halo_exchange(tiles, heights, widths, width=width, boundary=boundary)
    got = mesh.halo_exchange(block(tiles, bounds), heights, widths, width=width, boundary=boundary)
    same(got, block(want, bounds), f"halo {R}x{C} {BH}x{BW} w={width} {boundary} {bounds}")
    tick("halo_exchange", mesh, one_mesh)


def error_cases():
    bad = int(rng.integers(comm.size))
    x = np.arange(6)
    bounds = split(6)
    mine = block(x, bounds)
    # A bad operand on one rank only: every rank raises its error.
    mask = np.ones(mine.shape, dtype=np.int8 if comm.rank == bad else bool)
    try:
        line.scan(mine, "add", mask=mask)
    except TypeError as err:
        assert "mask must be a bool array" in str(err), err
    else:
        fail("scan with a bad mask on one rank", "raised nothing")
    tick("error", line, one_line)
    # An address out of range on one rank: the one-rank message on every rank.
    dest = np.array([0, 1, 9, 2])
    expect_error(
        "send out of range",
        lambda: line.send(1, block(dest, split(4)), 6, combine="add"),
        lambda: one_line.send(1, dest, 6, combine="add"),
        line,
        one_line,
    )
    index = np.array([3, -1, 2])
    expect_error(
        "get out of range",
        lambda: line.get(mine, block(index, split(3))),
        lambda: one_line.get(x, index),
        line,
        one_line,
    )
    # Collisions on different ranks: CollisionError everywhere with the global count.
    dest = np.array([4, 1, 4, 2, 1, 5])
    sb = split(6)
    expect_error(
        "send unique collision",
        lambda: line.send(block(x, sb), block(dest, sb), 6, combine="unique"),
        lambda: one_line.send(np.arange(6), dest, 6, combine="unique"),
        line,
        one_line,
    )
    expect_error(
        "spread index out of range",
        lambda: line.spread(mine, 0, index=6),
        lambda: one_line.spread(x, 0, index=6),
        line,
        one_line,
    )


def phases_case():
    """stats_across_ranks: cycles as on one rank, messages summed, the union of phases."""
    x = np.arange(20)
    bounds = split(20)
    with line.phase("across") as record:
        line.scan(block(x, bounds))
        if comm.rank == 0:
            with line.phase("root only"):
                pass
    with one_line.phase("across") as one:
        one_line.scan(x)
    stats = line.stats_across_ranks()
    assert "across/root only" in stats.phases
    assert stats["across"].cycles == one_line.stats["across"].cycles
    assert record.cycles == one.cycles
    total = comm.allreduce(line.stats["across"].messages)
    assert stats["across"].messages == total, (stats["across"].messages, total)
    walls = comm.allgather(line.stats["across"].wall)
    assert stats["across"].wall == max(walls)
    tick("stats", line, one_line)


try:
    kinds = [
        scan_case,
        scan_case,
        scan_case,
        reduce_case,
        float_sum_case,
        count_enumerate_pack_case,
        spread_broadcast_case,
        send_case,
        send_case,
        get_case,
        shift_case,
        shift_case,
        halo_case,
    ]
    for _ in range(CASES):
        kinds[rng.integers(len(kinds))]()
    for _ in range(3):
        error_cases()
    phases_case()
    assert line.clock == one_line.clock and mesh.clock == one_mesh.clock
except Exception:  # noqa: BLE001 (stop every rank, not only this one)
    traceback.print_exc()
    sys.stderr.flush()
    comm.Abort(1)
print("clock", line.clock, one_line.clock, mesh.clock, one_mesh.clock, flush=True)
print("ok", comm.rank, sorted(counts.items()), flush=True)
