"""The simulated message-passing (MIMD) machine: topology and cost constants.

The machine of Muniz & Zaluska is a 4x4 torus of T800 transputers whose links run
at 20 Mbit/s and whose messages are routed store-and-forward by the Virtual Channel Router;
the machine of Barker & Chrisochoides is a cluster of Sun workstations on fast
ethernet with MPI, where a message costs a start-up plus a per-byte time. Both are described
here by one linear cost model: a message of ``b`` bytes over ``h`` hops costs

* ``startup + b * per_byte + h * per_hop``             (cut-through / switched network), or
* ``startup + h * (per_hop + b * per_byte)``           (store-and-forward, ``store_and_forward``).

The sender's CPU pays the start-up; the rest is wire latency. :meth:`Network.message_time` is
the whole (start-up included, uncontended); :meth:`Network.wire_time` the part after the
start-up, which is what the links carry.

Links shared (``contention=True``, the default): a message's bytes cross its route as
one flow (cut-through: all its links at once, after its latency) or hop after hop
(store-and-forward: a flow per hop, each after the hop's latency), and the flows crossing a
directed link share its bandwidth ``1 / per_byte`` max-min fairly, as SimGrid's network
models do (:mod:`mimd.network_kernels`; :meth:`Network.arrivals` gives the arrival times of
messages of your own). Messages follow dimension-order routes (rows first, then columns,
the shorter way round; a tie of half the ring goes the positive way; :meth:`Network.link`).
A message alone takes exactly the formulas above; ``contention=False`` gives every message
that time whatever else is on the wire.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from simd.mesh import squarest_shape

__all__ = ["Network", "torus_shape"]


def torus_shape(p: int) -> tuple[int, int]:
    """Most nearly square ``(rows, cols)`` factorisation of ``p`` processors.

    Parameters
    ----------
    p : int
        Number of processors, at least 1.

    Returns
    -------
    tuple of int
        ``(rows, cols)`` with ``rows * cols == p`` and ``rows <= cols``.

    Examples
    --------
    >>> torus_shape(16), torus_shape(32), torus_shape(7)
    ((4, 4), (4, 8), (1, 7))
    """
    return squarest_shape(p)


@dataclass(frozen=True)
class Network:
    """Topology and costs of the simulated MIMD machine (times in seconds).

    Parameters
    ----------
    shape : tuple of int
        ``(rows, cols)`` of the 2-D torus; processor ``p`` sits at ``divmod(p, cols)``.
    startup : float
        Software start-up of one message, paid by the sender's CPU.
    per_byte : float
        Link time per byte.
    per_hop : float
        Routing latency per hop.
    store_and_forward : bool
        Each hop retransmits the whole message (transputer links with the VCR).
    task_bytes, request_bytes : int
        Size of a migrated task (its data) and of a control message.
    pack, unpack : float
        CPU time to uninstall and pack a task on the sender, unpack and install it on the
        receiver (Barker & Chrisochoides, section 4.5; measured quantities there, constants
        here).
    contention : bool
        Links are shared: the messages crossing a link share its bandwidth max-min fairly,
        as SimGrid's do (default; :mod:`mimd.network_kernels`). ``False``: every message
        takes :meth:`message_time` whatever else is on the wire.
    """

    shape: tuple[int, int] = (4, 4)
    startup: float = 1e-4
    per_byte: float = 5e-7
    per_hop: float = 1e-5
    store_and_forward: bool = False
    task_bytes: int = 1024
    request_bytes: int = 16
    pack: float = 1e-4
    unpack: float = 1e-4
    contention: bool = True
    _offsets: tuple = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        shape = tuple(int(s) for s in self.shape)
        if len(shape) != 2 or min(shape) < 1:
            raise ValueError(f"shape must be (rows, cols) of positive integers, got {self.shape!r}")
        object.__setattr__(self, "shape", shape)
        for name in ("startup", "per_byte", "per_hop", "pack", "unpack"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and v >= 0 and math.isfinite(v)):
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
        if self.task_bytes < 0 or self.request_bytes < 0:
            raise ValueError("message sizes must be >= 0 bytes")

    # presets -------------------------------------------------------------------------------
    @classmethod
    def transputer(cls, shape: tuple[int, int] = (4, 4), **kw) -> Network:
        """Muniz & Zaluska's Parsys Supernode: T800 links at 20 Mbit/s, VCR store-and-forward.

        A link moves about 1.7 MB/s (0.6 us per byte); a VCR message start-up is of the
        order of 100 us; a process (ray-tracing task with its sub-surface) is a few KB.
        """
        base = dict(
            shape=shape,
            startup=1e-4,
            per_byte=6e-7,
            per_hop=2e-5,
            store_and_forward=True,
            task_bytes=4096,
            request_bytes=16,
            pack=2e-3,
            unpack=2e-3,
        )
        base.update(kw)
        return cls(**base)

    @classmethod
    def cluster(cls, p: int = 64, **kw) -> Network:
        """After Barker & Chrisochoides' cluster: 64 single-CPU 333 MHz Sun Ultra 5
        workstations on 100 Mbit fast ethernet, MPI by LAM.

        The paper prints no message or migration costs (its model takes them as inputs, the
        packing and unpacking costs measured); these are ours: 100 us to start a message,
        12.5 MB/s (100 Mbit/s, 0.08 us per byte), a switched network, so hop count adds
        nothing, and 1 ms to pack or unpack a mobile object.
        """
        base = dict(
            shape=torus_shape(p),
            startup=1e-4,
            per_byte=8e-8,
            per_hop=0.0,
            store_and_forward=False,
            task_bytes=8192,
            request_bytes=64,
            pack=1e-3,
            unpack=1e-3,
        )
        base.update(kw)
        return cls(**base)

    def with_(self, **kw) -> Network:
        """Copy with some fields changed."""
        return replace(self, **kw)

    # geometry ------------------------------------------------------------------------------
    @property
    def p(self) -> int:
        """Number of processors."""
        return self.shape[0] * self.shape[1]

    @property
    def diameter(self) -> int:
        """Largest hop distance on the torus."""
        return self.shape[0] // 2 + self.shape[1] // 2

    def hops(self, a, b, xp=np):
        """Torus (Manhattan, wrap-around) hop distance between processor ids ``a`` and ``b``."""
        rows, cols = self.shape
        ra, ca = a // cols, a % cols
        rb, cb = b // cols, b % cols
        dr = xp.abs(ra - rb)
        dc = xp.abs(ca - cb)
        return xp.minimum(dr, rows - dr) + xp.minimum(dc, cols - dc)

    def message_time(self, nbytes, hops, xp=np):
        """Latency of a message of ``nbytes`` over ``hops`` hops (0 hops: local, free)."""
        hops = xp.asarray(hops)
        if self.store_and_forward:
            t = self.startup + hops * (self.per_hop + nbytes * self.per_byte)
        else:
            t = self.startup + nbytes * self.per_byte + hops * self.per_hop
        return xp.where(hops > 0, t, 0.0)

    def wire_time(self, nbytes, hops, xp=np):
        """What the links take of a message, uncontended: ``message_time`` less the start-up."""
        hops = xp.asarray(hops)
        if self.store_and_forward:
            t = hops * (self.per_hop + nbytes * self.per_byte)
        else:
            t = nbytes * self.per_byte + hops * self.per_hop
        return xp.where(hops > 0, t, 0.0)

    @property
    def links(self) -> int:
        """Number of directed links: four out of every processor (S, N, E, W)."""
        return 4 * self.p

    def route(self, src, dst, xp=np):
        """Signed row and column displacement ``(dr, dc)`` of the route ``src -> dst``.

        The shorter way round each ring; half a ring (even size) goes the positive way.
        ``abs(dr) + abs(dc)`` is :meth:`hops`.
        """
        rows, cols = self.shape
        dr = (dst // cols - src // cols) % rows
        dc = (dst % cols - src % cols) % cols
        dr = xp.where(dr > rows // 2, dr - rows, dr)
        dc = xp.where(dc > cols // 2, dc - cols, dc)
        return dr, dc

    def link(self, src, dst, k, xp=np):
        """Directed link of hop ``k`` (0-based) on the dimension-order route ``src -> dst``.

        Link ``4 * q + d`` leaves processor ``q`` in direction ``d``: 0 down a column (row
        + 1), 1 up (row - 1), 2 along a row (column + 1), 3 back (column - 1). Rows are
        crossed first, then columns. Only meaningful for ``k < hops(src, dst)``.

        Examples
        --------
        >>> net = Network(shape=(4, 4))
        >>> [int(net.link(0, 5, k)) for k in range(2)]  # 0 -> 4 (down), then 4 -> 5 (right)
        [0, 18]
        """
        rows, cols = self.shape
        dr, dc = self.route(src, dst, xp)
        ar = xp.abs(dr)
        k = xp.asarray(k)
        r0, c0 = src // cols, src % cols
        vertical = k < ar
        row = xp.where(vertical, (r0 + xp.sign(dr) * k) % rows, (r0 + dr) % rows)
        col = xp.where(vertical, c0, (c0 + xp.sign(dc) * (k - ar)) % cols)
        d = xp.where(vertical, xp.where(dr > 0, 0, 1), xp.where(dc > 0, 2, 3))
        return (row * cols + col) * 4 + d

    def offsets(self) -> np.ndarray:
        """All non-zero torus offsets ``(dr, dc)`` sorted by hop distance (then dr, dc).

        The ``j``-th neighbour of processor ``p`` is ``p`` moved by ``offsets()[j]``; the
        neighbourhood of size ``k`` is the first ``k``, the evolving neighbourhood of round
        ``r`` the entries ``r*k .. r*k+k-1`` (wrapping), as in Barker & Chrisochoides, section
        4.4.
        """
        rows, cols = self.shape
        dr, dc = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
        dr = np.where(dr > rows // 2, dr - rows, dr).ravel()
        dc = np.where(dc > cols // 2, dc - cols, dc).ravel()
        d = np.abs(dr) + np.abs(dc)
        order = np.lexsort((dc, dr, d))
        order = order[d[order] > 0]
        return np.stack([dr[order], dc[order]], axis=1)

    def arrivals(self, src, dst, nbytes, leave) -> np.ndarray:
        """When messages arrive, alone on this network: message ``i`` from processor
        ``src[i]`` to ``dst[i]`` of ``nbytes[i]`` bytes enters the network at ``leave[i]``
        (its start-up paid) and shares the links of its route with the others
        (:mod:`mimd.network_kernels`). Arrays of one shape, or scalars.

        Examples
        --------
        >>> net = Network(shape=(1, 4), per_byte=1e-6, per_hop=0.0)
        >>> net.arrivals([0, 0], [1, 1], 1000, 0.0).tolist()  # one link, shared
        [0.002, 0.002]
        """
        from .engine_kernels import new_state, parameters
        from .policies import NoBalancing
        from .run_kernels import compiled

        src, dst, nbytes, leave = np.broadcast_arrays(
            np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64),
            np.asarray(nbytes, dtype=np.float64), np.asarray(leave, dtype=np.float64),
        )  # fmt: skip
        if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= self.p):
            raise ValueError(f"processors lie in 0..{self.p - 1}")
        prm = parameters(NoBalancing(), self, 0.0)
        rows = 2 * src.size + 64
        s = new_state(np.zeros(0), np.zeros(0, dtype=np.int64), False, prm, self.offsets(),
                      np.zeros(self.p), 0, (rows, 4 * rows))  # fmt: skip
        out = np.full(src.size, np.nan)
        compiled("arrivals")(s, src.ravel(), dst.ravel(), nbytes.ravel(), leave.ravel(), out)
        return out.reshape(src.shape)

    def neighbour(self, p, offset, xp=np):
        """Processor reached from ``p`` by the torus offset ``(dr, dc)`` (arrays allowed)."""
        rows, cols = self.shape
        r = (p // cols + offset[..., 0]) % rows
        c = (p % cols + offset[..., 1]) % cols
        return r * cols + c
