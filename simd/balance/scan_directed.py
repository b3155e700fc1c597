"""Scan-directed load balancing on a mesh (Biagioni & Prins 1991).

A k-dimensional data grid lives on a k-dimensional PE mesh under an *orthogonal
decomposition*: one boundary vector per axis says which PE hyperplane holds which data
hyperplanes, and PE ``I`` keeps its block at the low corner of a fixed buffer of ``b``
points per dimension (:class:`TiledGrid`). The balancer moves whole data hyperplanes
between neighbouring PE hyperplanes so that every PE hyperplane carries about the same
load, using only scans (to find the loads, the flows and the average) and nearest-neighbour
shifts (to move the data), as the paper prescribes:

* :func:`balance` with a 1-D mesh is Algorithm 1 (``limited=False``) or Algorithm 2
  (``limited=True``, the pseudo-load ``alpha`` of inactive points bounds the buffer use);
* with a k-D mesh it is Algorithm 3 or its limited-buffer analogue Algorithm 4, balancing
  the axes one after another (all of them, or only those in ``axes``: Figure 10).

On a machine spread over MPI ranks (``Machine(..., comm=...)``) each rank's
:class:`TiledGrid` holds a block of the mesh's PE rows (``rows``) while the boundary vectors
stay global; the scans and shifts span the ranks, the front end's lines are put together
from every rank's PE rows, and every rank takes the same decisions, so a balancing step
moves the same data as on one rank.

Whatever happens, the Locality Constraints of Figure 1 hold after every step: the mapping
stays orthogonal (constraint 2) and monotone (constraint 1, data moves through FIFO buffers
and never passes other data: Lemma 3), and every PE keeps at least one data hyperplane per
axis (constraint 3). A balancing step whose average load is too small to spread every data
hyperplane over a single PE hyperplane aborts (the paper's underflow test). Each put or
get of a data hyperplane is checked against the receiver's buffer: a move that would
overflow a buffer, or empty a PE, waits (and is counted in :attr:`AxisReport.blocked`), so
no buffer ever overflows and no point is lost or duplicated.

Notes
-----
Every PE of a PE hyperplane computes the same flow, so the walk of the boundary between
PE hyperplanes ``i - 1`` and ``i`` depends only on that flow and on the loads of the data
hyperplanes that cross it. The front end follows it on a vector of ``p`` boundaries; the
data itself moves by machine shifts, one hyperplane per put/get cycle, charged to the
model clock like the scans that decide it.

References
----------
E. S. Biagioni and J. F. Prins, "Scan Directed Load Balancing for Highly-Parallel
Mesh-Connected Computers", in Unstructured Scientific Computation on Scalable
Multiprocessors, MIT Press, 1991.

The module is longer than most because Algorithms 1 to 4 are one algorithm: they share the
decomposition (:class:`TiledGrid`), the flow computation and the put/get cycles, and differ
only in the dimension and the pseudo-load, so they stay together.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simd.errors import SimdError

__all__ = [
    "AxisReport",
    "LocalityError",
    "TiledGrid",
    "balance",
    "hierarchical_boundaries",
    "locality_violations",
]

#: Local operations a PE spends per buffer slot of a hyperplane it puts or gets (reading or
#: writing the slot and advancing the buffer's FIFO pointer).
MOVE_OPS = 2.0
#: Local operations per buffer slot to count the active points of each data hyperplane.
PLANE_COUNT_OPS = 1
#: Local operations per data hyperplane to add up a PE's load S_i.
PLANE_SUM_OPS = 1
#: Elementwise operations per PE for the pseudo-load ``S_i + alpha * D_i`` (Algorithm 2).
PSEUDO_LOAD_OPS = 2
#: Elementwise operations per PE for the flows ``F_i = i * A - L_i``.
FLOW_OPS = 2


class LocalityError(SimdError, AssertionError):
    """A decomposition broke the Locality Constraints (Figure 1 of Biagioni & Prins (1991))."""


def hierarchical_boundaries(n: int, p: int) -> np.ndarray:
    """Boundary vector of the hierarchical decomposition of Lemma 1.

    Data index ``h`` goes to PE ``floor(h p / n)``, so PE ``i`` starts at ``ceil(i n / p)``.

    Examples
    --------
    >>> hierarchical_boundaries(10, 4).tolist()
    [0, 3, 5, 8, 10]
    """
    if p < 1 or n < p:
        raise ValueError(f"a hierarchical decomposition needs 1 <= p <= n, got n={n}, p={p}")
    i = np.arange(p + 1, dtype=np.int64)
    return -((-i * n) // p)


@dataclass
class AxisReport:
    """What one balancing step did along one axis.

    Attributes
    ----------
    axis : int
        The axis balanced.
    aborted : str or None
        ``"underflow"`` (the average hyperplane load is below the largest data hyperplane
        load, Biagioni & Prins's underflow test), ``"no-room"`` (limited buffers with no free slot
        on average) or None when the step ran.
    average : float
        The average load per PE hyperplane, ``A-bar``.
    alpha : float
        The pseudo-load of one data hyperplane (0 for Algorithms 1 and 3).
    flows : numpy.ndarray
        ``F_i``, the flow through the low boundary of every PE hyperplane (pseudo-load
        units for Algorithms 2 and 4).
    cycles : int
        Put/get cycles of the data-movement step (each one mesh shift of one data
        hyperplane per PE).
    moved : int
        Data hyperplanes that crossed a PE boundary.
    blocked : int
        Moves that had to wait because the receiver's buffer was full or the sender
        would have been left empty.
    loads_before, loads_after : numpy.ndarray
        The PE-hyperplane loads ``S_i`` before and after the step.
    """

    axis: int
    aborted: str | None
    average: float
    alpha: float
    flows: np.ndarray
    cycles: int = 0
    moved: int = 0
    blocked: int = 0
    loads_before: np.ndarray = field(default_factory=lambda: np.zeros(0))
    loads_after: np.ndarray = field(default_factory=lambda: np.zeros(0))


class TiledGrid:
    """A k-D data grid on a k-D PE mesh in per-PE buffers of ``buffer`` points per axis.

    Parameters
    ----------
    channels : mapping of str to array
        Per-PE buffers, each of shape ``pes + (buffer,) * k``; PE ``I`` holds its block at
        the low corner ``[:extents[0][i0], :extents[1][i1], ...]``.
    extents : sequence of int arrays
        Number of data hyperplanes held by every PE hyperplane, one vector per axis.
    buffer : int
        Buffer size ``b`` per dimension.
    xp : module
        The array module of the channels (numpy or cupy).
    uncharged : iterable of str
        Channels the emulator carries for its own bookkeeping (e.g. global indices for
        checks); they move with the data but are not charged to the model clock.
    rows : (int, int), optional
        On a machine spread over MPI ranks: the PE rows (mesh axis 0) ``[lo, hi)`` whose
        buffers this rank holds, so that the channels have shape
        ``(hi - lo,) + pes[1:] + (buffer,) * k``. ``extents`` stay global. Default: all.

    Examples
    --------
    >>> import numpy as np
    >>> g = TiledGrid.from_arrays({"v": np.arange(10.0)}, pes=(4,), buffer=4)
    >>> [e.tolist() for e in g.extents]
    [[3, 2, 3, 2]]
    >>> g.gather("v").tolist() == list(range(10))
    True
    """

    def __init__(
        self,
        channels: Mapping[str, Any],
        extents: Sequence[Any],
        buffer: int,
        *,
        xp: Any = np,
        uncharged: Sequence[str] = (),
        rows: tuple[int, int] | None = None,
    ) -> None:
        self.xp = xp
        self.channels = dict(channels)
        self.extents = [np.asarray(e, dtype=np.int64).copy() for e in extents]
        self.buffer = int(buffer)
        self.uncharged = set(uncharged)
        self.pes = tuple(len(e) for e in self.extents)
        self.rows = (0, self.pes[0]) if rows is None else (int(rows[0]), int(rows[1]))
        expected = self.local_pes + (self.buffer,) * self.ndim
        for name, arr in self.channels.items():
            if tuple(arr.shape) != expected:
                raise ValueError(f"channel {name!r} has shape {arr.shape}, expected {expected}")
        self.check()

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_arrays(
        cls,
        arrays: Mapping[str, Any],
        pes: Sequence[int] | int,
        *,
        buffer: int | None = None,
        xp: Any = np,
        uncharged: Sequence[str] = (),
        rows: tuple[int, int] | None = None,
        shape: Sequence[int] | None = None,
    ) -> TiledGrid:
        """Cut global arrays into the hierarchical decomposition (Lemma 1) of ``pes``.

        ``buffer`` defaults to twice the largest block side (room to balance). With
        ``rows=(lo, hi)`` (a machine across MPI ranks) the grid holds only PE rows
        ``[lo, hi)``: ``arrays`` are then the data rows (along axis 0) those PE rows hold
        under the decomposition of the global data grid of ``shape``.
        """
        pes = (int(pes),) if isinstance(pes, int | np.integer) else tuple(int(p) for p in pes)
        arrays = {k: xp.asarray(v) for k, v in arrays.items()}
        if not arrays:
            raise ValueError("a TiledGrid needs at least one channel")
        local_shape = next(iter(arrays.values())).shape
        shape = local_shape if shape is None else tuple(int(s) for s in shape)
        if len(shape) != len(pes):
            raise ValueError(f"data of {len(shape)} dimension(s) on a mesh of {len(pes)}")
        for name, arr in arrays.items():
            if arr.shape != local_shape:
                raise ValueError(f"channel {name!r} has shape {arr.shape}, expected {local_shape}")
        for n, p in zip(shape, pes, strict=True):
            if p > n:
                raise ValueError(
                    f"a mesh of {pes} PEs is larger than the data grid {shape}: every PE "
                    "must hold at least one point"
                )
        bounds = [hierarchical_boundaries(n, p) for n, p in zip(shape, pes, strict=True)]
        extents = [np.diff(b) for b in bounds]
        largest = max(int(e.max()) for e in extents)
        if buffer is None:
            buffer = 2 * largest
        if buffer < largest:
            raise ValueError(f"buffer {buffer} is smaller than the largest block side {largest}")
        grid = cls.__new__(cls)
        grid.xp = xp
        grid.extents = extents
        grid.buffer = int(buffer)
        grid.uncharged = set(uncharged)
        grid.pes = pes
        grid.rows = (0, pes[0]) if rows is None else (int(rows[0]), int(rows[1]))
        start, stop = grid.data_rows()
        if local_shape[0] != stop - start or tuple(local_shape[1:]) != shape[1:]:
            raise ValueError(
                f"PE rows {grid.rows} hold data rows [{start}, {stop}) of {shape}, got "
                f"arrays of shape {local_shape}"
            )
        index = grid._index_of_points()
        grid.channels = {}
        for name, arr in arrays.items():
            tiles = xp.zeros(grid.local_pes + (grid.buffer,) * len(pes), dtype=arr.dtype)
            tiles[index] = arr
            grid.channels[name] = tiles
        grid.check()
        return grid

    # ------------------------------------------------------------------ views

    @property
    def ndim(self) -> int:
        """Number of axes k."""
        return len(self.extents)

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the (global) data grid."""
        return tuple(int(e.sum()) for e in self.extents)

    @property
    def local_pes(self) -> tuple[int, ...]:
        """The mesh shape of the buffers held here (PE rows ``rows`` of the mesh)."""
        return (self.rows[1] - self.rows[0], *self.pes[1:])

    def data_rows(self) -> tuple[int, int]:
        """The data rows (along axis 0) held here: ``[start, stop)`` of the global grid."""
        b = self.boundaries(0)
        return int(b[self.rows[0]]), int(b[self.rows[1]])

    def boundaries(self, axis: int) -> np.ndarray:
        """Boundary vector of ``axis``: PE hyperplane ``i`` holds ``[b[i], b[i+1])``."""
        return np.concatenate([[0], np.cumsum(self.extents[axis])]).astype(np.int64)

    def owners(self, axis: int) -> np.ndarray:
        """``mu_x``: the PE index along ``axis`` of every data index along it."""
        b = self.boundaries(axis)
        return np.searchsorted(b[1:], np.arange(b[-1]), side="right").astype(np.int64)

    def _index_of_points(self) -> tuple[Any, ...]:
        """Advanced index into the buffers giving the grid (its data rows held here), in C
        order."""
        k = self.ndim
        owner, local = [], []
        for axis in range(k):
            b = self.boundaries(axis)
            start, stop = self.data_rows() if axis == 0 else (0, int(b[-1]))
            h = np.arange(start, stop)
            o = np.searchsorted(b[1:], h, side="right")
            shape = [1] * k
            shape[axis] = -1
            first = self.rows[0] if axis == 0 else 0
            owner.append(self.xp.asarray((o - first).reshape(shape)))
            local.append(self.xp.asarray((h - b[o]).reshape(shape)))
        return tuple(owner) + tuple(local)

    def gather(self, name: str) -> Any:
        """The array of channel ``name`` (the blocks put together): the global array, or
        across ranks the data rows held here (:meth:`data_rows`)."""
        return self.channels[name][self._index_of_points()]

    def valid(self) -> Any:
        """Bool mask of the buffer slots that hold data."""
        k = self.ndim
        mask = None
        for axis in range(k):
            slots = np.arange(self.buffer)
            e = self.extents[axis][self.rows[0] : self.rows[1]] if axis == 0 else self.extents[axis]
            m = slots[None, :] < e[:, None]  # (p_x, b)
            shape = [1] * (2 * k)
            shape[axis] = e.size
            shape[k + axis] = self.buffer
            m = m.reshape(shape)
            mask = m if mask is None else mask & m
        return self.xp.asarray(np.broadcast_to(mask, self.local_pes + (self.buffer,) * k))

    def check(self) -> None:
        """Raise :class:`LocalityError` if a constraint or a buffer bound is broken.

        Constraints 1 and 2 of Figure 1 hold by construction of the boundary vectors
        (orthogonal, monotone); constraint 3 needs every extent to be at least 1, and the
        buffers need every extent to be at most ``buffer``.
        """
        for axis, e in enumerate(self.extents):
            if e.size and int(e.min()) < 1:
                raise LocalityError(
                    f"axis {axis}: PE hyperplane {int(np.argmin(e))} holds no data "
                    "(Locality Constraint 3)"
                )
            if e.size and int(e.max()) > self.buffer:
                raise LocalityError(
                    f"axis {axis}: PE hyperplane {int(np.argmax(e))} holds {int(e.max())} "
                    f"data hyperplanes, more than its buffer of {self.buffer}"
                )

    def loads(self, load: str) -> Any:
        """Per-PE load ``A_I``: the sum of channel ``load`` over each PE's block."""
        k = self.ndim
        x = self.xp.where(self.valid(), self.channels[load], 0)
        return x.sum(axis=tuple(range(k, 2 * k)))


