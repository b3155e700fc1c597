"""How device arrays reach MPI (simd.staging, simd.ranks): the path's choice, what each
path hands mpi4py, the pinned buffers' reuse, and what crosses per instruction on 1-4 ranks.

The direct path (a CUDA-aware MPI takes the device arrays) cannot run on a real GPU here: its
choice is tested, and what it hands MPI is checked with a communicator that records the
buffers, on the counting backend (its device arrays are host memory underneath).
"""

from __future__ import annotations

import numpy as np
import pytest

from kernels import counting
from kernels.counting import DeviceArray
from kernels.counting import cupy as xp
from tests.mpi_support import run_ranks


class LoopbackComm:
    """Rank 0 of two mirrored ranks: what it sends to rank 1 comes back from rank 1. It
    records the buffers it is handed (as mpi4py would receive them)."""

    def __init__(self):
        self.sent = []

    def Sendrecv(self, sendbuf, dest, recvbuf, source):
        self.sent.append(sendbuf[0])
        recvbuf[0][...] = sendbuf[0]

    def Alltoall(self, send, recv):
        recv[...] = send

    def Alltoallv(self, send, recv):
        (sbuf, (scount, sdispl), _), (rbuf, (rcount, rdispl), _) = send, recv
        self.sent.append(sbuf)
        assert scount[0] == rcount[0] == 0, "a rank's own rows must not go through MPI"
        rbuf[rdispl[1] : rdispl[1] + rcount[1]] = sbuf[sdispl[1] : sdispl[1] + scount[1]]

    def Bcast(self, buf, root):
        self.sent.append(buf[0])

    def Allreduce(self, send, recv, op):
        self.sent.append(send)
        recv[...] = send + send

    def bcast(self, obj, root):
        return obj

    def Scatterv(self, send, recv, root):
        (sbuf, (counts, _), _), (rbuf, _) = send, recv
        assert root == 0 and counts[0] == 0 and rbuf.size == 0, "root's block stays put"
        self.sent.append(sbuf)


def loopback_ranks(monkeypatch, aware: str):
    MPI = pytest.importorskip("mpi4py.MPI")
    from simd.ranks import Ranks

    monkeypatch.setenv("SIMD_MPI_CUDA_AWARE", aware)
    ranks = Ranks(MPI.COMM_SELF, xp=xp)
    ranks.comm, ranks.rank, ranks.size = LoopbackComm(), 0, 2
    return ranks


@pytest.mark.parametrize(("aware", "path"), [("1", "direct"), ("0", "pinned host staging")])
def test_the_environment_variable_picks_the_path(monkeypatch, aware, path):
    from simd.info import environment

    ranks = loopback_ranks(monkeypatch, aware)
    assert ranks.device.path == path
    mpi = environment()["mpi"]
    assert mpi["cuda_aware"] == (aware == "1") and mpi["gpu_arrays"] == path


def test_a_host_only_machine_has_no_device_transport():
    MPI = pytest.importorskip("mpi4py.MPI")
    from simd import Machine

    assert Machine(backend="numpy", comm=MPI.COMM_SELF).ranks.device is None
    assert Machine(backend="counting", comm=MPI.COMM_SELF).ranks.device is not None


def test_direct_path_hands_mpi_the_device_array_and_copies_nothing(monkeypatch):
    ranks = loopback_ranks(monkeypatch, "1")
    face = xp.arange(12, dtype=xp.int32).reshape(3, 4)[1:]
    with counting.measure() as c:
        got = ranks.sendrecv(face, 1, 1, (2, 4), np.int32)
    sent = ranks.comm.sent[0]
    assert type(sent) is DeviceArray and np.shares_memory(sent, face)
    assert type(got) is DeviceArray and got.tolist() == face.tolist()
    # MPI does not know CuPy's stream: one synchronisation before the call, no copies.
    assert (c.total.d2h_bytes, c.total.h2d_bytes, c.total.syncs) == (0, 0, 1)
    rows = xp.arange(10, dtype=xp.int64).reshape(5, 2)
    with counting.measure() as c:
        back = ranks.alltoallv(rows, np.array([2, 3]))
    assert type(ranks.comm.sent[-1]) is DeviceArray
    assert back.tolist() == rows.tolist() and (c.total.d2h_bytes, c.total.h2d_bytes) == (0, 0)
    with counting.measure() as c:
        total = ranks.allreduce(xp.asarray([1, 2], dtype=xp.int64), "add")
    assert type(total) is DeviceArray and total.tolist() == [2, 4]
    assert (c.total.d2h_bytes, c.total.h2d_bytes) == (0, 16)  # 16: the asarray above


