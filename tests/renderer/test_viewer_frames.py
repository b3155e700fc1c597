"""The viewer's frames (renderer.viewer.frames, source, workchart) without a server: the
image is renderer.render's, the panel's numbers are the frame's statistics, and the work
per processor is what the balancer did."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import renderer
from renderer.viewer.frames import FrameMaker, panel, split_message
from renderer.viewer.requests import ViewRequest
from renderer.viewer.source import KEPT_LEVELS, Source, value_range
from renderer.viewer.workchart import first_redistribution, loop_charts, per_processor
from simd import Machine
from tests.renderer.viewer_support import pixels

SIZE = (80, 64)


@pytest.fixture(scope="module")
def unbalanced():
    return renderer.load_dataset("unbalanced", 24)


@pytest.fixture(scope="module")
def maker(unbalanced):
    return FrameMaker(Source.of_mesh(unbalanced, Machine(pes=32, backend="numpy")), SIZE)


def _render(mesh, request, size=SIZE, **options):
    """renderer.render of the bare mesh, on a machine of its own: the oracle."""
    return renderer.render(
        mesh,
        view=request.view,
        magnification=request.magnification,
        size=size,
        loop=request.loop,
        machine=Machine(pes=32, backend="numpy"),
        shading=request.shading,
        light=request.light,
        **options,
    )


@pytest.mark.parametrize("loop", renderer.LOOP_FORMS)
def test_a_frames_message_is_renders_image_and_statistics(maker, unbalanced, loop):
    request = ViewRequest(azimuth=30, elevation=20, magnification=1.5, loop=loop, id=3)
    header, png = split_message(maker.message(request))
    frame = _render(unbalanced, request)
    np.testing.assert_array_equal(pixels(png), frame.image)
    assert header["id"] == 3 and header["size"] == [80, 64] and not header["preview"]
    numbers = header["panel"]
    stats = frame.stats
    assert numbers["counts"] == stats.counts.__dict__
    assert [s["name"] for s in numbers["stages"]] == list(stats.stages)
    assert [s["cycles"] for s in numbers["stages"]] == [r.cycles for r in stats.stages.values()]
    assert numbers["frame"]["cycles"] == stats.cycles
    for shown, loop_result in zip(numbers["loops"], stats.loops.values(), strict=True):
        assert shown["form"] == loop
        assert shown["iterations"] == loop_result.iterations
        assert shown["without"] == loop_result.max_workload
        assert shown["decisions"] == loop_result.decisions


def test_the_panel_is_the_frames_own_statistics(unbalanced):
    frame = _render(unbalanced, ViewRequest(loop="cost-effective"))
    numbers = panel(frame)
    hz = frame.stats.machine.clock_hz
    for shown, (name, record) in zip(numbers["stages"], frame.stats.stages.items(), strict=True):
        assert (shown["name"], shown["wall"], shown["cycles"]) == (name, record.wall, record.cycles)
        assert shown["model"] == record.cycles / hz
    assert numbers["frame"] == {
        "wall": frame.stats.wall,
        "cycles": frame.stats.cycles,
        "model": frame.stats.cycles / hz,
    }


def test_every_loop_form_draws_the_same_picture_with_other_numbers(maker):
    images, iterations = {}, {}
    for loop in renderer.LOOP_FORMS:
        header, png = split_message(maker.message(ViewRequest(loop=loop)))
        images[loop] = pixels(png)
        iterations[loop] = [shown["iterations"] for shown in header["panel"]["loops"]]
    assert all(np.array_equal(images["original"], image) for image in images.values())
    # the unbalanced data set: balancing takes far fewer iterations than the original loop
    assert iterations["cost-effective"][0] < iterations["original"][0] / 4


def test_a_preview_is_the_frame_at_half_the_size(maker, unbalanced):
    request = ViewRequest(azimuth=60, preview=True)
    header, png = split_message(maker.message(request))
    assert header["preview"] and header["size"] == [40, 32]
    np.testing.assert_array_equal(pixels(png), _render(unbalanced, request, size=(40, 32)).image)


def test_a_colour_map_colours_the_height_as_render_does(maker, unbalanced):
    from renderer.stages.shading import vertex_scalars

    request = ViewRequest(colormap="plasma")
    _, png = split_message(maker.message(request))
    values = vertex_scalars(unbalanced.vertices, "height")
    frame = _render(unbalanced, request, values=values, colormap="plasma")
    np.testing.assert_array_equal(pixels(png), frame.image)


def test_the_work_after_balancing_is_what_the_balancer_made(unbalanced):
    frame = renderer.render(unbalanced, size=128, keep_workloads=True,
                            machine=Machine(pes=32, backend="numpy"))  # fmt: skip
    loop = frame.stats.loops["scan-conversion"]
    assert loop.decisions >= 1  # the unbalanced data set: the balancer redistributes
    k, before, after = first_redistribution(frame.stats.workloads.scan, loop)
    event = loop.events[0]
    assert k == event.iteration
    assert before.max() == event.max_before and after.max() == event.max_after
    assert after.sum() == before.sum()  # no task lost or made
    charts = loop_charts(frame, pes=32)
    assert [c["loop"] for c in charts] == ["scan-conversion", "z-buffer"]
    assert charts[0]["max_before"] == event.max_before
    assert charts[0]["max_after"] == event.max_after


@pytest.mark.parametrize("loop", ["original", "expand"])
def test_loops_that_never_redistribute_have_no_after(unbalanced, loop):
    frame = renderer.render(unbalanced, size=64, loop=loop, keep_workloads=True,
                            machine=Machine(pes=32, backend="numpy"))  # fmt: skip
    for chart in loop_charts(frame, pes=32):
        assert chart["after"] is None and chart["max_before"] > 0 and chart["note"]


@given(
    st.lists(st.integers(0, 1000), min_size=0, max_size=300),
    st.integers(1, 64),
    st.integers(1, 16),
)
def test_per_processor_is_the_busiest_vp_of_each_processors_block(workload, pes, bars):
    got = per_processor(workload, pes, bars)
    ratio = max(1, -(-len(workload) // pes))
    busiest = [max(workload[p * ratio : (p + 1) * ratio], default=0) for p in range(pes)]
    per_bar = -(-pes // bars)
    expected = [max(busiest[b * per_bar : (b + 1) * per_bar]) for b in range(-(-pes // per_bar))]
    assert got.tolist() == expected


@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), min_size=1, max_size=80))
def test_a_volumes_range_is_that_of_its_finite_values(values):
    array = np.array(values, dtype=np.float32).reshape(-1, 1, 1)
    finite = array[np.isfinite(array)]
    if finite.size == 0:
        with pytest.raises(ValueError, match="no finite value"):
            value_range(array)
    else:
        assert value_range(array) == (float(finite.min()), float(finite.max()))


def test_a_volume_source_extracts_each_level_once_and_keeps_the_newest():
    x, y, z = np.mgrid[-1:1:17j, -1:1:17j, -1:1:17j]
    machine = Machine(pes=32, backend="numpy")
    source = Source.of_volume(renderer.Volume(x * x + y * y + z * z), machine)
    assert source.choices.levels == (0.0, 3.0)
    levels = [0.2 * (i + 1) for i in range(KEPT_LEVELS + 1)]
    scenes = [source.surface(level) for level in levels]
    expected = renderer.isosurface(x * x + y * y + z * z, levels[0], machine=machine)
    np.testing.assert_array_equal(scenes[0].mesh.faces, expected.faces)
    assert source.surface(levels[-1]) is scenes[-1]  # kept
    assert source.surface(levels[0]) is not scenes[0]  # the oldest was let go
    with pytest.raises(ValueError, match="has no surface"):
        source.choices.check_level(3.5)


def test_a_frame_shows_itself_in_a_notebook_as_its_picture():
    quad = ([[0.0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], [[0, 1, 2], [0, 2, 3]])
    frame = renderer.render(quad, size=(24, 16))
    np.testing.assert_array_equal(pixels(frame._repr_png_()), frame.image)
