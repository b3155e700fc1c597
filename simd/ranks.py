"""The MPI layer: one machine spread over the ranks of an MPI communicator.

A machine made with ``Machine(..., comm=comm)`` holds, on every rank, that rank's block of
each VP set: contiguous blocks along the first axis, in rank order. :class:`Ranks` is its
link to the other ranks: the global layout (block offsets), the collectives the instructions
need (every one timed and counted into the open phases), scatter and gather between a
global array on one rank and the blocks, and errors that stay collective.

Only this module imports ``mpi4py``, and only a machine given a communicator imports this
module. The collectives take host arrays or, on a GPU machine, device arrays, and give
their results on the same side: device arrays go to MPI directly where the MPI library is
CUDA-aware (:func:`cuda_aware`), else through pinned host buffers kept per :class:`Ranks`
(``simd.staging``). Only the bytes that leave the rank cross: rows a rank routes to
itself stay where they are.

Examples
--------
>>> canonical_bounds(10, 4).tolist()
[0, 3, 6, 8, 10]
"""

from __future__ import annotations

import functools
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from mpi4py import MPI

from simd.staging import HOST, DeviceTransport, HostTransport

__all__ = ["CollectiveError", "Ranks", "canonical_bounds", "cuda_aware", "mpi_library"]

#: The MPI reduction of each machine operator (``copy`` and the segmented forms are folded
#: on the host from gathered carries instead).
MPI_OPS = {
    "add": MPI.SUM,
    "max": MPI.MAX,
    "min": MPI.MIN,
    "and": MPI.BAND,
    "or": MPI.BOR,
    "xor": MPI.BXOR,
}


class CollectiveError(RuntimeError):
    """An error raised on another rank, raised here too so that no rank waits forever."""


def canonical_bounds(n: int, nranks: int) -> np.ndarray:
    """Block offsets of ``n`` elements split over ``nranks`` ranks (length ``nranks + 1``).

    The first ``n % nranks`` ranks hold one element more, as ``numpy.array_split`` does.
    This is the layout of every VP set the machine makes itself (``send(size=...)``,
    ``pack``, ``scatter``).
    """
    base, extra = divmod(int(n), int(nranks))
    sizes = np.full(nranks, base, dtype=np.int64)
    sizes[:extra] += 1
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


def mpi_library() -> str:
    """The MPI library's name and version (first line of ``MPI.Get_library_version()``)."""
    return MPI.Get_library_version().strip().splitlines()[0].split(",")[0]


def cuda_aware() -> bool:
    """Whether the MPI library takes GPU buffers directly (then GPU arrays go to MPI as
    they are; otherwise through pinned host buffers).

    ``SIMD_MPI_CUDA_AWARE=1`` or ``0`` decides (``0`` forces the staging, e.g. for an MPI
    that claims CUDA support but fails with it); otherwise Open MPI is asked once per
    process through ``ompi_info`` (``opal_built_with_cuda_support``) and any other library
    is taken as not CUDA-aware.
    """
    forced = os.environ.get("SIMD_MPI_CUDA_AWARE", "")
    if forced:
        return forced not in ("0", "false", "no")
    return _open_mpi_built_with_cuda()


