"""The marching-cubes kernels' scalar arguments, made once per extraction on the host: the
level as a volume's own type compares with it (:func:`thresholds`) and the emission's
geometry (:func:`emission_geometry`). Every target's kernels (and the array code) take
them so.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["emission_geometry", "thresholds"]


def thresholds(dtype: Any, level: float) -> tuple:
    """``(above, at)`` for :func:`classify_row`: for a float32 volume the smallest float32
    at or above ``level`` and ``level`` itself if a float32 holds it (else NaN, which no
    value equals), so that a float32 ``x`` compares with them as with ``level``; for any
    other volume ``level`` twice.

    Examples
    --------
    >>> thresholds(np.float32, 0.7)   # the float32 nearest 0.7 lies below it
    (np.float32(0.70000005), np.float32(nan))
    >>> thresholds(np.float32, 0.5)
    (np.float32(0.5), np.float32(0.5))
    """
    if np.dtype(dtype) != np.float32:
        return float(level), float(level)
    with np.errstate(over="ignore"):  # beyond float32's range: an infinity, as it should
        nearest = np.float32(level)
    above = nearest if float(nearest) >= level else np.nextafter(nearest, np.float32(np.inf))
    at = nearest if float(nearest) == level else np.float32(np.nan)
    return above, at


def emission_geometry(geometry: tuple) -> tuple:
    """The geometry as :func:`emit_row` takes it (10 floats: the spacing, the origin, the
    inverse spacing and the global index of the volume's plane 0 along axis 0) from the
    spacing and the origin (6 floats) and, for a slab of a larger volume, that index (a
    7th; 0 when absent).

    Examples
    --------
    >>> emission_geometry((2.0, 4.0, 1.0, 0.0, 0.0, 0.0, 5))[6:]
    (0.5, 0.25, 1.0, 5.0)
    """
    spacing = tuple(float(g) for g in geometry[:3])
    first = float(geometry[6]) if len(geometry) > 6 else 0.0
    return (spacing + tuple(float(g) for g in geometry[3:6]) + tuple(1.0 / g for g in spacing)
            + (first,))  # fmt: skip
