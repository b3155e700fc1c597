"""The emulated SIMD machine: VP sets, the instruction set, the two clocks.

Parallel variables are plain arrays of the backend (``numpy.ndarray`` or
``cupy.ndarray``) shaped like their VP set; elementwise work is ordinary array code. The
communication and global instructions are the machine's methods; each call is counted,
charged to the model clock (``simd.cost``) and accounted to the current phase.

:class:`Machine` holds the machine's state (backend, cost model, ranks, phases, pending
checks) and converts the operands; its class body binds the rest of its methods from one
module per job, each written as functions of the machine ``self``:

``simd.transfers``
    Arrays to and from the host, and the router's deferred address checks.
``simd.accounting``
    Phases, VP sets and the model clock: every instruction counted, charged and timed.
``simd.scans``
    Scans and reductions, and the instructions built on them.
``simd.router``
    ``send`` and ``get``.
``simd.mesh``
    ``shift`` and ``halo_exchange``.

Every instruction finds its kernel through :meth:`Machine._kernel` (the kernel registry),
or on a machine across MPI ranks runs the instruction of :mod:`simd.distributed`.
"""

from __future__ import annotations

import math
import os
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import numpy as np

from kernels.registry import lookup, warm_up
from simd import accounting, distributed, graphs, mesh, router, scans, transfers
from simd.accounting import OUTSIDE
from simd.backend import resolve_backend
from simd.cost import CostModel
from simd.host_memory import keep_freed_memory
from simd.mesh import XNET
from simd.operands import check_pes_shape, is_scalar, resolve_cost, scalar
from simd.router import COMBINERS
from simd.stats import PhaseRecord, PhaseStats, Stats
from simd.transfers import min_into

__all__ = ["COMBINERS", "Machine", "XNET", "min_into"]

_INT64 = np.dtype(np.int64)

#: What ``Machine._agreed`` gives on one process: nothing to agree on (reusable).
_NO_RANKS = nullcontext()


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
            # A frame's freed work arrays kept for the next frame, not faulted in again.
            keep_freed_memory()
        # The counting stand-in for CuPy attributes its counts to the open phases.
        self._scopes = self.xp if hasattr(self.xp, "push_scope") else None
        # Its list of open scopes, appended to and popped by the phases (no calls).
        self._scope_names = self._scopes.scope_names if self._scopes is not None else None
        self.cost = resolve_cost(cost, self.pes, self.npes)
        self._phases: dict[str, PhaseStats] = {}
        # Paths of the open phases, outermost first ("outer", "outer/inner", ...).
        self._phase_stack: list[str] = []
        self._path = OUTSIDE  # self._phase_stack[-1], or OUTSIDE outside any phase
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
        # Address checks not yet read back: (what, size), the k-th one's least and greatest
        # address in row k of _bounds; read by check() in one transfer.
        self._pending: list[tuple[str, int]] = []
        self._eager = checks == "eager" or self.backend != "cupy"
        self._bounds: Any = None  # (MAX_PENDING_CHECKS, 2) int64 on the device, made once
        self._recording: Any = None  # the simd.graphs.Recording capturing the work, if any
        self._capture_stream: Any = None  # its stream (made once, simd.graphs)
        self._graph_pool: Any = None  # the memory pool of the captured work (simd.graphs)

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

    def _kernel(self, primitive: str) -> Any:
        """The kernel of ``primitive`` on this machine's backend (``kernels.registry``)."""
        return lookup(primitive, self.backend)

    # ----------------------------------------------------------------- operands

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

    # ------------------------------------------------------------------ bound from modules

    # Arrays to and from the host; the router's deferred address checks.
    asarray = transfers.asarray
    asnumpy = transfers.asnumpy
    fetch = transfers.fetch
    check = transfers.check
    sync = transfers.sync
    _check_range = transfers.check_range
    _defer_check = transfers.defer_check

    # CUDA graphs of a block of work, replayed.
    recording = graphs.recording

    # Phases, VP sets and the model clock.
    stats = property(accounting.stats)
    reset_stats = accounting.reset_stats
    phase = accounting.phase
    vp_set = accounting.vp_set
    charge = accounting.charge
    _account = accounting.account
    _communicated = accounting.communicated

    # The instruction set.
    scan = scans.scan
    reduce = scans.reduce
    broadcast = scans.broadcast
    spread = scans.spread
    enumerate = scans.enumerate
    pack = scans.pack
    count = scans.count
    send = router.send
    get = router.get
    shift = mesh.shift
    halo_exchange = mesh.halo_exchange