@functools.cache
def _open_mpi_built_with_cuda() -> bool:
    if "Open MPI" not in mpi_library():
        return False
    try:
        out = subprocess.run(
            ["ompi_info", "--parsable", "--all"], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    # Open MPI 5 names it opal_built_with_cuda_support (mpi_built_with_... is a synonym).
    return "_built_with_cuda_support:value:true" in out


def _byte_buffer(buf: Any, counts: Any = None) -> list:
    """An mpi4py buffer spec of the uint8 buffer ``buf`` (None: an empty one)."""
    if buf is None:
        buf = np.empty(0, np.uint8)
    return [buf, MPI.BYTE] if counts is None else [buf, counts, MPI.BYTE]


class Ranks:
    """The communicator of a machine spread over MPI ranks.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        Any intra-communicator; every rank of it must make the machine.
    record : callable, optional
        Called as ``record(messages, nbytes, seconds)`` after every collective (the
        machine adds it to the open phases).
    xp : module, optional
        The array module of a GPU machine (CuPy, or the counting stand-in): its arrays
        cross MPI through :attr:`device` (directly where :func:`cuda_aware`, else through
        pinned host buffers). None: host arrays only.

    Notes
    -----
    Every method is collective: all ranks call it, in the same order.
    """

    def __init__(
        self,
        comm: Any,
        record: Callable[[int, int, float], None] | None = None,
        xp: Any = None,
    ):
        if not isinstance(comm, MPI.Comm) or comm == MPI.COMM_NULL:
            raise TypeError(f"comm must be an mpi4py communicator, got {comm!r}")
        if comm.Is_inter():
            raise TypeError("comm must be an intra-communicator, not an inter-communicator")
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self._record = record or (lambda messages, nbytes, seconds: None)
        local = comm.Split_type(MPI.COMM_TYPE_SHARED, key=self.rank)
        #: This rank's index among the ranks of its node (picks its GPU).
        self.node_rank = local.Get_rank()
        local.Free()
        #: How this rank's device arrays cross MPI (None on a host-only machine).
        self.device = None if xp is None else DeviceTransport(xp, cuda_aware())

    def _side(self, a: Any, device: bool = False) -> HostTransport:
        """The transport of ``a`` (the device's for a device array, or with ``device``)."""
        if self.device is not None and (device or self.device.owns(a)):
            return self.device
        return HOST

    def __repr__(self) -> str:
        return f"Ranks(rank={self.rank}, size={self.size})"

    @property
    def is_root(self) -> bool:
        """Whether this is rank 0, the rank that prints and writes outputs."""
        return self.rank == 0

    # ---------------------------------------------------------------- accounting

    @contextmanager
    def _timed(self, messages: int, nbytes: int) -> Iterator[None]:
        start = time.perf_counter()
        yield
        self._record(int(messages), int(nbytes), time.perf_counter() - start)

    # ---------------------------------------------------------------- layouts

    def bounds(self, n: int) -> np.ndarray:
        """Canonical block offsets of a global VP set of ``n`` (no communication)."""
        return canonical_bounds(n, self.size)

    def offsets(self, local_n: int) -> np.ndarray:
        """Block offsets (length ``size + 1``) of a VP set whose block here has ``local_n``
        elements: one all-gather of the block sizes."""
        sizes = self.allgather(int(local_n))
        return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    # ---------------------------------------------------------------- collectives

    def allgather(self, obj: Any) -> list:
        """Every rank's ``obj`` (small Python objects), in rank order."""
        with self._timed(self.size - 1, 64 * (self.size - 1)):
            return self.comm.allgather(obj)

    def allreduce(self, a: Any, op: str) -> Any:
        """Elementwise reduction of ``a`` over the ranks with ``op`` (an operator of
        :data:`MPI_OPS`), on the side ``a`` lies; bool arrays are reduced as bytes."""
        t = self._side(a)
        a = a if t is not HOST else np.asarray(a)
        if self.size == 1:
            return t.xp.array(a, copy=True)
        dtype = np.dtype(np.uint8) if a.dtype == np.bool_ else a.dtype
        send = t.outgoing([a]).view(dtype)
        recv = t.incoming(send.nbytes).view(dtype)
        with self._timed(2 * (self.size - 1), 2 * send.nbytes * (self.size - 1)):
            t.ready()
            self.comm.Allreduce(send, recv, op=MPI_OPS[op])
        return t.receive(recv.view(np.uint8), a.shape, a.dtype)

    def alltoallv(self, send: Any, send_counts: np.ndarray, *, with_counts: bool = False) -> Any:
        """Exchange rows of ``send`` (rows grouped by destination rank in rank order,
        ``send_counts[r]`` rows for rank ``r``); returns the received rows grouped by source
        rank in rank order, on the side ``send`` lies (and, ``with_counts``, how many came
        from each rank, a host array). The rows this rank keeps never leave it."""
        t = self._side(send)
        send_counts = np.asarray(send_counts, dtype=np.int64)
        recv_counts = np.empty(self.size, dtype=np.int64)
        row = int(np.prod(send.shape[1:], dtype=np.int64)) * send.dtype.itemsize
        with self._timed(2 * (self.size - 1), 8 * self.size):
            self.comm.Alltoall(send_counts, recv_counts)
        recv = t.empty((int(recv_counts.sum()), *send.shape[1:]), send.dtype)
        # The rows between ranks, with this rank's own rows left out of both buffers.
        others = np.arange(self.size) != self.rank
        scount, rcount = send_counts * row * others, recv_counts * row * others
        sdispl = np.concatenate([[0], np.cumsum(scount)[:-1]])
        rdispl = np.concatenate([[0], np.cumsum(rcount)[:-1]])
        s_lo, s_hi = (int(v) for v in np.cumsum([0, *send_counts])[self.rank : self.rank + 2])
        r_lo, r_hi = (int(v) for v in np.cumsum([0, *recv_counts])[self.rank : self.rank + 2])
        sbuf = t.outgoing([send[:s_lo], send[s_hi:]])
        rbuf = t.incoming(int(rcount.sum()))
        messages = int(np.count_nonzero(scount)) + int(np.count_nonzero(rcount))
        with self._timed(messages, int(scount.sum() + rcount.sum())):
            t.ready()
            self.comm.Alltoallv(
                _byte_buffer(sbuf, (scount, sdispl)), _byte_buffer(rbuf, (rcount, rdispl))
            )
        if r_hi > r_lo:
            recv[r_lo:r_hi] = send[s_lo:s_hi]
        t.deliver(rbuf, [recv[:r_lo], recv[r_hi:]])
        return (recv, recv_counts) if with_counts else recv

    def bcast(self, a: Any, root: int) -> Any:
        """``a`` of rank ``root`` on every rank, on the side ``a`` lies (an array of the
        same shape and dtype on every rank; only root's contents matter)."""
        t = self._side(a)
        a = a if t is not HOST else np.asarray(a)
        if self.size == 1:
            return t.xp.array(a, copy=True, order="C")
        nbytes = int(a.size) * a.dtype.itemsize
        buf = t.outgoing([a]) if self.rank == root else t.incoming(nbytes)
        with self._timed(self.size - 1 if self.rank == root else 1, nbytes):
            t.ready()
            self.comm.Bcast(_byte_buffer(buf), root=root)
        if self.rank == root:
            return t.xp.array(a, copy=True, order="C")
        return t.receive(buf, a.shape, a.dtype)

    def sendrecv(
        self,
        send: Any,
        dest: int | None,
        source: int | None,
        shape: tuple[int, ...],
        dtype: Any,
        *,
        device: bool = False,
    ) -> Any:
        """Send ``send`` to rank ``dest`` and receive an array of ``shape`` and ``dtype``
        from rank ``source`` (either may be None: nothing sent or received). The array
        received lies on the device when ``send`` does or ``device`` is given."""
        t = self._side(send, device)
        if dest == source == self.rank:  # to itself (a torus on one rank): nothing crosses
            return t.xp.array(send, copy=True, order="C").reshape(shape)
        dest_rank = MPI.PROC_NULL if dest is None else int(dest)
        source_rank = MPI.PROC_NULL if source is None else int(source)
        sbuf = None if send is None else t.outgoing([send])
        size = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        rbuf = None if source is None else t.incoming(size)
        nbytes = (0 if sbuf is None else sbuf.nbytes) + (0 if rbuf is None else size)
        messages = (send is not None) + (source is not None)
        with self._timed(messages, nbytes):
            t.ready()
            self.comm.Sendrecv(
                _byte_buffer(sbuf), dest_rank, recvbuf=_byte_buffer(rbuf), source=source_rank
            )
        return None if rbuf is None else t.receive(rbuf, tuple(shape), dtype)

    def exchange_faces(self, block: Any, width: int, *, rows: Any = None) -> tuple[Any, Any]:
        """The ``width`` ghost rows that border ``block`` below and above, from the
        neighbour blocks: ``(ghost_below, ghost_above)``, arrays on the side ``block`` lies
        (host or device), or None at the global border (there the caller's own boundary
        rule applies, as on one rank).

        The neighbours are the nearest ranks below and above that hold rows: empty blocks
        are skipped, so any layout works, more ranks than rows included. Only the faces
        cross. ``rows``, the rows per rank (``numpy.diff`` of :meth:`offsets`), saves an
        all-gather when given.
        Collective. Raises ValueError on every rank alike when a non-empty block is
        thinner than ``width`` (its ghost rows would need a block beyond the neighbour).

        Examples
        --------
        On ranks 0 and 1 holding rows ``[0, 1]`` and ``[2, 3, 4]`` of ``arange(5)``, rank 0
        gets ``(None, [2])`` and rank 1 ``([1], None)`` with ``width=1``.
        """
        width = int(width)
        if rows is None:
            rows = self.allgather(int(block.shape[0]))
        rows = [int(r) for r in rows]
        thin = [r for r, n in enumerate(rows) if 0 < n < width]
        if thin:
            raise ValueError(
                f"a halo of {width} rows needs blocks of at least {width} rows, but rank "
                f"{thin[0]} holds {rows[thin[0]]} (use fewer ranks)"
            )
        if rows[self.rank] == 0 or width == 0:
            return None, None
        holders = [r for r, n in enumerate(rows) if n > 0]
        at = holders.index(self.rank)
        below = holders[at - 1] if at > 0 else None
        above = holders[at + 1] if at + 1 < len(holders) else None
        face = (width, *block.shape[1:])
        on_device = self._side(block) is not HOST
        # Upward: my first rows go to the rank below; the rank above's first rows come in.
        first = None if below is None else block[:width]
        ghost_above = self.sendrecv(first, below, above, face, block.dtype, device=on_device)
        last = None if above is None else block[-width:]
        ghost_below = self.sendrecv(last, above, below, face, block.dtype, device=on_device)
        return ghost_below, ghost_above

    # ---------------------------------------------------------------- global arrays

    def scatter(self, a: Any, *, root: int = 0, device: bool = False) -> Any:
        """This rank's block (canonical layout along axis 0) of ``a``, given on ``root``.

        Only ``root`` needs ``a`` (others pass None); it must have at least one dimension.
        ``a`` may be a host array or, on a GPU machine, a device array: then its blocks
        leave the device as the other collectives' do (directly where the MPI library is
        CUDA-aware, else through the pinned send buffer), and root's own block never
        leaves it. The block comes back on the device with ``device`` (on a GPU machine;
        received directly or through the pinned receive buffer), else on the host.
        """
        header = None
        if self.rank == root:
            if a is not None and self._side(a) is HOST:
                a = np.asarray(a)
            if a is None or a.ndim == 0:
                header = ("error", "scatter needs an array with at least one dimension")
            else:
                header = (tuple(a.shape), a.dtype.str)
        with self._timed(self.size - 1, 64 * (self.size - 1)):
            header = self.comm.bcast(header, root=root)
        if header[0] == "error":
            raise ValueError(header[1])
        shape, dtype = tuple(header[0]), np.dtype(header[1])
        bounds = self.bounds(shape[0])
        row = int(np.prod(shape[1:], dtype=np.int64)) * dtype.itemsize
        lo, hi = (int(v) for v in bounds[self.rank : self.rank + 2])
        # Root's own block stays where it lies: MPI moves the others' only.
        others = np.arange(self.size) != root
        counts = np.diff(bounds) * row * others
        mine = (hi - lo, *shape[1:])
        here = self._side(None, device)  # where this rank's block is to lie
        if self.rank == root:
            source = self._side(a)
            own = a[lo:hi]
            if here is HOST and source is not HOST:
                out = source.xp.asnumpy(own)
            else:  # a copy on this rank's side (host to device where they differ)
                out = here.xp.array(own, copy=True, order="C")
            # The rows before root's block and after it (one piece, a view, when root is
            # the first or last rank holding rows).
            sbuf = source.outgoing([p for p in (a[:lo], a[hi:]) if p.size] or [a[:0]])
            displs = np.concatenate([[0], np.cumsum(counts)[:-1]])
            with self._timed(int(np.count_nonzero(counts)), int(counts.sum())):
                source.ready()
                self.comm.Scatterv(_byte_buffer(sbuf, (counts, displs)), _byte_buffer(None), root)
            return out
        rbuf = here.incoming(int(counts[self.rank]))
        with self._timed(int(counts[self.rank] > 0), int(counts[self.rank])):
            here.ready()
            self.comm.Scatterv(None, _byte_buffer(rbuf), root)
        return here.receive(rbuf, mine, dtype)

    def gather(self, block: np.ndarray, *, root: int | None = 0) -> np.ndarray | None:
        """The global array whose blocks (along axis 0, in rank order) the ranks hold.

        Returned on ``root`` (None elsewhere), or on every rank with ``root=None``. The
        blocks must agree in dtype and in every axis but the first.
        """
        block = np.ascontiguousarray(block)
        tails = self.allgather(
            (block.shape[1:], block.dtype.str, block.shape[0] if block.ndim else -1)
        )
        if any(t[2] < 0 for t in tails):
            raise ValueError("gather needs arrays with at least one dimension on every rank")
        if len({(t[0], t[1]) for t in tails}) != 1:
            raise ValueError(
                "gather: the ranks' blocks differ in dtype or trailing shape: "
                + "; ".join(f"rank {r}: {t[1]} {t[0]}" for r, t in enumerate(tails))
            )
        rows = np.array([t[2] for t in tails], dtype=np.int64)
        row = int(np.prod(block.shape[1:], dtype=np.int64)) * block.dtype.itemsize
        counts = rows * row
        displs = np.concatenate([[0], np.cumsum(counts)[:-1]])
        shape = (int(rows.sum()), *block.shape[1:])
        mine = block.view(np.uint8).reshape(-1)
        if root is None:
            out = np.empty(shape, block.dtype)
            with self._timed(2 * (self.size - 1), int(counts.sum())):
                self.comm.Allgatherv(
                    mine, [out.view(np.uint8).reshape(-1), (counts, displs), MPI.BYTE]
                )
            return out
        out = np.empty(shape, block.dtype) if self.rank == root else None
        recv = None if out is None else [out.view(np.uint8).reshape(-1), (counts, displs), MPI.BYTE]
        with self._timed(self.size - 1 if self.rank == root else 1, block.nbytes):
            self.comm.Gatherv(mine, recv, root=root)
        return out

    # ---------------------------------------------------------------- errors

    def agree(self, error: BaseException | None) -> None:
        """Raise on every rank if ``error`` is not None on any rank (collective).

        The rank that failed raises its own exception; the others raise the same type with
        the same message (prefixed by the failing rank) where the type can be made from a
        message, else :class:`CollectiveError`.
        """
        failures = self.allgather(None if error is None else (type(error), str(error)))
        if error is not None:
            raise error
        for rank, failure in enumerate(failures):
            if failure is not None:
                kind, message = failure
                try:
                    exc = kind(f"(rank {rank}) {message}")
                except Exception:  # an exception type that needs other arguments
                    exc = CollectiveError(f"rank {rank}: {kind.__name__}: {message}")
                raise exc

    @contextmanager
    def collective_errors(self) -> Iterator[None]:
        """Run the block (local work only, no collectives inside) on every rank; if it
        raised on any rank, raise on all (see :meth:`agree`)."""
        error = None
        try:
            yield
        except Exception as exc:  # re-raised on this rank by agree()
            error = exc
        self.agree(error)
