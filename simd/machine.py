"""The emulated SIMD machine: VP sets, the instruction set, the two clocks.

Parallel variables are plain arrays of the backend (``numpy.ndarray`` or
``cupy.ndarray``) shaped like their VP set; elementwise work is ordinary array code. The
communication and global instructions are the machine's methods; each call is counted,
charged to the model clock (``simd.cost``) and accounted to the current phase.

This module is longer than most because it is the instruction set: one class whose methods
each check one instruction's operands, charge it and dispatch it to the kernel registry.
Keeping them together keeps the rules of every instruction in one place to read.
"""

from __future__ import annotations

import math
import os
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import numpy as np

from kernels import reference
from kernels.registry import lookup, warm_up
from simd import distributed
from simd.backend import resolve_backend
from simd.cost import CostModel
from simd.errors import CollisionError
from simd.operands import (
    bool_boundary,
    check_addresses,
    check_axis,
    check_boundary,
    check_mesh_rank,
    check_op,
    check_pes_shape,
    check_shape,
    check_value_dtype,
    extent_vector,
    is_scalar,
    normalise_offsets,
    resolve_cost,
    scalar,
    shift_offsets,
)
from simd.stats import DeviceInterval, HostInterval, PhaseRecord, PhaseStats, Stats

__all__ = ["COMBINERS", "Machine", "XNET", "min_into"]

#: Combiners of ``send``.
COMBINERS = ("overwrite", "add", "max", "min", "and", "or", "unique")

#: Offsets of ``shift`` that bring each PE the value of its X-Net neighbour in that
#: compass direction on a 2-D mesh (row 0 is north): ``m.shift(x, XNET["n"])`` gives every
#: PE the value of the PE north of it.
XNET = {
    "n": (1, 0),
    "ne": (1, -1),
    "e": (0, -1),
    "se": (-1, -1),
    "s": (-1, 0),
    "sw": (-1, 1),
    "w": (0, 1),
    "nw": (1, 1),
}

_OUTSIDE = "(no phase)"
#: At most this many spare CUDA events kept per machine (Machine.stats releases them).
_EVENT_POOL = 256

_INT64 = np.dtype(np.int64)

#: What ``Machine._agreed`` gives on one process: nothing to agree on (reusable).
_NO_RANKS = nullcontext()

#: Deferred address checks kept before they are read back anyway (one sync per this many
#: sends and gets when nothing else checks).
MAX_PENDING_CHECKS = 1024


