"""How a ``send``'s messages are combined into their destination, on one process or on each
rank once the messages have reached their owners (:mod:`simd.router`,
:mod:`simd.distributed.router`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from kernels import reference

__all__ = ["combine_into"]


def combine_into(m: Any, flat_values, flat_dest, out, combine: str, *, new: bool, fill: Any,
                 mask=None):  # fmt: skip
    """``out`` with the messages ``flat_values`` combined at the flat addresses
    ``flat_dest`` by machine ``m``'s send kernel; ``mask`` (flat, optional) drops messages.

    Into an existing array (``new`` false) every address keeps what it held unless a
    message reaches it. A new array (``new``, holding the scalar ``fill`` of its type):
    receivers get the combination of their messages alone, the others keep ``fill``.

    Examples
    --------
    >>> from simd import Machine
    >>> out = np.full(4, 7)
    >>> values, dest = np.array([1, 2, 3]), np.array([0, 0, 2])
    >>> combine_into(Machine(backend="numpy"), values, dest, out, "add", new=True,
    ...              fill=np.int64(7)).tolist()
    [3, 7, 3, 7]
    """
    xp, kernel = m.xp, m._kernel("send")
    if not new:
        if not out.flags.c_contiguous:  # the kernels address it flat, so give them a copy
            out[...] = kernel(xp, flat_values, flat_dest, xp.ascontiguousarray(out), combine)
            return out
        return kernel(xp, flat_values, flat_dest, out, combine)
    if combine in ("overwrite", "unique"):
        return kernel(xp, flat_values, flat_dest, out, combine)
    # Combining into the identity gives the receivers' combination alone; where `fill` is
    # the identity (bit for bit: add's default 0), `out` holds it already and that is all.
    identity, is_fill = _identity(combine, out.dtype, fill)
    if is_fill:
        return kernel(xp, flat_values, flat_dest, out, combine)
    out[...] = identity
    out = kernel(xp, flat_values, flat_dest, out, combine)
    if mask is None:
        received = xp.zeros(out.size, dtype=bool)
        received[flat_dest] = True
    else:  # the dropped messages mark a spare address past the end
        received = xp.zeros(out.size + 1, dtype=bool)
        received[xp.where(mask, flat_dest, out.size)] = True
        received = received[: out.size]
    return xp.where(received.reshape(out.shape), out, xp.asarray(fill, out.dtype))


#: (combine, dtype, fill's bytes) -> (identity of combine for dtype, whether fill is it).
_IDENTITIES: dict[tuple[str, np.dtype, bytes], tuple[Any, bool]] = {}


def _identity(combine: str, dtype: np.dtype, fill: Any) -> tuple[Any, bool]:
    """The identity of ``combine`` on ``dtype`` and whether the scalar ``fill`` (of ``dtype``)
    is that identity bit for bit (so -0.0 is not 0.0), memoised."""
    key = (combine, dtype, fill.tobytes())
    hit = _IDENTITIES.get(key)
    if hit is None:
        identity = reference.identity(combine, dtype)
        hit = (identity, identity.tobytes() == key[2])
        if len(_IDENTITIES) < 4096:
            _IDENTITIES[key] = hit
    return hit
