"""Workloads to balance: the user's own (read from a file and checked), or built-in families.

A *workload* is a count of tasks per processor (a 1-D array: the loops of Ahrens & Hansen
1995 take it with one datum per processor) or a 2-D grid of counts for the mesh balancers
(Biagioni & Prins 1991: a data grid whose point ``(i, j)`` stays active for
``grid[i, j]`` iterations). :func:`check_workload` refuses, in one line, what no balancer
can run: an empty, negative, fractional, NaN or infinite workload, or one too large for
the machine. :func:`read_workload` reads ``.npy``, ``.csv`` and ``.txt`` files and checks
them.

The built-in families (:data:`FAMILIES`, made by :func:`generate`):

``uniform``
    Every count drawn uniformly between half and one and a half times the mean: a balanced
    workload, where no balancing should pay.
``zipf``, ``pareto``
    Heavy tails: Zipf's law with exponent ``param`` (default 2), or a Pareto law with
    shape ``param`` (default 1.5), each draw capped at :data:`TAIL_CAP` times the
    smallest.
``bimodal``
    Half the counts heavy, ``1 + param`` times the light ones (default 3), at random:
    the bi-modal task set of Barker & Chrisochoides, section 6.1.
``linear-2``, ``linear-4``, ``step``
    Barker & Chrisochoides' benchmarks, laid along the processors (along the rows
    of a grid): counts growing linearly to twice or four times the first, or the last
    quarter twice the rest.
``hotspot``
    A single hot spot: a Gaussian bump of counts at the middle, ``param`` (default 0.05)
    its width as a fraction of the extent; the rest of the machine idle.

Each family is scaled to the mean asked for and rounded to whole tasks; the random ones are
drawn from ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from simd.operands import MAX_PES

__all__ = [
    "FAMILIES",
    "MAX_COUNT",
    "MAX_TASKS",
    "check_workload",
    "family_label",
    "generate",
    "read_workload",
]

#: The most tasks one processor (or grid point) may hold: a loop's task index is a 32-bit
#: integer on the emulated machine.
MAX_COUNT = 2**31 - 1
#: The most tasks a workload may hold in all: one run of a loop runs every task.
MAX_TASKS = 2**31 - 1

#: The heavy-tailed families' draws are capped at this many times their smallest, so that
#: one draw far out in the tail cannot make a run of millions of iterations.
TAIL_CAP = 1000.0

#: The suffixes :func:`read_workload` reads.
SUFFIXES = (".npy", ".csv", ".txt")


def check_workload(values: Any, *, what: str = "workload") -> np.ndarray:
    """``values`` as an int64 array of task counts, or a one-line ``ValueError``.

    Parameters
    ----------
    values : array_like
        One count per processor (1-D) or a 2-D grid of counts.
    what : str
        How the messages name the workload (a file name, say).

    Returns
    -------
    numpy.ndarray
        The counts, int64, 1-D or 2-D.

    Raises
    ------
    ValueError
        Empty, not 1-D or 2-D, not numbers, NaN or infinite, negative, fractional, or too
        large for the machine (more entries than :data:`simd.operands.MAX_PES`, a count
        above :data:`MAX_COUNT`, more than :data:`MAX_TASKS` tasks in all).

    Examples
    --------
    >>> check_workload([100, 19, 0, 0, 0, 0, 0]).tolist()
    [100, 19, 0, 0, 0, 0, 0]
    >>> check_workload([3, -1])
    Traceback (most recent call last):
    ValueError: workload holds a negative count (-1 at index 1); counts are numbers of tasks
    >>> check_workload([1.0, float("nan")])
    Traceback (most recent call last):
    ValueError: workload holds NaN at index 1
    """
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} is not an array of numbers ({exc})") from None
    if arr.dtype == object or arr.dtype.kind not in "iuf":
        raise ValueError(f"{what} must hold numbers of tasks, got {_kind(arr)}")
    if arr.size == 0:
        raise ValueError(f"{what} is empty: give at least one count")
    if arr.ndim not in (1, 2):
        raise ValueError(
            f"{what} must be one count per processor (1-D) or a 2-D grid of counts, got "
            f"{arr.ndim} dimensions {tuple(arr.shape)}"
        )
    if arr.size > MAX_PES:
        raise ValueError(
            f"{what} has {arr.size:,} entries, more than the machine's {MAX_PES:,} processors "
            "(2**24)"
        )
    if arr.dtype.kind == "f":
        _check_floats(arr, what)
    low = arr.min()
    if low < 0:
        raise ValueError(
            f"{what} holds a negative count ({_number(low)} at index {_where(arr, arr == low)}); "
            "counts are numbers of tasks"
        )
    high = arr.max()
    if high > MAX_COUNT:
        raise ValueError(
            f"{what} holds {_number(high)} tasks at index {_where(arr, arr == high)}, more than "
            "the 2**31 - 1 one processor can hold"
        )
    counts = arr.astype(np.int64)
    total = int(counts.sum())
    if total > MAX_TASKS:
        raise ValueError(f"{what} has {total:,} tasks in all, more than the 2**31 - 1 a run takes")
    return counts


def _check_floats(arr: np.ndarray, what: str) -> None:
    bad = ~np.isfinite(arr)
    if bad.any():
        value = arr[bad].flat[0]
        name = "NaN" if np.isnan(value) else "an infinite count"
        raise ValueError(f"{what} holds {name} at index {_where(arr, bad)}")
    frac = arr != np.floor(arr)
    if frac.any():
        raise ValueError(
            f"{what} holds a fractional count ({arr[frac].flat[0]:g} at index "
            f"{_where(arr, frac)}); counts are whole numbers of tasks"
        )


def _kind(arr: np.ndarray) -> str:
    if arr.dtype.kind == "b":
        return "booleans"
    if arr.dtype.kind in "US":
        return "text"
    return f"dtype {arr.dtype}"


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float | np.floating) else str(int(value))


def _where(arr: np.ndarray, mask: np.ndarray) -> str:
    """The first index where ``mask`` holds, as ``7`` or ``(2, 3)``."""
    flat = int(np.flatnonzero(mask)[0])
    if arr.ndim == 1:
        return str(flat)
    return str(tuple(int(i) for i in np.unravel_index(flat, arr.shape)))


def read_workload(path: str | os.PathLike[str]) -> np.ndarray:
    """The checked workload in the file ``path``.

    ``.npy`` is a NumPy array; ``.csv`` a table of numbers separated by commas and
    ``.txt`` one separated by blanks (lines starting with ``#`` are skipped). One row or
    one column is one count per processor; several rows and columns are a 2-D grid.

    Raises
    ------
    ValueError
        One line naming the file: missing, of another format, not numbers, or a workload
        :func:`check_workload` refuses.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "tasks.csv"
    >>> _ = path.write_text("100,19,0,0,0,0,0\\n")
    >>> read_workload(path).tolist()
    [100, 19, 0, 0, 0, 0, 0]
    """
    path = Path(path)
    shown = os.fspath(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise ValueError(
            f"{shown}: unknown format {suffix or '(no suffix)'!r}; use .npy, .csv or .txt"
        )
    if not path.is_file():
        raise ValueError(f"{shown}: {'is a folder' if path.is_dir() else 'no such file'}")
    try:
        if suffix == ".npy":
            values = np.load(path, allow_pickle=False)
        else:
            with warnings.catch_warnings():  # an empty file: said below, in one line
                warnings.simplefilter("ignore", UserWarning)
                delimiter = "," if suffix == ".csv" else None
                values = np.loadtxt(path, delimiter=delimiter, ndmin=1, dtype=np.float64)
    except (OSError, ValueError, EOFError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"{shown}: not a workload file ({reason})") from None
    return check_workload(values, what=shown)


# --------------------------------------------------------------------------------------
# Built-in families
# --------------------------------------------------------------------------------------


def _positions(shape: tuple[int, ...]) -> np.ndarray:
    """Each entry's place along the first axis, in [0, 1]."""
    n = shape[0]
    x = np.arange(n, dtype=np.float64) / max(n - 1, 1)
    return np.broadcast_to(x.reshape((n,) + (1,) * (len(shape) - 1)), shape)


def _uniform(shape, param, rng):
    return rng.uniform(0.5, 1.5, shape)


def _zipf(shape, param, rng):
    a = 2.0 if param is None else float(param)
    if not a > 1:
        raise ValueError(f"zipf needs an exponent above 1, got {a:g}")
    return np.minimum(rng.zipf(a, shape), TAIL_CAP).astype(np.float64)


def _pareto(shape, param, rng):
    alpha = 1.5 if param is None else float(param)
    if not alpha > 0:
        raise ValueError(f"pareto needs a shape above 0, got {alpha:g}")
    return np.minimum(1.0 + rng.pareto(alpha, shape), TAIL_CAP)


def _bimodal(shape, param, rng):
    variance = 3.0 if param is None else float(param)
    if not variance >= 0:
        raise ValueError(f"bimodal needs a variance of at least 0, got {variance:g}")
    return np.where(rng.random(shape) < 0.5, 1.0 + variance, 1.0)


def _linear(ratio: float):
    def make(shape, param, rng):
        return 1.0 + (ratio - 1.0) * _positions(shape)

    return make


def _step(shape, param, rng):
    return np.where(_positions(shape) >= 0.75, 2.0, 1.0)


def _hotspot(shape, param, rng):
    sigma = 0.05 if param is None else float(param)
    if not sigma > 0:
        raise ValueError(f"hotspot needs a width above 0, got {sigma:g}")
    d2 = np.zeros(shape)
    for axis, n in enumerate(shape):
        x = (np.arange(n) + 0.5) / n - 0.5
        d2 = d2 + (x**2).reshape([n if a == axis else 1 for a in range(len(shape))])
    return np.exp(-d2 / (2 * sigma**2))


#: The built-in families by name: ``make(shape, param, rng)`` gives relative counts.
FAMILIES: dict[str, Callable[[tuple[int, ...], float | None, Any], np.ndarray]] = {
    "uniform": _uniform,
    "zipf": _zipf,
    "pareto": _pareto,
    "bimodal": _bimodal,
    "linear-2": _linear(2.0),
    "linear-4": _linear(4.0),
    "step": _step,
    "hotspot": _hotspot,
}


def generate(
    family: str,
    shape: int | tuple[int, ...],
    *,
    mean: float = 16.0,
    param: float | None = None,
    seed: int = 0,
) -> np.ndarray:
    """A workload of a built-in family: counts of tasks with about ``mean`` per entry.

    Parameters
    ----------
    family : str
        One of :data:`FAMILIES` (see the module docstring).
    shape : int or (int, int)
        Processors (1-D), or the shape of a 2-D grid of data points.
    mean : float
        Tasks per entry on average, before rounding to whole tasks.
    param : float, optional
        The family's parameter: Zipf's exponent, Pareto's shape, the bi-modal variance,
        the hot spot's width (the others take none).
    seed : int
        Seed of the random families.

    Returns
    -------
    numpy.ndarray
        int64 counts of ``shape``.

    Examples
    --------
    >>> generate("linear-4", 4, mean=10).tolist()
    [4, 8, 12, 16]
    >>> generate("step", 8, mean=10).tolist()
    [8, 8, 8, 8, 8, 8, 16, 16]
    >>> generate("hotspot", (3, 3), mean=1, param=0.2).tolist()
    [[0, 1, 0], [1, 4, 1], [0, 1, 0]]
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; choose from {', '.join(FAMILIES)}")
    shape = (int(shape),) if isinstance(shape, int | np.integer) else tuple(int(s) for s in shape)
    if not shape or len(shape) > 2 or min(shape) < 1:
        raise ValueError(f"shape must be a positive int or a pair of them, got {shape}")
    if math.prod(shape) > MAX_PES:
        raise ValueError(f"shape {shape} has more than {MAX_PES:,} entries (2**24)")
    if not (math.isfinite(mean) and mean > 0):
        raise ValueError(f"mean must be a positive number of tasks, got {mean!r}")
    raw = np.asarray(FAMILIES[family](shape, param, np.random.default_rng(seed)), np.float64)
    counts = np.rint(raw * (mean / raw.mean()))
    return check_workload(counts, what=f"family {family!r}")


def family_label(family: str, param: float | None = None) -> str:
    """How tables name a family: ``zipf``, or ``zipf(2.5)`` with a parameter.

    >>> family_label("zipf"), family_label("pareto", 1.2)
    ('zipf', 'pareto(1.2)')
    """
    return family if param is None else f"{family}({param:g})"
