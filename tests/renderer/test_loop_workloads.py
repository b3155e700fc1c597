"""``loop_workloads``: the real per-polygon and per-span workloads of a frame."""

from __future__ import annotations

import numpy as np
import pytest

from renderer import render
from renderer.datasets import builtin as datasets
from renderer.pipeline import LoopWorkloads, loop_workloads
from simd import Machine


@pytest.fixture(scope="module")
def mesh():
    return datasets.load_dataset("unbalanced", 16, cache=False)


def test_workloads_are_what_the_loops_ran(mesh):
    w = loop_workloads(mesh, view=(45, 45), magnification=2.0, size=96)
    assert w.scan.dtype == np.int64 and w.zbuffer.dtype == np.int64
    assert w.scan.size > 0  # one datum per polygon after clipping
    assert np.all(w.scan >= 0) and np.all(w.zbuffer > 0)
    # the oracle: an independent render in another loop form, whose loops count the
    # tasks they executed and whose z-buffer counts the fragments written to each pixel
    frame = render(
        mesh,
        view=(45, 45),
        magnification=2.0,
        size=96,
        loop="original",
        machine=Machine(pes=64, backend="numpy"),
        count_writes=True,
    )
    scan = frame.stats.loops["scan-conversion"]
    zbuf = frame.stats.loops["z-buffer"]
    assert scan.total_tasks == int(w.scan.sum()) and scan.vps == w.scan.size
    assert scan.max_workload == int(w.scan.max())
    assert zbuf.total_tasks == int(w.zbuffer.sum()) == int(frame.writes.sum())
    assert zbuf.vps == w.zbuffer.size == frame.stats.counts.spans
    # every span is one scan line of one polygon; some scan lines miss every pixel centre
    assert w.zbuffer.size <= w.scan.sum()


def test_summary_by_hand():
    w = LoopWorkloads(scan=np.array([0, 3, 1, 0]), zbuffer=np.array([2, 5, 2]))
    assert w.summary() == {"scan_max": 3, "scan_avg": 1.0, "zbuf_max": 5, "zbuf_avg": 3.0}
    empty = LoopWorkloads(scan=np.zeros(0, np.int64), zbuffer=np.zeros(0, np.int64))
    assert empty.summary() == {"scan_max": 0, "scan_avg": 0.0, "zbuf_max": 0, "zbuf_avg": 0.0}


def test_workload_table_matches_the_executed_loops(mesh):
    # two views whose workloads differ, so a row computed for the wrong view (or the rows
    # swapped) shows; the oracle is an independent render in the original loop form, whose
    # loops count the tasks they executed and whose z-buffer counts the fragments written
    views = {"M(45,45)": ((45, 45), 2.0), "(0,0)": ((0, 0), 1.0)}
    rows = datasets.workload_table(mesh, views=views, size=96)
    assert [row["view"] for row in rows] == list(views)
    assert rows[0] != {**rows[1], "view": rows[0]["view"]}
    for row, (view, mag) in zip(rows, views.values(), strict=True):
        frame = render(
            mesh,
            view=view,
            magnification=mag,
            size=96,
            loop="original",
            machine=Machine(pes=64, backend="numpy"),
            count_writes=True,
        )
        scan = frame.stats.loops["scan-conversion"]
        zbuf = frame.stats.loops["z-buffer"]
        assert zbuf.total_tasks == int(frame.writes.sum())
        expected = {
            "view": row["view"],
            "scan_max": scan.max_workload,
            "scan_avg": pytest.approx(scan.total_tasks / scan.vps),
            "zbuf_max": zbuf.max_workload,
            "zbuf_avg": pytest.approx(zbuf.total_tasks / zbuf.vps),
        }
        assert row == expected
        assert row["scan_max"] > 0 and row["zbuf_avg"] > 0


def test_render_keeps_workloads_only_when_asked(mesh):
    assert render(mesh, size=32, loop="expand").stats.workloads is None
