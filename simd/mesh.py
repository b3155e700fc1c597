"""The mesh's instructions: ``shift`` (NEWS / X-Net) and ``halo_exchange``.

These are methods of :class:`simd.Machine` (its class body binds them), written as
functions of the machine ``self``. The model clock charges a shift the mesh steps it
takes; on a machine across MPI ranks the border rows go to the neighbouring ranks
(:mod:`simd.distributed`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from simd import distributed
from simd.operands import (
    bool_boundary,
    check_boundary,
    check_mesh_rank,
    extent_vector,
    normalise_offsets,
    shift_offsets,
)

__all__ = ["XNET", "halo_exchange", "shift", "squarest_shape"]


def squarest_shape(p: int) -> tuple[int, int]:
    """The most nearly square ``(rows, cols)`` mesh of ``p`` PEs (``rows <= cols``).

    >>> squarest_shape(4096), squarest_shape(512), squarest_shape(7)
    ((64, 64), (16, 32), (1, 7))
    """
    if not isinstance(p, int | np.integer) or isinstance(p, bool) or p < 1:
        raise ValueError(f"number of processors must be a positive integer, got {p!r}")
    p = int(p)
    rows = math.isqrt(p)
    while p % rows:
        rows -= 1
    return rows, p // rows


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
    >>> from simd import Machine
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
        out = self._kernel("shift")(self.xp, x.view(np.uint8), offsets, bool_boundary(boundary))
        return out.view(np.bool_)
    return self._kernel("shift")(self.xp, x, offsets, boundary)


def halo_exchange(self, tiles, heights, widths, *, width: int = 1, boundary: str | float = "edge"):
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
    fn = self._kernel("halo_exchange")
    return fn(self.xp, tiles, heights, widths, int(width), boundary)


# ----------------------------------------------------------------- validation helpers

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
