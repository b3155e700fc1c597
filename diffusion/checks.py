"""Checks of the user's arguments, each with its one-line error.

The public functions check what they are given here, once, where the values enter; the
layers below trust what they receive.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from simd.transfers import array_module

__all__ = [
    "check_count",
    "check_image",
    "check_machine",
    "check_positive",
    "check_spacing",
]


def check_image(
    image: Any, *, ndims: tuple[int, ...] = (2, 3), allow_empty: bool = False
) -> tuple[Any, Any]:
    """Validate ``image`` and return ``(xp, float32 copy)`` (``allow_empty``: a rank's
    block may be empty; the whole image is checked by the caller).

    Examples
    --------
    >>> xp, out = check_image([[1, 2], [3, 4]])
    >>> xp.__name__, out.dtype
    ('numpy', dtype('float32'))
    >>> check_image([1, 2])
    Traceback (most recent call last):
    ...
    ValueError: image must be 2-D or 3-D, got 1-D with shape (2,)
    """
    xp = array_module(image)
    if xp is np:
        image = np.asarray(image)
    if image.dtype.kind not in "biuf":
        raise TypeError(f"image must hold real numbers, got dtype {image.dtype}")
    if image.ndim not in ndims:
        want = " or ".join(f"{d}-D" for d in ndims)
        raise ValueError(f"image must be {want}, got {image.ndim}-D with shape {image.shape}")
    if image.size == 0 and not allow_empty:
        raise ValueError(f"image is empty (shape {image.shape})")
    out = xp.array(image, dtype=np.float32, copy=True)
    if not bool(xp.isfinite(out).all()):
        raise ValueError("image contains NaN or infinite values")
    return xp, out


def check_machine(machine: Any) -> None:
    """TypeError unless ``machine`` is None or a :class:`simd.Machine` (a wrong object
    would otherwise be ignored, or fail deep inside as an AttributeError)."""
    from simd import Machine

    if machine is not None and not isinstance(machine, Machine):
        raise TypeError(f"machine must be a simd.Machine or None, got {type(machine).__name__}")


def check_spacing(spacing: Any, ndim: int, name: str) -> tuple[float, ...]:
    """``spacing`` as a tuple of ``ndim`` positive floats (ones when None).

    Examples
    --------
    >>> check_spacing(None, 2, "voxelspacing"), check_spacing([1, 2], 2, "voxelspacing")
    ((1.0, 1.0), (1.0, 2.0))
    """
    if spacing is None:
        return (1.0,) * ndim
    spacing = tuple(float(s) for s in np.ravel(np.asarray(spacing, dtype=np.float64)))
    if len(spacing) != ndim:
        raise ValueError(f"{name} needs {ndim} values (one per axis), got {len(spacing)}")
    if not all(math.isfinite(s) and s > 0 for s in spacing):
        raise ValueError(f"{name} must be positive and finite, got {spacing}")
    return spacing


def check_positive(value: Any, name: str) -> float:
    """``value`` as a float when it is a positive finite number, else ValueError naming it.

    Examples
    --------
    >>> check_positive(3, "kappa")
    3.0
    """
    if not (isinstance(value, int | float | np.number) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def check_count(value: Any, name: str, *, least: int = 0) -> int:
    """``value`` as an int when it is an integer (not a bool) of at least ``least`` (0 or
    1), else ValueError naming it.

    Examples
    --------
    >>> check_count(np.int64(5), "niter")
    5
    >>> check_count(True, "niter")
    Traceback (most recent call last):
    ...
    ValueError: niter must be a non-negative integer, got True
    """
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < least:
        kind = "non-negative" if least == 0 else "positive"
        raise ValueError(f"{name} must be a {kind} integer, got {value!r}")
    return int(value)
