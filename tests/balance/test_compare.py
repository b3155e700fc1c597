"""simd.balance.comparison.compare: the worked example of Ahrens & Hansen, the table, the machines,
and the options refused before any run."""

from __future__ import annotations

import numpy as np
import pytest

from simd.balance.comparison import (
    GRID_BALANCERS,
    LOOP_BALANCERS,
    MACHINES,
    compare,
    mesh_shape,
    plan_comparison,
)
from simd.cost import CostModel

EXAMPLE = [100, 19, 0, 0, 0, 0, 0]


def test_the_worked_example_of_ahrens_and_hansen():
    # Section 2.3: the trial workload's maximum is 20 against 100, "a savings of 80
    # iterations"; with the redistribution taken at once (a cost of 5 iterations, taken as
    # given as in the paper's example) the loop runs 20 iterations instead of 100.
    c = compare(EXAMPLE, name="example", overestimate=5, task_cost=1e4, verify=True)
    none, ce = c.find("none"), c.find("cost-effective")
    assert (none.iterations, none.decisions) == (100, 0)
    assert (ce.iterations, ce.decisions) == (20, 1)
    (event,) = ce.detail["events"]
    assert (event["iteration"], event["savings"]) == (1, 80)
    assert (event["max_before"], event["max_after"]) == (100, 20)
    assert none.tasks == ce.tasks == 119
    assert ce.speedup > 4
    # Balancing every iteration would redistribute again as processors run dry.
    assert c.find("balance-always").decisions >= 1


def test_the_worked_example_measured_online_waits_for_one_iteration():
    # Without a given cost, the loop measures a solution iteration before its first
    # decision: one iteration of Figure 1, then the redistribution.
    c = compare(EXAMPLE, task_cost=1e4, balancers=["cost-effective"])
    ce = c.find("cost-effective")
    assert (ce.iterations, ce.decisions) == (21, 1)
    assert ce.detail["overestimate_source"] == "online"


def test_runs_records_and_table():
    c = compare([9, 0, 0, 3], machines=["cm5", "mp1"], task_cost=100)
    assert [(r.machine, r.balancer) for r in c] == [
        (m, b) for m in ("cm5", "mp1") for b in LOOP_BALANCERS
    ]
    for r in c:
        assert r.tasks == 12 and r.model_seconds > 0 and r.wall_seconds >= 0
        assert len(r.cumulative) == len(r.active) + 1
        assert r.cumulative == sorted(r.cumulative)
        assert r.cumulative[-1] == pytest.approx(r.model_seconds)
        assert 0 <= r.balancing_seconds <= r.model_seconds
    assert {r.speedup for r in c if r.balancer == "none"} == {1.0}
    lines = c.table().splitlines()
    assert lines[0].split()[:4] == ["workload", "processors", "machine", "balancer"]
    assert len(lines) == 1 + len(c)
    data = c.to_dict()["runs"]
    assert {"iterations", "model_seconds"} <= set(data[0])


def test_the_wall_clock_and_a_cost_model_of_ones_own():
    mine = CostModel.cm5(4)
    c = compare([6, 0, 0, 2], machines=["wall", mine], balancers=["none", "cost-effective"])
    wall = c.find("cost-effective", "wall")
    assert wall.clock == "wall" and wall.detail["cost_model"] == "CM-5/4"
    assert c.find("none", "CM-5/4").clock == "model"


def test_a_grid_runs_on_the_mesh_with_the_locality_property():
    counts = np.zeros((12, 12), dtype=int)
    counts[:6, :6] = 6
    c = compare(counts, processors=(4, 4), machines=["mp1"], every=(1, 3), verify=True)
    assert [r.balancer for r in c] == ["none", "scan-directed/1", "scan-directed/3"]
    assert all(r.tasks == counts.sum() for r in c)
    assert c.find("none").locality is None
    assert c.find("scan-directed/1").locality is True
    assert c.find("scan-directed/1").active[0] > c.find("none").active[0]


def test_mesh_shapes():
    assert mesh_shape(4096) == (64, 64)
    assert mesh_shape(512) == (16, 32)
    assert mesh_shape(7) == (1, 7)
    assert mesh_shape((3, 5)) == (3, 5)


def test_plan_defaults():
    plan = plan_comparison(np.ones((100, 100), int))
    assert plan.shape == (64, 64) and plan.balancers == list(GRID_BALANCERS)
    plan = plan_comparison(np.ones((8, 100), int))
    assert plan.shape == (8, 64)
    plan = plan_comparison([1, 2, 3], machines=list(MACHINES))
    assert plan.shape == (3,) and plan.runs == 4 * len(LOOP_BALANCERS)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"balancers": ["scan-directed"]}, "does not run a 1-D workload"),
        ({"balancers": ["magic"]}, "unknown balancer 'magic'"),
        ({"machines": ["cray"]}, "unknown machine 'cray'"),
        ({"machines": []}, "no machine given"),
        ({"processors": 0}, "at least 1"),
        ({"processors": (2, 2)}, "a 1-D workload runs on a number of processors"),
    ],
)
def test_bad_options_for_the_loops(kwargs, message):
    with pytest.raises(ValueError, match=message):
        compare([3, 1], **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"balancers": ["cost-effective"]}, "does not run a 2-D grid"),
        ({"processors": (8, 2)}, "larger than the grid 4x4"),
        ({"every": [0]}, "intervals of at least 1"),
    ],
)
def test_bad_options_for_the_mesh(kwargs, message):
    with pytest.raises(ValueError, match=message):
        compare(np.ones((4, 4), int), **kwargs)


def test_bad_task_cost():
    with pytest.raises(ValueError, match="task_cost"):
        compare([1, 2], task_cost=float("nan"))


@pytest.mark.gpu
def test_on_the_gpu_the_model_clock_and_the_tasks_are_numpys(gpu_machine):
    # The machines of a comparison on CuPy (the counting stand-in with --gpu-standin): the
    # same tasks, decisions and model seconds as on NumPy, loops and mesh alike.
    loops = np.array([300, 5, 0, 0, 40, 1, 0, 0] * 8)
    grid = np.zeros((16, 16), dtype=int)
    grid[:8, :8] = 9
    for counts, processors in ((loops, 16), (grid, (4, 4))):
        runs = [
            compare(
                counts,
                processors=processors,
                machines=["cm5", "mp1"],
                every=(1, 4),
                backend=backend,
                verify=True,
            )  # fmt: skip
            for backend in ("numpy", gpu_machine.backend_spec)
        ]
        for a, b in zip(*runs, strict=True):
            assert (a.balancer, a.tasks, a.decisions, a.iterations) == (
                b.balancer,
                b.tasks,
                b.decisions,
                b.iterations,
            )
            assert a.model_seconds == pytest.approx(b.model_seconds, rel=1e-12)
            assert a.locality == b.locality
