"""The CM-5 preset calibrated on Ahrens & Hansen's timings: its per-active terms and
its reproduction of the paper's Tables 2 to 4 (bench/cm5/paper.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from simd import CostModel, Machine
from simd.cost import CM5_CALIBRATED

# Table 4 under the shipped constants, ours / paper per cell, as bench/render.py prints
# them. Within 30%: the five cells of TABLE4_WITHIN; the others are the misses that
# simd/cost.py ("The calibrated CM-5") explains. Pinned to 3% so that any change of the
# charges, the constants or the synthetic frames shows up here.
TABLE4_RATIOS = {
    ("scan-conversion", "information gathering", "min"): 1.27,
    ("scan-conversion", "information gathering", "avg"): 0.66,
    ("scan-conversion", "information gathering", "max"): 0.33,
    ("scan-conversion", "redistribution", "min"): 0.84,
    ("scan-conversion", "redistribution", "avg"): 0.76,
    ("scan-conversion", "redistribution", "max"): 0.70,
    ("scan-conversion", "solution", "min"): 1.43,
    ("scan-conversion", "solution", "avg"): 0.35,
    ("scan-conversion", "solution", "max"): 0.10,
    ("z-buffer", "information gathering", "min"): 0.04,
    ("z-buffer", "information gathering", "avg"): 0.12,
    ("z-buffer", "information gathering", "max"): 0.23,
    ("z-buffer", "redistribution", "min"): 0.30,
    ("z-buffer", "redistribution", "avg"): 0.49,
    ("z-buffer", "redistribution", "max"): 0.70,
    ("z-buffer", "solution", "min"): 1.08,
    ("z-buffer", "solution", "avg"): 1.06,
    ("z-buffer", "solution", "max"): 0.38,
}
TABLE4_WITHIN = {
    ("scan-conversion", "information gathering", "min"),
    ("scan-conversion", "redistribution", "min"),
    ("scan-conversion", "redistribution", "avg"),
    ("z-buffer", "solution", "min"),
    ("z-buffer", "solution", "avg"),
}
#: Cells within 30% per table (Tables 2 and 3: OR and LB, 4 views, 32 to 512 nodes).
WITHIN = {"2": 28, "3": 20, "4": 5}


def test_preset_constants_and_name():
    cal = CostModel.cm5_calibrated(512)
    assert cal.name == "CM-5cal/512" and cal.clock_hz == 32e6
    for key, value in CM5_CALIBRATED.items():
        assert getattr(cal, key) == value
    assert cal.per_active
    assert cal.with_pes(32).name == "CM-5cal/32"
    assert Machine(pes=64, backend="numpy", cost="cm5_calibrated").cost.name == "CM-5cal/64"
    with pytest.raises(ValueError, match="'cm5_calibrated'"):
        Machine(pes=64, backend="numpy", cost="cm6")
    # the idealised preset keeps its name and has no per-active terms
    ideal = CostModel.cm5(512)
    assert ideal.name == "CM-5/512" and not ideal.per_active
    assert ideal.cycles("scan", 250_000, busiest=7) == ideal.cycles("scan", 250_000)


def test_busiest_node_of_the_live_positions():
    cal = CostModel.cm5_calibrated(4)  # VP ratio 25 for 100 VPs

    def pack_cycles(cost, live):
        m = Machine(pes=4, backend="numpy", cost=cost)
        live = np.asarray(live, dtype=np.int64)
        with m.vp_set(100, live=live):
            m.pack(m.asarray(live), m.asarray(np.ones(live.size, dtype=bool)))
        return m.clock

    base = cal.cycles("scan", 100)
    # eight live VPs on one node, or two on each: the busiest node has 8 or 2
    assert pack_cycles(cal, range(8)) == pytest.approx(base + 8 * cal.scan_per_active)
    assert pack_cycles(cal, [0, 1, 25, 26, 50, 51, 75, 76]) == pytest.approx(
        base + 2 * cal.scan_per_active
    )
    # without positions the live elements count as spread evenly: ceil(8 / 4)
    m = Machine(pes=4, backend="numpy", cost=cal)
    with m.vp_set(100):
        m.pack(m.asarray(np.arange(8)), m.asarray(np.ones(8, dtype=bool)))
    assert m.clock == pytest.approx(base + 2 * cal.scan_per_active)
    # the idealised preset charges the VP set alone
    assert pack_cycles(CostModel.cm5(4), range(8)) == pack_cycles(CostModel.cm5(4), [0, 25])


def test_masked_send_charges_the_busiest_node_senders():
    cal = CostModel.cm5_calibrated(4)
    mask = np.zeros(100, dtype=bool)
    mask[30:36] = True  # six senders, all on node 1
    m = Machine(pes=4, backend="numpy", cost=cal)
    m.send(m.asarray(np.arange(100)), m.asarray(np.arange(100)), 100, mask=m.asarray(mask))
    assert m.clock == pytest.approx(cal.cycles("router", 100) + 6 * cal.router_per_active)
    m.reset_stats()
    m.send(m.asarray(np.arange(100)), m.asarray(np.arange(100)), 100)  # all 25 per node send
    assert m.clock == pytest.approx(cal.cycles("router", 100) + 25 * cal.router_per_active)


@pytest.fixture(scope="module")
def reproduction():
    from bench.cm5.paper import reproduce

    return reproduce(CostModel.cm5_calibrated)


def test_calibrated_preset_reproduces_the_paper_as_documented(reproduction):
    from bench.cm5.paper import within

    cells = reproduction["cells"]
    assert not any(math.isnan(c["ours"]) for c in cells)
    for table, count in WITHIN.items():
        assert within([c for c in cells if c["table"] == table]) == count, table
    for (loop, ph, stat), ratio in TABLE4_RATIOS.items():
        got = next(c for c in cells if c["cell"] == f"{loop} {ph} {stat}")["ratio"]
        assert got == pytest.approx(ratio, rel=0.03, abs=0.005), (loop, ph, stat, got)
        assert (abs(got - 1) <= 0.3) == ((loop, ph, stat) in TABLE4_WITHIN)
    assert sum(c["table"] == "4" for c in cells) == len(TABLE4_RATIOS)
    # the worst cells, bounded: nothing beyond a factor of 2 over or 30 under the paper
    ratios = [c["ratio"] for c in cells]
    assert 0.03 < min(ratios) and max(ratios) < 2.0
    # the overestimates it measures (section 4.1's rule), the paper's being 20 and 32
    over = reproduction["overestimates"]
    assert over["scan-conversion"] == pytest.approx(5.7, abs=0.2)
    assert over["z-buffer"] == pytest.approx(17.8, abs=0.5)


def test_idealised_preset_misses_the_paper_by_far():
    from bench.cm5.paper import VIEWS, reproduce, within

    rep = reproduce(CostModel.cm5, nodes=(512,))
    t4 = [c for c in rep["cells"] if c["table"] == "4"]
    assert within(t4) == 0 and max(c["ratio"] for c in t4) < 0.6
    assert len(rep["frames"]) == 2 * len(VIEWS)


def test_cupy_code_path_charges_alike():
    # the counting backend runs the CuPy code path (the counts read back from the device)
    clocks = []
    for backend in ("numpy", "counting"):
        m = Machine(pes=4, backend=backend, cost="cm5_calibrated")
        live = m.asarray(np.arange(8))
        with m.vp_set(100, live=live):
            m.pack(live, m.asarray(np.ones(8, dtype=bool)))
        mask = np.zeros(100, dtype=bool)
        mask[30:36] = True
        m.send(m.asarray(np.arange(100)), m.asarray(np.arange(100)), 100, mask=m.asarray(mask))
        clocks.append(m.clock)
    assert clocks[0] == clocks[1] > 0
