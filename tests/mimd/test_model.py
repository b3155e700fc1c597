"""Barker & Chrisochoides' bi-modal approximation (equations 1-5) and runtime model (equation
6)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mimd import (
    Diffusion,
    ModelParams,
    Network,
    bimodal_fit,
    predict,
    simulate,
    workload,
)


def brute_force(weights):
    """Equations 1-5 literally: every Gamma, class means, squared errors; smallest wins."""
    t = sorted(weights)
    n = len(t)
    best = None
    for g in range(1, n):
        tb = sum(t[:g]) / g
        ta = sum(t[g:]) / (n - g)
        err = sum((tb - x) ** 2 for x in t[:g]) + sum((ta - x) ** 2 for x in t[g:])
        if best is None or err < best[0] - 1e-9:
            best = (err, g, ta, tb)
    return best


@pytest.mark.parametrize(
    ("weights", "gamma", "t_beta", "t_alpha"),
    [
        # two clean classes: Gamma splits them exactly, no error
        ([1, 1, 1, 5, 5], 3, 1.0, 5.0),
        # order does not matter (the tasks are sorted first)
        ([5, 1, 5, 1, 1], 3, 1.0, 5.0),
        # 1 2 3 10: splitting off the outlier leaves the least squared error (by hand:
        # Gamma=3 -> (1-2)^2+0+(3-2)^2 = 2; Gamma=2 -> 0.5 + 24.5 = 25; Gamma=1 -> 38)
        ([1, 2, 3, 10], 3, 2.0, 10.0),
        # linear 1..4: Gamma=2 -> 0.25*4 = 1; Gamma=1 or 3 -> 2
        ([1, 2, 3, 4], 2, 1.5, 3.5),
        # step of Barker & Chrisochoides: 75 % light, 25 % twice as heavy
        ([1.0] * 6 + [2.0] * 2, 6, 1.0, 2.0),
    ],
)
def test_gamma_on_hand_checked_sets(weights, gamma, t_beta, t_alpha):
    f = bimodal_fit(weights)
    assert (f.gamma, f.t_beta, f.t_alpha) == (gamma, pytest.approx(t_beta), pytest.approx(t_alpha))
    # equation 3: the approximation keeps the total work
    assert f.work == pytest.approx(sum(weights))


def test_equal_weights_have_one_class():
    f = bimodal_fit([2.0, 2.0, 2.0])
    assert f.gamma == 0 and f.t_alpha == f.t_beta == 2.0 and f.error == 0.0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 20), min_size=2, max_size=25))
def test_gamma_matches_brute_force(weights):
    if min(weights) == max(weights):
        return
    err, g, ta, tb = brute_force(weights)
    f = bimodal_fit(weights)
    assert f.error == pytest.approx(err, abs=1e-6)
    assert f.gamma == g
    assert (f.t_alpha, f.t_beta) == (pytest.approx(ta), pytest.approx(tb))


def test_fit_bad_input():
    with pytest.raises(ValueError, match="at least one"):
        bimodal_fit([])
    with pytest.raises(ValueError, match="finite"):
        bimodal_fit([1.0, float("nan")])


def test_prediction_bounds_and_components():
    net = Network.cluster(32)
    prm = ModelParams.from_sim(net, Diffusion())
    pr = predict(workload("step", 32, 8), prm)
    assert pr.lower <= pr.average <= pr.upper
    assert set(pr.components) == {
        "T_work",
        "T_thread",
        "T_comm_app",
        "T_comm_lb",
        "T_migr_lb",
        "T_decision_lb",
        "T_overlap",
    }
    assert all(v >= 0 for v in pr.components.values())
    # without imbalance there is nothing to balance: the prediction is the work
    flat = predict(np.full(256, 1.25), prm)
    assert flat.average == pytest.approx(8 * 1.25 * (1 + (2 * 1e-5 + 2e-5) / 0.01), rel=1e-6)


def test_longer_quantum_costs_more_turn_around():
    net = Network.cluster(32)
    c = workload("step", 32, 8)
    t = [
        predict(c, ModelParams.from_sim(net, Diffusion(quantum=q))).detail["turnaround"]
        for q in (0.001, 0.01, 0.1)
    ]
    assert t[0] < t[1] < t[2]


@pytest.mark.parametrize(("name", "k"), [("step", 8), ("linear-2", 4)])
def test_model_close_to_simulation(name, k):
    # Barker & Chrisochoides' Figure 1 in miniature: the average prediction within 5 % of the
    # simulation
    net = Network.cluster(32)
    pol = Diffusion()
    c = workload(name, 32, k)
    sim = simulate(c, pol, network=net).makespan
    pr = predict(c, ModelParams.from_sim(net, pol))
    assert abs(pr.average - sim) / sim < 0.05


def test_model_rejects_other_policies():
    from mimd import Farmer

    with pytest.raises(TypeError, match="Diffusion"):
        ModelParams.from_sim(Network.cluster(4), Farmer())
    with pytest.raises(ValueError, match="weights"):
        predict([], ModelParams.from_sim(Network.cluster(4), Diffusion()))
