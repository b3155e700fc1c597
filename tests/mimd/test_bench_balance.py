"""The MIMD baselines of ``simd-emu bench balance``: every task of the workload runs once,
where the workload put it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mimd.balance_baselines import MimdBaseline, baselines, check_memory
from mimd.balance_sources import family_sources, render_name
from mimd.policies import POLICIES, NoBalancing, WorkStealing
from simd.balance.comparison import compare

FAST = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@FAST
@given(
    st.lists(st.integers(0, 12), min_size=2, max_size=16).filter(lambda w: sum(w) > 0),
    st.sampled_from(sorted(POLICIES)),
)
def test_the_baselines_totals_equal_the_workloads(counts, policy):
    counts = np.array(counts)
    task = 0.01
    run = MimdBaseline(POLICIES[policy](), task).run(counts, counts.size, "random")
    assert run.tasks == counts.sum()
    assert run.detail["work_seconds"] == pytest.approx(counts.sum() * task)
    assert run.model_seconds >= counts.sum() * task / counts.size * (1 - 1e-9)
    assert run.clock == "simulated" and run.iterations is None


def test_no_balancing_keeps_the_workloads_placement():
    counts = np.array([7, 0, 2, 0])
    run = MimdBaseline(NoBalancing(), 0.5).run(counts, 4, "placed")
    assert run.model_seconds == pytest.approx(7 * 0.5)
    assert run.decisions == 0 and run.active[0] == 2
    # several data per processor: data 0-1 on processor 0, 2-3 on processor 1
    run = MimdBaseline(NoBalancing(), 0.5).run(np.array([1, 2, 3, 0]), 2, "blocks")
    assert run.model_seconds == pytest.approx(3 * 0.5)


def test_balancing_policies_beat_none_on_a_hot_spot():
    counts = np.array([40] + [0] * 15)
    c = compare(counts, balancers=["none"], baselines=baselines(["diffusion", "work-stealing"]))
    assert [(r.machine, r.balancer) for r in c] == [
        ("cm5", "none"),
        ("cluster", "none"),
        ("cluster", "diffusion"),
        ("cluster", "work-stealing"),
    ]
    assert c.find("diffusion", "cluster").speedup > 2
    assert c.find("work-stealing", "cluster").decisions > 0


def test_baseline_names_and_limits():
    assert [b.name for b in baselines()][0] == "none"
    assert {b.name for b in baselines()} == set(POLICIES)
    with pytest.raises(ValueError, match="unknown MIMD policy"):
        baselines(["gossip"])
    with pytest.raises(ValueError, match="above 0 seconds"):
        baselines(task_seconds=0)
    with pytest.raises(ValueError, match="needs about .* GB, more than the 1.0 GB free"):
        check_memory(10**8, 4096, "big", available=10**9)
    check_memory(10**4, 64, "small", available=10**9)
    with pytest.raises(ValueError, match="takes a 1-D workload"):
        compare(np.ones((4, 4), int), baselines=[MimdBaseline(WorkStealing())])


def test_family_sources():
    (s,) = family_sources(["zipf"], [64], param=2.5)
    assert s.name == "zipf(2.5)" and s.counts.shape == (64,) and s.processors == 64
    (g,) = family_sources(["hotspot"], [512], grid=4)
    assert g.counts.shape == (64, 128) and g.processors == (16, 32)
    with pytest.raises(ValueError, match="unknown family"):
        family_sources(["gauss"], [8])
    with pytest.raises(ValueError, match="needs --grid"):
        family_sources(["step"], [(4, 4)])
    assert render_name("unbalanced", "zbuffer") == "unbalanced zbuffer"
