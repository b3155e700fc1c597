"""Sort-last compositing: the minimum of the ranks' depth-key buffers by binary swap.

Each rank renders its own share of the triangles into a full-size buffer of depth keys
(:mod:`renderer.stages.zbuffer`: depth bits above the triangle's global drawing index) with a
payload per pixel (its colour, its face). The composited buffer keeps, at every pixel, the
smallest key over the ranks and that rank's payload. Keys of different triangles never tie,
so the result does not depend on the order of the merges and equals the one-rank z-buffer.

Binary swap (Ma, Painter, Hansen & Krogh, "Parallel volume rendering using binary-swap
compositing", IEEE CG&A 1994; the default of IceT, Moreland et al.): with ``P = 2^k`` ranks,
``k`` rounds in which partners swap half of their current region and keep the minimum of
the other half, so that every rank ends with ``1/P`` of the image fully composited, moving
``(1 - 1/P)`` of the image per rank in all. The ranks beyond the largest power of two
first fold their whole buffer into a partner (as IceT's "telescoping" does more cleverly).
The final regions, in rank order, are gathered on the root.

Examples
--------
>>> import numpy as np
>>> regions(8, 4).tolist()       # the image split among 4 ranks after binary swap
[0, 2, 4, 6, 8]
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["composite_min", "regions", "merge_min"]


def regions(n: int, p2: int) -> np.ndarray:
    """Offsets of the pixel regions that ranks ``0 .. p2-1`` hold after binary swap of an
    ``n``-pixel buffer (``p2`` a power of two): halving by the high rank bit first puts
    rank ``r``'s region at position ``r``, so a gather in rank order rebuilds the image."""
    base, extra = divmod(int(n), int(p2))
    sizes = np.full(p2, base, dtype=np.int64)
    sizes[:extra] += 1  # as numpy.array_split and the machine's canonical layout
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


def merge_min(mine: np.ndarray, theirs: np.ndarray) -> np.ndarray:
    """Records with the smaller ``key`` (``mine`` on a tie, which happens only between
    empty pixels, whose payloads are equal).

    >>> dt = np.dtype([("key", "<i8"), ("face", "<i8")])
    >>> a = np.array([(5, 1), (2, 2)], dt); b = np.array([(3, 7), (9, 8)], dt)
    >>> merge_min(a, b)["face"].tolist()
    [7, 2]
    """
    take = theirs["key"] < mine["key"]
    return np.where(take, theirs, mine)


def composite_min(ranks: Any, records: np.ndarray, *, root: int = 0) -> np.ndarray | None:
    """Composite the ranks' pixel ``records`` (a structured array with an int64 ``key``
    field, one record per pixel, the same length on every rank) by the minimum key.

    Parameters
    ----------
    ranks : simd.ranks.Ranks
        The machine's link to the other ranks (``machine.ranks``); every message is counted
        into the machine's open phases.
    records : (n,) structured numpy array
        This rank's buffer: ``key`` and any payload fields.
    root : int
        The rank that receives the composited buffer.

    Returns
    -------
    (n,) structured array on ``root``, None on the other ranks. Collective.
    """
    records = np.ascontiguousarray(records)
    n, size, rank = records.shape[0], ranks.size, ranks.rank
    p2 = 1 << (size.bit_length() - 1)  # the largest power of two <= size
    dtype = records.dtype
    # fold: rank p2 + j sends its whole buffer to rank j, which keeps the minimum
    if rank >= p2:
        ranks.sendrecv(records, rank - p2, None, (0,), dtype)
        mine = records[:0]
    else:
        mine = records
        if rank + p2 < size:
            theirs = ranks.sendrecv(None, None, rank + p2, (n,), dtype)
            mine = merge_min(mine, theirs)
        bounds = regions(n, p2)
        lo, hi = 0, n
        bit = p2 >> 1
        while bit:
            # the group of 2 * bit ranks holding [lo, hi) splits it at its middle region
            first = rank & ~((bit << 1) - 1)
            mid = int(bounds[first + bit])
            if rank & bit:
                keep, give = (mid, hi), (lo, mid)
            else:
                keep, give = (lo, mid), (mid, hi)
            partner = rank ^ bit
            theirs = ranks.sendrecv(
                mine[give[0] - lo : give[1] - lo],
                partner,
                partner,
                (keep[1] - keep[0],),
                dtype,
            )
            mine = merge_min(mine[keep[0] - lo : keep[1] - lo], theirs)
            lo, hi = keep
            bit >>= 1
        mine = np.ascontiguousarray(mine)
    return ranks.gather(mine, root=root)