def locality_violations(mu: Sequence[np.ndarray], pes: Sequence[int]) -> list[str]:
    """Check the Locality Constraints of Figure 1 on an explicit mapping.

    Parameters
    ----------
    mu : sequence of int arrays
        ``mu[x]`` has the data grid's shape and gives, for every data point, the PE index
        along axis ``x`` of the PE that holds it.
    pes : sequence of int
        The mesh shape.

    Returns
    -------
    list of str
        One message per broken constraint (empty when all hold).
    """
    problems = []
    k = len(pes)
    for x in range(k):
        m = np.asarray(mu[x])
        # The line of mu_x along axis x, taken at index 0 of every other axis.
        line = m[tuple(slice(None) if a == x else 0 for a in range(k))]
        expand = [m.shape[a] if a == x else 1 for a in range(k)]
        # (2): equal h_x => equal mu_x, i.e. mu_x is constant across the other axes.
        if not np.array_equal(m, np.broadcast_to(line.reshape(expand), m.shape)):
            problems.append(f"constraint 2 broken on axis {x}: mapping not orthogonal")
        # (1): h_x < h'_x => mu_x(h) <= mu_x(h').
        if np.any(np.diff(line) < 0):
            problems.append(f"constraint 1 broken on axis {x}: mapping not monotone")
    # (3): every PE holds at least one point.
    flat = np.ravel_multi_index(tuple(np.asarray(m).reshape(-1) for m in mu), tuple(pes))
    held = np.bincount(flat, minlength=math.prod(pes))
    if np.any(held == 0):
        problems.append(f"constraint 3 broken: {int((held == 0).sum())} PE(s) hold no data")
    return problems


