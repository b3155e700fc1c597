"""Cost-effective data-parallel load balancing (Ahrens & Hansen 1995).

A *balanced loop* runs a collection of independent tasks: problem datum ``i`` has
``workload[i]`` tasks, numbered ``0 .. workload[i] - 1``, and every task may run in any
order. One virtual processor (VP) holds one datum, so the VP set has ``len(workload)``
elements. Three forms of the loop are provided, all running the same *solution phase*
(the caller's ``body``):

``"original"``
    The loop of Figure 1 of the paper: iteration ``i`` runs task ``i`` on every VP whose
    workload exceeds ``i``, ``MAX(workload)`` iterations.
``"cost-effective"``
    The loop of Figure 2: each iteration runs the *information gathering* phase (the trial
    workload of section 2.3), the *decision* phase (savings in iterations against the
    overestimated cost in iterations, section 2.1) and, when balancing pays, the
    *redistribution* phase (section 2.3.1: a send to block heads through scan pointers,
    segmented copy-scans, a segmented add-scan renumbering task indices), then the
    solution phase on every VP with work left.
``"expand"``
    The flattened form a GPU program would use: an exclusive add-scan of the workload and
    a load-balancing search (a send of each datum's number to its first task followed by a
    max-scan, the SIMD form of moderngpu's ``transform_lbs``) give every task its datum;
    all tasks then run at once, in chunks of at most ``chunk`` tasks.

Everything runs on the machine's instructions (``scan``, ``send``, ``get``, ``count``,
``reduce``), inside ``machine.phase`` blocks named as in the paper, so ``machine.stats``
gives Table 4 of the paper in form. Elementwise work done with plain array operations is
charged to the model clock with ``machine.charge``.

The cost overestimate
---------------------
The decision compares the *savings* ``MAX(workload) - MAX(new_workload)`` with the *cost*
in iterations ``(time_info + time_redis) / time_soln``, which must never be
underestimated. ``overestimate`` is resolved in this order:

1. a number given by the caller;
2. a stored calibration (:func:`calibrate`, the procedure of section 2.1: the longest
   information gathering time plus the longest redistribution time over the shortest
   solution time, the largest over a set of runs, plus a constant). Calibrations live in a
   JSON file keyed by loop name, clock and machine preset (the cost model's name, e.g.
   ``CM-5/512``; for the wall clock also the backend and host). The user file
   (``overestimates.json`` in :func:`kernels.cache.cache_dir`: ``$SIMD_EMU_CACHE_DIR``, else
   ``$XDG_CACHE_HOME/simd-emu``, else ``~/.cache/simd-emu``) is searched before the file shipped
   with the package (``simd/balance/overestimates.json``). An entry records the smallest
   VP ratio it was calibrated at and is only used at that VP ratio or above, because the
   cost in iterations falls as the VP ratio grows (the network terms of scans and sends
   are amortised over more VPs);
3. otherwise an *online* estimate: ``f * (longest information gathering seen + longest
   redistribution seen) / shortest solution seen + 2`` with ``f`` 1.5 on the model clock
   and 2 on the (noisier) wall clock, where the redistribution time before the first one
   is measured by a dry run on a scratch machine of the same kind.

A :class:`CostOverestimateWarning` is issued when the measured cost of an iteration that
redistributed exceeds the overestimate in use (the paper's warning, section 4.1).

Until the first redistribution every processor works on the same task index, so the
cost-effective loop runs (and is charged) as Figure 1 with a front-end index; the arrays
``workload`` and ``parallel_index`` of Figure 2 are materialised at the first
redistribution.

Refinements over the paper, on by default (``prune=True``), that never change a decision:

* the savings of a redistribution are at most ``MAX(workload) - 1``, and the front end
  knows ``MAX(workload)`` (the first gathering computes it, and without redistribution it
  falls by exactly one per iteration), so while ``MAX(workload) - 1 <= overestimate`` the
  gathering is skipped (for the rest of the loop, as MAX only falls);
* the gathering stops after step 1, 2 or 3 of section 2.3 as soon as a lower bound of
  ``MAX(new_workload)`` computed from the scalars gathered so far shows that the savings
  cannot exceed the overestimate (:func:`gather_information`).

On balanced data the cost-effective loop thus costs the original loop plus one or two
cheap reductions per iteration at most. ``prune=False`` runs the loop of Figure 2
literally: all five steps of the gathering and a decision in every iteration. With the
online estimate no decision is taken before one solution iteration has been measured.

Modules
-------
``records``
    Phase names, per-phase timings (:class:`PhaseTiming`) and the loop's result
    (:class:`LoopResult`).
``phases``
    The three phases of Figure 2: :func:`gather_information`, :func:`decide`,
    :func:`redistribute`.
``search``
    :func:`load_balancing_search`, the one primitive of the ``expand`` form, and the
    expand form's expansion (``Expansion``).
``search_kernels``
    The same search fused into one kernel (a scalar body for ``numba.njit`` and
    ``numba.cuda.jit``), which the expansion runs where it charges the same.
``forms``
    What every form shares (the loop's state, the live processors) and two of the forms:
    original and expand.
``cost_effective_form``
    The cost-effective form (Figure 2).
``loops``
    :func:`run_loop`, and ``LOOP_FORMS``, the table of the three forms by name.
``store``, ``estimate``, ``calibration``
    Stored overestimates, the overestimate in use, :func:`calibrate`.

References
----------
.. [1] J. P. Ahrens and C. D. Hansen, "Cost-Effective Data-Parallel Load Balancing",
   University of Washington TR 95-04-02, 1995.
.. [2] S. Baxter, moderngpu 2.0, "transform_lbs" / load-balancing search.
"""

from __future__ import annotations

from simd.balance.cost_effective.calibration import Calibration, calibrate
from simd.balance.cost_effective.loops import FORMS, LOOP_FORMS, run_loop
from simd.balance.cost_effective.phases import (
    Information,
    Redistribution,
    decide,
    gather_information,
    redistribute,
)
from simd.balance.cost_effective.records import (
    PHASE_DECISION,
    PHASE_EXPANSION,
    PHASE_INFORMATION,
    PHASE_REDISTRIBUTION,
    PHASE_SOLUTION,
    BalanceEvent,
    CostOverestimateWarning,
    LoopResult,
    PhaseTiming,
)
from simd.balance.cost_effective.search import load_balancing_search
from simd.balance.cost_effective.store import (
    load_overestimate,
    overestimate_key,
    store_overestimate,
    user_store_path,
)

__all__ = [
    "FORMS",
    "LOOP_FORMS",
    "PHASE_DECISION",
    "PHASE_EXPANSION",
    "PHASE_INFORMATION",
    "PHASE_REDISTRIBUTION",
    "PHASE_SOLUTION",
    "BalanceEvent",
    "Calibration",
    "CostOverestimateWarning",
    "Information",
    "LoopResult",
    "PhaseTiming",
    "Redistribution",
    "calibrate",
    "decide",
    "gather_information",
    "load_balancing_search",
    "load_overestimate",
    "overestimate_key",
    "redistribute",
    "run_loop",
    "store_overestimate",
    "user_store_path",
]
