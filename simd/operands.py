"""The operands of the machine's instructions: shapes, ops, axes, offsets, scalar constants.

Every check here raises a one-line error that names the operand; ``simd.machine`` calls
them before any work starts. The rules are written down in ``docs/instruction-set.md``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from kernels import reference
from simd.cost import CostModel
from simd.transfers import to_host

__all__ = [
    "MAX_PES",
    "bool_boundary",
    "check_axis",
    "check_boundary",
    "check_mesh_rank",
    "check_op",
    "check_pes_shape",
    "check_value_dtype",
    "extent_vector",
    "is_int",
    "is_scalar",
    "normalise_offsets",
    "shift_offsets",
    "resolve_cost",
    "scalar",
]


#: The most PEs an emulated machine may have: 2**24, 256 times a CM-2's 65,536
#: processors and 1,024 times the largest CM-5 or MP-1 (16,384). The cost models with
#: per-active terms count every PE's working elements in one int64 array (128 MiB at
#: the limit); far beyond it a typo (``--pes 99999999999999``) would ask for terabytes,
#: or run a machine no cost model was fitted for, instead of being refused.
MAX_PES = 1 << 24


def check_pes_shape(pes: Any) -> tuple[int, ...]:
    """The PE array's shape: ``pes`` an int (a linear array) or a tuple of ints (a mesh),
    at most :data:`MAX_PES` PEs in all.

    >>> check_pes_shape(512), check_pes_shape((64, 64))
    ((512,), (64, 64))
    >>> check_pes_shape(2**40)
    Traceback (most recent call last):
    ValueError: pes must be at most 16,777,216 PEs (2**24) in all, got 1,099,511,627,776
    """
    if is_int(pes):
        shape: tuple[Any, ...] = (pes,)
    elif isinstance(pes, tuple | list):
        shape = tuple(pes)
    else:
        shape = ()
    if not shape or any(not is_int(s) or s < 1 for s in shape):
        raise ValueError(
            "pes must be a positive int (a linear array of PEs, e.g. 512) or a tuple of "
            f"positive ints (a mesh, e.g. (64, 64)), got {pes!r}"
        )
    total = math.prod(int(s) for s in shape)
    if total > MAX_PES:
        raise ValueError(f"pes must be at most {MAX_PES:,} PEs (2**24) in all, got {total:,}")
    return tuple(int(s) for s in shape)


def check_mesh_rank(shape: tuple[int, ...], pes: tuple[int, ...], what: str) -> None:
    """A shift moves along the PE mesh: the VP set needs at least the mesh's dimensions."""
    if len(shape) < len(pes):
        mesh = "x".join(map(str, pes))
        raise ValueError(
            f"{what} of shape {shape} cannot move along the {len(pes)}-D mesh of {mesh} PEs: "
            f"it needs at least {len(pes)} dimension(s), its leading ones laid on the mesh "
            "(reshape it, or use a machine of that many dimensions)"
        )


def resolve_cost(cost: Any, pes: tuple[int, ...], npes: int) -> CostModel:
    if cost is None:
        cost = "cm5" if len(pes) == 1 else "mp1"
    if isinstance(cost, CostModel):
        return cost if cost.pes == npes else cost.with_pes(npes)
    if cost == "cm5":
        return CostModel.cm5(npes)
    if cost == "cm5_calibrated":
        return CostModel.cm5_calibrated(npes)
    if cost == "mp1":
        return CostModel.mp1(npes)
    raise ValueError(f"cost must be a CostModel, 'cm5', 'cm5_calibrated' or 'mp1', got {cost!r}")


def check_op(op: str, dtype: np.dtype, *, allow_copy: bool) -> str:
    ops = reference.OPS if allow_copy else tuple(o for o in reference.OPS if o != "copy")
    if op not in ops:
        raise ValueError(f"unknown operator {op!r}; expected one of {', '.join(ops)}")
    if op in ("and", "or", "xor") and dtype.kind == "f":
        raise TypeError(f"op={op!r} needs integer or bool values, got {dtype}")
    return op


