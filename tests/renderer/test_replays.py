"""A Scene's frames on a GPU captured once as CUDA graphs and replayed (renderer.replays,
simd.graphs), on the counting stand-in for CuPy, which captures and launches graphs as
CUDA does and refuses what a capture cannot hold: every replayed frame is the NumPy
machine's frame, pixel for pixel; a change of mesh, view, size or loop form never replays
a stale graph; a replayed frame costs its reads back and one graph launch a stretch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import renderer
from kernels import counting
from simd import Machine
from simd.balance.cost_effective.records import CostOverestimateWarning
from simd.graphs import UnsafeRecording

SIZE = 64


@pytest.fixture(scope="module")
def meshes():
    return {
        "balanced": renderer.load_dataset("balanced", 16, cache=False),
        "unbalanced": renderer.load_dataset("unbalanced", 16, cache=False),
    }


def same(a, b):
    return all(np.array_equal(getattr(a, k), getattr(b, k)) for k in ("image", "depth", "face"))


def test_two_meshes_three_views_every_form_each_frame_numpys(meshes):
    views = [(45.0, 45.0), (0.0, 0.0), (30.0, 60.0)]
    numpy = Machine(backend="numpy")
    m = Machine(backend="counting")
    scenes = {name: renderer.Scene(mesh, machine=m) for name, mesh in meshes.items()}
    wanted = {}
    for name, mesh in meshes.items():
        for view in views:
            for loop in renderer.LOOP_FORMS:
                wanted[name, view, loop] = renderer.render(mesh, view, size=SIZE, loop=loop,
                                                           machine=numpy)  # fmt: skip
    replayed = 0
    for view in views:  # the views in turn, a scene keeping fewer kinds than it sees
        for round_ in range(3):  # run, capture, replay: the meshes and forms interleaved
            for name in meshes:
                for loop in renderer.LOOP_FORMS:
                    frame = renderer.render(scenes[name], view, size=SIZE, loop=loop)
                    want = wanted[name, view, loop]
                    assert same(frame, want), (name, view, loop, round_)
                    assert frame.stats.counts == want.stats.counts
                    assert frame.stats.cycles == want.stats.cycles
                    assert frame.stats.replayed == (round_ == 2)
                    replayed += frame.stats.replayed
    assert replayed == len(wanted)
    # the first view again: recorded long ago and dropped, or replayed: the same frames
    for name in meshes:
        for loop in renderer.LOOP_FORMS:
            frame = renderer.render(scenes[name], views[0], size=SIZE, loop=loop)
            assert same(frame, wanted[name, views[0], loop])


@pytest.mark.parametrize("loop", renderer.LOOP_FORMS)
def test_a_replayed_frame_costs_its_reads_and_a_graph_launch_a_stretch(meshes, loop):
    m = Machine(backend="counting")
    scene = renderer.Scene(meshes["unbalanced"], machine=m)
    counts = []
    for _ in range(3):
        with counting.measure() as c:
            renderer.render(scene, size=SIZE, loop=loop)
        counts.append(c.total)
    ran, captured, replayed = counts
    assert ran.captures == ran.graph_launches == 0
    # the capture: one graph a stretch between reads back, each launched once, the same
    # reads and the frame's kernels (with a copy gathering a read back, or zeroing a send's
    # tags, here and there)
    assert captured.captures == captured.graph_launches == ran.syncs + 1
    assert captured.syncs == ran.syncs
    assert abs(captured.launches - ran.launches) <= ran.syncs
    # the replay: the same reads back, one graph launch a stretch, and of kernels only the
    # copies that gather each read back
    assert replayed.captures == 0
    assert replayed.syncs == ran.syncs
    assert replayed.graph_launches == ran.syncs + 1
    assert replayed.launches < ran.launches // 4
    assert replayed.d2h_bytes <= ran.d2h_bytes and replayed.h2d_bytes == 0


def test_the_model_clock_counts_a_replay_as_the_frame(meshes):
    m = Machine(backend="counting")
    scene = renderer.Scene(meshes["balanced"], machine=m)
    clocks = []
    for _ in range(4):
        renderer.render(scene, size=SIZE, loop="cost-effective")
        clocks.append(m.clock)
    steps = np.diff([0.0, *clocks])
    assert np.all(steps == steps[0])
    assert m.stats["scan-conversion"].entries == 4


def test_a_replay_survives_its_scratch_buffers_being_replaced(meshes):
    """A larger scan on the capture stream replaces the scratch buffers its graphs use: the
    graphs keep theirs, and a replay reads and writes those as it did."""
    from kernels import cupy_scan

    m = Machine(backend="counting")
    scene = renderer.Scene(meshes["balanced"], machine=m)
    want = renderer.render(meshes["balanced"], size=SIZE, loop="original",
                           machine=Machine(backend="numpy"))  # fmt: skip
    for _ in range(2):
        renderer.render(scene, size=SIZE, loop="original")
    before = {id(a) for a in cupy_scan.scratch_arrays(m.xp)}
    with m._capture_stream:
        m.scan(m.asarray(np.ones(1 << 20, dtype=np.int64)))  # many more tiles
    assert {id(a) for a in cupy_scan.scratch_arrays(m.xp)} != before
    frame = renderer.render(scene, size=SIZE, loop="original")
    assert frame.stats.replayed and same(frame, want)


def test_a_graph_using_an_array_it_does_not_hold_is_refused():
    m = Machine(backend="counting")
    outside = m.asarray(np.arange(10))
    with pytest.raises(UnsafeRecording, match="made before the capture"):
        with m.recording():
            m.fetch(outside * 2)
    with m.recording(pin=(outside,)) as rec:
        (got,) = m.fetch(outside * 2)
    assert got.tolist() == list(range(0, 20, 2))
    outside[...] = 1
    assert rec.replay()[0].tolist() == [2] * 10  # the graph reads the array as it is now


def test_a_capture_refuses_what_cuda_refuses():
    m = Machine(backend="counting")
    x = m.asarray(np.arange(4))
    for block in (lambda: int(x.sum()), lambda: m.xp.asarray(np.arange(3)), lambda: x.tolist()):
        with pytest.raises(counting.graphs.CaptureError, match="while a stream captures"):
            with m.recording(pin=(x,)):
                block()
    assert m._recording is None  # the machine is usable after a failed capture
    assert m.asnumpy(x + 1).tolist() == [1, 2, 3, 4]


def test_replays_can_be_turned_off(meshes, monkeypatch):
    monkeypatch.setenv("SIMD_GRAPHS", "0")
    m = Machine(backend="counting")
    scene = renderer.Scene(meshes["balanced"], machine=m)
    with counting.measure() as c:
        frames = [renderer.render(scene, size=SIZE, loop="expand") for _ in range(3)]
    assert c.total.captures == 0 and not any(f.stats.replayed for f in frames)


def test_frames_by_the_wall_clock_are_never_recorded(meshes):
    m = Machine(backend="counting")
    scene = renderer.Scene(meshes["balanced"], machine=m)
    with counting.measure() as c, warnings.catch_warnings():
        # the tiny frame's balancing costs more than the overestimate says: not the point
        warnings.simplefilter("ignore", CostOverestimateWarning)
        for _ in range(3):
            renderer.render(scene, size=SIZE, loop="cost-effective", clock="wall")
    assert c.total.captures == 0
