"""The renderer's real per-polygon scan-line workloads as MIMD and SIMD task sets."""

from __future__ import annotations

import numpy as np
import pytest

from mimd import POLICIES, Network, simulate
from mimd.experiments import compare, render_workload

renderer = pytest.importorskip("renderer")


@pytest.fixture(scope="module")
def lines():
    return render_workload(resolution=16, size=96)


def test_render_workload_is_the_scan_conversion_workload(lines):
    from renderer import render
    from renderer.datasets.builtin import load_dataset
    from simd import Machine

    # the oracle: the same frame rendered with the original loop of Ahrens & Hansen (1995) Figure 1,
    # whose statistics count the scan-conversion tasks the loop ran (one per scan line
    # of a polygon) and the longest polygon it met
    frame = render(
        load_dataset("unbalanced", 16),
        view=(45, 45),
        magnification=2.0,
        size=96,
        loop="original",
        machine=Machine(pes=64, backend="numpy"),
    )
    ran = frame.stats.loops["scan-conversion"]
    assert int(lines.sum()) == ran.total_tasks
    assert int(lines.max()) == ran.max_workload
    # one task per polygon that covers a scan line: no more than the loop's polygons
    assert 0 < lines.size <= ran.vps
    assert lines.dtype == np.int64 and lines.min() >= 1
    # the unbalanced set: a few long slivers among many short polygons
    assert lines.max() > 5 * lines.mean()


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_every_policy_runs_each_polygon_once(lines, name):
    costs = lines * (10.0 * 16 / lines.sum())
    r = simulate(costs, POLICIES[name](), network=Network.cluster(16), placement="block")
    assert r.runs.tolist() == [1] * lines.size


def test_compare_has_the_render_row():
    (row,) = compare(sets=[("render", 16, 16)])["rows"]
    assert row["task_set"] == "render" and row["processors"] == 16
    assert row["tasks"] == render_workload(resolution=16).size
    for key in ("farmer", "diffusion", "simd-original", "simd-cost-effective", "simd-expand"):
        assert 0 < row[f"{key}:util"] <= 1 + 1e-9
    # the SIMD loops run the scan lines themselves: the expanded loop wastes nothing but
    # the last, partly filled chunk
    assert row["simd-expand:util"] > row["simd-original:util"]
