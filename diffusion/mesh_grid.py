"""The mesh run's grid: the image decomposed over the PEs, and what is read from it.

:func:`initial_grid` cuts the image into the hierarchical decomposition of
:mod:`simd.balance.scan_directed` (across MPI ranks, each rank's PE rows);
:func:`busiest_and_total` is an iteration's one read back; :func:`static_max_load` the
busiest PE's load under the initial decomposition.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simd.balance.scan_directed import TiledGrid

__all__ = [
    "busiest_and_total",
    "initial_grid",
    "rows_of_ranks",
    "static_max_load",
]


def static_max_load(m: Any, grid: TiledGrid, row_bounds: np.ndarray, col_bounds: np.ndarray) -> int:
    """Largest active count over the blocks of a fixed decomposition (summed-area table of
    the data rows held here; across ranks the blocks' counts are summed over the ranks)."""
    xp = grid.xp
    active = grid.gather("active")
    start, stop = grid.data_rows()
    s = xp.zeros((active.shape[0] + 1, active.shape[1] + 1), dtype=np.int64)
    s[1:, 1:] = active.astype(np.int64).cumsum(0).cumsum(1)
    r = xp.asarray(np.clip(row_bounds, start, stop) - start)
    c = xp.asarray(col_bounds)
    blocks = (
        s[r[1:, None], c[None, 1:]]
        - s[r[:-1, None], c[None, 1:]]
        - s[r[1:, None], c[None, :-1]]
        + s[r[:-1, None], c[None, :-1]]
    )
    if m.ranks is None:
        return int(m.fetch(blocks.max())[0])
    return int(m.ranks.allreduce(m.asnumpy(blocks), "add").max())


def initial_grid(
    m: Any,
    host: np.ndarray | None,
    shape: tuple[int, int],
    rows0: np.ndarray,
    *,
    buffer: int | None,
    index: bool,
    activity: bool,
) -> TiledGrid:
    """The image (``host``: rank 0's whole image, or on one process the image) cut into
    the initial decomposition on ``m``'s mesh, whose row boundaries are ``rows0``, with
    the channels of the run: values and active flags, and not charged, with ``index`` the
    points' global indices (for :func:`simd.balance.scan_directed.check_grid`) and with
    ``activity`` the activity map.

    Examples
    --------
    >>> from simd import Machine
    >>> m = Machine(pes=(2, 2), backend="numpy")
    >>> img = np.arange(12, dtype=np.float32).reshape(3, 4)
    >>> g = initial_grid(m, img, img.shape, np.array([0, 2, 3]), buffer=None, index=True,
    ...                  activity=False)
    >>> sorted(g.channels), g.buffer
    (['active', 'index', 'value'], 4)
    """
    pe_rows, host = rows_of_ranks(m, host, shape, rows0)
    start_row = int(rows0[pe_rows[0]])
    arrays = {"value": host, "active": np.ones(host.shape, dtype=bool)}
    uncharged = ["index"] if index else []
    if index:
        first = start_row * shape[1]
        arrays["index"] = np.arange(first, first + host.size, dtype=np.int64).reshape(host.shape)
    if activity:
        # The activity map travels with the points (balancing moves them between ranks).
        arrays["activity"] = np.zeros(host.shape, dtype=np.int32)
        uncharged.append("activity")
    return TiledGrid.from_arrays(
        arrays, m.pes, buffer=buffer, xp=m.xp, uncharged=uncharged, rows=pe_rows, shape=shape
    )


def rows_of_ranks(
    m: Any, host: np.ndarray | None, shape: tuple[int, int], rows0: np.ndarray
) -> tuple[tuple[int, int], np.ndarray]:
    """This rank's PE rows (the machine's canonical blocks of the mesh's rows) and the
    image rows they hold at the start, sent from rank 0 (one ``Alltoallv``)."""
    R = m.pes[0]
    if m.ranks is None:
        return (0, R), host
    bounds = m.ranks.bounds(R)
    lo, hi = int(bounds[m.rank]), int(bounds[m.rank + 1])
    counts = np.diff(rows0[bounds]) if m.is_root else np.zeros(m.nranks, np.int64)
    send = host if m.is_root else np.zeros((0, shape[1]), np.float32)
    return (lo, hi), m.ranks.alltoallv(send, counts)


def busiest_and_total(m: Any, counts: Any) -> tuple[int, int]:
    """The largest and the sum of the PEs' active counts (across every rank): the
    iteration's one read back (one host sync on a GPU)."""
    xp = m.xp
    if counts.size:
        busiest, total = (int(v) for v in m.fetch(xp.stack([counts.max(), counts.sum()]))[0])
    else:  # a rank that holds no PE row
        busiest, total = 0, 0
    if m.ranks is None:
        return busiest, total
    both = m.ranks.allgather((busiest, total))
    return max(b for b, _ in both), sum(t for _, t in both)
