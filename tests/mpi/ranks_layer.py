"""Run on N ranks by tests/simd/test_ranks.py: scatter, gather and collective errors."""

import numpy as np
from mpi4py import MPI

from simd import Machine

m = Machine(pes=16, backend="numpy", comm=MPI.COMM_WORLD)
rng = np.random.default_rng(7)
for n in (0, 1, 2, 5, 17):
    whole = rng.integers(-50, 50, size=(n, 3)) if m.is_root else None
    block = m.scatter(whole)
    lo, hi = m.ranks.bounds(n)[m.rank : m.rank + 2]
    assert block.shape == (hi - lo, 3), (block.shape, lo, hi)
    back = m.gather(block)
    if m.is_root:
        assert np.array_equal(back, whole)
    else:
        assert back is None
    everywhere = m.gather(block, root=None)
    assert everywhere.shape == (n, 3)

# An uneven layout gathers in rank order.
block = np.full(m.rank, m.rank, dtype=np.int16)
assert m.gather(block, root=None).tolist() == [r for r in range(m.nranks) for _ in range(r)]

# A bad input on one rank raises on every rank, naming it.
for bad in range(m.nranks):
    try:
        with m.ranks.collective_errors():
            if m.rank == bad:
                raise ValueError("size must be positive")
    except ValueError as err:
        assert "size must be positive" in str(err)
        assert (m.rank == bad) or f"(rank {bad})" in str(err)
    else:
        raise AssertionError("no error raised")

# Face exchange: ghost rows from the nearest ranks holding rows (empty blocks skipped).
for n in (1, 3, 10):
    whole = np.arange(n * 2).reshape(n, 2)
    lo, hi = m.ranks.bounds(n)[m.rank : m.rank + 2]
    rows = np.diff(m.ranks.bounds(n))
    for width in (1, 2):
        try:
            below, above = m.ranks.exchange_faces(whole[lo:hi], width)
        except ValueError as err:
            assert any(0 < r < width for r in rows) and "halo of" in str(err), err
            continue
        assert not any(0 < r < width for r in rows)
        if hi == lo:
            assert below is None and above is None
            continue
        want_below = whole[lo - width : lo] if lo > 0 else None
        want_above = whole[hi : hi + width] if hi < n else None
        for got, want in ((below, want_below), (above, want_above)):
            assert (got is None) == (want is None), (n, width, got, want)
            assert got is None or np.array_equal(got, want), (n, width, got, want)

# Messages are counted into the phase.
with m.phase("talk") as record:
    m.gather(np.arange(3), root=None)
if m.nranks > 1:
    assert record.messages > 0 and record.message_bytes > 0
    assert m.stats["talk"].messages == record.messages
print("ok", m.rank)
