"""Run on N ranks by tests/simd/test_ranks_staging.py: what crosses between device and host.

Two machines on the counting backend (the CuPy code path, its device-host copies counted):
one whose device arrays go through pinned host buffers (``SIMD_MPI_CUDA_AWARE=0``) and one
that hands them to MPI directly (``=1``; the counting arrays are host memory, so MPI can
read them as it would read GPU memory through a CUDA-aware library). The code path is the
same but for the transport, so per instruction (shift, send, get, pack, spread,
halo_exchange) the staged machine's copies minus the direct machine's are exactly what the
staging moved: it must be what has to cross (faces, the rows routed to other ranks,
nothing for a rank's own rows), and the direct machine must copy nothing but a few scalars.
A scan's copies (one summary per rank, its carry) are pinned on both, and so are a
scatter's (from root's device or from the host). Every result is checked against the
one-rank NumPy machine on the gathered data. Prints ``ok RANK`` at the end.
"""

from __future__ import annotations

import os

import numpy as np
from mpi4py import MPI

from kernels import counting
from simd import Machine

comm = MPI.COMM_WORLD
P, rank = comm.size, comm.rank
machines = {}
for path, aware in (("staged", "0"), ("direct", "1")):
    os.environ["SIMD_MPI_CUDA_AWARE"] = aware
    machines[path] = Machine(pes=(8, 4), backend="counting", comm=comm)
one = Machine(pes=(8, 4), backend="numpy")
assert machines["staged"].ranks.device.path == "pinned host staging"
assert machines["direct"].ranks.device.path == "direct"

N, W = 23, 5  # global rows (uneven over the ranks), columns
rng = np.random.default_rng(11)
whole = rng.integers(-100, 100, size=(N, W)).astype(np.int32)
bounds = np.linspace(0, N, P + 1).astype(np.int64)  # uneven blocks, none empty
lo, hi = int(bounds[rank]), int(bounds[rank + 1])
has_pred, has_succ = rank > 0, rank < P - 1


def measured(path: str, instruction, inputs=()):
    """The result (gathered on every rank) and the counts of ``instruction(m, block,
    *inputs)``, the inputs' blocks (rows ``lo:hi``) on the device before counting."""
    m = machines[path]
    args = [m.asarray(a[lo:hi]) for a in (whole, *inputs)]
    with counting.measure() as c:
        out = instruction(m, *args)
    return m.gather(out, root=None), c.total


def check(name, instruction, inputs, staged_d2h: int, staged_h2d: int, small: int):
    """``instruction`` equals the one-rank machine's on the global data on both machines;
    the staging moved exactly ``staged_d2h`` and ``staged_h2d`` bytes here; the direct
    machine moved ``small`` or fewer bytes each way (scalars: counts, spans, layouts),
    whatever the size of the data."""
    want = instruction(one, *(one.asarray(a) for a in (whole, *inputs)))
    got = {path: measured(path, instruction, inputs) for path in machines}
    for path, (result, _) in got.items():
        assert np.array_equal(result, want), (name, path, rank)
    staged, direct = got["staged"][1], got["direct"][1]
    moved = (staged.d2h_bytes - direct.d2h_bytes, staged.h2d_bytes - direct.h2d_bytes)
    assert moved == (staged_d2h, staged_h2d), (name, rank, moved, (staged_d2h, staged_h2d))
    assert direct.d2h_bytes <= small and direct.h2d_bytes <= small, (name, rank, direct)
    # The direct path waits for the stream before every MPI call with device arrays; the
    # staging only when copies are outstanding.
    assert staged.syncs <= direct.syncs, (name, rank, staged.syncs, direct.syncs)
    print(name, rank, "staged", moved, "direct", (direct.d2h_bytes, direct.h2d_bytes))


face = W * 4  # one int32 row
# A shift moves one face each way between neighbours (none at the mesh's ends).
check(
    "shift +1",
    lambda m, x: m.shift(x, (1, 0), boundary=0),
    (),
    face * has_succ,
    face * has_pred,
    small=0,
)
check(
    "shift -2 wrap",
    lambda m, x: m.shift(x, (-2, 1)),
    (),
    2 * face * (P > 1),
    2 * face * (P > 1),
    small=0,
)


