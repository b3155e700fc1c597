"""The simulated MIMD machine: every task runs exactly once, under every policy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mimd import (
    Diffusion,
    ExtendedGradient,
    Farmer,
    GradientModel,
    Network,
    NoBalancing,
    WorkStealing,
    initial_placement,
    simulate,
    torus_shape,
)

POLICIES = [
    Farmer(),
    GradientModel(),
    ExtendedGradient(),
    Diffusion(),
    WorkStealing(),
    NoBalancing(),
    GradientModel(interval=0.2, window=0.3),
    Diffusion(quantum=0.3, neighbours=1),
    WorkStealing(quantum=0.05, neighbours=64),
    Farmer(farmer_works=False, serve=0.05),
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    policy=st.sampled_from(POLICIES),
    p=st.sampled_from([1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 64]),
    costs=st.lists(st.floats(0.05, 4.0), min_size=1, max_size=48),
    placement=st.sampled_from([None, "block", "cyclic", "root"]),
    seed=st.integers(0, 2**16),
)
def test_no_task_lost_or_run_twice(policy, p, costs, placement, seed):
    r = simulate(
        costs, policy, network=Network(shape=torus_shape(p)), placement=placement, seed=seed
    )
    assert r.runs.tolist() == [1] * len(costs)
    assert np.all(np.isfinite(r.finish)) and np.all(r.finish >= r.start)
    assert np.all((r.runner >= 0) & (r.runner < p))
    # a processor cannot do more than the time allows, and the work is all done
    assert r.busy.sum() == pytest.approx(sum(costs), rel=1e-9)
    assert r.makespan >= max(costs) - 1e-9
    assert r.makespan * p >= sum(costs) - 1e-6
    # tasks on one processor never overlap in time
    for q in range(p):
        mine = np.flatnonzero(r.runner == q)
        order = mine[np.argsort(r.start[mine])]
        assert np.all(r.start[order][1:] >= r.finish[order][:-1] - 1e-9)


def test_farmer_equal_tasks_and_control_run():
    # 8 unit tasks on 4 processors: two rounds, plus the messages of each
    net = Network(shape=(2, 2))
    r = simulate([1.0] * 8, Farmer(), network=net)
    cycle = float(net.message_time(net.request_bytes, 1) + net.message_time(net.task_bytes, 1))
    assert 2.0 < r.makespan < 2.0 + 2 * (cycle + Farmer().serve) * 3
    costs = np.linspace(0.5, 2.0, 10)
    one = simulate(costs, Farmer(), network=Network(shape=(1, 1)))
    # the single-processor control run is the sum of the task times (Muniz & Zaluska Table 1, C6)
    assert one.makespan == pytest.approx(costs.sum(), rel=1e-3)
    assert one.messages == 0 and one.migrations == 0


def test_no_balancing_equals_static_blocks():
    costs = np.arange(1.0, 13.0)
    r = simulate(costs, NoBalancing(), processors=4)
    blocks = costs.reshape(4, 3).sum(axis=1)
    assert r.makespan == pytest.approx(blocks.max(), rel=1e-3)
    assert r.migrations == 0


@pytest.mark.parametrize("policy", [Diffusion(), WorkStealing(), ExtendedGradient()])
def test_deterministic_for_a_seed(policy):
    costs = np.random.default_rng(3).uniform(0.2, 2.0, 60)
    a = simulate(costs, policy, processors=9, seed=5, placement="block")
    b = simulate(costs, policy, processors=9, seed=5, placement="block")
    assert a.makespan == b.makespan
    assert a.runner.tolist() == b.runner.tolist()


def test_balancing_helps_on_imbalanced_blocks():
    costs = np.repeat([0.2, 2.0], 32)  # light first half, heavy second half
    none = simulate(costs, NoBalancing(), processors=16).makespan
    for pol in (Diffusion(), WorkStealing(), Farmer()):
        assert simulate(costs, pol, processors=16, placement="block").makespan < 0.8 * none


def test_initial_placement():
    assert initial_placement(7, 3).tolist() == [0, 0, 0, 1, 1, 2, 2]
    assert initial_placement(4, 3, "root").tolist() == [0, 0, 0, 0]
    with pytest.raises(ValueError, match="placement"):
        initial_placement(4, 2, "diagonal")


@pytest.mark.parametrize(
    ("costs", "kw", "err", "match"),
    [
        ([], {}, ValueError, "non-empty"),
        ([1.0, -1.0], {}, ValueError, "> 0"),
        ([1.0, float("nan")], {}, ValueError, "finite"),
        ([[1.0]], {}, ValueError, "1-D"),
        ([1.0], {"processors": 5, "network": Network(shape=(2, 2))}, ValueError, "disagrees"),
        ([1.0], {"seed": 1.5}, TypeError, "seed"),
        ([1.0], {"app_messages": -1}, ValueError, "app_messages"),
        ([1.0], {"seed": True}, TypeError, "seed"),
    ],
)
def test_bad_input(costs, kw, err, match):
    with pytest.raises(err, match=match):
        simulate(costs, Diffusion(), **kw)


def test_bad_policy():
    with pytest.raises(TypeError, match="Policy"):
        simulate([1.0], "farmer")
    with pytest.raises(ValueError, match="farmer processor"):
        simulate([1.0], Farmer(farmer=7), processors=4)


def test_delivered_work_is_started_not_bounced():
    # regression: a task delivered to an idle processor was given away again at the same
    # tick's poll, before it could start, and bounced between idle processors for ever
    from mimd import bimodal

    costs = bimodal(128, 0.5, 3.0, total=640.0)
    r = simulate(costs, Diffusion(), network=Network.cluster(64), max_events=2_000_000)
    assert r.runs.tolist() == [1] * 128


def test_a_given_placement_and_the_events_counted():
    owners = np.array([3, 3, 3, 0, 1, 1])
    r = simulate([1.0] * 6, NoBalancing(), processors=4, placement=owners)
    assert r.runner.tolist() == owners.tolist() and r.makespan == pytest.approx(3.0)
    # the farmer holds every task whatever the placement says
    f = simulate([1.0] * 6, Farmer(), processors=4, placement=owners)
    assert f.migrations > 0 and r.events == 6 and r.wall > 0
    with pytest.raises(ValueError, match="placement"):
        simulate([1.0] * 6, NoBalancing(), processors=4, placement=[0, 9, 0, 0, 0, 0])


def test_a_run_out_of_rows_is_made_again_larger(monkeypatch):
    # the first state holds too few messages and events: the run is made again, the same
    import mimd.simulator as sim

    costs = np.random.default_rng(2).uniform(0.1, 1.0, 64)
    want = simulate(costs, Diffusion(), processors=16, placement="block")
    monkeypatch.setattr(sim, "_capacity", lambda n, p, k: (8, 8))
    got = simulate(costs, Diffusion(), processors=16, placement="block")
    assert got.makespan == want.makespan and got.runner.tolist() == want.runner.tolist()


def test_the_compiled_engine_loads_from_numbas_cache_in_a_new_process():
    # a new process loads the engine Numba cached (functions that call one another in a
    # circle compile, but crash when loaded from the cache): twice, so that the second
    # loads what the first compiled or loaded
    import subprocess
    import sys

    code = (
        "from mimd import Diffusion, Farmer, Network, simulate, workload\n"
        "print(simulate([1.0] * 8, Farmer(), processors=4).makespan)\n"
        "net = Network.cluster(16)\n"
        "print(simulate(workload('step', 16, 4), Diffusion(), network=net).runs.sum())\n"
    )
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=600, check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.split() == [
            f"{simulate([1.0] * 8, Farmer(), processors=4).makespan}",
            "64",
        ]
