"""A frame's statistics read at a glance: ``print(frame.stats)`` is a short table whose
figures are the records' own."""

from __future__ import annotations

import numpy as np

import renderer
from simd import Machine

QUAD = (np.array([[0.0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]]), np.array([[0, 1, 2], [0, 2, 3]]))


def test_the_printed_statistics_are_a_short_table():
    m = Machine(pes=32, backend="numpy")
    stats = renderer.render(QUAD, view=(0, 0), size=32, machine=m).stats
    text = str(stats)
    lines = text.splitlines()
    assert len(text) < 1500 and lines[0].startswith("2 triangles: 2 drawn, 0 clipped")
    assert f"{stats.counts.pixels:,} pixels covered" in lines[0]
    _, stage_table, loop_table = text.split("\n\n")
    stages = {line.split()[0]: line.split() for line in stage_table.splitlines()[1:]}
    for name, record in stats.stages.items():
        assert float(stages[name][1]) == round(m.cost.seconds(record.cycles), 5)
    loops = {line.split()[0]: line.split() for line in loop_table.splitlines()[1:]}
    for name, loop in stats.loops.items():
        assert (loops[name][1], int(loops[name][2])) == (loop.form, loop.iterations)
    assert repr(stats).startswith("FrameStats(2 triangles, ") and len(repr(stats)) < 100
