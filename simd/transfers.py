"""What crosses between the device and the host, and the router's deferred address checks.

Most are methods of :class:`simd.Machine` (its class body binds them), written as
functions of the machine ``self``: :meth:`~simd.Machine.asarray`,
:meth:`~simd.Machine.asnumpy`, :meth:`~simd.Machine.fetch` (any arrays in one transfer,
the pending address checks riding along), :meth:`~simd.Machine.check`,
:meth:`~simd.Machine.sync`, and ``check_range``, which the router's ``send`` and ``get``
call to check (or defer the check of) their addresses, raising :func:`check_addresses`'s
one-line error. :func:`to_host` and :func:`array_module` need no machine: they bring any
array (a user's input, a decomposition's slots, an operand's extents) to the host, and
name the array library of any array.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kernels import reference

__all__ = [
    "MAX_PENDING_CHECKS",
    "array_module",
    "asarray",
    "asnumpy",
    "check",
    "check_addresses",
    "check_range",
    "clear_checks",
    "defer_check",
    "fetch",
    "min_into",
    "sync",
    "to_host",
]

#: Deferred address checks kept before they are read back anyway (one sync per this many
#: sends and gets when nothing else checks).
MAX_PENDING_CHECKS = 1024


def check_addresses(what: str, size: int, low: int, high: int) -> None:
    """Raise the machine's one-line error when the lowest (``low``) or highest (``high``)
    of some addresses falls outside ``0 .. size - 1``.

    Examples
    --------
    >>> check_addresses("send destination", 4, 0, 3)
    >>> check_addresses("get index", 4, -1, 2)
    Traceback (most recent call last):
    IndexError: get index -1 is out of range for 4 addresses
    """
    if low < 0 or high >= size:
        bad = low if low < 0 else high
        raise IndexError(f"{what} {bad} is out of range for {size} addresses")


def asarray(self, a: Any, dtype: Any = None):
    """``a`` as an array of this machine's backend (copied to the device if needed).

    Examples
    --------
    >>> from simd import Machine
    >>> Machine(backend="numpy").asarray([1, 2]).tolist()
    [1, 2]
    """
    given = type(a).__name__
    if not hasattr(a, "dtype"):  # lists and scalars: read as NumPy reads them, ...
        a = np.asarray(a, dtype=dtype)
    if a.dtype == object:  # ... which makes object arrays of anything; no device can
        raise TypeError(f"asarray needs numbers or bools, got {given} holding Python objects")
    return self.xp.asarray(a, dtype=dtype)


def asnumpy(self, a: Any) -> np.ndarray:
    """``a`` as a NumPy array (copied to the host if needed; runs the deferred checks
    in the same transfer, see :meth:`fetch`)."""
    if self.backend == "cupy":
        if self._pending or self._recording is not None:
            return self.fetch(a)[0]
        out = self.xp.asnumpy(a)
        self._settled = len(self._unread)  # the copy waited for the device
        return out
    return np.asarray(a)


def fetch(self, *arrays: Any) -> tuple[np.ndarray, ...]:
    """Copy ``arrays`` to the host in one transfer (one host sync on a GPU).

    Returns C-contiguous host arrays; on a GPU they lie in page-locked memory from CuPy's
    pinned pool (the transfer runs at the bus's speed), given back to the pool for later
    read backs when they are gone. ``arrays`` may be strided views (for example rows
    reversed with ``[::-1]``): the one device copy that gathers them into the transfer
    buffer follows their strides, so they land on the host in their own order at no
    extra launch or host copy. The deferred address checks ride along: after the copy,
    the first failed one raises its ``IndexError`` (as :meth:`check`).

    Examples
    --------
    >>> from simd import Machine
    >>> m = Machine(backend="numpy")
    >>> a, b = m.fetch(m.asarray([1, 2]), m.asarray([[0.5], [1.5]])[::-1])
    >>> a.tolist(), b.tolist(), b.flags.c_contiguous
    ([1, 2], [[1.5], [0.5]], True)
    """
    if self.backend != "cupy":
        self.check()
        return tuple(np.asarray(a, order="C") for a in arrays)
    if self._recording is not None:  # a read back ends a stretch of captured work
        return self._recording.read(arrays, lambda: _fetch_now(self, arrays))
    return _fetch_now(self, arrays)


def _fetch_now(self, arrays: tuple) -> tuple[np.ndarray, ...]:
    """:func:`fetch` on a GPU, now."""
    xp, own = self.xp, self._array
    pending, self._pending = self._pending, []
    arrays = tuple(a if type(a) is own else xp.asarray(a) for a in arrays)
    parts = arrays + ((self._bounds[: len(pending)],) if pending else ())
    if not parts:
        return ()
    offsets, end = [], 0
    for a in parts:  # each part aligned for its dtype, in the buffer and on the host
        end = -(-end // a.dtype.alignment) * a.dtype.alignment
        offsets.append(end)
        end += a.size * a.dtype.itemsize
    if len(parts) == 1:
        buffer = xp.ascontiguousarray(parts[0]).reshape(-1).view(np.uint8)
    else:
        # One copy launch per part into one buffer (as concatenate would), any strides.
        buffer = xp.empty(end, dtype=np.uint8)
        for a, offset in zip(parts, offsets, strict=True):
            _part(buffer, offset, a)[...] = a
    # Into page-locked memory, which the device writes at full speed (pageable memory
    # goes through a staging copy); the block returns to CuPy's pinned pool, to be used
    # again, when the last array of this read back is gone.
    host = _pinned_bytes(xp, buffer.size)
    buffer.get(out=host, blocking=False)
    xp.cuda.get_current_stream().synchronize()
    self._settled = len(self._unread)  # the copy waited for the device
    out = []
    for a, offset in zip(parts, offsets, strict=True):
        # Views of the one fresh host buffer (not copied again), unless misaligned.
        view = np.ndarray(a.shape, a.dtype, buffer=host, offset=offset)
        out.append(view if view.flags.aligned else view.copy())
    if pending:
        _no_bounds(self._bounds)  # the rows read, ready for later checks
        _raise_first(pending, out.pop().reshape(-1, 2))
    return tuple(out)


def check(self) -> None:
    """Raise the first deferred address check that failed (``IndexError``).

    A no-op when nothing is pending (always on the NumPy backend, whose checks are
    eager). On a GPU it reads every pending check in one transfer (one host sync): the
    renderer calls it once per frame, through :meth:`fetch`.
    """
    if self._pending:
        self.fetch()


def sync(self) -> None:
    """Wait for the device to finish (no-op on NumPy); runs the deferred checks."""
    if self.backend == "cupy":
        if self._pending or self._recording is not None:
            self.fetch()  # the read back waits for the device too (and ends a capture)
        else:
            self.xp.cuda.get_current_stream().synchronize()


def check_range(self, index, size: int, what: str, mask=None) -> None:
    """Every address of ``index`` (where ``mask``) must lie in ``[0, size)``.

    Eager: read back and raise now. Deferred: the least and greatest address are folded
    into the check's row on the device (``kernels.reference.fold_bounds``) and checked
    later (:meth:`check`). The router's kernels fold their addresses themselves: ``send``
    and ``get`` ask :func:`defer_check` for the row instead.
    """
    if index.size == 0:
        return
    if self._eager:
        if mask is not None:
            index = index[mask]
            if index.size == 0:
                return
        low, high = int(index.min()), int(index.max())
        check_addresses(what, size, low, high)
        return
    reference.fold_bounds(self.xp, index, mask, self._defer_check(what, size))


def defer_check(self, what: str, size: int) -> tuple[Any, int]:
    """A row for the deferred check of some addresses of ``what`` against ``size``
    addresses: ``(table, row)``, the int64 table on the device whose row holds the least
    and greatest address folded in (:data:`kernels.reference.NO_BOUNDS` until then), read
    back with the other pending rows by the next :meth:`check`."""
    if self._bounds is None:
        self._bounds = _no_bounds(self.xp.empty((MAX_PENDING_CHECKS, 2), dtype=np.int64))
    elif len(self._pending) >= MAX_PENDING_CHECKS:
        self.check()  # every row taken: read them all (a host sync) and start again
    row = len(self._pending)
    self._pending.append((what, int(size)))
    return self._bounds, row


def clear_checks(self) -> None:
    """Clear every row of the deferred checks' table (none must be pending): after work
    that folded addresses into rows it does not read (a replayed CUDA graph)."""
    if self._bounds is not None:
        _no_bounds(self._bounds)


def _no_bounds(table: Any) -> Any:
    """``table`` (the checks' rows) with NO_BOUNDS in every row: two fills on the device,
    no copy from the host."""
    table[:, 0] = reference.NO_BOUNDS[0]
    table[:, 1] = reference.NO_BOUNDS[1]
    return table


def min_into(xp: Any, x: Any, out: Any) -> None:
    """``xp.min(x)`` written into the 0-d array ``out``, on the device.

    Not ``xp.min(x, out=out)``: CuPy 14.2's minimum with ``out=`` fails wherever its CUB
    reduction is enabled (it compares ``out`` with a dtype, which NumPy 2.5 refuses), so
    the minimum is reduced first and then copied in (one small extra launch).

    Examples
    --------
    >>> out = np.empty((), dtype=np.int64)
    >>> min_into(np, np.array([4, 2, 9]), out)
    >>> int(out)
    2
    """
    out[...] = xp.min(x)


def _raise_first(pending: list, bounds: np.ndarray) -> None:
    """Raise the first failed check of ``pending`` given their (low, high) on the host."""
    # A loop: a frame has a few checks (array operations cost more than it), and at most
    # MAX_PENDING_CHECKS of them are read at once.
    for (what, size), (low, high) in zip(pending, bounds.tolist(), strict=True):
        check_addresses(what, size, low, high)


def _pinned_bytes(xp: Any, nbytes: int) -> np.ndarray:
    """``nbytes`` of page-locked host memory from ``xp``'s pinned pool, as a NumPy array."""
    memory = xp.cuda.alloc_pinned_memory(max(nbytes, 1))
    return np.ndarray((max(nbytes, 1),), np.uint8, buffer=memory)[:nbytes]


def _part(buffer: Any, offset: int, like: Any) -> Any:
    """The bytes of ``buffer`` from ``offset`` viewed as a C-contiguous array like ``like``."""
    nbytes = like.size * like.dtype.itemsize
    return buffer[offset : offset + nbytes].view(like.dtype).reshape(like.shape)


def to_host(a: Any) -> np.ndarray:
    """``a`` as a NumPy array (copied from the device when it is a CuPy array).

    >>> to_host([1, 2]).tolist()
    [1, 2]
    """
    return a.get() if hasattr(a, "get") else np.asarray(a)


def array_module(a: Any) -> Any:
    """The array namespace of ``a``: cupy for a CuPy array (CuPy is imported only
    then), the namespace an array names by ``__array_namespace__`` when it is not NumPy
    (the counting stand-in for CuPy names its own), else numpy.

    Examples
    --------
    >>> import numpy as np
    >>> array_module(np.zeros(3)) is np, array_module([1.0, 2.0]) is np
    (True, True)
    """
    if type(a).__module__.split(".")[0] == "cupy":
        import cupy

        return cupy
    namespace = getattr(a, "__array_namespace__", None)
    if namespace is not None:
        xp = namespace()
        if xp is not np:
            return xp
    return np
