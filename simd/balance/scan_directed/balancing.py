"""One step of Scan Directed Load Balancing (Biagioni & Prins 1991): :func:`balance`.

Along every axis balanced, in order: the flows by scans (step 1, ``flows``), then the data
moved by mesh shifts (step 2, ``moves``); the Locality Constraints are checked after each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from simd.balance.scan_directed.flows import AxisReport, compute_flows
from simd.balance.scan_directed.grid import TiledGrid
from simd.balance.scan_directed.moves import shift_data

__all__ = ["balance"]


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
    >>> from simd.balance.scan_directed import TiledGrid
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
    """One step along ``axis``: the flows (step 1), then the data moved (step 2) unless
    the step aborts or there is one PE hyperplane."""
    report, w_line, average_p = compute_flows(grid, m, load, axis, limited)
    if w_line is not None:
        shift_data(grid, m, axis, report, w_line, average_p, on_cycle)
    return report