def test_staged_path_copies_through_kept_pinned_buffers(monkeypatch):
    ranks = loopback_ranks(monkeypatch, "0")
    face = xp.arange(12, dtype=xp.int32).reshape(3, 4)[1:]
    with counting.measure() as c:
        got = ranks.sendrecv(face, 1, 1, (2, 4), np.int32)
    sent = ranks.comm.sent[0]
    assert type(sent) is np.ndarray and not np.shares_memory(sent, face)
    assert type(got) is DeviceArray and got.tolist() == face.tolist()
    # The face down and back up, asynchronously, with one synchronisation in all.
    assert (c.total.d2h_bytes, c.total.h2d_bytes, c.total.syncs) == (32, 32, 1)
    assert ranks.device.allocations == 2  # one send and one receive buffer
    # Rows for this rank stay on the device: 2 of the 5 rows (16 bytes each) cross.
    rows = xp.arange(10, dtype=xp.int64).reshape(5, 2)
    with counting.measure() as c:
        back = ranks.alltoallv(rows, np.array([3, 2]))
    assert back.tolist() == rows.tolist()
    assert (c.total.d2h_bytes, c.total.h2d_bytes, c.total.syncs) == (32, 32, 1)
    # Reused, not allocated per call; grown (once) when a message outgrows them.
    for _ in range(3):
        ranks.sendrecv(face, 1, 1, (2, 4), np.int32)
    assert ranks.device.allocations == 2
    big = xp.zeros(3000, dtype=xp.float64)
    ranks.sendrecv(big, 1, 1, big.shape, big.dtype)
    ranks.sendrecv(big, 1, 1, big.shape, big.dtype)
    assert ranks.device.allocations == 4
    assert ranks.device.pinned("send", 1).base.size >= big.nbytes


@pytest.mark.parametrize("aware", ["1", "0"])
def test_scatter_from_the_device_sends_only_the_other_blocks(monkeypatch, aware):
    ranks = loopback_ranks(monkeypatch, aware)
    whole = xp.arange(10, dtype=xp.int64).reshape(5, 2)  # rank 0: rows 0-2, rank 1: 3-4
    with counting.measure() as c:
        mine = ranks.scatter(whole, device=True)
    sent = ranks.comm.sent[-1]
    assert type(mine) is DeviceArray and mine.tolist() == whole[:3].tolist()
    assert not np.shares_memory(mine, whole)
    assert np.asarray(sent).view(np.int64).tolist() == [6, 7, 8, 9]
    if aware == "1":  # the rows after root's block, a view handed to MPI: nothing copied
        assert type(sent) is DeviceArray and np.shares_memory(sent, whole)
        assert (c.total.d2h_bytes, c.total.h2d_bytes, c.total.syncs) == (0, 0, 1)
    else:  # the two rows for rank 1 down to the pinned buffer, one wait for the copy
        assert type(sent) is np.ndarray and not np.shares_memory(sent, whole)
        assert (c.total.d2h_bytes, c.total.h2d_bytes, c.total.syncs) == (32, 0, 1)
    # From the host: root's own block up to its device, the others' straight from the host.
    with counting.measure() as c:
        mine = ranks.scatter(np.arange(10).reshape(5, 2), device=True)
    assert type(mine) is DeviceArray and mine.tolist() == whole[:3].tolist()
    assert (c.total.d2h_bytes, c.total.h2d_bytes, c.total.syncs) == (0, 48, 0)


def test_host_arrays_stay_on_the_host(monkeypatch):
    ranks = loopback_ranks(monkeypatch, "0")
    with counting.measure() as c:
        got = ranks.sendrecv(np.arange(3), 1, 1, (3,), np.int64)
    assert type(got) is np.ndarray and got.tolist() == [0, 1, 2]
    assert (c.total.d2h_bytes, c.total.h2d_bytes, c.total.syncs) == (0, 0, 0)
    assert ranks.device.allocations == 0


@pytest.mark.mpi
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_only_what_must_cross_crosses_on_ranks(n):
    # One launch checks shift, send, get, pack, spread, halo_exchange and scan against the
    # one-rank machine, pins the bytes staged per instruction, and the pinned buffers' reuse.
    done = run_ranks(n, "staging_counts.py", timeout=120)
    assert done.stdout.count("ok ") == n, done.stdout