# ---------------------------------------------------------------------------- balancing


def balance(
    grid: TiledGrid,
    *,
    machine: Any,
    load: str = "active",
    axes: Sequence[int] | None = None,
    limited: bool = True,
    on_cycle: Callable[[TiledGrid], None] | None = None,
) -> list[AxisReport]:
    """One step of Scan Directed Load Balancing on ``grid`` (in place).

    Parameters
    ----------
    grid : TiledGrid
        The decomposed data; its channels move, its extents change.
    machine : simd.Machine
        Runs the scans and shifts (and is charged for them). Its mesh shape must be
        ``grid.pes``. Across MPI ranks, every rank calls with its block of PE rows
        (``grid.rows``, the machine's layout of the mesh's axis 0). Collective.
    load : str
        Channel with the load of every data point (1 for an active point, 0 otherwise).
    axes : sequence of int, optional
        Axes to balance, in order (default: all). ``(0,)`` balances one dimension only
        (Figure 10).
    limited : bool
        Algorithms 2 and 4 (pseudo-load ``alpha`` for inactive data, so that no buffer
        needs more than ``grid.buffer`` points) instead of Algorithms 1 and 3.
    on_cycle : callable, optional
        Called with ``grid`` after every put/get cycle of the data movement (the grid's
        extents are current then), e.g. to check the Locality Constraints at every step.

    Returns
    -------
    list of AxisReport
        One per axis balanced.

    Examples
    --------
    >>> import numpy as np
    >>> from simd import Machine
    >>> m = Machine(pes=4, backend="numpy")
    >>> active = np.zeros(16, bool); active[:8] = True
    >>> g = TiledGrid.from_arrays({"active": active}, pes=4, buffer=16)
    >>> [r.aborted for r in balance(g, machine=m, limited=False)]  # Algorithm 1
    [None]
    >>> g.loads("active").tolist(), g.extents[0].tolist()
    ([2, 2, 2, 2], [2, 2, 2, 10])
    >>> g = TiledGrid.from_arrays({"active": active}, pes=4, buffer=8)
    >>> report = balance(g, machine=m, limited=True)[0]  # Algorithm 2: buffers of 8
    >>> g.loads("active").tolist(), g.extents[0].tolist(), report.blocked
    ([3, 2, 3, 0], [3, 2, 4, 7], 0)
    """
    if tuple(machine.pes) != grid.pes:
        raise ValueError(f"machine mesh {machine.pes} differs from the grid's mesh {grid.pes}")
    if load not in grid.channels:
        raise KeyError(f"no channel {load!r} in the grid (channels: {sorted(grid.channels)})")
    axes = tuple(range(grid.ndim)) if axes is None else tuple(int(a) for a in axes)
    for a in axes:
        if not 0 <= a < grid.ndim:
            raise ValueError(f"axis {a} is out of range for a {grid.ndim}-D grid")
    reports = []
    for axis in axes:
        reports.append(_balance_axis(grid, machine, load, axis, limited, on_cycle))
        grid.check()
    return reports