def check_axis(axis: int | None, ndim: int) -> int | None:
    if axis is None:
        return None
    if not isinstance(axis, int | np.integer) or isinstance(axis, bool | np.bool_):
        raise TypeError(f"axis must be an int or None, got {axis!r}")
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis!r} is out of range for an array of {ndim} dimension(s)")
    return int(axis) % ndim


def is_int(k: Any) -> bool:
    return isinstance(k, int | np.integer) and not isinstance(k, bool | np.bool_)


def check_shape(shape: Any, what: str) -> tuple[int, ...]:
    """``shape`` (a non-negative int or a tuple of them) as a tuple, or a one-line error."""
    dims = shape if isinstance(shape, tuple | list) else (shape,)
    if not all(is_int(d) for d in dims):
        raise TypeError(f"{what} must be an int or a tuple of ints, got {shape!r}")
    if any(d < 0 for d in dims):
        raise ValueError(f"{what} cannot be negative, got {shape!r}")
    return tuple(int(d) for d in dims)


def shift_offsets(offset: Any, axis: int | None, ndim: int) -> tuple[int, ...]:
    if axis is not None:
        axis = check_axis(axis, ndim)
        if not is_int(offset):
            raise TypeError(f"with axis={axis}, offset must be an int, got {offset!r}")
        offsets = [0] * ndim
        offsets[axis] = int(offset)
        return tuple(offsets)
    if is_int(offset):
        if ndim != 1:
            raise ValueError(f"an int offset needs axis= for a {ndim}-D array")
        return (int(offset),)
    if not isinstance(offset, tuple | list):
        raise TypeError(f"shift offset must be an int or a tuple of ints, got {offset!r}")
    offsets = tuple(offset)
    if not all(is_int(k) for k in offsets):
        raise TypeError(f"shift offsets must be integers, got {offset!r}")
    offsets = tuple(int(k) for k in offsets)
    if len(offsets) != ndim:
        raise ValueError(f"{len(offsets)} offsets given for a {ndim}-D array")
    return offsets


def normalise_offsets(
    offsets: tuple[int, ...], shape: tuple[int, ...], boundary: Any
) -> tuple[int, ...]:
    """The shortest equivalent offsets: the mesh steps a shift really takes.

    On the torus (``"wrap"``) an offset counts modulo the axis length and goes the short
    way round (``n - 1`` is ``-1``); otherwise everything moves off the mesh after ``n``
    steps, so longer offsets are clamped to ``n``. This keeps the model clock's distance
    honest and the kernels' index arithmetic within int64 whatever the caller passes.

    Examples
    --------
    >>> normalise_offsets((7, -2**70), (5, 4), "wrap"), normalise_offsets((7, -9), (5, 4), 0)
    ((2, 0), (5, -4))
    """
    out = []
    for k, n in zip(offsets, shape, strict=True):
        if n == 0:
            out.append(0)
        elif isinstance(boundary, str) and boundary == "wrap":
            k %= n
            out.append(k - n if 2 * k > n else k)
        else:
            out.append(max(-n, min(n, k)))
    return tuple(out)


def check_boundary(boundary: Any, dtype: np.dtype) -> Any:
    """The boundary mode, or the constant as a scalar of ``dtype`` (the scalar rule)."""
    if isinstance(boundary, str):
        if boundary not in ("wrap", "zero", "edge"):
            raise ValueError(
                f"unknown boundary {boundary!r}; expected 'wrap', 'zero', 'edge' or a number"
            )
        return boundary
    try:
        return scalar(boundary, dtype, "boundary")
    except TypeError:
        raise TypeError(
            f"boundary must be 'wrap', 'zero', 'edge' or a number, got {boundary!r}"
        ) from None


def check_value_dtype(dtype: np.dtype, what: str) -> None:
    if dtype not in reference.VALUE_DTYPES:
        raise TypeError(
            f"{what} supports bool, int8 to int64, uint8 to uint64, float32 and float64, got "
            f"{dtype}; convert with .astype(...) first"
        )