def owners(layout, flat_positions):
    return np.searchsorted(layout[1:], flat_positions // W, side="right")


# A send moves the messages (int64 address + int32 value) leaving the rank, no others.
dest = ((np.arange(N * W)[::-1] * 7) % (N * W)).reshape(N, W)  # a permutation
sender = owners(bounds, np.arange(N * W))
receiver = owners(machines["staged"].ranks.bounds(N), dest.ravel())  # the new array's
leaving = int(np.count_nonzero((sender == rank) & (receiver != rank)))
arriving = int(np.count_nonzero((sender != rank) & (receiver == rank)))
check(
    "send",
    lambda m, x, d: m.send(x, d, (N, W)),
    (dest,),
    12 * leaving,
    12 * arriving,
    small=16 + 8 * (P + 1),
)
# A get moves the indices asked of other ranks, and their answers back.
holder = owners(bounds, dest.ravel())
asked_out = int(np.count_nonzero((sender == rank) & (holder != rank)))
asked_in = int(np.count_nonzero((sender != rank) & (holder == rank)))
check(
    "get",
    lambda m, x, i: m.get(x, i),
    (dest,),
    8 * asked_out + 4 * asked_in,
    8 * asked_in + 4 * asked_out,
    small=16 + 8 * (P + 1),
)


# A pack moves the picked elements whose place in the packed result lies on another rank.
picked_mask = (whole % 3) == 0
picked = np.add.reduceat(picked_mask.sum(axis=1), bounds[:-1]) * (np.diff(bounds) > 0)
start = int(picked[:rank].sum())
target = machines["staged"].ranks.bounds(int(picked.sum()))[rank : rank + 2]
kept = max(0, min(start + int(picked[rank]), int(target[1])) - max(start, int(target[0])))
check(
    "pack",
    lambda m, x, k: m.pack(x, k),
    (picked_mask,),
    4 * (int(picked[rank]) - kept),
    4 * (int(target[1] - target[0]) - kept),
    small=8,
)
# A spread moves the one row, from its owner to the others.
row = 13
owner = int(owners(bounds, np.array([row * W]))[0])
check(
    "spread",
    lambda m, x: m.spread(x, 0, index=row),
    (),
    face * (rank == owner and P > 1),
    face * (rank != owner),
    small=0,
)
# A halo exchange moves one PE row of tiles (a face) to each neighbour.
tiles = rng.integers(0, 9, size=(N, 2, 3, 3)).astype(np.int32)
heights, widths = np.full(N, 3), np.full(2, 3)
check(
    "halo_exchange",
    lambda m, x, t: m.halo_exchange(t, heights, widths, width=1, boundary="edge"),
    (tiles,),
    72 * (has_pred + has_succ),
    72 * (has_pred + has_succ),
    small=heights.nbytes + widths.nbytes,  # the local kernel's tile extents
)


# A scan reads back one summary per rank (its last inclusive value, the same without the
# initial: 4 + 4 bytes per column; without segments none starts a segment) and uploads the
# carry of the blocks before it: no more, staged or direct.
def scan(m, x):
    return m.scan(x, "add", axis=0)


for path in machines:
    out, counts = measured(path, scan)
    assert np.array_equal(out, scan(one, one.asarray(whole)))
    assert counts.d2h_bytes == 8 * W, (path, rank, counts.d2h_bytes)
    assert counts.h2d_bytes == 4 * W * has_pred, (path, rank, counts.h2d_bytes)

# A scatter from root's device moves the other ranks' blocks, root's own none; from the
# host, each rank's block goes to its device once. Root is the last rank (its own block
# between none: one piece) and then rank 0.
canonical = machines["staged"].ranks.bounds(N)
own_bytes = int(canonical[rank + 1] - canonical[rank]) * face
for root in sorted({P - 1, 0}):
    for path, m in machines.items():
        is_root = rank == root
        for on_device in (True, False):
            source = (m.asarray(whole) if on_device else whole) if is_root else None
            m.ranks.device.ready()  # earlier copies from the pinned buffer waited for
            with counting.measure() as c:
                block = m.scatter(source, root=root)
            assert type(block) is counting.DeviceArray, (path, rank, type(block))
            want = whole[canonical[rank] : canonical[rank + 1]]
            assert np.array_equal(m.asnumpy(block), want), (path, rank, root)
            counts = c.total
            if on_device:  # staged: the others' blocks down on root, each block up elsewhere
                d2h = (whole.nbytes - own_bytes) * is_root * (path == "staged")
                h2d = own_bytes * (not is_root) * (path == "staged")
            else:  # from the host: every block up once, from pinned memory where staged
                d2h, h2d = 0, own_bytes * (is_root or path == "staged")
            assert (counts.d2h_bytes, counts.h2d_bytes) == (d2h, h2d), (
                path,
                rank,
                root,
                on_device,
                counts.d2h_bytes,
                counts.h2d_bytes,
                d2h,
                h2d,
            )
            # Staged: one wait on root for its copies down; direct: one before MPI's call.
            down = is_root and on_device and whole.nbytes > own_bytes
            syncs = down if path == "staged" else int(on_device or not is_root)
            assert counts.syncs == syncs, (path, rank, root, on_device, counts.syncs)

# The pinned buffers are kept: repeated collectives allocate nothing new, and the buffers
# stay where they are.
staged = machines["staged"]
transport = staged.ranks.device
x = staged.asarray(whole[lo:hi])
staged.shift(x, (1, 0))
before = transport.allocations
addresses = {k: b.__array_interface__["data"][0] for k, b in transport._pinned.items()}
for _ in range(5):
    staged.shift(x, (1, 0))
    staged.shift(x, (-1, 0))
assert transport.allocations == before, (transport.allocations, before)
assert addresses == {k: b.__array_interface__["data"][0] for k, b in transport._pinned.items()}
assert before <= 2 and (P == 1 or before == 2), before  # one send and one receive buffer
# A message larger than the buffers grows them once, and they are kept again after.
big = staged.asarray(np.zeros((4, 2048), np.int32))  # faces of 16 KiB
staged.shift(big, (2, 0))
grown = transport.allocations
staged.shift(big, (-2, 0))
assert transport.allocations == grown and (P == 1 or grown > before), (grown, before)
print("ok", rank)