def _balance_axis(
    grid: TiledGrid,
    m: Any,
    load: str,
    axis: int,
    limited: bool,
    on_cycle: Callable[[TiledGrid], None] | None,
) -> AxisReport:
    xp = grid.xp
    k = grid.ndim
    p = grid.pes[axis]
    b = grid.buffer
    npes = math.prod(grid.pes)
    # ---- 1. Compute flows (Algorithm 3, step 1).
    # Active count of every local data hyperplane g of every PE: a local sum over the other
    # buffer axes, b**k slot visits per PE.
    act = xp.where(grid.valid(), grid.channels[load], 0).astype(np.int64)
    other_buf = tuple(k + a for a in range(k) if a != axis)
    counts = act.sum(axis=other_buf) if other_buf else act  # pes + (b,)
    m.charge("local", npes * b**k, ops=PLANE_COUNT_OPS)
    # W_x(i, g): max over the PE hyperplane p_x(i) of those counts, by a max-scan along
    # every other mesh axis (reverse, so the line's first PE gets the line's maximum) and
    # a copy-scan that hands it to the whole line.
    w = counts
    for a in range(k):
        if a != axis:
            w = m.scan(w, "max", axis=a, reverse=True)
            w = m.scan(w, "copy", axis=a)
    # S_i = sum_g W(i, g): local.
    s = w.sum(axis=k)
    m.charge("local", npes * b, ops=PLANE_SUM_OPS)
    # L_i: activity over the hyperplanes before i (the scan addition variant).
    left = m.scan(s, "add", axis=axis, exclusive=True, initial=0)
    # The total, computed at the last PE hyperplane and broadcast by a reverse copy-scan.
    total = m.scan(left + s, "copy", axis=axis, reverse=True)
    w_line = _line(m, grid, w, axis)  # (p, b): W(i, g), identical across the hyperplane
    s_line = _line(m, grid, s, axis).astype(np.float64)
    left_line = _line(m, grid, left, axis).astype(np.float64)
    average = float(_line(m, grid, total, axis)[0]) / p
    wmax = float(m.asnumpy(m.reduce(w, "max")))
    extents = grid.extents[axis]
    report = AxisReport(
        axis=axis,
        aborted=None,
        average=average,
        alpha=0.0,
        flows=np.zeros(p),
        loads_before=s_line.copy(),
        loads_after=s_line.copy(),
    )
    # Underflow: an average below the heaviest data hyperplane could leave a PE hyperplane
    # without data (constraint 3). In one dimension this is the paper's A-bar < 1.
    if p < 2:
        return report  # one PE hyperplane: nothing to move
    if average <= 0 or average < max(wmax, 1.0):
        report.aborted = "underflow"
        return report
    if limited:
        mean_extent = grid.shape[axis] / p  # D-bar
        if b <= mean_extent:
            report.aborted = "no-room"
            return report
        alpha = average / (b - mean_extent)
        m.charge("elementwise", npes, ops=PSEUDO_LOAD_OPS)
        # Across ranks the mesh axis 0 holds only this rank's PE rows.
        here = extents[grid.rows[0] : grid.rows[1]] if axis == 0 else extents
        pseudo = s.astype(np.float64) + alpha * xp.asarray(
            np.expand_dims(here, tuple(a for a in range(k) if a != axis)).astype(np.float64)
        )
        left_p = m.scan(pseudo, "add", axis=axis, exclusive=True, initial=0.0)
        total_p = m.scan(left_p + pseudo, "copy", axis=axis, reverse=True)
        left_line = _line(m, grid, left_p, axis)
        average_p = float(_line(m, grid, total_p, axis)[0]) / p
    else:
        alpha = 0.0
        average_p = average
    report.alpha = alpha
    flows = np.arange(p) * average_p - left_line  # F_i = i A-bar' - L'_i
    m.charge("elementwise", npes, ops=FLOW_OPS)
    report.flows = flows.copy()
    # ---- 2. Shift data (Algorithm 3/4, step 2): follow the boundaries on the front end,
    # move the data hyperplanes with mesh shifts.
    bounds = grid.boundaries(axis)
    owner = np.searchsorted(bounds[1:], np.arange(bounds[-1]), side="right")
    weight = w_line[owner, np.arange(bounds[-1]) - bounds[owner]].astype(np.float64)
    pw = weight + alpha  # pseudo-load of every data hyperplane
    point_rule = k == 1  # Algorithms 1 and 2 test a constant threshold
    half_unit = (1.0 + alpha) / 2.0
    # The flows are sums of float pseudo-loads: a flow equal to its threshold in exact
    # arithmetic (the loops test strict inequalities) must not move on rounding noise.
    tol = 1e-9 * max(1.0, average_p * p)
    f = flows.copy()
    s_pos = bounds.copy()  # s_pos[i]: first data hyperplane of PE hyperplane i
    ext = extents.copy()
    grid.extents[axis] = ext  # live: _move updates it cycle by cycle
    for phase in ("put", "get"):
        while True:
            want = np.zeros(p + 1, dtype=bool)
            inner = np.arange(1, p)
            if phase == "put":
                thr = half_unit if point_rule else pw[np.minimum(s_pos[inner], len(pw) - 1)] / 2
                want[inner] = f[inner] > thr + tol
            else:
                thr = half_unit if point_rule else pw[np.maximum(s_pos[inner] - 1, 0)] / 2
                want[inner] = f[inner] < -thr - tol
            if not want.any():
                break
            move, held = _feasible(want, ext, b, phase)
            report.blocked += held
            if not move.any():
                break
            idx = np.nonzero(move)[0]
            if phase == "put":
                f[idx] -= pw[s_pos[idx]]
                s_pos[idx] += 1
            else:
                s_pos[idx] -= 1
                f[idx] += pw[s_pos[idx]]
            _move(grid, m, axis, move[1:p], phase, ext)
            report.cycles += 1
            report.moved += int(idx.size)
            if on_cycle is not None:
                on_cycle(grid)
    grid.extents[axis] = ext
    # The new hyperplane loads (for the report; the program recomputes them when needed).
    new_owner = np.searchsorted(np.cumsum(ext)[:-1], np.arange(bounds[-1]), side="right")
    report.loads_after = np.bincount(new_owner, weights=weight, minlength=p)
    return report


