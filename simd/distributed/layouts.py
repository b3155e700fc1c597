"""The layout of a parallel variable across the ranks: every rank's block along axis 0.

A VP set's blocks lie in rank order; :func:`layout` gives their row offsets (one
all-gather), :func:`owners` and :func:`by_owner` the ranks that hold given global rows, and
:func:`fetch_rows` brings rows from wherever they lie.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simd.transfers import check_addresses

__all__ = [
    "block_shape",
    "by_owner",
    "fetch_rows",
    "layout",
    "on_device",
    "owners",
    "raise_out_of_range",
]


def layout(m, x, what: str, extra: Any = None) -> tuple[np.ndarray, list]:
    """Row offsets (length ``nranks + 1``) of the VP set whose block here is ``x``, and
    every rank's ``extra`` (one all-gather). The blocks must agree in dtype and trailing
    shape (ValueError on every rank otherwise)."""
    info = (x.shape[0] if x.ndim else -1, tuple(x.shape[1:]), x.dtype.str, extra)
    infos = m.ranks.allgather(info)
    if any(i[0] < 0 for i in infos):
        raise ValueError(
            f"{what} must have at least one dimension on every rank (its blocks lie along "
            "axis 0 across the ranks)"
        )
    if len({(i[1], i[2]) for i in infos}) != 1:
        raise ValueError(
            f"{what}: the ranks' blocks differ in dtype or trailing shape: "
            + "; ".join(f"rank {r}: {np.dtype(i[2])} {i[1]}" for r, i in enumerate(infos))
        )
    bounds = np.concatenate([[0], np.cumsum([i[0] for i in infos])]).astype(np.int64)
    return bounds, [i[3] for i in infos]


def block_shape(m, size: Any) -> tuple[int, ...]:
    """This rank's block (canonical layout) of a new VP set of global shape ``size``."""
    shape = tuple(size) if isinstance(size, tuple | list) else (size,)
    if not shape or any(
        not isinstance(s, int | np.integer) or isinstance(s, bool) or s < 0 for s in shape
    ):
        raise ValueError(f"size must be a non-negative int or a tuple of them, got {size!r}")
    lo, hi = m.ranks.bounds(int(shape[0]))[m.rank : m.rank + 2]
    return (int(hi - lo), *map(int, shape[1:]))


def on_device(m) -> bool:
    """Whether the machine's arrays lie on a GPU (or the counting stand-in's device)."""
    return m.backend == "cupy"


def owners(bounds: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The rank that holds each of the global ``rows`` (host arrays)."""
    return np.searchsorted(bounds[1:], rows, side="right")


def by_owner(m, bounds: np.ndarray, rows) -> tuple[Any, np.ndarray]:
    """The order (stable) that groups ``rows`` (global indices along axis 0, a backend
    array) by owning rank, and the host count per rank: worked out where ``rows`` lie,
    one small read back of the counts."""
    xp = m.xp
    owner = xp.searchsorted(xp.asarray(bounds[1:]), rows, side="right")
    order = xp.argsort(owner, kind="stable")
    starts = xp.searchsorted(owner[order], xp.arange(m.nranks + 1), side="left")
    return order, np.diff(m.asnumpy(starts))


def fetch_rows(m, block, bounds: np.ndarray, wanted):
    """Rows ``wanted`` (global indices along axis 0, a backend int64 array) of the VP set
    whose block here is ``block``: requests to their owners and answers back (two
    ``Alltoallv``; the rows asked of this rank do not leave it)."""
    xp = m.xp
    wanted = xp.asarray(wanted, dtype=np.int64).reshape(-1)
    order, counts = by_owner(m, bounds, wanted)
    asked, asked_counts = m.ranks.alltoallv(wanted[order], counts, with_counts=True)
    answers = block[asked - int(bounds[m.rank])]
    back = m.ranks.alltoallv(answers, asked_counts)
    out = xp.empty_like(back)
    out[order] = back
    return out


def raise_out_of_range(what: str, size: int, lows: list, highs: list) -> None:
    """The one-rank machine's address error, from every rank's (low, high) (None: no
    addresses there); raised alike on every rank."""
    lows = [v for v in lows if v is not None]
    if not lows:
        return
    check_addresses(what, size, min(lows), max(v for v in highs if v is not None))
