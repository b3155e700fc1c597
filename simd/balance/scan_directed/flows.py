"""Step 1 of a balancing step (Biagioni & Prins 1991, Algorithm 3): the flows.

The load of every data hyperplane (its heaviest line across the PE hyperplane), the load
``S_i`` of every PE hyperplane, the activity ``L_i`` before it and the average ``A-bar``,
all by scans along the mesh; then the flow ``F_i = i * A-bar - L_i`` through the low
boundary of every PE hyperplane, in pseudo-load units with limited buffers (Algorithms 2
and 4). The front end reads the lines it follows the boundaries with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simd.balance.scan_directed.grid import TiledGrid

__all__ = [
    "FLOW_OPS",
    "PLANE_COUNT_OPS",
    "PLANE_SUM_OPS",
    "PSEUDO_LOAD_OPS",
    "AxisReport",
    "compute_flows",
]

#: Local operations per buffer slot to count the active points of each data hyperplane.
PLANE_COUNT_OPS = 1
#: Local operations per data hyperplane to add up a PE's load S_i.
PLANE_SUM_OPS = 1
#: Elementwise operations per PE for the pseudo-load ``S_i + alpha * D_i`` (Algorithm 2).
PSEUDO_LOAD_OPS = 2
#: Elementwise operations per PE for the flows ``F_i = i * A - L_i``.
FLOW_OPS = 2


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


def compute_flows(
    grid: TiledGrid, m: Any, load: str, axis: int, limited: bool
) -> tuple[AxisReport, np.ndarray | None, float]:
    """Step 1 along ``axis`` (Algorithm 3, step 1; Algorithm 4 with ``limited``).

    Returns the step's report (its loads before, average, alpha and flows, or why it
    aborts), the line ``W(i, g)`` of the data hyperplanes' loads (None when nothing is to
    move: one PE hyperplane, or an aborted step) and the average in pseudo-load units.
    """
    xp = grid.xp
    k = grid.ndim
    p = grid.pes[axis]
    b = grid.buffer
    npes = math.prod(grid.pes)
    w, s, left, total = _plane_loads(grid, m, load, axis)
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
        return report, None, average  # one PE hyperplane: nothing to move
    if average <= 0 or average < max(wmax, 1.0):
        report.aborted = "underflow"
        return report, None, average
    if limited:
        mean_extent = grid.shape[axis] / p  # D-bar
        if b <= mean_extent:
            report.aborted = "no-room"
            return report, None, average
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
    return report, w_line, average_p


def _plane_loads(grid: TiledGrid, m: Any, load: str, axis: int) -> tuple[Any, Any, Any, Any]:
    """``W(i, g)`` (every data hyperplane's load on every PE), the hyperplane loads ``S_i``,
    the activity ``L_i`` before each and the total at every PE, by scans along the mesh."""
    xp = grid.xp
    k = grid.ndim
    b = grid.buffer
    npes = math.prod(grid.pes)
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
    return w, s, left, total


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