def _line(m: Any, grid: TiledGrid, x: Any, axis: int) -> np.ndarray:
    """The values of ``x`` (the same across every PE hyperplane) along mesh axis ``axis``,
    on the host of every rank: the front end reads them. Across MPI ranks the PE rows lie
    in rank blocks: a line along axis 0 is put together from every rank's rows, one along
    another axis is read on the first rank that holds PE rows."""
    line = tuple(slice(None) if a == axis else 0 for a in range(grid.ndim))
    piece = m.asnumpy(x[line]) if len(x) else None  # an empty rank holds no PE row
    if m.ranks is None:
        return piece
    parts = m.ranks.allgather(piece)
    if axis == 0:
        return np.concatenate([q for q in parts if q is not None])
    return next(q for q in parts if q is not None)


def _feasible(want: np.ndarray, ext: np.ndarray, b: int, phase: str) -> tuple[np.ndarray, int]:
    """Hold back the moves that would overflow a receiver or empty a sender.

    ``want[i]`` asks to move boundary ``i`` (between PE hyperplanes ``i - 1`` and ``i``);
    ``want[0]`` and ``want[p]`` are always False. A put moves it up (PE ``i`` gives its
    first hyperplane to ``i - 1``), a get down (PE ``i - 1`` gives its last to ``i``).
    Holding one move back can only make its two PEs' sizes closer to unchanged, so the loop
    ends; the result is the largest feasible subset reachable by holding back.
    """
    move = want.copy()
    while True:
        gain = move[1:].astype(np.int64)  # PE j gains (put) / loses (get) at boundary j+1
        lose = move[:-1].astype(np.int64)  # PE j loses (put) / gains (get) at boundary j
        if phase == "put":
            size = ext - lose + gain
            over = size > b  # gains at its top boundary j+1 without losing: hold j+1
            under = size < 1  # loses at boundary j without gaining: hold j
            hold_hi, hold_lo = over, under
        else:
            size = ext + lose - gain
            over = size > b  # gains at boundary j: hold j
            under = size < 1  # loses at boundary j+1: hold j+1
            hold_hi, hold_lo = under, over
        if not (over.any() or under.any()):
            return move, int(want.sum() - move.sum())
        move[1:][hold_hi] = False
        move[:-1][hold_lo] = False


