"""simd.balance.whatif: scaled cost models, and the sweep's points against direct runs."""

from __future__ import annotations

import numpy as np
import pytest

from simd import Machine
from simd.balance.comparison import compare
from simd.balance.grid_loop import run_grid_loop
from simd.balance.whatif import FACTORS, KINDS, scaled_cost, sweep
from simd.balance.workloads import generate
from simd.cost import CostModel


def test_scaled_cost_scales_one_kind():
    base = CostModel.cm5_calibrated(512)
    c = scaled_cost(base, "router", 2.0)
    assert c.router_latency_per_level == 2 * base.router_latency_per_level
    assert c.router_per_active == 2 * base.router_per_active
    assert (c.scan_per_active, c.elementwise) == (base.scan_per_active, base.elementwise)
    both = scaled_cost(base, "scan+shift", 0.5)
    assert both.network_per_level == base.network_per_level / 2
    assert both.name == "CM-5cal/512 scan+shift x0.5"
    assert FACTORS[0] == 1 / 16 and FACTORS[-1] == 16 and set(KINDS) == {"scan", "shift", "router"}


@pytest.mark.parametrize("bad", ["disk", "scan+tape"])
def test_unknown_kinds(bad):
    with pytest.raises(ValueError, match="unknown instruction kind"):
        scaled_cost(CostModel.mp1(16), bad, 2.0)


def test_the_mesh_points_equal_runs_at_the_scaled_costs():
    # The mesh's runs decide nothing from the costs, so the sweep prices them by
    # linearity; a run at the scaled costs must give the same model time.
    counts = generate("hotspot", (32, 32), mean=8, param=0.15)
    s = sweep(counts, processors=(8, 8), kinds=["shift", "scan+shift"], factors=[0.25, 4.0],
              every=[2])  # fmt: skip
    for kind in ("shift", "scan+shift"):
        for factor in (0.25, 4.0):
            cost = scaled_cost(CostModel.mp1(64), kind, factor)
            times = []
            for every in (0, 2):
                m = Machine(pes=(8, 8), backend="numpy", cost=cost)
                res = run_grid_loop(counts, machine=m, every=every, check_locality=False)
                times.append(cost.seconds(res.cycles["total"]))
            (point,) = [p for p in s.points if (p.kind, p.factor) == (kind, factor)]
            assert point.baseline_seconds == pytest.approx(times[0], rel=1e-9)
            assert point.seconds == pytest.approx(times[1], rel=1e-9)


def test_the_loop_points_are_comparisons_on_the_scaled_preset():
    counts = generate("zipf", 64, seed=1)
    s = sweep(counts, machine="mp1", kinds=["router"], factors=[0.5, 8.0])
    assert s.balancers == ("cost-effective", "balance-always")
    for f in (0.5, 8.0):
        c = compare(counts, machines=[scaled_cost(CostModel.mp1(64), "router", f)],
                    balancers=["cost-effective", "balance-always"])  # fmt: skip
        assert s.curve("router", "cost-effective")[[0.5, 8.0].index(f)] == pytest.approx(
            c.find("cost-effective").speedup
        )
    # Dearer routers make balancing always worse, the cost-effective loop never loses.
    always = s.curve("router", "balance-always")
    assert always[0] > always[1]
    assert min(s.curve("router", "cost-effective")) >= 0.95


def test_only_what_a_factor_changes_is_run(monkeypatch):
    # On the calibrated CM-5 a shift costs nothing: no shift point is run, every one is the
    # preset's, and the table says why. Scans move the loops: each is run with the preset,
    # with scans at zero, and at each factor but 1 (the preset's run).
    import simd.balance.whatif as whatif

    runs = []
    real = whatif.SweepPlan._point
    monkeypatch.setattr(whatif.SweepPlan, "_point",
                        lambda self, *a: runs.append(a[:3]) or real(self, *a))  # fmt: skip
    counts = generate("zipf", 64, seed=1)
    s = sweep(counts, machine="cm5_calibrated", kinds=["scan", "shift"], factors=[0.5, 1.0, 2.0])
    loops = ("none", "cost-effective", "balance-always")
    want = [(r, k, f) for r in loops for k, f in (("", 1.0), ("scan", 0.0))]
    want += [(r, "scan", f) for r in loops for f in (0.5, 2.0)]
    assert sorted(runs) == sorted(want)
    for balancer in s.balancers:
        assert s.curve("shift", balancer) == [s.curve("scan", balancer)[1]] * 3
        assert s.flat["shift", balancer] == "the preset charges nothing for shift"
    assert "the same at every factor: the preset charges nothing for shift" in s.table()
    # the same points as running every factor of every kind
    for f in (0.5, 2.0):
        c = compare(counts, machines=[scaled_cost(CostModel.cm5_calibrated(64), "scan", f)],
                    balancers=["cost-effective"])  # fmt: skip
        got = s.curve("scan", "cost-effective")[[0.5, 1.0, 2.0].index(f)]
        assert got == pytest.approx(c.find("cost-effective").speedup)


def test_a_row_of_a_balancer_that_never_redistributes_says_so():
    # on the calibrated CM-5 the cost-effective balancer of this Zipf workload decides
    # against redistributing at every scan factor; balance-always redistributes at each
    counts = generate("zipf", 64, seed=1)
    s = sweep(counts, machine="cm5_calibrated", kinds=["scan"], factors=[0.5, 1.0, 2.0])
    decided = {b: [p.decisions for p in s.points if p.balancer == b] for b in s.balancers}
    assert decided["cost-effective"] == [0, 0, 0] and all(decided["balance-always"])
    rows = dict(zip(s.balancers, s.rows("scan"), strict=True))
    assert rows["cost-effective"].endswith("never redistributes: its estimate of balancing's "
                                           "cost exceeds the gain")  # fmt: skip
    assert "redistributes" not in rows["balance-always"]


def test_a_kind_the_runs_do_not_issue_is_flat():
    # the mesh's scan-directed balancing uses no router: its rows do not move, and say so
    counts = generate("hotspot", (16, 16), mean=6)
    s = sweep(counts, processors=(4, 4), kinds=["router"], factors=[1 / 4, 4.0], every=[5])
    assert s.flat["router", "scan-directed/5"] == "no router in these runs"
    assert len(set(s.curve("router", "scan-directed/5"))) == 1


def test_tables_and_data():
    counts = generate("linear-4", (16, 16), mean=6)
    s = sweep(counts, processors=(4, 4), kinds=["scan"], factors=[1 / 16, 1.0, 16.0],
              every=[1, 5])  # fmt: skip
    lines = s.table().splitlines()
    assert "1/16" in lines[1] and "pays up to" in lines[1]
    assert len(lines) == 2 + 2
    data = s.to_dict()
    assert data["factors"] == [1 / 16, 1.0, 16.0]
    assert set(data["speedup"]["scan"]) == {"scan-directed/1", "scan-directed/5"}
    best, speedup = s.best("scan", 1 / 16)
    assert speedup >= 1.0 and best in ("none", "scan-directed/1", "scan-directed/5")
    up = s.pays_up_to("scan", "scan-directed/5")
    assert up is None or up in (1 / 16, 1.0, 16.0)


def test_a_wall_clock_cannot_be_scaled():
    with pytest.raises(ValueError, match="wall clock"):
        sweep(np.array([3, 1]), machine="wall")
    with pytest.raises(ValueError, match="unknown machine"):
        sweep(np.array([3, 1]), machine="cray")
