"""Run on N ranks by tests/simd/test_distributed_hypothesis.py: cases drawn by hypothesis.

Usage: ``drawn_cases.py CASES.json``. Each case names an instruction, the global data's
seed and size, and how many rows each rank holds; every rank rebuilds the same global data,
takes its block, runs the instruction on the machine spread over the ranks, and compares
its block of the result with a one-rank machine's on the global data, bit for bit.
"""

from __future__ import annotations

import json
import sys

import numpy as np
from mpi4py import MPI

from simd import Machine

comm = MPI.COMM_WORLD
cases = json.loads(open(sys.argv[1]).read())
spread = Machine(pes=16, backend="numpy", comm=comm)
one = Machine(pes=16, backend="numpy")


def data(case: dict) -> np.ndarray:
    rng = np.random.default_rng(case["seed"])
    n, dtype = sum(case["rows"]), np.dtype(case["dtype"])
    if dtype == np.bool_:
        return rng.random(n) < 0.5
    if dtype.kind == "f":
        # values up to 2**apart apart in magnitude (float32: within its range)
        apart = min(case.get("spread", 0), 100 if dtype == np.float32 else 900)
        scale = 2.0 ** rng.integers(-apart, apart + 1, size=n)
        return (rng.standard_normal(n) * 100 * scale).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), size=n).astype(dtype)


def mine(a: np.ndarray, rows: list[int]) -> np.ndarray:
    offsets = np.concatenate([[0], np.cumsum(rows)])
    return a[offsets[comm.rank] : offsets[comm.rank + 1]]


for number, case in enumerate(cases):
    x = data(case)
    rng = np.random.default_rng(case["seed"] + 1)
    rows = case["rows"]
    if case["kind"] == "scan":
        segments = rng.random(x.size) < case["starts"]
        kwargs = dict(exclusive=case["exclusive"], reverse=case["reverse"])
        want = one.scan(one.asarray(x), case["op"], segments=segments, **kwargs)
        got = spread.scan(mine(x, rows), case["op"], segments=mine(segments, rows), **kwargs)
        want = mine(want, rows)
    elif case["kind"] == "sum":  # correctly rounded: the same bits on every split
        want = one.reduce(one.asarray(x), "add")
        got = spread.reduce(mine(x, rows), "add")
    else:  # send of every element to a random address of a new array
        size = case["size"]
        dest = rng.integers(0, size, size=x.size)
        want = one.send(one.asarray(x), dest, size, combine=case["combine"])
        got = spread.send(mine(x, rows), mine(dest, rows), size, combine=case["combine"])
        want = want[spread.ranks.bounds(size)[comm.rank] : spread.ranks.bounds(size)[comm.rank + 1]]
    if got.dtype != want.dtype or got.tobytes() != want.tobytes():
        raise AssertionError(f"rank {comm.rank}, case {number} {case}: got {got}, want {want}")
print("ok", comm.rank, len(cases))
