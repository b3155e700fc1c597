"""How arrays reach MPI: host arrays as they are; device arrays directly or through pinned
host buffers.

Every collective of :class:`simd.ranks.Ranks` moves its bytes through one of the two
transports here, chosen by where the array lies:

- :data:`HOST`: NumPy arrays go to MPI as they are (their bytes viewed as ``MPI.BYTE``).
- :class:`DeviceTransport`: CuPy arrays (or the counting stand-in's). Where the MPI library
  is CUDA-aware (``direct``), MPI gets the device buffers themselves (mpi4py reads their
  ``__cuda_array_interface__``); else the bytes are staged through two page-locked host
  buffers, one to send from and one to receive into, kept for the life of the
  :class:`~simd.ranks.Ranks` and grown (doubling) when a message needs more: copies into
  and out of them are issued on the current stream, and the stream is synchronised once
  before the MPI call while any is outstanding. MPI knows nothing of CuPy's stream, so the
  direct path synchronises before every MPI call.

A collective calls ``outgoing`` for its send buffer, ``incoming`` for its receive buffer,
``ready`` just before the MPI call, and ``receive`` or ``deliver`` to turn the received
bytes into arrays on the transport's side.

Examples
--------
>>> import numpy as np
>>> buf = HOST.outgoing([np.arange(2, dtype=np.int16)])
>>> buf.tolist()
[0, 0, 1, 0]
>>> out = np.zeros(2, np.int16)
>>> HOST.deliver(buf, [out])
>>> out.tolist()
[0, 1]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["DIRECT", "HOST", "STAGED", "DeviceTransport", "HostTransport"]

#: The two paths of device arrays, as ``simd-emu info`` names them.
DIRECT = "direct"
STAGED = "pinned host staging"


def _nbytes(a: Any) -> int:
    return int(a.size) * a.dtype.itemsize


class HostTransport:
    """NumPy arrays, handed to MPI as they are."""

    xp = np
    #: What ``simd-emu info`` shows for this path.
    path = "host"

    def outgoing(self, pieces: Sequence[Any]) -> np.ndarray:
        """The bytes of ``pieces``, one after another (a view when there is one piece)."""
        parts = [np.ascontiguousarray(p).reshape(-1).view(np.uint8) for p in pieces]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def incoming(self, nbytes: int) -> np.ndarray:
        """A buffer for ``nbytes`` received bytes."""
        return np.empty(int(nbytes), np.uint8)

    def ready(self) -> None:
        """Nothing to wait for on the host."""

    def deliver(self, buf: Any, targets: Sequence[Any]) -> None:
        """Copy the bytes of ``buf``, one after another, into the arrays ``targets``."""
        offset = 0
        for t in targets:
            n = _nbytes(t)
            if n:
                t[...] = buf[offset : offset + n].view(t.dtype).reshape(t.shape)
            offset += n

    def receive(self, buf: Any, shape: tuple[int, ...], dtype: Any) -> Any:
        """The bytes of ``buf`` as an array of ``shape`` and ``dtype`` (a view of it here)."""
        return buf.view(dtype).reshape(shape)

    def empty(self, shape: tuple[int, ...], dtype: Any) -> Any:
        """An uninitialised array on this transport's side."""
        return self.xp.empty(shape, dtype)


HOST = HostTransport()


class DeviceTransport(HostTransport):
    """Device arrays of the array module ``xp`` (CuPy, or ``kernels.counting.cupy``).

    Parameters
    ----------
    xp : module
        The backend's array module; it provides ``ndarray``, ``cuda.alloc_pinned_memory``
        and ``cuda.get_current_stream``.
    direct : bool
        Whether the MPI library takes device buffers (CUDA-aware): then no host copy.

    Examples
    --------
    >>> from kernels.counting import cupy as xp, measure
    >>> t = DeviceTransport(xp, direct=False)
    >>> with measure() as c:
    ...     buf = t.outgoing([xp.arange(4, dtype=xp.int32)[1:]])   # 12 bytes to pinned
    ...     t.ready()                                             # one stream sync
    >>> c.total.d2h_bytes, c.total.syncs, t.allocations
    (12, 1, 1)
    """

    def __init__(self, xp: Any, direct: bool) -> None:
        self.xp = xp
        self.direct = bool(direct)
        self.path = DIRECT if self.direct else STAGED
        self._pinned: dict[str, np.ndarray] = {}
        self._copying = False  # copies to or from the pinned buffers not yet waited for
        #: How many pinned buffers were allocated so far (grown, never per call).
        self.allocations = 0

    def owns(self, a: Any) -> bool:
        """Whether ``a`` is a device array of this transport."""
        return isinstance(a, self.xp.ndarray)

    def pinned(self, which: str, nbytes: int) -> np.ndarray:
        """The first ``nbytes`` of the kept pinned buffer ``which`` ("send" or "recv"),
        grown to the next power of two (at least 4 KiB) when too small."""
        buf = self._pinned.get(which)
        if buf is None or buf.size < nbytes:
            size = max(4096, 1 << max(int(nbytes) - 1, 0).bit_length())
            memory = self.xp.cuda.alloc_pinned_memory(size)  # as cupyx.empty_pinned does
            buf = self._pinned[which] = np.ndarray((size,), np.uint8, buffer=memory)
            self.allocations += 1
        return buf[: int(nbytes)]

    def outgoing(self, pieces: Sequence[Any]) -> Any:
        xp = self.xp
        pieces = [xp.ascontiguousarray(p) for p in pieces]
        if self.direct:
            parts = [p.reshape(-1).view(np.uint8) for p in pieces]
            return parts[0] if len(parts) == 1 else xp.concatenate(parts)
        host = self.pinned("send", sum(_nbytes(p) for p in pieces))
        offset = 0
        for p in pieces:
            n = _nbytes(p)
            if n:  # an asynchronous copy on the current stream; ready() waits for it
                view = host[offset : offset + n].view(p.dtype).reshape(p.shape)
                p.get(out=view, blocking=False)
                self._copying = True
            offset += n
        return host

    def incoming(self, nbytes: int) -> Any:
        if self.direct:
            return self.xp.empty(int(nbytes), np.uint8)
        return self.pinned("recv", nbytes)

    def ready(self) -> None:
        # Direct: MPI reads and writes device memory behind the stream's back, so every
        # queued kernel must be done. Staged: one wait for the copies that fill the send
        # buffer (queued behind the kernels that made the data) and for those still
        # reading the receive buffer; none when no copy is outstanding.
        if self.direct or self._copying:
            self.xp.cuda.get_current_stream().synchronize()
            self._copying = False

    def receive(self, buf: Any, shape: tuple[int, ...], dtype: Any) -> Any:
        if self.direct:
            return super().receive(buf, shape, dtype)
        out = self.xp.empty(shape, dtype)
        self.deliver(buf, [out])
        return out

    def deliver(self, buf: Any, targets: Sequence[Any]) -> None:
        if self.direct:
            super().deliver(buf, targets)  # device-to-device copies
            return
        offset = 0
        for t in targets:
            n = _nbytes(t)
            if n:  # asynchronous on the current stream: the next ready() waits for it
                t.set(buf[offset : offset + n].view(t.dtype).reshape(t.shape))
                self._copying = True
            offset += n
