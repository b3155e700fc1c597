"""Host syncs of the cost-effective loop on a GPU, counted without one.

A workload that never stops the gathering early (``prune=False``, every gathering runs
steps 1 to 5) and balances once: each gathering reads its scalars in one transfer and the
redistribution its two maxima in one, so the loop syncs once per iteration plus a
constant. The decisions, the model clock and every instruction's call count are those of
the NumPy backend.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from kernels import counting
from simd import Machine
from simd.balance.cost_effective.loops import run_loop


def _run(backend):
    workload = np.zeros(64, dtype=np.int64)
    workload[[0, 1, 5]] = [400, 90, 30]
    m = Machine(backend=backend, pes=64)
    pairs = []

    def body(items, tasks):
        pairs.extend(zip(m.asnumpy(items).tolist(), m.asnumpy(tasks).tolist(), strict=True))

    with warnings.catch_warnings(), counting.measure() as c:
        warnings.simplefilter("ignore")
        res = run_loop(
            m.asarray(workload),
            body,
            machine=m,
            form="cost-effective",
            overestimate=20.0,
            prune=False,
        )
    return m, res, sorted(pairs), c


def test_cost_effective_syncs_once_per_iteration_plus_a_constant():
    m, res, pairs, c = _run("counting")
    ref_m, ref, ref_pairs, _ = _run("numpy")
    assert res.decisions == ref.decisions == 1
    assert res.iterations == ref.iterations
    assert pairs == ref_pairs
    assert m.clock == ref_m.clock
    phases = {k: dict(v.calls) for k, v in m.stats.phases.items()}
    assert phases == {k: dict(v.calls) for k, v in ref_m.stats.phases.items()}
    gathering = phases["scan-conversion/information gathering"]
    # every gathering ran all its steps: a count and three reductions each
    assert gathering["count"] == res.iterations
    assert gathering["reduce"] >= 3 * res.iterations
    # The body's own reads (asnumpy of items and tasks) are one sync per call each; the
    # loop itself: one per gathering, one for the redistribution, one table of live counts
    # per redistribution and at the start, one read of the workload's sum/max/min.
    body_syncs = 2 * res.iterations
    loop_syncs = c.total.syncs - body_syncs
    assert loop_syncs == res.iterations + 2 * res.decisions + 2, dict(c.total.sync_ops)
    assert not c.total.implicit


@pytest.mark.parametrize("form", ["original", "cost-effective", "expand"])
def test_known_workload_figures_skip_the_start_up_read(form):
    """``workload_stats`` (sum, max, min known to the caller): one sync fewer, the same
    tasks, iterations and model clock."""
    workload = np.array([3, 0, 5, 1, 2], dtype=np.int64)
    runs = []
    for stats in (None, (11, 5, 0)):
        m = Machine(backend="counting", pes=8)
        seen = []
        with counting.measure() as c:
            res = run_loop(
                m.asarray(workload),
                lambda i, t, seen=seen: seen.append((i, t)),
                machine=m,
                form=form,
                overestimate=1.0,
                workload_stats=stats,
                warn=False,
            )
        pairs = sorted(
            (a, b)
            for i, t in seen
            for a, b in zip(np.asarray(i).tolist(), np.asarray(t).tolist(), strict=True)
        )
        runs.append(
            (c.total.syncs, res.total_tasks, res.max_workload, res.iterations, pairs, m.clock)
        )
    (s0, *rest0), (s1, *rest1) = runs
    assert s1 == s0 - 1
    assert rest0 == rest1
