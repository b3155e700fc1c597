"""How a ``send``'s messages are combined into their destination, on one process or on each
rank once the messages have reached their owners (:mod:`simd.router`,
:mod:`simd.distributed.router`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from kernels import reference
from simd.errors import CollisionError

__all__ = ["collisions", "combine_into", "refuse_collisions"]


def combine_into(m: Any, flat_values, flat_dest, out, combine: str, *, fill: Any, mask=None,
                 bounds=None):  # fmt: skip
    """``out`` with the messages ``flat_values`` combined at the flat addresses
    ``flat_dest`` by machine ``m``'s send kernel; ``mask`` (flat, optional) drops messages;
    ``bounds`` (optional, a deferred address check's row) is given to the kernel, which
    folds the senders' addresses into it.

    Into an existing array (``fill`` None) every address keeps what it held unless a
    message reaches it. A new array (holding the scalar ``fill`` of its type): receivers
    get the combination of their messages alone, the others keep ``fill``.

    Examples
    --------
    >>> from simd import Machine
    >>> out = np.full(4, 7)
    >>> values, dest = np.array([1, 2, 3]), np.array([0, 0, 2])
    >>> combine_into(Machine(backend="numpy"), values, dest, out, "add", fill=np.int64(7)).tolist()
    [3, 7, 3, 7]
    """
    xp, kernel = m.xp, m._kernel("send")
    # mask and bounds only where there are some: the NumPy backend's kernels take neither
    # (its checks are eager and its masked sends packed)
    extra = {} if mask is None and bounds is None else {"mask": mask, "bounds": bounds}

    def send(target):
        return kernel(xp, flat_values, flat_dest, target, combine, **extra)

    if fill is None:
        if not out.flags.c_contiguous:  # the kernels address it flat, so give them a copy
            out[...] = send(xp.ascontiguousarray(out))
            return out
        return send(out)
    if combine in ("overwrite", "unique"):
        return send(out)
    # Combining into the identity gives the receivers' combination alone; where `fill` is
    # the identity (bit for bit: add's default 0), `out` holds it already and that is all.
    identity, is_fill = _identity(combine, out.dtype, fill)
    if is_fill:
        return send(out)
    out[...] = identity
    out = send(out)
    if mask is None:
        received = xp.zeros(out.size, dtype=bool)
        received[flat_dest] = True
    else:  # the dropped messages mark a spare address past the end
        received = xp.zeros(out.size + 1, dtype=bool)
        received[xp.where(mask, flat_dest, out.size)] = True
        received = received[: out.size]
    # fill, a scalar of out's dtype, goes to the kernel as an argument (no copy to the device)
    return xp.where(received.reshape(out.shape), out, fill)


def collisions(m: Any, addresses) -> tuple[int, int]:
    """For a ``unique`` send: how many of the messages to the flat ``addresses`` land on an
    address an earlier one (in address order) took, and the least such address (-1 if
    none), read back together (one host sync on a GPU, which also runs the pending checks).

    Examples
    --------
    >>> from simd import Machine
    >>> collisions(Machine(backend="numpy"), np.array([4, 1, 4, 2, 1]))
    (2, 1)
    """
    if addresses.size < 2:
        return 0, -1
    xp = m.xp
    ordered = xp.sort(addresses)
    clash = ordered[1:] == ordered[:-1]
    count, first = m.fetch(xp.stack([clash.sum(), ordered[1:][clash.argmax()]]))[0].tolist()
    return int(count), int(first) if count else -1


def refuse_collisions(count: int, first: int) -> None:
    """Raise :class:`~simd.errors.CollisionError` for ``count`` collided messages, the first
    at address ``first``; nothing when ``count`` is 0."""
    if count:
        raise CollisionError(
            f"send(combine='unique'): {count} message(s) collided, the first at address {first}"
        )


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
