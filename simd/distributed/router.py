"""``send`` and ``get`` across the ranks: messages to the owners of their addresses
(see :mod:`simd.distributed`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from simd.combining import collisions, combine_into, refuse_collisions
from simd.distributed.layouts import by_owner, fetch_rows, layout, raise_out_of_range

__all__ = ["get", "send"]


def _kept(m, mask, *arrays):
    """``arrays`` (flat) at the VPs where ``mask`` is set (all without a mask), and the
    flat positions kept (None without a mask): selected where they lie."""
    if mask is None:
        return arrays, None
    keep = m.xp.flatnonzero(mask)
    return tuple(a[keep] for a in arrays), keep


def _span(m, a) -> tuple[int | None, int | None]:
    """The least and greatest of ``a`` (None, None when empty), in one read back."""
    if not a.size:
        return None, None
    low, high = m.fetch(m.xp.stack([a.min(), a.max()]))[0].tolist()
    return int(low), int(high)


def send(m, values, dest, mask, out, combine: str, *, fill: Any):
    """``Machine.send`` across ranks: messages routed to the owners of their addresses.

    ``values`` and ``dest`` are flat (one per sender), ``out`` this rank's block of the
    destination (holding ``fill``; ``fill`` None: an existing array). A message is one row
    of bytes (its int64 address, then its value), so one ``Alltoallv`` carries both;
    messages to this rank's own block stay where they are.
    """
    xp = m.xp
    (d, v), _ = _kept(m, mask, dest.reshape(-1), values.reshape(-1))
    nbytes = d.nbytes + v.nbytes
    span = _span(m, d)
    bounds, infos = layout(m, out, "the destination", (int(dest.size), nbytes, *span))
    row = math.prod(out.shape[1:])
    size = int(bounds[-1]) * row
    raise_out_of_range("send destination", size, [i[2] for i in infos], [i[3] for i in infos])
    d = d.astype(np.int64, copy=False)
    order, counts = by_owner(m, bounds, d // max(row, 1))  # keeps sender order per owner
    value_bytes = np.dtype(out.dtype).itemsize
    messages = xp.concatenate(
        [
            d[order].reshape(-1, 1).view(np.uint8),
            v[order].astype(out.dtype).reshape(-1, 1).view(np.uint8),
        ],
        axis=1,
    )
    got = m.ranks.alltoallv(messages, counts)
    offset = int(bounds[m.rank]) * row
    addresses = xp.ascontiguousarray(got[:, :8]).view(np.int64).reshape(-1) - offset
    received_values = xp.ascontiguousarray(got[:, 8 : 8 + value_bytes]).view(out.dtype)
    if combine == "unique":  # the same rule as on one process, over every rank's messages
        count, first = collisions(m, addresses)
        everyone = m.ranks.allgather((count, first + offset))
        total = sum(c for c, _ in everyone)
        refuse_collisions(total, min((f for c, f in everyone if c), default=-1))
    m._account("router", sum(i[0] for i in infos), sum(i[1] for i in infos), label="send")
    return combine_into(m, received_values.reshape(-1), addresses, out, combine, fill=fill)


def get(m, source, index, mask, fill: Any):
    """``Machine.get`` across ranks: requests to the owners, answers back (the indices
    this rank's own block answers never leave it)."""
    xp = m.xp
    (asked,), keep = _kept(m, mask, index.reshape(-1))
    span = _span(m, asked)
    bounds, infos = layout(m, source, "source", (int(index.size), *span))
    row = math.prod(source.shape[1:])
    size = int(bounds[-1]) * row
    raise_out_of_range("get index", size, [i[1] for i in infos], [i[2] for i in infos])
    total = sum(i[0] for i in infos)
    m._account("router", total, total * 16, label="get")
    if size == 0:  # every VP is masked off, or there are none
        return xp.full(index.shape, fill, dtype=source.dtype)
    answers = fetch_rows(m, source.reshape(-1), bounds * row, asked)
    if keep is None:
        return answers.reshape(index.shape)
    out = xp.full(index.size, fill, dtype=source.dtype)
    out[keep] = answers
    return out.reshape(index.shape)
