"""Policy records, the network's geometry and costs, and the synthetic workloads."""

from __future__ import annotations

import numpy as np
import pytest

from mimd import (
    Diffusion,
    ExtendedGradient,
    Farmer,
    GradientModel,
    Network,
    WorkStealing,
    bimodal,
    linear,
    step,
    torus_shape,
    workload,
)


def test_torus_shape():
    assert torus_shape(16) == (4, 4)
    assert torus_shape(4096) == (64, 64)
    assert torus_shape(12) == (3, 4)
    with pytest.raises(ValueError, match="positive integer"):
        torus_shape(0)


def test_hops_on_the_torus_against_brute_force():
    net = Network(shape=(3, 5))
    rows, cols = net.shape
    for a in range(net.p):
        for b in range(net.p):
            ra, ca, rb, cb = a // cols, a % cols, b // cols, b % cols
            want = min((ra - rb) % rows, (rb - ra) % rows) + min((ca - cb) % cols, (cb - ca) % cols)
            assert int(net.hops(a, b)) == want
    assert net.diameter == 1 + 2


def test_offsets_sorted_by_distance_and_cover_every_processor():
    net = Network(shape=(4, 4))
    off = net.offsets()
    assert len(off) == 15
    d = np.abs(off).sum(axis=1)
    assert np.all(np.diff(d) >= 0) and d[0] == 1
    reached = {int(net.neighbour(5, o)) for o in off}
    assert reached == set(range(16)) - {5}


def test_message_time():
    net = Network(startup=1e-4, per_byte=1e-6, per_hop=1e-5)
    assert float(net.message_time(100, 2)) == pytest.approx(1e-4 + 1e-4 + 2e-5)
    assert float(net.message_time(100, 0)) == 0.0  # local: free
    saf = net.with_(store_and_forward=True)
    assert float(saf.message_time(100, 2)) == pytest.approx(1e-4 + 2 * (1e-5 + 1e-4))


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: Network(shape=(0, 4)), "shape"),
        (lambda: Network(startup=-1.0), "startup"),
        (lambda: GradientModel(low=0.8, high=0.5), "low < high"),
        (lambda: GradientModel(interval=0.0), "interval"),
        (lambda: ExtendedGradient(process=-1.0), "process"),
        (lambda: Diffusion(quantum=0.0), "quantum"),
        (lambda: Diffusion(neighbours=0), "neighbours"),
        (lambda: WorkStealing(poll=float("inf")), "poll"),
        (lambda: Farmer(serve=-1.0), "serve"),
        (lambda: Farmer(farmer=1.5), "processor id"),
    ],
)
def test_bad_parameters(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_synthetic_workloads():
    assert linear(5, 2.0).tolist() == [1.0, 1.25, 1.5, 1.75, 2.0]
    assert step(8).tolist() == [1.0] * 6 + [2.0] * 2
    assert bimodal(4, 0.5, 1.0).tolist() == [1.0, 1.0, 2.0, 2.0]
    for name in ("linear-2", "linear-4", "step", "bimodal", "uniform"):
        c = workload(name, 8, 4, work_per_processor=5.0)
        assert c.size == 32 and c.sum() == pytest.approx(40.0)
    c = workload("linear-4", 4, 3)
    assert c.max() / c.min() == pytest.approx(4.0)
    with pytest.raises(ValueError, match="unknown workload"):
        workload("zipf", 4)
    with pytest.raises(ValueError, match="positive integer"):
        workload("step", 4, 0)
    with pytest.raises(ValueError, match="ratio"):
        linear(4, 0.5)
    # options a workload does not take are errors, not silently ignored
    assert workload("bimodal", 4, 2, variance=3.0).max() / workload(
        "bimodal", 4, 2, variance=3.0
    ).min() == pytest.approx(4.0)
    with pytest.raises(TypeError, match="'step' takes no option"):
        workload("step", 4, 2, heavy_fraction=0.5)
    with pytest.raises(TypeError, match="options are"):
        workload("bimodal", 4, 2, ratio=2.0)
