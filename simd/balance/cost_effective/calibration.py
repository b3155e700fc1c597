"""Calibration of the cost overestimate, by the procedure of Ahrens & Hansen (1995), section 2.1."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simd.balance.cost_effective.loops import run_loop
from simd.balance.cost_effective.records import check_clock
from simd.balance.cost_effective.store import overestimate_key, store_overestimate

__all__ = ["Calibration", "calibrate"]


@dataclass
class Calibration:
    """Result of :func:`calibrate`."""

    overestimate: float
    costs: list[float | None]
    margin: float
    clock: str
    key: str
    min_vp_ratio: int
    path: Path | None = None


def calibrate(  # noqa: PLR0913 (the public signature)
    workloads: Iterable[Any],
    body: Callable[[Any, Any], None] | None = None,
    *,
    machine: Any,
    clock: str = "model",
    name: str = "scan-conversion",
    task_cost: float = 1.0,
    margin: float = 2.0,
    store: bool = True,
    path: str | os.PathLike | None = None,
) -> Calibration:
    """Calibrate the cost overestimate by the procedure of Ahrens & Hansen (1995), section 2.1.

    The load-balanced loop is run on every workload with balancing forced whenever it
    saves anything (overestimate 0); for each run the longest information gathering time
    plus the longest redistribution time is divided by the shortest solution time. The
    largest of these, plus the constant ``margin`` (iterations), is the overestimate.

    Parameters
    ----------
    workloads : iterable of 1-D integer arrays
        Calibration data sets; at least one must be unbalanced enough to redistribute.
    body : callable, optional
        The solution phase, as for :func:`run_loop` (None: no work besides ``task_cost``).
    machine : simd.Machine
    clock : str
        "model" or "wall".
    name, task_cost
        As for :func:`run_loop`; the calibration is stored under ``name``.
    margin : float
        Constant added to the largest measured cost (iterations).
    store : bool
        Write the result with :func:`store_overestimate` (to ``path`` or the user file).

    Returns
    -------
    Calibration

    Examples
    --------
    >>> import os, tempfile
    >>> from simd import Machine
    >>> from simd.balance import load_overestimate
    >>> m, path = Machine(pes=8, backend="numpy"), os.path.join(tempfile.mkdtemp(), "o.json")
    >>> cal = calibrate([[200] + [0] * 63, [3] * 64], machine=m, task_cost=100,
    ...                 name="demo", path=path)
    >>> cal.costs[1] is None       # the balanced workload never redistributes
    True
    >>> cal.overestimate == cal.costs[0] + 2.0 == load_overestimate(m, name="demo", path=path)
    True
    """
    check_clock(clock)
    if not (math.isfinite(margin) and margin >= 0):
        raise ValueError(f"margin must be a finite number >= 0, got {margin!r}")
    costs: list[float | None] = []
    min_vpr: int | None = None
    for workload in workloads:
        res = run_loop(
            workload,
            body,
            machine=machine,
            form="cost-effective",
            overestimate=0.0,
            clock=clock,
            name=name,
            task_cost=task_cost,
            prune=False,
            warn=False,
        )
        cost = res.cost_in_iterations(clock)
        costs.append(cost)
        if cost is not None:
            vpr = machine.cost.vp_ratio(len(workload))
            min_vpr = vpr if min_vpr is None else min(min_vpr, vpr)
    measured = [c for c in costs if c is not None]
    if not measured:
        raise ValueError(
            "calibration needs at least one workload that the loop redistributes (an "
            "unbalanced one, with idle processors); none of the workloads given did"
        )
    over = float(max(measured) + margin)
    key = overestimate_key(machine, name=name, clock=clock)
    stored = None
    if store:
        stored = store_overestimate(
            machine,
            over,
            name=name,
            clock=clock,
            min_vp_ratio=min_vpr or 1,
            path=path,
            extra={
                "max_cost": float(max(measured)),
                "margin": float(margin),
                "datasets": len(costs),
            },
        )
    return Calibration(over, costs, float(margin), clock, key, min_vpr or 1, stored)
