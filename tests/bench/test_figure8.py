"""Figure 8 of Biagioni & Prins (1991) beside ours (``bench/mp1/paper.py``): the comparison's
shape."""

from __future__ import annotations

import numpy as np
import pytest

from bench.mp1.paper import INTERVALS, MP1_SOURCES, PAPER_CLAIMS, compare_figure8
from diffusion import mesh_diffusion
from diffusion.images import builtin_image
from simd import CostModel, Machine

PARAMS = dict(kappa=20.0, gamma=0.2, epsilon=0.25, option=1)


def _rows(load: dict, time: dict, **extra) -> list[dict]:
    base = {"size": "large", "dims": "2d", **extra}
    return [
        {**base, "interval": k, "load_ratio": load[k], "time_ratio": time[k]} for k in INTERVALS
    ]


@pytest.fixture(scope="module")
def runs():
    """A 128 x 128 image on a 16 x 16 mesh (8 x 8 pixels per PE, as the paper's large
    images on 64 x 64), 60 iterations, both dimensions and rows only."""
    img = builtin_image("camera", size=(128, 128)).astype(np.float64)
    img = ((img - img.min()) / (img.max() - img.min()) * 255).astype(np.float32)

    def run(every, axes=(0, 1)):
        m = Machine(pes=(16, 16), backend="numpy")
        r = mesh_diffusion(
            img,
            niter=60,
            machine=m,
            balance_every=every,
            balance_axes=axes,
            track_static=False,
            **PARAMS,
        )
        return r.mean_max_load, r.cycles["total"]

    base = run(0)
    rows = []
    for dims, axes in (("2d", (0, 1)), ("1d", (0,))):
        for k in INTERVALS:
            load, cycles = run(k, axes)
            rows.append(
                {
                    "size": "large",
                    "dims": dims,
                    "interval": k,
                    "load_ratio": load / base[0],
                    "time_ratio": cycles / base[1],
                }
            )
    return rows


def test_our_figure8_follows_the_papers_load_curve_and_one_dimension(runs):
    res = compare_figure8(runs)
    holds = {c["claim"]: c["holds"] for c in res["claims"]}
    assert holds["load falls monotonically with more frequent balancing (Figure 8)"]
    assert holds["one dimension: better time, higher load (Figure 10)"]
    loads = [c["ours"]["load_ratio"] for c in res["cells"]]
    assert 0.6 < loads[0] and loads[-1] < 0.95  # balancing cuts the busiest PE's load
    # Balancing every iteration costs the most time, as in the paper; the bottom of our
    # curve lies at every 5 or later (here every 10, with 64 x 64 PEs and 512 x 512 images
    # every 20 in bench/results/diffusion.json) where the paper's is "in the neighborhood
    # of five": our balancing costs a little more against what it saves.
    times = [c["ours"]["time_ratio"] for c in res["cells"]]
    assert times[0] == max(times) > 1.1 and min(times) < 1
    assert INTERVALS[int(np.argmin(times))] >= 5


def test_the_papers_cells_are_left_empty_not_guessed():
    res = compare_figure8(_rows({k: 0.8 for k in INTERVALS}, {k: 1.0 for k in INTERVALS}))
    assert [c["interval"] for c in res["cells"]] == list(INTERVALS)
    for c in res["cells"]:
        assert c["paper"] == {"load_ratio": None, "time_ratio": None}
        assert c["ours_over_paper"] == {"load_ratio": None, "time_ratio": None}
    assert "no value" in res["paper_note"]


def test_claims_tell_a_v_from_a_slope():
    load = {1: 0.7, 2: 0.72, 5: 0.75, 10: 0.8, 20: 0.85}
    v = compare_figure8(_rows(load, {1: 1.1, 2: 0.97, 5: 0.95, 10: 0.96, 20: 0.99}))
    slope = compare_figure8(_rows(load, {1: 1.5, 2: 1.2, 5: 1.0, 10: 0.95, 20: 0.93}))
    name = "time is a shallow V, lowest near every 5 (Figure 8)"
    assert {c["claim"]: c["holds"] for c in v["claims"]}[name]
    assert not {c["claim"]: c["holds"] for c in slope["claims"]}[name]
    rising = compare_figure8(_rows({**load, 1: 0.9}, {k: 1.0 for k in INTERVALS}))
    assert not rising["claims"][0]["holds"]
    # claims needing runs that were not made say so
    missing = {c["claim"]: c for c in v["claims"]}
    assert not missing["large images better than small in load and time (Figure 9)"]["holds"]
    assert len(v["claims"]) == len(PAPER_CLAIMS)


def test_mp1_sources_name_the_presets_values():
    mp1 = CostModel.mp1()
    assert mp1.pes == 64 * 64 and mp1.clock_hz == 12.5e6 and mp1.elementwise == 8
    assert mp1.shift_per_vp == 36 and mp1.router_per_vp == 18 * 36
    assert mp1.scan_per_vp == 16 and mp1.network_per_level == 36 + 8
    assert "12.5 MHz" in MP1_SOURCES["clock_hz"][0]
    assert all(
        "Biagioni & Prins (1991)" in src or "assumption" in src for _, src in MP1_SOURCES.values()
    )
