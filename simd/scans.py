"""The scans and reductions of the instruction set, and the instructions built on them.

These are methods of :class:`simd.Machine` (its class body binds them), written as
functions of the machine ``self``: :meth:`~simd.Machine.scan` and
:meth:`~simd.Machine.reduce`, :meth:`~simd.Machine.broadcast` and
:meth:`~simd.Machine.spread` (charged as a reduction and a scan), and
:meth:`~simd.Machine.enumerate`, :meth:`~simd.Machine.pack` and
:meth:`~simd.Machine.count`. Each checks its operands (an error agreed on every rank), then
runs the kernel of the machine's backend, or on a machine across MPI ranks the
instruction of :mod:`simd.distributed`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from kernels import reference
from simd import distributed
from simd.operands import check_axis, check_op, check_shape, check_value_dtype, is_scalar, scalar

__all__ = ["broadcast", "count", "enumerate", "pack", "reduce", "scan", "spread"]


def scan(  # noqa: PLR0913 (the scan instruction's options, by keyword)
    self,
    x,
    op: str = "add",
    *,
    exclusive: bool = False,
    reverse: bool = False,
    segments=None,
    axis: int | None = None,
    initial=None,
    mask=None,
):
    """Scan (parallel prefix) of ``x`` with ``op``.

    Parameters
    ----------
    x : array
        bool, integer (8 to 64 bits, signed or unsigned), float32 or float64 values.
        ``add`` accumulates bool and integers narrower than 32 bits in 64 bits (int64,
        or uint64 for unsigned ones), as ``numpy.cumsum`` does; every other case keeps
        the dtype of ``x`` (see docs/instruction-set.md).
    op : {"add", "max", "min", "and", "or", "xor", "copy"}
        ``copy`` gives every element its segment's first element in scan direction.
        ``max`` and ``min`` propagate NaN as ``numpy.maximum`` / ``minimum`` do.
    exclusive : bool
        Each element gets the combination of the elements before it in its segment;
        the first gets ``initial``. The papers' "scan addition variant" is
        ``exclusive=True, initial=0``.
    reverse : bool
        Scan from the last element towards the first.
    segments : bool array like ``x``, optional
        True at the first element (in index order) of every segment, whatever the
        direction. With ``axis``, every line along the axis is a segment anyway.
    axis : int, optional
        Scan every line along this axis; None scans the whole array in C order.
    initial : scalar, optional
        Combined in at each segment start (default: the identity of ``op``; 0 for an
        exclusive copy). An exclusive copy-scan puts it at the segment starts; an
        inclusive one refuses it. It must be exactly representable in the result's
        dtype (an integral value within range for integers; a bool array takes any
        number's truth value), else ValueError.
    mask : bool array like ``x``, optional
        Elements where ``mask`` is False contribute the identity (not with ``copy``).

    Returns
    -------
    array
        Shaped like ``x``, of dtype ``kernels.reference.accumulator(op, x.dtype)``.

    Examples
    --------
    >>> from simd import Machine
    >>> m = Machine(backend="numpy")
    >>> m.scan(m.asarray([1, 2, 3, 4]), "add", segments=m.asarray([1, 0, 1, 0], bool))
    array([1, 3, 3, 7])
    """
    with self._agreed():
        x = self._values(x, "x")
        op, domain, as_bool = _op_types(op, x.dtype, "scan")
        axis = check_axis(axis, x.ndim)
        segments = self._flags(segments, x.shape, "segments")
        if op == "copy":
            if mask is not None:
                raise ValueError("a copy-scan takes no mask: mask the result instead")
            if initial is not None and not exclusive:
                raise ValueError(
                    "an inclusive copy-scan takes no initial (it combines nothing in); "
                    "with exclusive=True it is put at every segment's start"
                )
        if mask is not None:
            mask = self._flags(mask, x.shape, "mask")
        if initial is not None:
            initial = scalar(initial, domain, "initial")
        elif as_bool:
            initial = reference.identity(op, np.bool_)
        if as_bool:
            x = x.astype(np.int32)
            initial = np.int32(initial)
        elif x.dtype != domain:
            x = x.astype(domain, copy=False)
        if mask is not None:
            x = self.xp.where(mask, x, x.dtype.type(reference.identity(op, domain)))
    exclusive, reverse = bool(exclusive), bool(reverse)
    if self.ranks is not None:
        out = distributed.scan(
            self,
            x,
            op,
            segments=segments,
            axis=axis,
            exclusive=exclusive,
            reverse=reverse,
            initial=initial,
        )
    else:
        nbytes = x.nbytes * 2 + (0 if segments is None else segments.nbytes)
        self._account("scan", x.size, nbytes, label="scan")
        out = self._kernel("scan")(
            self.xp,
            x,
            op,
            segments=segments,
            axis=axis,
            exclusive=exclusive,
            reverse=reverse,
            initial=initial,
        )
    return out.astype(np.bool_) if as_bool else out


def reduce(self, x, op: str = "add", *, axis: int | None = None, mask=None):
    """Reduction of ``x`` with ``op`` over ``axis`` (None: all of it).

    Parameters
    ----------
    x : array
        Values of the dtypes ``scan`` takes.
    op : {"add", "max", "min", "and", "or", "xor"}
        ``max`` and ``min`` propagate NaN; the bitwise operators need integers or bool.
    axis : int, optional
        Reduce along this axis; None reduces everything.
    mask : bool array like ``x``, optional
        Elements where ``mask`` is False contribute the identity of ``op`` (as in
        ``scan``); with every element masked off the result is the identity.

    Returns
    -------
    array
        An array of the backend, 0-d for ``axis=None`` (on a GPU it stays on the
        device: ``int(...)`` or ``float(...)`` reads it). Its dtype is that of
        ``scan``: ``add`` sums bool and integers narrower than 32 bits in 64 bits, as
        ``numpy.sum`` does. Empty input gives the identity of ``op``. A float ``add``
        is correctly rounded (the exact sum rounded once: the same bits on every
        backend and any number of ranks; on a GPU it reads back its integer limbs once,
        see ``kernels.exact_sum``).

    Examples
    --------
    >>> from simd import Machine
    >>> m = Machine(backend="numpy")
    >>> m.reduce(m.asarray([3, 9, 2]), "max")
    array(9)
    >>> int(m.reduce(m.asarray([200, 100], dtype=np.uint8), "add"))
    300
    >>> float(m.reduce(m.asarray([0.1] * 10), "add"))   # numpy.sum: 0.9999999999999999
    1.0
    """
    with self._agreed():
        x = self._values(x, "x")
        op = _op_types(op, x.dtype, "reduce")[0]
        axis = check_axis(axis, x.ndim)
        if mask is not None:
            mask = self._flags(mask, x.shape, "mask")
            x = self.xp.where(mask, x, reference.identity(op, x.dtype))
    if self.ranks is not None:
        return distributed.reduce(self, x, op, axis=axis)
    self._account("reduce", x.size, x.nbytes, label="reduce")
    return self.xp.asarray(self._kernel("reduce")(self.xp, x, op, axis=axis))


def broadcast(self, value: Any, shape: int | tuple[int, ...], dtype: Any = None):
    """Send a front-end value to every VP of a VP set of ``shape``.

    With ``dtype``, ``value`` must be exactly representable in it (the rule of every
    scalar operand: docs/instruction-set.md); without, it gives its own dtype.
    """
    with self._agreed():
        check_shape(shape, "broadcast shape")
        if not (is_scalar(value) or getattr(value, "ndim", None) == 0):
            raise TypeError(
                f"broadcast value must be a bool or a number, got {type(value).__name__}"
            )
        if dtype is not None:
            value = scalar(value, np.dtype(dtype), "broadcast value")
        local = shape
        if self.ranks is not None and shape != ():
            local = distributed.block_shape(self, shape)
    out = self.xp.full(local, value, dtype=dtype)
    size = math.prod(shape) if isinstance(shape, tuple | list) else int(shape)
    self._account("reduce", size, size * out.itemsize, label="broadcast")
    return out


def spread(self, x, axis: int, *, index: int = 0):
    """Copy the slice at ``index`` along ``axis`` to every position of that axis.

    Examples
    --------
    >>> from simd import Machine
    >>> m = Machine(backend="numpy")
    >>> m.spread(m.asarray([[1, 2], [3, 4]]), 0, index=1)
    array([[3, 4],
           [3, 4]])
    """
    with self._agreed():
        x = self._values(x, "x")
        axis = check_axis(axis, x.ndim)
        if axis is None:
            raise ValueError("spread needs an axis")
        if not isinstance(index, int | np.integer) or isinstance(index, bool):
            raise TypeError(f"spread index must be an int, got {index!r}")
    if self.ranks is not None:
        return distributed.spread(self, x, axis, int(index))
    n = x.shape[axis]
    if not -n <= index < n:
        raise IndexError(f"spread index {index} is out of range for an axis of length {n}")
    self._account("scan", x.size, x.nbytes * 2, label="spread")
    piece = self.xp.take(x, [index], axis=axis)
    return self.xp.ascontiguousarray(self.xp.broadcast_to(piece, x.shape))


def enumerate(self, mask, *, segments=None):
    """Rank of every element among the True elements before it (int64).

    Examples
    --------
    >>> from simd import Machine
    >>> m = Machine(backend="numpy")
    >>> m.enumerate(m.asarray([True, False, True, True]))
    array([0, 1, 1, 2])
    """
    with self._agreed():
        mask = self._flags(mask, None, "mask")
    return self.scan(mask.astype(np.int64), "add", exclusive=True, segments=segments)


def pack(self, x, mask):
    """The elements of ``x`` where ``mask`` is True, in index order (1-D).

    Examples
    --------
    >>> from simd import Machine
    >>> m = Machine(backend="numpy")
    >>> m.pack(m.asarray([5, 6, 7]), m.asarray([True, False, True]))
    array([5, 7])
    """
    with self._agreed():
        x = self._values(x, "x")
        mask = self._flags(mask, x.shape, "mask")
    if self.ranks is not None:
        return distributed.pack(self, x, mask)
    self._account("scan", x.size, x.nbytes * 2, label="pack")
    return x[mask]


def count(self, mask) -> int:
    """Number of True elements of ``mask``."""
    with self._agreed():
        mask = self._flags(mask, None, "mask")
    if self.ranks is not None:
        return distributed.count(self, mask)
    self._account("reduce", mask.size, mask.nbytes, label="count")
    return int(self.xp.count_nonzero(mask))


#: (op, dtype, "scan" or "reduce") -> (op, accumulator dtype, as_bool) of the operands that
#: passed check_op and check_value_dtype: an instruction checks a pair once, not every call.
_OP_TYPES: dict[tuple[Any, np.dtype, str], tuple[str, np.dtype, bool]] = {}


def _op_types(op: Any, dtype: np.dtype, what: str) -> tuple[str, np.dtype, bool]:
    """``op`` checked for ``dtype`` values of a ``what`` (copy only for a scan), the
    accumulator dtype, and whether a scan runs a logical operator on bool (as 0/1 int32,
    the GPU kernels' type, giving bool back; the identities and ``initial`` are then those
    of the bool domain)."""
    try:
        hit = _OP_TYPES.get((op, dtype, what))
    except TypeError:  # an unhashable op: check_op refuses it below
        hit = None
    if hit is None:
        op = check_op(op, dtype, allow_copy=what == "scan")
        check_value_dtype(dtype, what)
        as_bool = dtype == np.bool_ and op != "add"
        domain = dtype if as_bool else reference.accumulator(op, dtype)
        hit = _OP_TYPES[(op, dtype, what)] = (op, domain, as_bool)
    return hit
