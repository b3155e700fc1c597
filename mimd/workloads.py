"""Task sets: Barker & Chrisochoides' synthetic benchmarks and Muniz & Zaluska's ray-tracing
workload.

Synthetic task sets of Barker & Chrisochoides, sections 5 and 6 (task weight as a function of
task id, tasks in id order, so a block placement gives the processors a linear or step imbalance):

* ``linear-2`` / ``linear-4``: weights grow linearly from ``w`` to 2w / 4w;
* ``step``: the last 25 % of the tasks weigh twice the others;
* ``bimodal``: a fraction of heavy tasks (50 % in section 6.1) ``1 + variance`` times the
  light ones.

Weights are scaled so the total work is ``work_per_processor * processors`` seconds: the
same problem cut into more tasks per processor (over-decomposition) has the same total work.
"""

from __future__ import annotations

import numpy as np

__all__ = ["linear", "step", "bimodal", "workload", "WORKLOADS"]


def _check_n(n) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"number of tasks must be a positive integer, got {n!r}")
    return int(n)


def _scale(w: np.ndarray, total: float) -> np.ndarray:
    if not (total > 0 and np.isfinite(total)):
        raise ValueError(f"total work must be a positive number, got {total!r}")
    return w * (total / w.sum())


def linear(n: int, ratio: float = 2.0, *, total: float | None = None) -> np.ndarray:
    """Weights growing linearly with the task id from 1 to ``ratio`` (the linear-2 and linear-4
    sets of Barker & Chrisochoides).

    Examples
    --------
    >>> linear(4, 4.0).tolist()
    [1.0, 2.0, 3.0, 4.0]
    >>> float(linear(4, 4.0, total=20.0).sum())
    20.0
    """
    n = _check_n(n)
    if not ratio >= 1:
        raise ValueError(f"ratio must be >= 1, got {ratio!r}")
    w = 1.0 + (ratio - 1.0) * (np.arange(n) / max(n - 1, 1))
    return w if total is None else _scale(w, total)


def step(
    n: int, heavy_fraction: float = 0.25, ratio: float = 2.0, *, total: float | None = None
) -> np.ndarray:
    """The last ``heavy_fraction`` of the tasks weigh ``ratio`` times the others.

    Examples
    --------
    >>> step(8).tolist()
    [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0]
    """
    n = _check_n(n)
    if not 0 <= heavy_fraction <= 1:
        raise ValueError(f"heavy_fraction must be in [0, 1], got {heavy_fraction!r}")
    if not ratio > 0:
        raise ValueError(f"ratio must be > 0, got {ratio!r}")
    w = np.ones(n)
    nh = int(round(heavy_fraction * n))
    if nh:
        w[n - nh :] = ratio
    return w if total is None else _scale(w, total)


def bimodal(
    n: int, heavy_fraction: float = 0.5, variance: float = 1.0, *, total: float | None = None
) -> np.ndarray:
    """Two task types (Barker & Chrisochoides, section 6.1): heavy ones weigh
    ``1 + variance``.

    Examples
    --------
    >>> bimodal(4, 0.5, 2.0).tolist()
    [1.0, 1.0, 3.0, 3.0]
    """
    if not variance >= 0:
        raise ValueError(f"variance must be >= 0, got {variance!r}")
    return step(n, heavy_fraction, 1.0 + variance, total=total)


WORKLOADS = ("linear-2", "linear-4", "step", "bimodal", "raytrace", "uniform")
#: the keyword options each workload takes (the others take none)
_OPTIONS = {
    "bimodal": ("heavy_fraction", "variance"),
    "raytrace": ("pixels", "tiles", "total", "machine", "seed"),
}


def workload(
    name: str,
    processors: int,
    tasks_per_processor: int = 8,
    *,
    work_per_processor: float = 10.0,
    seed: int = 0,
    **kw,
) -> np.ndarray:
    """Task costs (seconds) of a named workload for ``processors`` processors.

    Parameters
    ----------
    name : {"linear-2", "linear-4", "step", "bimodal", "raytrace", "uniform"}
        ``raytrace`` traces Muniz & Zaluska's height field (150x150 pixels, 64 sub-surfaces unless
        ``pixels`` and ``tiles`` say otherwise) and ignores ``tasks_per_processor``;
        ``uniform`` draws costs uniformly in [0.5, 1.5] with ``seed``.
    processors, tasks_per_processor : int
    work_per_processor : float
        Total work divided by the processors (seconds).
    seed : int
        Seed of ``uniform``.
    **kw
        ``bimodal``: ``heavy_fraction`` (0.5) and ``variance`` (1.0); ``raytrace``: the
        options of :func:`~mimd.raytrace.raytrace_costs`. Any other option
        is a ``TypeError``.

    Examples
    --------
    >>> workload("linear-2", 4, 2, work_per_processor=3.0).round(3).tolist()
    [1.0, 1.143, 1.286, 1.429, 1.571, 1.714, 1.857, 2.0]
    """
    if name not in WORKLOADS:
        raise ValueError(f"unknown workload {name!r}; expected one of {WORKLOADS}")
    allowed = _OPTIONS.get(name, ())
    unknown = sorted(set(kw) - set(allowed))
    if unknown:
        raise TypeError(
            f"workload {name!r} takes no option(s) {unknown}"
            + (f"; its options are {list(allowed)}" if allowed else "")
        )
    if name == "raytrace":
        from .raytrace import raytrace_costs

        return raytrace_costs(**kw)
    n = _check_n(processors) * _check_n(tasks_per_processor)
    total = work_per_processor * processors
    if name == "linear-2":
        return linear(n, 2.0, total=total)
    if name == "linear-4":
        return linear(n, 4.0, total=total)
    if name == "step":
        return step(n, total=total)
    if name == "bimodal":
        return bimodal(n, kw.get("heavy_fraction", 0.5), kw.get("variance", 1.0), total=total)
    rng = np.random.default_rng(seed)
    return _scale(rng.uniform(0.5, 1.5, n), total)