def is_scalar(value: Any) -> bool:
    """Whether ``value`` is a Python or NumPy bool or number (a scalar operand)."""
    return isinstance(value, bool | int | float | np.bool_ | np.integer | np.floating)


def scalar(value: Any, dtype: np.dtype, name: str) -> Any:
    """``value`` as a scalar of ``dtype``, by the rule of every scalar operand.

    The value must be exactly representable: for an integer dtype an integral number (a
    bool, an int or a float such as 2.0) within the dtype's range; for a float dtype any
    number whose magnitude the dtype can hold (rounding is allowed, overflow to infinity
    is not); for bool any bool or number, meaning its truth value (as the machine has
    always read a bool array's constants). A 0-d array counts as its value (on a GPU,
    reading it waits for the device). Anything else is refused: TypeError for a
    non-number, ValueError naming ``name`` for a value the dtype cannot hold.

    Examples
    --------
    >>> scalar(2.0, np.dtype(np.int32), "initial")
    np.int32(2)
    >>> scalar(2.5, np.dtype(np.int32), "initial")
    Traceback (most recent call last):
    ...
    ValueError: initial for int32 values must be an integer, got 2.5
    >>> scalar(2**40, np.dtype(np.int32), "boundary")
    Traceback (most recent call last):
    ...
    ValueError: boundary 1099511627776 is out of range for int32 (-2147483648 to 2147483647)
    """
    if type(value) is int or type(value) is bool:  # the common case: memoised
        key = (value.__class__, value, dtype)
        out = _SCALARS.get(key)
        if out is None:
            if len(_SCALARS) >= 4096:  # a bound on what a program of many constants keeps
                _SCALARS.clear()
            out = _SCALARS[key] = _scalar(value, dtype, name)
        return out
    return _scalar(value, dtype, name)


#: (type, value, dtype) -> scalar() of a Python int or bool (exact keys: no -0.0 or NaN).
_SCALARS: dict[tuple[type, Any, np.dtype], Any] = {}


def _scalar(value: Any, dtype: np.dtype, name: str) -> Any:
    if getattr(value, "ndim", None) == 0 and not is_scalar(value):
        value = value.item()  # a 0-d array of NumPy or CuPy
    if not is_scalar(value):
        raise TypeError(f"{name} must be a number or a bool, got {value!r}")
    if dtype.kind == "b":
        return np.bool_(bool(value))
    if dtype.kind in "iu":
        if isinstance(value, float | np.floating):
            if not math.isfinite(value) or not float(value).is_integer():
                raise ValueError(f"{name} for {dtype} values must be an integer, got {value!r}")
        number = int(value)
        info = np.iinfo(dtype)
        if not info.min <= number <= info.max:
            raise ValueError(
                f"{name} {number} is out of range for {dtype} ({info.min} to {info.max})"
            )
        return dtype.type(number)
    try:
        as_float = float(value)
    except OverflowError:  # an int beyond float64
        as_float = None
    with np.errstate(over="ignore"):
        out = None if as_float is None else dtype.type(as_float)
    if out is None or (math.isinf(out) and not math.isinf(as_float)):
        raise ValueError(f"{name} {value!r} is out of range for {dtype}")
    return out


def bool_boundary(boundary: Any) -> Any:
    return boundary if isinstance(boundary, str) else int(bool(boundary))


def extent_vector(values: Any, count: int, buffer: int, name: str) -> np.ndarray:
    """``values`` (any array, a device's too) as ``count`` int64 extents of at most
    ``buffer`` each, on the host, or ValueError naming the operand ``name``.

    >>> extent_vector([2, 3], 2, 4, "widths").tolist()
    [2, 3]
    """
    arr = to_host(values)
    if arr.shape != (count,) or arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must be {count} integers, got {arr!r}")
    if count and (arr.min() < 0 or arr.max() > buffer):
        raise ValueError(f"{name} must lie in [0, {buffer}] (the buffer size), got {arr}")
    return arr.astype(np.int64)
