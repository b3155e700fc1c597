"""SimGrid, the oracle of the event engine: the same messages arrive at the same times, and
the same policies on the same task sets end within 10% of each other (most within 1%).

SimGrid's Python module is not a dependency: without it these tests skip, or fail with
``REQUIRE_SIMGRID=1`` (CI installs it: ``apt-get install python3-simgrid``)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from mimd import (
    Diffusion,
    ExtendedGradient,
    Farmer,
    GradientModel,
    Network,
    WorkStealing,
    on_simgrid,
    simulate,
    workload,
)
from simd.balance.workloads import generate


@pytest.fixture(autouse=True)
def _simgrid():
    if not on_simgrid.available():
        problem = f"SimGrid's Python module is not installed ({on_simgrid.INSTALL})"
        if os.environ.get("REQUIRE_SIMGRID", "") not in ("", "0"):
            pytest.fail(f"REQUIRE_SIMGRID=1 but {problem}")
        pytest.skip(f"{problem}; REQUIRE_SIMGRID=1 makes this a failure")


def test_messages_arrive_when_simgrid_says():
    # random messages, small and large, on a torus with latency: every arrival the same
    net = Network(shape=(4, 4), per_byte=8e-8, per_hop=1e-5)
    rng = np.random.default_rng(7)
    n = 60
    src, dst = rng.integers(0, 16, n), rng.integers(0, 16, n)
    nbytes, leave = rng.choice([64, 8192], n), rng.uniform(0, 2e-3, n)
    np.testing.assert_allclose(
        net.arrivals(src, dst, nbytes, leave),
        on_simgrid.arrivals(net, src, dst, nbytes, leave),
        rtol=1e-9,
    )


POLICIES = [Farmer(), GradientModel(), ExtendedGradient(), Diffusion(), WorkStealing()]


@pytest.mark.parametrize("name", ["linear-2", "bimodal"])
def test_fine_tasks_on_the_mimd_benchmarks_workloads(name):
    # 64 processors, 8 tasks each of 2 to 4 ms (the MIMD benchmark's sets, finer)
    costs = workload(name, 64, 8, work_per_processor=0.024)
    net = Network.cluster(64)
    for pol in POLICIES:
        placement = "block" if pol.name in ("diffusion", "work-stealing") else None
        ours = simulate(costs, pol, network=net, placement=placement).makespan
        theirs = on_simgrid.simulate(costs, pol, network=net, placement=placement)["makespan"]
        assert ours == pytest.approx(theirs, rel=0.10), pol.name
        assert ours == pytest.approx(theirs, rel=0.01), pol.name  # in fact within 1%


def test_a_hot_spot_balanced_hard():
    # a hot spot on 32 processors, 2-ms tasks, status and polls every 2 to 10 ms: many
    # migrations, links shared by tasks and requests
    counts = generate("hotspot", 32, mean=8)
    owners = np.repeat(np.arange(32), counts)
    costs = np.full(owners.size, 2e-3) * np.random.default_rng(0).uniform(0.5, 1.5, owners.size)
    net = Network.cluster(32)
    policies = [
        Farmer(),
        GradientModel(interval=0.01, window=0.02),
        ExtendedGradient(interval=0.01, window=0.02),
        Diffusion(quantum=0.002),
        WorkStealing(quantum=0.002, neighbours=32),
    ]
    for pol in policies:
        ours = simulate(costs, pol, network=net, placement=owners)
        theirs = on_simgrid.simulate(costs, pol, network=net, placement=owners)
        assert ours.makespan == pytest.approx(theirs["makespan"], rel=0.10), pol.name
        assert ours.migrations > 0 and theirs["done"] == owners.size


def test_simgrid_missing_is_one_line(monkeypatch):
    monkeypatch.setattr(on_simgrid, "_locate", lambda: None)
    with pytest.raises(on_simgrid.SimGridMissing, match="apt-get install python3-simgrid"):
        on_simgrid.arrivals(Network(shape=(1, 2)), [0], [1], 8, 0.0)