class Machine:
    """An emulated data-parallel SIMD machine.

    Parameters
    ----------
    pes : int or tuple of int
        The physical PE array being emulated: an int for a linear array (a CM-5 of that
        many nodes by default) or a shape for a mesh (a MasPar MP-1 by default, e.g.
        ``(64, 64)``). Its size gives the VP ratio of the cost model; its shape is the
        mesh that shifts move along.
    backend : {"auto", "numpy", "cupy", "counting"}
        Array backend. ``"auto"`` picks CuPy when a GPU answers, else NumPy, and the
        environment variable ``SIMD_BACKEND`` overrides it. ``Machine.backend`` says which.
        ``"counting"`` runs the CuPy code path (``backend == "cupy"``) on a NumPy stand-in
        for CuPy that counts kernel launches, host syncs and transfers
        (``kernels.counting``); its phases are counting scopes.
    cost : CostModel, {"cm5", "cm5_calibrated", "mp1"} or None
        The model clock's constants; None picks from ``pes`` as described above.
    checks : {"deferred", "eager"} or None
        When the address checks of ``send`` and ``get`` raise. ``"eager"`` reads the
        addresses' range back at every instruction (two host syncs per call on a GPU) and
        raises there. ``"deferred"`` (the default; the environment variable ``SIMD_CHECKS``
        overrides None) folds the range into device scalars and raises at the next check
        (:meth:`check`, :meth:`fetch`, :meth:`asnumpy`, :meth:`sync`, :attr:`stats`),
        with the same message; on the NumPy backend it is eager, a check costing nothing
        there. Out-of-range messages never write out of bounds meanwhile: the GPU router
        skips them, and a get wraps.
    comm : mpi4py.MPI.Comm, optional
        Spread the machine over the ranks of this communicator (``simd.ranks``): every
        parallel variable is, on each rank, that rank's block along its first axis, and
        every instruction gives the one-rank machine's result on the gathered data. Each
        rank uses its node's GPUs in turn. None (the default) is a one-process machine.

    Examples
    --------
    >>> m = Machine(pes=512, backend="numpy")
    >>> x = m.asarray([3, 1, 4, 1, 5])
    >>> with m.phase("demo"):
    ...     m.scan(x, "add", exclusive=True, initial=0)
    array([0, 3, 4, 8, 9])
    >>> m.stats["demo"].calls["scan"]
    1
    """

    def __init__(
        self,
        pes: int | tuple[int, ...] = 512,
        backend: str = "auto",
        cost: CostModel | str | None = None,
        checks: str | None = None,
        comm: Any = None,
    ) -> None:
        self.pes = check_pes_shape(pes)
        #: The link to the other ranks (:class:`simd.ranks.Ranks`) of a machine spread over
        #: MPI ranks, else None. Only then is ``mpi4py`` imported.
        self.ranks = None
        self.npes = math.prod(self.pes)
        self.backend, self.xp = resolve_backend(backend)
        if comm is not None:
            try:
                from simd.ranks import Ranks
            except ImportError as err:
                raise ImportError(
                    f"Machine(comm=...) needs mpi4py ({err}): pip install 'simd-emu[mpi]'"
                ) from None
            device_xp = self.xp if self.backend == "cupy" else None
            self.ranks = Ranks(comm, record=self._communicated, xp=device_xp)
        self._array = self.xp.ndarray  # the backend's array type
        if self.ranks is not None and self.backend == "cupy" and not hasattr(self.xp, "push_scope"):
            # One GPU per rank: the node's ranks take its GPUs in turn.
            cuda = self.xp.cuda
            cuda.Device(self.ranks.node_rank % cuda.runtime.getDeviceCount()).use()
        if self.backend == "numpy":
            # Numba's import and the JIT compilation of the CPU kernels, once per process
            # here rather than inside the first phase's wall time.
            warm_up("numpy")
        # The counting stand-in for CuPy attributes its counts to the open phases.
        self._scopes = self.xp if hasattr(self.xp, "push_scope") else None
        # Its list of open scopes, appended to and popped by the phases (no calls).
        self._scope_names = self._scopes.scope_names if self._scopes is not None else None
        self.cost = resolve_cost(cost, self.pes, self.npes)
        self._phases: dict[str, PhaseStats] = {}
        # Paths of the open phases, outermost first ("outer", "outer/inner", ...).
        self._phase_stack: list[str] = []
        self._path = _OUTSIDE  # self._phase_stack[-1], or _OUTSIDE outside any phase
        # Model cycles memoised per (kind, n, ops, distance) for the cost model in
        # self._cycles_of (the memo is dropped when ``cost`` is replaced).
        self._cycles: dict[tuple, float] = {}
        self._cycles_of: CostModel | None = None
        self._per_active = False  # cost.per_active of self._cycles_of
        self._open: list[PhaseRecord] = []  # records of the open phases, outermost first
        self._unread: list[tuple[PhaseStats, PhaseRecord]] = []  # GPU times not yet read
        # Spare CUDA events of phases whose times were read: a frame's phases reuse them
        # rather than create (and destroy) two events each.
        self._events: list[Any] = []
        # How many of them a read back has since waited for (their events have passed).
        self._settled = 0
        # Declared VP sets, innermost last: (size, positions of the live elements or None).
        self._vp_stack: list[tuple[int, Any]] = []
        self._clock = 0.0
        if checks is None:
            checks = os.environ.get("SIMD_CHECKS", "") or "deferred"
        if checks not in ("deferred", "eager"):
            raise ValueError(f"checks must be 'deferred' or 'eager', got {checks!r}")
        self.checks = checks
        # Address checks not yet read back: (what, size, lowest, highest) with device
        # scalars; read by check() in one transfer.
        self._pending: list[tuple[str, int, Any, Any]] = []
        self._eager = checks == "eager" or self.backend != "cupy"
        self._bounds: Any = None  # (MAX_PENDING_CHECKS, 2) int64 on the device, made once
        self._bound_views: list = []  # per row of it, its two 0-d views once made

    def __repr__(self) -> str:
        shape = "x".join(map(str, self.pes))
        return f"Machine(pes={shape}, backend={self.backend_spec!r}, cost={self.cost.name!r})"

    # ------------------------------------------------------------------ ranks

    @property
    def rank(self) -> int:
        """This process's rank (0 on a one-process machine)."""
        return 0 if self.ranks is None else self.ranks.rank

    @property
    def nranks(self) -> int:
        """How many ranks the machine spans (1 on a one-process machine)."""
        return 1 if self.ranks is None else self.ranks.size

    @property
    def is_root(self) -> bool:
        """Whether this rank prints and writes the outputs (rank 0)."""
        return self.rank == 0

    def scatter(self, a: Any, *, root: int = 0):
        """This rank's block of the global array ``a`` given on rank ``root``.

        Blocks are contiguous along the first axis, in rank order, the first
        ``len(a) % nranks`` ranks holding one row more. Only ``root`` needs ``a``; on a
        one-process machine this is :meth:`asarray`. Collective. On a GPU, ``a`` may lie
        on the host (each block goes from there to its rank's device) or on root's device
        (the other ranks' blocks go to MPI as ``send`` and ``get`` send theirs: directly
        where the MPI library is CUDA-aware, else through pinned host buffers; root's own
        block stays on the device).

        Examples
        --------
        >>> m = Machine(backend="numpy")
        >>> m.scatter([1, 2, 3])
        array([1, 2, 3])
        """
        if self.ranks is None:
            return self.asarray(a)
        on_device = self.backend == "cupy"
        if a is not None and not (on_device and type(a) is self._array):
            a = np.asarray(a)  # host data: each rank's block alone goes to its device
        return self.ranks.scatter(a, root=root, device=on_device)

    def gather(self, x: Any, *, root: int | None = 0) -> np.ndarray | None:
        """The global array (on the host) whose blocks the ranks hold in ``x``.

        Returned on ``root`` and None on the other ranks, or on every rank with
        ``root=None``; on a one-process machine this is :meth:`asnumpy`. Collective.

        Examples
        --------
        >>> m = Machine(backend="numpy")
        >>> m.gather(m.asarray([1, 2, 3]))
        array([1, 2, 3])
        """
        if self.ranks is None:
            return self.asnumpy(x)
        return self.ranks.gather(self.asnumpy(x), root=root)

    def _communicated(self, messages: int, nbytes: int, seconds: float) -> None:
        """Account one collective of the MPI layer to the current phase."""
        entry = self._phases.get(self._path)
        if entry is None:
            entry = self._phases[self._path] = PhaseStats()
        for target in (entry, *self._open):
            target.messages += messages
            target.message_bytes += nbytes
            target.comm_wall += seconds

    def _agreed(self) -> AbstractContextManager[None]:
        """Around an instruction's local validation: on ranks, an error on any rank raises
        on every rank (before any collective, so none waits); else nothing."""
        return _NO_RANKS if self.ranks is None else self.ranks.collective_errors()

    def stats_across_ranks(self) -> Stats:
        """The phase statistics of every rank together (collective).

        Per phase (the union of every rank's phase paths): wall and MPI wall time of the
        slowest rank, MPI messages and bytes summed over the ranks, model cycles, calls
        and bytes as on any rank (the same on all). On a one-process machine this is
        :attr:`stats`.

        Examples
        --------
        >>> m = Machine(backend="numpy")
        >>> m.stats_across_ranks().phases == m.stats.phases
        True
        """
        if self.ranks is None:
            return self.stats
        return distributed.stats_across_ranks(self, self.stats)

    # ------------------------------------------------------------------ arrays and clocks

    def asarray(self, a: Any, dtype: Any = None):
        """``a`` as an array of this machine's backend (copied to the device if needed).

        Examples
        --------
        >>> Machine(backend="numpy").asarray([1, 2]).tolist()
        [1, 2]
        """
        given = type(a).__name__
        if not hasattr(a, "dtype"):  # lists and scalars: read as NumPy reads them, ...
            a = np.asarray(a, dtype=dtype)
        if a.dtype == object:  # ... which makes object arrays of anything; no device can
            raise TypeError(f"asarray needs numbers or bools, got {given} holding Python objects")
        return self.xp.asarray(a, dtype=dtype)

    def asnumpy(self, a: Any) -> np.ndarray:
        """``a`` as a NumPy array (copied to the host if needed; runs the deferred checks
        in the same transfer, see :meth:`fetch`)."""
        if self.backend == "cupy":
            if self._pending:
                return self.fetch(a)[0]
            out = self.xp.asnumpy(a)
            self._settled = len(self._unread)  # the copy waited for the device
            return out
        return np.asarray(a)

    def fetch(self, *arrays: Any) -> tuple[np.ndarray, ...]:
        """Copy ``arrays`` to the host in one transfer (one host sync on a GPU).

        Returns C-contiguous host arrays. ``arrays`` may be strided views (for example rows
        reversed with ``[::-1]``): the one device copy that gathers them into the transfer
        buffer follows their strides, so they land on the host in their own order at no
        extra launch or host copy. The deferred address checks ride along: after the copy,
        the first failed one raises its ``IndexError`` (as :meth:`check`).

        Examples
        --------
        >>> m = Machine(backend="numpy")
        >>> a, b = m.fetch(m.asarray([1, 2]), m.asarray([[0.5], [1.5]])[::-1])
        >>> a.tolist(), b.tolist(), b.flags.c_contiguous
        ([1, 2], [[1.5], [0.5]], True)
        """
        if self.backend != "cupy":
            self.check()
            return tuple(np.asarray(a, order="C") for a in arrays)
        xp, own = self.xp, self._array
        pending, self._pending = self._pending, []
        arrays = tuple(a if type(a) is own else xp.asarray(a) for a in arrays)
        parts = arrays + ((self._bounds[: len(pending)],) if pending else ())
        if not parts:
            return ()
        offsets, end = [], 0
        for a in parts:  # each part aligned for its dtype, in the buffer and on the host
            end = -(-end // a.dtype.alignment) * a.dtype.alignment
            offsets.append(end)
            end += a.size * a.dtype.itemsize
        if len(parts) == 1:
            host = xp.ascontiguousarray(parts[0]).reshape(-1).view(np.uint8).get()
        else:
            # One copy launch per part into one buffer (as concatenate would), any strides.
            buffer = xp.empty(end, dtype=np.uint8)
            for a, offset in zip(parts, offsets, strict=True):
                _part(buffer, offset, a)[...] = a
            host = buffer.get()
        self._settled = len(self._unread)  # the copy waited for the device
        out = []
        for a, offset in zip(parts, offsets, strict=True):
            # Views of the one fresh host buffer (not copied again), unless misaligned.
            view = np.ndarray(a.shape, a.dtype, buffer=host, offset=offset)
            out.append(view if view.flags.aligned else view.copy())
        if pending:
            _raise_first(pending, out.pop().reshape(-1, 2))
        return tuple(out)

    def check(self) -> None:
        """Raise the first deferred address check that failed (``IndexError``).

        A no-op when nothing is pending (always on the NumPy backend, whose checks are
        eager). On a GPU it reads every pending check in one transfer (one host sync): the
        renderer calls it once per frame, through :meth:`fetch`.
        """
        if self._pending:
            self.fetch()

    def sync(self) -> None:
        """Wait for the device to finish (no-op on NumPy); runs the deferred checks."""
        if self.backend == "cupy":
            if self._pending:
                self.fetch()  # the read back waits for the device too
            else:
                self.xp.cuda.get_current_stream().synchronize()

    @property
    def backend_spec(self) -> str:
        """The ``backend=`` that makes another machine on the same device.

        ``backend`` itself, or ``"counting"`` for the counting stand-in for CuPy.
        """
        return "counting" if self._scopes is not None else self.backend

    @property
    def clock(self) -> float:
        """Model cycles charged so far."""
        return self._clock

    @property
    def stats(self) -> Stats:
        """A snapshot of the per-phase statistics.

        Nested phases are named by their path, e.g. ``"z-buffer/redistribution"``.
        Instructions outside any phase are listed under ``"(no phase)"``. On a GPU, reading
        this waits for the phases timed so far to finish on the device (unless a read
        back, :meth:`fetch` or :meth:`asnumpy`, has waited for them since).
        """
        if self._unread:
            if len(self._unread) > self._settled:
                self.sync()  # one wait for every phase timed so far, not one per event
            for entry, record in self._unread:
                entry.wall += record.interval.read_done()
                if len(self._events) < _EVENT_POOL:
                    record.interval.release()  # its events serve later phases
            self._unread.clear()
            self._settled = 0
        phases = {path: entry.copy() for path, entry in self._phases.items()}
        return Stats(phases=phases, machine=self.cost.name, clock_hz=self.cost.clock_hz)

    def reset_stats(self) -> None:
        """Forget all statistics and set the model clock to zero."""
        self._phases.clear()
        self._unread.clear()
        self._settled = 0
        self._clock = 0.0

    def phase(self, name: str, *, sync: bool = False) -> AbstractContextManager[PhaseRecord]:
        """Account the instructions and wall time inside the block to phase ``name``.

        ``with m.phase(name) as record:`` gives the :class:`~simd.stats.PhaseRecord` of this
        execution: its calls, bytes and model cycles (nested phases included) and its wall
        time. The device is not stopped: on a GPU the wall time lies between two CUDA events
        and is read when asked for. ``sync=True`` waits for the device at both ends instead
        and times on the host.
        """
        if not isinstance(name, str) or not name or "/" in name:
            raise ValueError(f"a phase name must be a non-empty string without '/', got {name!r}")
        return _Phase(self, name, sync)

    def vp_set(self, n: int, *, live: Any = None) -> AbstractContextManager[None]:
        """Charge every instruction in the block for a VP set of ``n`` elements.

        A SIMD machine steps all the VPs of the current VP set (the CM's ``with shape``),
        the idle ones masked off. Programs that compute on packed arrays of only the live
        elements declare the VP set here so that the model clock still charges for all.
        ``live``, optionally, holds the positions (in ``range(n)``) of the live elements:
        cost models with per-active terms (``CostModel.cm5_calibrated``) then charge the
        busiest node's live count, the VP set laid out in contiguous blocks per node
        (without it, the live elements count as spread evenly). Other models ignore it.
        """
        n = int(n)
        if n < 0:
            raise ValueError(f"a VP set cannot have a negative size, got {n}")
        return _VPSet(self._vp_stack, (n, live))

    def charge(
        self, kind: str, n: int, *, ops: float = 1.0, label: str | None = None, nbytes: int = 0
    ) -> float:
        """Charge work done outside the instructions to the model clock; returns cycles.

        ``kind`` is "elementwise" or "local" (``ops`` operations on each of ``n`` VPs), or
        any cost kind of :meth:`CostModel.cycles`. ``n`` is overridden by an enclosing
        :meth:`vp_set`. ``label`` and ``nbytes`` name the call and the bytes it moved in
        the phase statistics (default: the kind, no bytes), for a program that does an
        instruction's work itself and charges it as the instruction would be.
        """
        return self._account(kind, int(n), nbytes, ops=ops, label=label or kind)

    def _account(
        self,
        kind: str,
        n: int,
        nbytes: int,
        *,
        ops: float = 1.0,
        label: str,
        distance: int = 1,
        senders: Any = None,
    ) -> float:
        cost = self.cost
        if cost is not self._cycles_of:  # a CostModel is frozen: its memo holds while it does
            self._cycles.clear()
            self._cycles_of = cost
            self._per_active = cost.per_active
        busiest = None  # only cost models with per-active terms count the working elements
        if self._per_active and kind in ("scan", "reduce", "router"):
            if self._vp_stack:
                n_set, live = self._vp_stack[-1]
                busiest = _busiest(cost, n_set, n, live, self.xp)
            elif kind == "router":
                busiest = _busiest_senders(cost, n, senders, self.xp)
        if self._vp_stack:
            n = self._vp_stack[-1][0]
        key = (kind, n, ops, distance, busiest)
        cycles = self._cycles.get(key)
        if cycles is None:
            cycles = self._cycles[key] = cost.cycles(
                kind, n, ops=ops, distance=distance, busiest=busiest
            )
        entry = self._phases.get(self._path)
        if entry is None:
            entry = self._phases[self._path] = PhaseStats()
        nbytes = int(nbytes)
        # calls.get rather than Counter's += (whose first use of a label calls __missing__)
        calls = entry.calls
        calls[label] = calls.get(label, 0) + 1
        entry.bytes += nbytes
        entry.cycles += cycles
        for record in self._open:
            calls = record.calls
            calls[label] = calls.get(label, 0) + 1
            record.bytes += nbytes
            record.cycles += cycles
        self._clock += cycles
        return cycles

    # ----------------------------------------------------------------- instruction set

    def scan(
        self,
        x,
        op: str = "add",
        *,
        exclusive: bool = False,
        reverse: bool = False,
        segments=None,
        axis: int | None = None,
        initial=None,
        mask=None,
    ):
        """Scan (parallel prefix) of ``x`` with ``op``.

        Parameters
        ----------
        x : array
            bool, integer (8 to 64 bits, signed or unsigned), float32 or float64 values.
            ``add`` accumulates bool and integers narrower than 32 bits in 64 bits (int64,
            or uint64 for unsigned ones), as ``numpy.cumsum`` does; every other case keeps
            the dtype of ``x`` (see docs/instruction-set.md).
        op : {"add", "max", "min", "and", "or", "xor", "copy"}
            ``copy`` gives every element its segment's first element in scan direction.
            ``max`` and ``min`` propagate NaN as ``numpy.maximum`` / ``minimum`` do.
        exclusive : bool
            Each element gets the combination of the elements before it in its segment;
            the first gets ``initial``. The papers' "scan addition variant" is
            ``exclusive=True, initial=0``.
        reverse : bool
            Scan from the last element towards the first.
        segments : bool array like ``x``, optional
            True at the first element (in index order) of every segment, whatever the
            direction. With ``axis``, every line along the axis is a segment anyway.
        axis : int, optional
            Scan every line along this axis; None scans the whole array in C order.
        initial : scalar, optional
            Combined in at each segment start (default: the identity of ``op``; 0 for an
            exclusive copy). An exclusive copy-scan puts it at the segment starts; an
            inclusive one refuses it. It must be exactly representable in the result's
            dtype (an integral value within range for integers; a bool array takes any
            number's truth value), else ValueError.
        mask : bool array like ``x``, optional
            Elements where ``mask`` is False contribute the identity (not with ``copy``).

        Returns
        -------
        array
            Shaped like ``x``, of dtype ``kernels.reference.accumulator(op, x.dtype)``.

        Examples
        --------
        >>> m = Machine(backend="numpy")
        >>> m.scan(m.asarray([1, 2, 3, 4]), "add", segments=m.asarray([1, 0, 1, 0], bool))
        array([1, 3, 3, 7])
        """
        with self._agreed():
            x = self._values(x, "x")
            op, domain, as_bool = _op_types(op, x.dtype, "scan")
            axis = check_axis(axis, x.ndim)
            segments = self._flags(segments, x.shape, "segments")
            if op == "copy":
                if mask is not None:
                    raise ValueError("a copy-scan takes no mask: mask the result instead")
                if initial is not None and not exclusive:
                    raise ValueError(
                        "an inclusive copy-scan takes no initial (it combines nothing in); "
                        "with exclusive=True it is put at every segment's start"
                    )
            if mask is not None:
                mask = self._flags(mask, x.shape, "mask")
            if initial is not None:
                initial = scalar(initial, domain, "initial")
            elif as_bool:
                initial = reference.identity(op, np.bool_)
            if as_bool:
                x = x.astype(np.int32)
                initial = np.int32(initial)
            elif x.dtype != domain:
                x = x.astype(domain, copy=False)
            if mask is not None:
                x = self.xp.where(mask, x, x.dtype.type(reference.identity(op, domain)))
        exclusive, reverse = bool(exclusive), bool(reverse)
        if self.ranks is not None:
            out = distributed.scan(
                self,
                x,
                op,
                segments=segments,
                axis=axis,
                exclusive=exclusive,
                reverse=reverse,
                initial=initial,
            )
        else:
            nbytes = x.nbytes * 2 + (0 if segments is None else segments.nbytes)
            self._account("scan", x.size, nbytes, label="scan")
            out = lookup("scan", self.backend)(
                self.xp,
                x,
                op,
                segments=segments,
                axis=axis,
                exclusive=exclusive,
                reverse=reverse,
                initial=initial,
            )
        return out.astype(np.bool_) if as_bool else out

    def reduce(self, x, op: str = "add", *, axis: int | None = None, mask=None):
        """Reduction of ``x`` with ``op`` over ``axis`` (None: all of it).

        Parameters
        ----------
        x : array
            Values of the dtypes ``scan`` takes.
        op : {"add", "max", "min", "and", "or", "xor"}
            ``max`` and ``min`` propagate NaN; the bitwise operators need integers or bool.
        axis : int, optional
            Reduce along this axis; None reduces everything.
        mask : bool array like ``x``, optional
            Elements where ``mask`` is False contribute the identity of ``op`` (as in
            ``scan``); with every element masked off the result is the identity.

        Returns
        -------
        array
            An array of the backend, 0-d for ``axis=None`` (on a GPU it stays on the
            device: ``int(...)`` or ``float(...)`` reads it). Its dtype is that of
            ``scan``: ``add`` sums bool and integers narrower than 32 bits in 64 bits, as
            ``numpy.sum`` does. Empty input gives the identity of ``op``. A float ``add``
            is correctly rounded (the exact sum rounded once: the same bits on every
            backend and any number of ranks; on a GPU it reads back its integer limbs once,
            see ``kernels.exact_sum``).

        Examples
        --------
        >>> m = Machine(backend="numpy")
        >>> m.reduce(m.asarray([3, 9, 2]), "max")
        array(9)
        >>> int(m.reduce(m.asarray([200, 100], dtype=np.uint8), "add"))
        300
        >>> float(m.reduce(m.asarray([0.1] * 10), "add"))   # numpy.sum: 0.9999999999999999
        1.0
        """
        with self._agreed():
            x = self._values(x, "x")
            op = _op_types(op, x.dtype, "reduce")[0]
            axis = check_axis(axis, x.ndim)
            if mask is not None:
                mask = self._flags(mask, x.shape, "mask")
                x = self.xp.where(mask, x, reference.identity(op, x.dtype))
        if self.ranks is not None:
            return distributed.reduce(self, x, op, axis=axis)
        self._account("reduce", x.size, x.nbytes, label="reduce")
        return self.xp.asarray(lookup("reduce", self.backend)(self.xp, x, op, axis=axis))

    def broadcast(self, value: Any, shape: int | tuple[int, ...], dtype: Any = None):
        """Send a front-end value to every VP of a VP set of ``shape``.

        With ``dtype``, ``value`` must be exactly representable in it (the rule of every
        scalar operand: docs/instruction-set.md); without, it gives its own dtype.
        """
        with self._agreed():
            check_shape(shape, "broadcast shape")
            if not (is_scalar(value) or getattr(value, "ndim", None) == 0):
                raise TypeError(
                    f"broadcast value must be a bool or a number, got {type(value).__name__}"
                )
            if dtype is not None:
                value = scalar(value, np.dtype(dtype), "broadcast value")
            local = shape
            if self.ranks is not None and shape != ():
                local = distributed.block_shape(self, shape)
        out = self.xp.full(local, value, dtype=dtype)
        size = math.prod(shape) if isinstance(shape, tuple | list) else int(shape)
        self._account("reduce", size, size * out.itemsize, label="broadcast")
        return out

    def spread(self, x, axis: int, *, index: int = 0):
        """Copy the slice at ``index`` along ``axis`` to every position of that axis.

        Examples
        --------
        >>> m = Machine(backend="numpy")
        >>> m.spread(m.asarray([[1, 2], [3, 4]]), 0, index=1)
        array([[3, 4],
               [3, 4]])
        """
        with self._agreed():
            x = self._values(x, "x")
            axis = check_axis(axis, x.ndim)
            if axis is None:
                raise ValueError("spread needs an axis")
            if not isinstance(index, int | np.integer) or isinstance(index, bool):
                raise TypeError(f"spread index must be an int, got {index!r}")
        if self.ranks is not None:
            return distributed.spread(self, x, axis, int(index))
        n = x.shape[axis]
        if not -n <= index < n:
            raise IndexError(f"spread index {index} is out of range for an axis of length {n}")
        self._account("scan", x.size, x.nbytes * 2, label="spread")
        piece = self.xp.take(x, [index], axis=axis)
        return self.xp.ascontiguousarray(self.xp.broadcast_to(piece, x.shape))

    def enumerate(self, mask, *, segments=None):
        """Rank of every element among the True elements before it (int64).

        Examples
        --------
        >>> m = Machine(backend="numpy")
        >>> m.enumerate(m.asarray([True, False, True, True]))
        array([0, 1, 1, 2])
        """
        with self._agreed():
            mask = self._flags(mask, None, "mask")
        return self.scan(mask.astype(np.int64), "add", exclusive=True, segments=segments)

    def pack(self, x, mask):
        """The elements of ``x`` where ``mask`` is True, in index order (1-D).

        Examples
        --------
        >>> m = Machine(backend="numpy")
        >>> m.pack(m.asarray([5, 6, 7]), m.asarray([True, False, True]))
        array([5, 7])
        """
        with self._agreed():
            x = self._values(x, "x")
            mask = self._flags(mask, x.shape, "mask")
        if self.ranks is not None:
            return distributed.pack(self, x, mask)
        self._account("scan", x.size, x.nbytes * 2, label="pack")
        return x[mask]

    def count(self, mask) -> int:
        """Number of True elements of ``mask``."""
        with self._agreed():
            mask = self._flags(mask, None, "mask")
        if self.ranks is not None:
            return distributed.count(self, mask)
        self._account("reduce", mask.size, mask.nbytes, label="count")
        return int(self.xp.count_nonzero(mask))

    def send(
        self,
        values,
        dest,
        size: int | tuple[int, ...] | None = None,
        *,
        combine: str = "overwrite",
        mask=None,
        fill: Any = 0,
        into=None,
    ):
        """Router put: every message ``values[i]`` goes to address ``dest[i]``.

        Parameters
        ----------
        values : array or scalar
            Messages, broadcast to the shape of ``dest``.
        dest : int array
            Flat destination address of every message (global addresses on a machine
            across ranks: of the whole destination, whose blocks the ranks hold).
        size : int or tuple, optional
            Shape of a new destination array filled with ``fill``; addresses that receive
            messages get their combination.
        combine : {"overwrite", "add", "max", "min", "and", "or", "unique"}
            How messages to one address combine. ``overwrite`` keeps the message of the
            highest sender index; ``unique`` raises :class:`CollisionError` if two
            messages share an address. With ``into``, the result also combines with the
            value already there (``overwrite`` and ``unique`` replace it).
        mask : bool array like ``dest``, optional
            Only senders where ``mask`` is True send.
        fill : scalar
            What addresses of a new array (``size``) that receive nothing hold; it must
            be exactly representable in the dtype of ``values``.
        into : array, optional
            Existing destination, updated in place and returned (instead of ``size``).
            ``values`` go into its dtype only where NumPy's same-kind casting allows
            (int64 into int32, float64 into float32; not float into int, nor a number
            into bool); a scalar ``values`` must be exactly representable in it.

        Notes
        -----
        Messages combine in the destination's dtype, as ``numpy.ufunc.at`` does: integer
        sums wrap around (send into a wider ``into`` to count). ``add`` is refused for bool
        destinations (it would be a logical or), ``and`` and ``or`` for float ones.

        Examples
        --------
        >>> m = Machine(backend="numpy")
        >>> zbuf = m.asarray([9.0, 9.0, 9.0])
        >>> m.send(m.asarray([4.0, 2.0, 7.0]), m.asarray([1, 1, 2]), combine="min", into=zbuf)
        array([9., 2., 7.])
        """
        with self._agreed():
            if combine not in COMBINERS:
                raise ValueError(f"unknown combiner {combine!r}; expected one of {COMBINERS}")
            dest = self._indices(dest, "dest")
            if (size is None) == (into is None):
                raise ValueError("send needs exactly one of size= (a new array) and into=")
            if into is not None:
                out = self._values(into, "into")
                values = self._messages(values, out.dtype)
            else:
                values = self._values(values, "values")
                fill = scalar(fill, values.dtype, "fill")
                local = size if self.ranks is None else distributed.block_shape(self, size)
                out = self.xp.full(local, fill, dtype=values.dtype)
            if values.shape != dest.shape:
                try:
                    values = self.xp.broadcast_to(values, dest.shape)
                except ValueError:
                    raise ValueError(
                        f"send has values of shape {values.shape} for destinations of shape "
                        f"{dest.shape} ({values.size} values, {dest.size} destinations): give one "
                        "value per destination, or a scalar or an array that broadcasts to dest"
                    ) from None
            if combine in ("and", "or") and out.dtype.kind == "f":
                raise TypeError(
                    f"combine={combine!r} needs integer or bool values, got {out.dtype}"
                )
            if combine == "add" and out.dtype == np.bool_:
                raise TypeError(
                    "combine='add' on bool values would be a logical or: use combine='or', or "
                    "send integers (e.g. .astype(np.int64)) to count"
                )
            if mask is not None:
                mask = self._flags(mask, dest.shape, "mask").reshape(-1)
        flat_dest = dest if dest.ndim == 1 else dest.reshape(-1)
        flat_values = values if values.ndim == 1 else values.reshape(-1)
        if self.ranks is not None:
            return distributed.send(
                self, flat_values, flat_dest, mask, out, combine, new=into is None, fill=fill
            )
        senders = mask  # for the cost models that charge the busiest node's messages
        if mask is not None:
            if self._eager or combine == "unique":
                # The senders packed (a data-dependent size: a host sync on a GPU).
                flat_dest = flat_dest[mask]
                flat_values = flat_values[mask]
                mask = None
        if mask is None:
            self._check_range(flat_dest, out.size, "send destination")
        else:
            # Deferred checks on a GPU: the masked-off senders send to an address the
            # router drops (-1), so nothing waits for the number of senders.
            routed = self.xp.where(mask, flat_dest, -1)
            self._check_range(flat_dest, out.size, "send destination", mask=mask, high=routed)
            flat_dest = routed
        if combine == "unique" and flat_dest.size > 1:
            ordered = self.xp.sort(flat_dest)
            clash = ordered[1:] == ordered[:-1]
            if bool(clash.any()):
                first = int(ordered[1:][clash][0])
                raise CollisionError(
                    f"send(combine='unique'): {int(clash.sum())} message(s) collided, the "
                    f"first at address {first}"
                )
        self._account(
            "router",
            dest.size,
            flat_values.nbytes + flat_dest.nbytes,
            label="send",
            senders=senders,
        )
        fn = lookup("send", self.backend)
        if into is not None:
            if not out.flags.c_contiguous:  # the kernels address it flat, so give them a copy
                out[...] = fn(
                    self.xp, flat_values, flat_dest, self.xp.ascontiguousarray(out), combine
                )
                return out
            return fn(self.xp, flat_values, flat_dest, out, combine)
        if combine in ("overwrite", "unique"):
            return fn(self.xp, flat_values, flat_dest, out, combine)
        # A new array: receivers get the combination of their messages alone, the others
        # keep `fill`. Combining into the identity gives the former; where `fill` is the
        # identity (bit for bit: add's default 0), `out` holds it already and that is all.
        identity, is_fill = _identity(combine, out.dtype, fill)
        if is_fill:
            return fn(self.xp, flat_values, flat_dest, out, combine)
        out[...] = identity
        out = fn(self.xp, flat_values, flat_dest, out, combine)
        if mask is None:
            received = self.xp.zeros(out.size, dtype=bool)
            received[flat_dest] = True
        else:  # the dropped messages mark a spare address past the end
            received = self.xp.zeros(out.size + 1, dtype=bool)
            received[self.xp.where(mask, flat_dest, out.size)] = True
            received = received[: out.size]
        return self.xp.where(received.reshape(out.shape), out, self.xp.asarray(fill, out.dtype))

    def get(self, source, index, *, mask=None, fill: Any = 0):
        """Router get: every VP reads ``source.flat[index]`` (``fill`` where masked off).

        Examples
        --------
        >>> m = Machine(backend="numpy")
        >>> m.get(m.asarray([10, 20, 30]), m.asarray([2, 0]))
        array([30, 10])
        """
        with self._agreed():
            source = self._values(source, "source")
            index = self._indices(index, "index")
            fill = scalar(fill, source.dtype, "fill")
            if mask is not None and self.ranks is not None:
                mask = self._flags(mask, index.shape, "mask")
        if self.ranks is not None:
            return distributed.get(self, source, index, mask, fill)
        if mask is None:
            self._check_range(index, source.size, "get index")
        elif source.size == 0:  # nothing can be read: legal only if every VP is masked off
            mask = self._flags(mask, index.shape, "mask")
            self._check_range(index, 0, "get index", mask=mask)
        else:
            mask = self._flags(mask, index.shape, "mask")
            index = self.xp.where(mask, index, 0)  # masked-off VPs read a valid address
            self._check_range(index, source.size, "get index")
        self._account("router", index.size, index.nbytes * 2, label="get")
        if source.size == 0:  # every VP is masked off, or there are none
            return self.xp.full(index.shape, fill, dtype=source.dtype)
        out = lookup("get", self.backend)(self.xp, source, index)
        if mask is not None:
            out = self.xp.where(mask, out, self.xp.asarray(fill, dtype=out.dtype))
        return out

    def shift(
        self,
        x,
        offset: int | tuple[int, ...],
        axis: int | None = None,
        *,
        boundary: str | float = "wrap",
    ):
        """NEWS / X-Net mesh shift with ``numpy.roll`` semantics: ``out[i] = x[i - offset]``.

        Parameters
        ----------
        x : array
            A parallel variable; its shape is the mesh (VP set) it moves along, of any
            size (more VPs than PEs is the VP ratio) but with at least as many dimensions
            as the PE mesh ``pes``, its leading axes laid on the mesh; fewer raise
            ``ValueError``.
        offset : int or tuple of int
            Steps along ``axis``, or one offset per axis (``axis=None``) for diagonal
            X-Net moves; ``XNET`` names the eight compass directions.
        boundary : {"wrap", "zero", "edge"} or number
            What enters at the mesh border: the torus wrap-around, zeros, the border
            element itself, or a constant exactly representable in ``x``'s dtype (an
            integral value within range for integer ``x``; a bool or any number's truth
            value for bool ``x``).

        Notes
        -----
        Any offset is allowed; the model clock charges the mesh steps the shift really
        takes: on the torus (``"wrap"``) the short way round, otherwise at most the axis
        length (after which everything has left the mesh).

        Examples
        --------
        >>> m = Machine(pes=(2, 2), backend="numpy")
        >>> m.shift(m.asarray([[1, 2], [3, 4]]), XNET["n"], boundary=0)
        array([[0, 0],
               [1, 2]])
        """
        with self._agreed():
            x = self._values(x, "x")
            check_mesh_rank(x.shape, self.pes, "shift: x")
            boundary = check_boundary(boundary, x.dtype)
            offsets, steps, distance = _shift_plan(offset, axis, x.shape, boundary)
        if self.ranks is not None:
            return distributed.shift(self, x, offsets, boundary)
        offsets = steps
        self._account("shift", x.size, x.nbytes * 2, label="shift", distance=distance)
        if x.dtype == np.bool_:
            out = lookup("shift", self.backend)(
                self.xp, x.view(np.uint8), offsets, bool_boundary(boundary)
            )
            return out.view(np.bool_)
        return lookup("shift", self.backend)(self.xp, x, offsets, boundary)

    def halo_exchange(
        self, tiles, heights, widths, *, width: int = 1, boundary: str | float = "edge"
    ):
        """Give every PE's tile a halo of its 8 X-Net neighbours' edge points.

        Parameters
        ----------
        tiles : array of shape (R, C, BH, BW)
            Per-PE buffers of an orthogonal decomposition: PE ``(r, c)`` holds
            ``heights[r] x widths[c]`` grid points at the top-left of its buffer.
        heights, widths : int sequences of length R and C
            Rows held by each PE row and columns held by each PE column. On a machine
            across ranks ``tiles`` is the rank's block of PE rows and ``heights`` the
            global vector (one entry per PE row of the whole mesh).
        width : int
            Halo width; at most the smallest tile dimension.
        boundary : {"edge", "zero", "wrap"} or number
            The grid's extension at the mesh border; "edge" replicates the border (zero
            flux).

        Returns
        -------
        array of shape (R, C, BH + 2 width, BW + 2 width)
            Each tile at ``[width:width+h, width:width+w]`` with its halo around it.
        """
        with self._agreed():
            tiles = self._values(tiles, "tiles")
            if tiles.ndim != 4:
                raise ValueError(f"tiles must have shape (R, C, BH, BW), got shape {tiles.shape}")
            R, C, BH, BW = tiles.shape
            widths = extent_vector(widths, C, BW, "widths")
            if not isinstance(width, int | np.integer) or isinstance(width, bool) or width < 1:
                raise ValueError(f"halo width must be a positive integer, got {width!r}")
            boundary = check_boundary(boundary, tiles.dtype)
        if self.ranks is not None:  # heights is the global vector: checked there
            return distributed.halo_exchange(self, tiles, heights, widths, int(width), boundary)
        heights = extent_vector(heights, R, BH, "heights")
        if R and C and (heights.min() < width or widths.min() < width):
            raise ValueError(
                f"halo width {width} exceeds the smallest tile ({heights.min()} x "
                f"{widths.min()}): a neighbour exchange could not fill it"
            )
        per_pe = 2 * width * (BH + BW) + 4 * width * width
        self._account(
            "shift", R * C * per_pe, R * C * per_pe * tiles.itemsize * 2, label="halo_exchange"
        )
        fn = lookup("halo_exchange", self.backend)
        return fn(self.xp, tiles, heights, widths, int(width), boundary)

    # ----------------------------------------------------------------- validation helpers

    def _values(self, x: Any, name: str):
        if x is None:
            raise TypeError(f"{name} must be an array, got None")
        if type(x) is not self._array:  # asarray gives the backend's own arrays back as is
            x = self.xp.asarray(x)
        if x.dtype.kind not in "biuf":
            raise TypeError(f"{name} must hold numbers or booleans, got dtype {x.dtype}")
        return x

    def _messages(self, values: Any, dtype: np.dtype):
        """``values`` for a destination of ``dtype``: a scalar by the scalar rule, an array
        only where NumPy's same-kind casting allows (no silent truncation)."""
        if is_scalar(values):
            return self.xp.asarray(scalar(values, dtype, "values"))
        values = self._values(values, "values")
        if not np.can_cast(values.dtype, dtype, "same_kind"):
            raise TypeError(
                f"send values of dtype {values.dtype} cannot go into a {dtype} array without "
                "truncation (NumPy's same-kind casting refuses it); convert them with "
                ".astype(...) first"
            )
        return values

    def _flags(self, flags: Any, shape: tuple[int, ...] | None, name: str):
        if flags is None:
            return None
        if type(flags) is not self._array:
            flags = self.xp.asarray(flags)
        if flags.dtype != np.bool_:
            raise TypeError(f"{name} must be a bool array, got dtype {flags.dtype}")
        if shape is not None and flags.shape != tuple(shape):
            raise ValueError(f"{name} has shape {flags.shape}, expected {tuple(shape)}")
        return flags

    def _indices(self, index: Any, name: str):
        if type(index) is not self._array:
            index = self.xp.asarray(index)
        if index.dtype.kind not in "iu":
            raise TypeError(f"{name} must be an integer array, got dtype {index.dtype}")
        return index if index.dtype == _INT64 else index.astype(np.int64, copy=False)

    def _check_range(self, index, size: int, what: str, mask=None, high=None) -> None:
        """Every address of ``index`` (where ``mask``) must lie in ``[0, size)``.

        Eager: read back and raise now. Deferred: the range is folded into two device
        scalars and checked later (:meth:`check`); ``high``, when given, is ``index``
        with -1 where masked off (the caller has it already).
        """
        if index.size == 0:
            return
        if self._eager:
            if mask is not None:
                index = index[mask]
                if index.size == 0:
                    return
            low, high = int(index.min()), int(index.max())
            check_addresses(what, size, low, high)
            return
        xp = self.xp
        if self._bounds is None:
            self._bounds = xp.empty((MAX_PENDING_CHECKS, 2), dtype=np.int64)
            self._bound_views = [None] * MAX_PENDING_CHECKS
        k = len(self._pending)
        # 0-d views of row k (no launch; written in place by the reductions), made once
        views = self._bound_views[k]
        if views is None:
            row = self._bounds[k]
            views = self._bound_views[k] = (row[0:1].reshape(()), row[1:2].reshape(()))
        low, high_out = views
        if mask is None:
            min_into(xp, index, low)
            xp.max(index, out=high_out)
        else:  # masked off: an address in range for the minimum, -1 for the maximum
            min_into(xp, xp.where(mask, index, 0), low)
            xp.max(xp.where(mask, index, -1) if high is None else high, out=high_out)
        self._pending.append((what, int(size), low, high_out))
        if len(self._pending) >= MAX_PENDING_CHECKS:
            self.check()


def min_into(xp: Any, x: Any, out: Any) -> None:
    """``xp.min(x)`` written into the 0-d array ``out``, on the device.

    Not ``xp.min(x, out=out)``: CuPy 14.2's minimum with ``out=`` fails wherever its CUB
    reduction is enabled (it compares ``out`` with a dtype, which NumPy 2.5 refuses), so
    the minimum is reduced first and then copied in (one small extra launch).

    Examples
    --------
    >>> out = np.empty((), dtype=np.int64)
    >>> min_into(np, np.array([4, 2, 9]), out)
    >>> int(out)
    2
    """
    out[...] = xp.min(x)


def _busiest(cost: CostModel, n_set: int, active: int, live: Any, xp: Any) -> int:
    """Live elements on the busiest node of a VP set of ``n_set`` laid out in contiguous
    blocks of ``vp_ratio`` VPs per node: counted from the positions ``live`` when given (one
    small read back on a GPU), else ``active`` spread evenly, ``ceil(active / P)``."""
    if live is None or n_set == 0:
        return -(-max(0, int(active)) // cost.pes)
    if int(live.size) == 0:
        return 0
    return int(xp.bincount(live // cost.vp_ratio(n_set)).max())


def _busiest_senders(cost: CostModel, n: int, senders: Any, xp: Any) -> int:
    """Elements the busiest node works on outside a declared VP set: all its VPs, or
    with a ``senders`` mask (a masked send) its senders, the ``n`` VPs laid out in
    contiguous blocks per node (one small read back on a GPU)."""
    vpr = cost.vp_ratio(n)
    if senders is None or n == 0:
        return vpr if n else 0
    flags = xp.zeros(vpr * cost.pes, dtype=np.int64)
    flags[:n] = senders
    return int(flags.reshape(cost.pes, vpr).sum(axis=1).max())


#: (op, dtype, "scan" or "reduce") -> (op, accumulator dtype, as_bool) of the operands that
#: passed check_op and check_value_dtype: an instruction checks a pair once, not every call.
_OP_TYPES: dict[tuple[Any, np.dtype, str], tuple[str, np.dtype, bool]] = {}


def _op_types(op: Any, dtype: np.dtype, what: str) -> tuple[str, np.dtype, bool]:
    """``op`` checked for ``dtype`` values of a ``what`` (copy only for a scan), the
    accumulator dtype, and whether a scan runs a logical operator on bool (as 0/1 int32,
    the GPU kernels' type, giving bool back; the identities and ``initial`` are then those
    of the bool domain)."""
    try:
        hit = _OP_TYPES.get((op, dtype, what))
    except TypeError:  # an unhashable op: check_op refuses it below
        hit = None
    if hit is None:
        op = check_op(op, dtype, allow_copy=what == "scan")
        check_value_dtype(dtype, what)
        as_bool = dtype == np.bool_ and op != "add"
        domain = dtype if as_bool else reference.accumulator(op, dtype)
        hit = _OP_TYPES[(op, dtype, what)] = (op, domain, as_bool)
    return hit


#: (offset, axis, shape, boundary mode) -> (offsets, normalised offsets, distance) of the
#: shifts by an int offset that passed shift_offsets (their boundary is a valid mode).
_SHIFTS: dict[tuple[int, Any, tuple[int, ...], str], tuple] = {}


def _shift_plan(offset: Any, axis: Any, shape: tuple[int, ...], boundary: Any) -> tuple:
    """(offsets per axis, the mesh steps they take, the longest) of a shift of an array of
    ``shape`` (boundary checked), memoised for int offsets and axes and boundary modes."""
    memo = type(offset) is int and (axis is None or type(axis) is int) and type(boundary) is str
    if memo:
        hit = _SHIFTS.get((offset, axis, shape, boundary))
        if hit is not None:
            return hit
    offsets = shift_offsets(offset, axis, len(shape))
    steps = normalise_offsets(offsets, shape, boundary)
    hit = (offsets, steps, max(map(abs, steps), default=0))
    if memo and len(_SHIFTS) < 4096:
        _SHIFTS[(offset, axis, shape, boundary)] = hit
    return hit


#: (combine, dtype, fill's bytes) -> (identity of combine for dtype, whether fill is it).
_IDENTITIES: dict[tuple[str, np.dtype, bytes], tuple[Any, bool]] = {}


def _identity(combine: str, dtype: np.dtype, fill: Any) -> tuple[Any, bool]:
    """The identity of ``combine`` on ``dtype`` and whether the scalar ``fill`` (of ``dtype``)
    is that identity bit for bit (so -0.0 is not 0.0), memoised."""
    key = (combine, dtype, fill.tobytes())
    hit = _IDENTITIES.get(key)
    if hit is None:
        identity = reference.identity(combine, dtype)
        hit = (identity, identity.tobytes() == key[2])
        if len(_IDENTITIES) < 4096:
            _IDENTITIES[key] = hit
    return hit


def _raise_first(pending: list, bounds: np.ndarray) -> None:
    """Raise the first failed check of ``pending`` given their (low, high) on the host."""
    # A loop: a frame has a few checks (array operations cost more than it), and at most
    # MAX_PENDING_CHECKS of them are read at once.
    for (what, size, _, _), (low, high) in zip(pending, bounds.tolist(), strict=True):
        check_addresses(what, size, low, high)


class _VPSet:
    """A declared VP set while its block runs (Machine.vp_set)."""

    __slots__ = ("entry", "stack")

    def __init__(self, stack: list, entry: tuple[int, Any]) -> None:
        self.stack, self.entry = stack, entry

    def __enter__(self) -> None:
        self.stack.append(self.entry)

    def __exit__(self, *exc: object) -> None:
        self.stack.pop()


class _Phase:
    """One execution of a phase: opened by ``with``, it yields its record (Machine.phase)."""

    __slots__ = ("entry", "machine", "name", "on_device", "record", "sync")

    def __init__(self, machine: Machine, name: str, sync: bool) -> None:
        self.machine, self.name, self.sync = machine, name, sync

    def __enter__(self) -> PhaseRecord:
        m = self.machine
        stack = m._phase_stack
        path = m._path = f"{stack[-1]}/{self.name}" if stack else self.name
        stack.append(path)
        self.entry = m._phases.get(path)
        if self.entry is None:
            self.entry = m._phases[path] = PhaseStats()
        self.entry.entries += 1
        if m._scope_names is not None:
            m._scope_names.append(self.name)
        if self.sync:
            m.sync()
        self.on_device = m.backend == "cupy" and not self.sync
        interval = DeviceInterval(m.xp.cuda, m._events) if self.on_device else HostInterval()
        self.record = PhaseRecord(path, interval=interval)
        m._open.append(self.record)
        return self.record

    def __exit__(self, *exc: object) -> None:
        m, record = self.machine, self.record
        if self.sync:
            m.sync()
        record.interval.stop()
        m._open.pop()
        stack = m._phase_stack
        stack.pop()
        m._path = stack[-1] if stack else _OUTSIDE
        if m._scope_names is not None:
            m._scope_names.pop()
        if self.on_device:
            m._unread.append((self.entry, record))
        else:
            self.entry.wall += record.wall


def _part(buffer: Any, offset: int, like: Any) -> Any:
    """The bytes of ``buffer`` from ``offset`` viewed as a C-contiguous array like ``like``."""
    nbytes = like.size * like.dtype.itemsize
    return buffer[offset : offset + nbytes].view(like.dtype).reshape(like.shape)