def _move(grid: TiledGrid, m: Any, axis: int, mv: np.ndarray, phase: str, ext: np.ndarray) -> None:
    """One synchronous put (or get) cycle along ``axis``; ``mv[i-1]`` for boundary ``i``.

    put: every PE hyperplane ``i`` with a moving low boundary sends its first data
    hyperplane to PE hyperplane ``i - 1``, which appends it after its last one; the sender
    shifts its FIFO buffer down by one. get: PE hyperplane ``i - 1`` sends its last data
    hyperplane to ``i``, which shifts its buffer up by one and stores it first.
    """
    xp = grid.xp
    k = grid.ndim
    npes = math.prod(grid.pes)
    hyper = grid.buffer ** (k - 1)
    boundary_idx = np.nonzero(mv)[0] + 1  # boundaries i that move
    if phase == "put":
        senders, receivers = boundary_idx, boundary_idx - 1
    else:
        senders, receivers = boundary_idx - 1, boundary_idx
    # The PE hyperplanes held here: across ranks, axis 0 is this rank's block of PE rows.
    lo, hi = grid.rows if axis == 0 else (0, grid.pes[axis])
    mine_s = (senders >= lo) & (senders < hi)
    mine_r = (receivers >= lo) & (receivers < hi)
    s_idx = xp.asarray(senders[mine_s] - lo)
    r_idx = xp.asarray(receivers[mine_r] - lo)
    charged = 0
    for name, tiles in grid.channels.items():
        # Mesh axis first, then the buffer axis along it: (p, b, ...rest).
        arr = xp.moveaxis(tiles, (axis, k + axis), (0, 1))
        if phase == "put":
            out = arr[:, 0]
        else:
            last = xp.asarray(np.maximum(ext[lo:hi] - 1, 0))
            out = arr[xp.arange(hi - lo), last]
        # The shift runs on the mesh's own layout (mesh axes first, axis 0 split across
        # ranks), then the arrivals take the moved layout again.
        offset = -1 if phase == "put" else 1
        on_mesh = xp.moveaxis(out, 0, axis).copy()
        incoming = xp.moveaxis(
            _shift(m, on_mesh, offset, axis, name not in grid.uncharged), axis, 0
        )
        charged += name not in grid.uncharged
        if phase == "put":
            arr[s_idx, :-1] = arr[s_idx, 1:].copy()
            here = receivers[mine_r]
            slot = xp.asarray(ext[here] - (np.isin(here, senders)).astype(np.int64))
            arr[r_idx, slot] = incoming[r_idx]
        else:
            arr[r_idx, 1:] = arr[r_idx, :-1].copy()
            arr[r_idx, 0] = incoming[r_idx]
    m.charge("local", npes * hyper * max(charged, 1), ops=MOVE_OPS)
    ext[senders] -= 1
    ext[receivers] += 1


def _shift(m: Any, x: Any, offset: int, axis: int, charged: bool) -> Any:
    """Mesh shift along ``axis`` (zeros enter); bookkeeping channels bypass the model
    clock."""
    if charged:
        return m.shift(x, offset, axis=axis, boundary="zero")
    if axis == 0 and m.ranks is not None:
        from simd.distributed import shift_rows_uncharged

        return shift_rows_uncharged(m, x, offset)
    xp = m.xp
    out = xp.zeros_like(x)
    src = [slice(None)] * x.ndim
    dst = [slice(None)] * x.ndim
    if offset < 0:
        dst[axis], src[axis] = slice(None, offset), slice(-offset, None)
    else:
        dst[axis], src[axis] = slice(offset, None), slice(None, -offset)
    out[tuple(dst)] = x[tuple(src)]
    return out
