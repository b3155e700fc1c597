"""The decomposition of Biagioni & Prins (1991): a k-D data grid on a k-D PE mesh.

:class:`TiledGrid` holds the data in per-PE buffers under an orthogonal decomposition (one
boundary vector per axis); :func:`hierarchical_boundaries` is the decomposition of Lemma 1;
:func:`locality_violations` and :class:`LocalityError` check the Locality Constraints of
Figure 1.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from simd.errors import SimdError
from simd.transfers import to_host

__all__ = [
    "LocalityError",
    "TiledGrid",
    "check_grid",
    "hierarchical_boundaries",
    "locality_violations",
]


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


def check_grid(grid: TiledGrid, n_points: int, machine: Any = None) -> None:
    """Independent check of a decomposition from where the data physically are.

    Reads the global index carried in every valid buffer slot (channel ``"index"``),
    verifies that every point is held exactly once (nothing lost or duplicated), rebuilds
    the mapping ``mu`` from the slots' PE coordinates and checks the Locality Constraints
    on it. Raises :class:`LocalityError`. Across MPI ranks (``machine`` spread over them)
    every rank's slots are gathered on every rank, which all raise alike.
    """
    valid = grid.valid()
    index = to_host(grid.channels["index"][valid])
    coords = [to_host(c) for c in grid.xp.nonzero(valid)[: grid.ndim]]  # every slot's PE
    coords[0] = coords[0] + grid.rows[0]
    if machine is not None and machine.ranks is not None:
        index = machine.gather(index, root=None)
        coords = [machine.gather(c, root=None) for c in coords]
    counts = np.bincount(index, minlength=n_points)
    if counts.size != n_points or np.any(counts != 1):
        lost = int((counts[:n_points] == 0).sum())
        dup = int((counts > 1).sum())
        raise LocalityError(f"data points lost: {lost}, duplicated: {dup}")
    mu = []
    for c in coords:
        owner = np.empty(n_points, dtype=np.int64)
        owner[index] = c
        mu.append(owner.reshape(grid.shape))
    problems = locality_violations(mu, grid.pes)
    if problems:
        raise LocalityError("; ".join(problems))
