"""Workloads with the statistics of Ahrens & Hansen's Table 1, and a solution phase that
costs what the renderer's does on the model clock: what ``bench.render`` (the paper-like
tables) and ``bench.cm5.paper`` (the reproduction of Tables 2 to 4) share.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simd import Machine

__all__ = ["PAPER_TABLE1", "SyntheticBody", "paper_like_workload", "task_costs"]

#: Table 1 of Ahrens & Hansen (1995): (scan max, scan avg, z-buffer max, z-buffer avg) per view.
PAPER_TABLE1 = {
    "balanced": {
        "(0,0)": (8, 5, 7, 1),
        "(45,45)": (10, 5, 8, 1),
        "M(0,0)": (13, 5, 17, 2),
        "M(45,45)": (21, 1, 21, 3),
    },
    "unbalanced": {
        "(0,0)": (231, 6, 9, 1),
        "(45,45)": (169, 6, 30, 1),
        "M(0,0)": (512, 8, 14, 1),
        "M(45,45)": (468, 4, 119, 2),
    },
}


def paper_like_workload(
    n: int, wmax: int, avg: float, rng: np.random.Generator, *, clustered: bool = False
) -> np.ndarray:
    """``n`` task counts with maximum ``wmax`` and mean about ``avg``: a geometric bulk
    (mean 70% of ``avg``, at least 1) and a tail, uniform in [wmax/4, wmax], carrying the
    rest of the mean. ``clustered`` puts the tail in one run of consecutive elements, as
    an isosurface's heavy polygons come from one region of the volume (``bench/cm5/fit.py``);
    otherwise the tail is scattered at random."""
    bulk_mean = max(1.0, 0.7 * avg)
    w = rng.geometric(1.0 / bulk_mean, n).astype(np.int64)
    w = np.minimum(w, wmax)
    tail_mean = 0.625 * wmax
    frac = max(0.0, (avg - w.mean()) / max(tail_mean - w.mean(), 1e-9))
    k = int(round(frac * n))
    if clustered:
        start = int(rng.integers(0, n - k)) if k < n else 0
        idx = np.arange(start, start + max(k, 1))
        w[idx] = rng.integers(max(1, wmax // 4), wmax + 1, idx.size)
        w[idx[rng.integers(0, idx.size)]] = wmax
        return w
    if k:
        idx = rng.choice(n, k, replace=False)
        w[idx] = rng.integers(max(1, wmax // 4), wmax + 1, k)
    w[rng.integers(0, n)] = wmax
    return w


class SyntheticBody:
    """A solution phase that costs what the renderer's does on the model clock: the scan
    conversion body packs its non-empty spans (a scan), the z-buffer body sends every
    pixel through the router; ``task_cost`` is the renderer's elementwise work per task."""

    def __init__(self, m: Machine, kind: str, size: int) -> None:
        self.m, self.kind, self.size = m, kind, size
        self.target = m.xp.zeros(size, dtype=np.int64) if kind == "z-buffer" else None

    def __call__(self, items: Any, tasks: Any) -> None:
        if self.kind == "scan-conversion":
            self.m.pack(items, (items + tasks) >= 0)
        else:
            self.m.send(items, (items * 7 + tasks) % self.size, combine="min", into=self.target)


def task_costs() -> dict[str, float]:
    from renderer.stages.scan import ScanConverter
    from renderer.stages.zbuffer import ZBufferBody

    return {"scan-conversion": ScanConverter.TASK_COST, "z-buffer": ZBufferBody.TASK_COST}
