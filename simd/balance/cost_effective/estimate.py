"""The cost overestimate a cost-effective loop decides with: given, stored or online.

See the package docstring: a number given by the caller wins, then a stored calibration,
then an online estimate ``f * (longest information gathering + longest redistribution) /
shortest solution + 2`` from the times seen so far, with ``f`` 1.5 on the model clock and 2
on the (noisier) wall clock; before the first redistribution its time comes from a dry run
on a scratch machine of the same kind.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from simd.balance.cost_effective.phases import gather_information, redistribute
from simd.balance.cost_effective.store import load_overestimate

__all__ = ["ONLINE_FACTOR", "ONLINE_MARGIN", "Overestimate", "dry_run_costs"]

#: Online estimate: factor per clock (wall times are noisier) and constant added to the
#: measured cost in iterations.
ONLINE_FACTOR = {"model": 1.5, "wall": 2.0}
ONLINE_MARGIN = 2.0


class Overestimate:
    """The overestimate in use (``value``, None before an online one can be formed).

    ``source`` is "given", "stored" or "online"; an online estimate learns from
    :meth:`observe`.
    """

    def __init__(self, machine: Any, n: int, overestimate: float | None, clock: str, name: str):
        self.clock = clock
        self.value: float | None = None
        self.source = "given"
        if overestimate is not None:
            self.value = float(overestimate)
            return
        stored = load_overestimate(machine, name=name, clock=clock, n=n)
        if stored is not None:
            self.value = stored
            self.source = "stored"
            return
        self.source = "online"
        info, redis = dry_run_costs(machine, n, clock)
        self.max_info = info
        self.max_redis = redis
        # No decision before one solution iteration has been measured.
        self.min_soln = math.inf

    def observe(self, info: float | None, redis: float | None, soln: float | None) -> None:
        """Learn from the times of one iteration (online estimates only)."""
        if self.source != "online":
            return
        if info is not None:
            self.max_info = max(self.max_info, info)
        if redis is not None:
            self.max_redis = max(self.max_redis, redis)
        if soln is not None and soln > 0:
            self.min_soln = min(self.min_soln, soln)
        if math.isfinite(self.min_soln):
            cost = (self.max_info + self.max_redis) / self.min_soln
            self.value = ONLINE_FACTOR[self.clock] * cost + ONLINE_MARGIN


def dry_run_costs(machine: Any, n: int, clock: str) -> tuple[float, float]:
    """Information gathering and redistribution costs for ``n`` VPs, on a scratch machine.

    Returns (gathering, redistribution) in model cycles or wall seconds; the smaller of two
    runs, so that one-time start-up costs do not count.

    Examples
    --------
    >>> from simd import Machine
    >>> info, redis = dry_run_costs(Machine(pes=4, backend="numpy"), 16, "model")
    >>> info > 0 and redis > info
    True
    """
    # The model clock is the same on every backend: its dry run needs no device (and no
    # host syncs on a GPU), and it gives the same cycles every time for the same machine
    # shape, cost model and size: kept (the dry run over every VP was most of the host
    # time of a cost-effective frame). Wall times are measured on a machine of the same
    # kind, every time.
    if clock == "model":
        key = (type(machine), machine.pes, machine.cost, n)
        costs = _MODEL_DRY_RUNS.get(key)
        if costs is None:
            if len(_MODEL_DRY_RUNS) >= 64:  # a bound on what many sizes keep
                _MODEL_DRY_RUNS.clear()
            costs = _MODEL_DRY_RUNS[key] = _dry_run(machine, n, clock)
        return costs
    return _dry_run(machine, n, clock)


#: Model-clock dry runs by (machine type, PE shape, cost model, VPs): (gathering,
#: redistribution) cycles.
_MODEL_DRY_RUNS: dict[tuple, tuple[float, float]] = {}


def _dry_run(machine: Any, n: int, clock: str) -> tuple[float, float]:
    backend = "numpy" if clock == "model" else machine.backend_spec
    scratch = type(machine)(pes=machine.pes, backend=backend, cost=machine.cost)
    xp = scratch.xp
    best = [math.inf, math.inf]
    for _ in range(2):
        w = xp.zeros(n, dtype=np.int64)
        w[0] = max(n, 1)
        pi = (w > 0).astype(np.int64)
        pd = xp.arange(n, dtype=np.int64)
        with scratch.phase("information gathering") as info_phase:
            info = gather_information(w, machine=scratch)
        with scratch.phase("redistribution") as redis_phase:
            redistribute(w, pi, pd, info, machine=scratch, steps=False)
        for k, record in enumerate((info_phase, redis_phase)):
            best[k] = min(best[k], record.cycles if clock == "model" else record.wall)
        del w, pi, pd, info  # before the second run makes its own: one set at a time
    return best[0], best[1]
