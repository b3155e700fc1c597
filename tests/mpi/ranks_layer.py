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

# Messages are counted into the phase.
with m.phase("talk") as record:
    m.gather(np.arange(3), root=None)
if m.nranks > 1:
    assert record.messages > 0 and record.message_bytes > 0
    assert m.stats["talk"].messages == record.messages
print("ok", m.rank)
