"""The router: ``send`` (a put, with combiners) and ``get``.

These are methods of :class:`simd.Machine` (its class body binds them), written as
functions of the machine ``self``. Each checks its operands (an error agreed on every
rank); the addresses are checked against the destination (or the source) at once or,
deferred on a GPU, at the next read back (:mod:`simd.transfers`). On a machine across MPI
ranks the messages go to their owners (:mod:`simd.distributed`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simd import distributed
from simd.combining import collisions, combine_into, refuse_collisions
from simd.operands import scalar

__all__ = ["COMBINERS", "get", "send"]

#: Combiners of ``send``.
COMBINERS = ("overwrite", "add", "max", "min", "and", "or", "unique")


def send(
    self,
    values,
    dest,
    size: int | tuple[int, ...] | None = None,
    *,
    combine: str = "overwrite",
    mask=None,
    fill: Any = 0,
    into=None,
):
    """Router put: every message ``values[i]`` goes to address ``dest[i]``.

    Parameters
    ----------
    values : array or scalar
        Messages, broadcast to the shape of ``dest``.
    dest : int array
        Flat destination address of every message (global addresses on a machine
        across ranks: of the whole destination, whose blocks the ranks hold).
    size : int or tuple, optional
        Shape of a new destination array filled with ``fill``; addresses that receive
        messages get their combination.
    combine : {"overwrite", "add", "max", "min", "and", "or", "unique"}
        How messages to one address combine. ``overwrite`` keeps the message of the
        highest sender index; ``unique`` raises :class:`CollisionError` if two
        messages share an address. With ``into``, the result also combines with the
        value already there (``overwrite`` and ``unique`` replace it).
    mask : bool array like ``dest``, optional
        Only senders where ``mask`` is True send.
    fill : scalar
        What addresses of a new array (``size``) that receive nothing hold; it must
        be exactly representable in the dtype of ``values``.
    into : array, optional
        Existing destination, updated in place and returned (instead of ``size``).
        ``values`` go into its dtype only where NumPy's same-kind casting allows
        (int64 into int32, float64 into float32; not float into int, nor a number
        into bool); a scalar ``values`` must be exactly representable in it.

    Notes
    -----
    Messages combine in the destination's dtype, as ``numpy.ufunc.at`` does: integer
    sums wrap around (send into a wider ``into`` to count). ``add`` is refused for bool
    destinations (it would be a logical or), ``and`` and ``or`` for float ones.

    Examples
    --------
    >>> from simd import Machine
    >>> m = Machine(backend="numpy")
    >>> zbuf = m.asarray([9.0, 9.0, 9.0])
    >>> m.send(m.asarray([4.0, 2.0, 7.0]), m.asarray([1, 1, 2]), combine="min", into=zbuf)
    array([9., 2., 7.])
    """
    with self._agreed():
        values, dest, out, fill, mask = _send_operands(
            self, values, dest, size, combine, mask, fill, into
        )
    flat_dest = dest if dest.ndim == 1 else dest.reshape(-1)
    flat_values = values if values.ndim == 1 else values.reshape(-1)
    if self.ranks is not None:
        return distributed.send(self, flat_values, flat_dest, mask, out, combine, fill=fill)
    return _send_here(self, flat_values, flat_dest, mask, out, combine, fill=fill)


def _send_operands(m, values, dest, size, combine: str, mask, fill: Any, into) -> tuple:
    """``send``'s operands checked: (values broadcast to ``dest``, ``dest`` as int64, the
    destination (``into``, or a new block filled with ``fill``), ``fill`` as a scalar of its
    dtype (None with ``into``), the flat ``mask`` or None)."""
    if combine not in COMBINERS:
        raise ValueError(f"unknown combiner {combine!r}; expected one of {COMBINERS}")
    dest = m._indices(dest, "dest")
    if (size is None) == (into is None):
        raise ValueError("send needs exactly one of size= (a new array) and into=")
    if into is not None:
        out = m._values(into, "into")
        values = m._messages(values, out.dtype)
        fill = None  # into an existing array
    else:
        values = m._values(values, "values")
        fill = scalar(fill, values.dtype, "fill")
        local = size if m.ranks is None else distributed.block_shape(m, size)
        out = m.xp.full(local, fill, dtype=values.dtype)
    if values.shape != dest.shape:
        try:
            values = m.xp.broadcast_to(values, dest.shape)
        except ValueError:
            raise ValueError(
                f"send has values of shape {values.shape} for destinations of shape "
                f"{dest.shape} ({values.size} values, {dest.size} destinations): give one "
                "value per destination, or a scalar or an array that broadcasts to dest"
            ) from None
    if combine in ("and", "or") and out.dtype.kind == "f":
        raise TypeError(f"combine={combine!r} needs integer or bool values, got {out.dtype}")
    if combine == "add" and out.dtype == np.bool_:
        raise TypeError(
            "combine='add' on bool values would be a logical or: use combine='or', or "
            "send integers (e.g. .astype(np.int64)) to count"
        )
    if mask is not None:
        mask = m._flags(mask, dest.shape, "mask").reshape(-1)
    return values, dest, out, fill, mask


def _send_here(m, flat_values, flat_dest, mask, out, combine: str, *, fill: Any):
    """``send`` on one process: the addresses checked, the messages charged and combined
    into ``out`` (a new array's receivers, ``fill`` given, get their messages'
    combination alone)."""
    n = flat_dest.size  # the VPs, senders or not
    senders = mask  # for the cost models that charge the busiest node's messages
    if mask is not None and (m._eager or combine == "unique"):
        # The senders packed (a data-dependent size: a host sync on a GPU).
        flat_dest = flat_dest[mask]
        flat_values = flat_values[mask]
        mask = None
    if combine == "unique":  # a read back: before this send's deferred check is pending
        refuse_collisions(*collisions(m, flat_dest))
    bounds = None
    if m._eager:
        m._check_range(flat_dest, out.size, "send destination")
    elif flat_dest.size:
        # Deferred (on a GPU): the send kernel folds the senders' addresses into the check.
        bounds = m._defer_check("send destination", out.size)
    m._account("router", n, flat_values.nbytes + flat_dest.nbytes, label="send", senders=senders)
    return combine_into(
        m, flat_values, flat_dest, out, combine, fill=fill, mask=mask, bounds=bounds
    )


def get(self, source, index, *, mask=None, fill: Any = 0):
    """Router get: every VP reads ``source.flat[index]`` (``fill`` where masked off).

    Examples
    --------
    >>> from simd import Machine
    >>> m = Machine(backend="numpy")
    >>> m.get(m.asarray([10, 20, 30]), m.asarray([2, 0]))
    array([30, 10])
    """
    with self._agreed():
        source = self._values(source, "source")
        index = self._indices(index, "index")
        fill = scalar(fill, source.dtype, "fill")
        if mask is not None and self.ranks is not None:
            mask = self._flags(mask, index.shape, "mask")
    if self.ranks is not None:
        return distributed.get(self, source, index, mask, fill)
    if mask is not None:
        mask = self._flags(mask, index.shape, "mask")
    bounds = None
    if source.size == 0:  # nothing can be read: legal only if every VP is masked off
        self._check_range(index, 0, "get index", mask=mask)
    elif self._eager:
        self._check_range(index, source.size, "get index", mask=mask)
    elif index.size:
        # Deferred (on a GPU): the get kernel folds the indices into the check.
        bounds = self._defer_check("get index", source.size)
    self._account("router", index.size, index.nbytes * 2, label="get")
    if source.size == 0:
        return self.xp.full(index.shape, fill, dtype=source.dtype)
    return self._kernel("get")(self.xp, source, index, mask=mask, fill=fill, bounds=bounds)
