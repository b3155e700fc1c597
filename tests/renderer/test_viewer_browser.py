"""``simd-emu view`` in a real browser: headless Chromium (Debian's package) driven by
Playwright. The page loads under its own content policy, its first frame is the image of
``simd-emu render`` for the same view pixel for pixel, a drag turns it, the level slider
changes the triangles shown, every loop form draws the same pixels, and the panel's
numbers are the frame's statistics."""

from __future__ import annotations

import base64
import time

import numpy as np
import pytest

import renderer
from simd import Machine
from simd.cli import main
from tests.renderer.viewer_support import SMALL, Command, pixels

pytest.importorskip("starlette", reason="the viewer's tests need the view extra")

SIZE = 96  # SMALL's frame size

#: Bytes in the page as base64, a slice at a time (JavaScript's argument lists are short).
_BASE64 = """const base64 = (d) => {
  let s = "";
  for (let i = 0; i < d.length; i += 8192) {
    s += String.fromCharCode.apply(null, d.subarray(i, i + 8192));
  }
  return btoa(s);
};"""
#: The canvas's pixels (RGBA) and the last PNG file's bytes, read in the page.
_CANVAS = f"""() => {{
  {_BASE64}
  const c = document.getElementById("frame");
  const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
  return [c.width, c.height, base64(d)];
}}"""
_PNG = f"""() => {{
  {_BASE64}
  return base64(window.simdView.png);
}}"""


@pytest.fixture(scope="module")
def command():
    command = Command(*SMALL)
    yield command
    command.interrupt()


@pytest.fixture(scope="module")
def volume(tmp_path_factory):
    x, y, z = np.mgrid[-1:1:24j, -1:1:24j, -1:1:24j]
    path = tmp_path_factory.mktemp("volume") / "ball.npy"
    np.save(path, (x * x + y * y + z * z).astype(np.float32))
    command = Command(str(path), "--level", "0.5", "--size", str(SIZE), "--pes", "32",
                      "--backend", "numpy")  # fmt: skip
    yield np.load(path), command
    command.interrupt()


@pytest.fixture
def page(chromium):
    context = chromium.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    page.problems = []
    page.on("console", lambda m: page.problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.problems.append(str(e)))
    yield page
    context.close()


def _wait(page, script: str, timeout: float = 30.0):
    """Poll ``script`` in the page until it is truthy; return its value."""
    deadline = time.monotonic() + timeout
    while not (value := page.evaluate(script)):
        assert time.monotonic() < deadline, f"waited {timeout} s for {script}"
        time.sleep(0.02)
    return value


def _open(page, url: str) -> dict:
    page.goto(url)
    _wait(page, "() => window.simdView && window.simdView.frames >= 1")
    return page.evaluate("() => window.simdView.header")


def _still(page, condition: str) -> dict:
    """The header of the first full frame whose request satisfies ``condition`` (JS, of
    ``r``), once nothing more is on its way."""
    return _wait(
        page,
        f"""() => {{ const h = window.simdView.header;
                     if (!h || h.preview) return null; const r = h.request;
                     return ({condition}) ? h : null; }}""",
    )


def _canvas(page) -> np.ndarray:
    width, height, data = page.evaluate(_CANVAS)
    rgba = np.frombuffer(base64.b64decode(data), dtype=np.uint8).reshape(height, width, 4)
    assert (rgba[..., 3] == 255).all()
    return rgba[..., :3]


def _png(page) -> np.ndarray:
    return pixels(base64.b64decode(page.evaluate(_PNG)))


def _numbers(page, table: str, field: str) -> dict[str, str]:
    return page.evaluate(
        f"""() => Object.fromEntries(Array.from(document.querySelectorAll(
            '#{table} tbody tr')).map(tr => [tr.dataset.key,
            tr.querySelector('[data-field="{field}"]').dataset.value]))"""
    )


def _render(**view) -> renderer.Frame:
    """The oracle: renderer.render of the command's data set and options."""
    options = {"view": (45.0, 45.0), "loop": "cost-effective", **view}
    return renderer.render(renderer.load_dataset("balanced", 24), size=SIZE,
                           machine=Machine(pes=32, backend="numpy"), **options)  # fmt: skip


def test_the_first_frame_is_the_render_commands_image(command, page, tmp_path):
    header = _open(page, command.url)
    assert header["size"] == [SIZE, SIZE] and not header["preview"]
    out = tmp_path / "frame.png"
    assert main(["render", *SMALL, "-o", str(out), "--no-progress"]) == 0
    expected = pixels(out.read_bytes())
    np.testing.assert_array_equal(_png(page), expected)  # the bytes the page was sent
    np.testing.assert_array_equal(_canvas(page), expected)  # and what it drew
    assert page.locator("#title").text_content() == "marschner-lobb-24"
    assert page.problems == []  # nothing broke the page's content policy or its script


def test_a_drag_turns_the_surface(command, page):
    _open(page, command.url)
    first = _canvas(page)
    box = page.locator("#frame").bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + 60, y + 20, steps=12)
    page.mouse.up()
    header = _still(page, "r.azimuth !== 45")
    request = header["request"]
    assert request["azimuth"] == pytest.approx(45 - 0.5 * 60, abs=1)
    assert request["elevation"] == pytest.approx(45 + 0.5 * 20, abs=1)
    assert page.evaluate("() => window.simdView.previews") >= 1  # smaller frames while moving
    turned = _canvas(page)
    assert not np.array_equal(turned, first)
    frame = _render(view=(request["azimuth"], request["elevation"]))
    np.testing.assert_array_equal(turned, frame.image)
    page.locator("#frame").dblclick()  # back to the first view
    _still(page, "r.azimuth === 45 && r.elevation === 45")
    np.testing.assert_array_equal(_canvas(page), first)


def test_every_loop_form_draws_the_same_pixels_and_the_panel_is_the_frames_stats(command, page):
    _open(page, command.url)
    images = {}
    for loop in ("original", "expand", "cost-effective"):
        page.select_option("#loop", loop)
        header = _still(page, f"r.loop === '{loop}'")
        images[loop] = _canvas(page)
        frame = _render(loop=loop)
        stats = frame.stats
        counts = _numbers(page, "counts", "count")
        assert int(counts["triangles"]) == stats.counts.triangles
        assert int(counts["pixels covered"]) == stats.counts.pixels
        for field, attribute in (("iterations", "iterations"), ("without", "max_workload"),
                                 ("decisions", "decisions")):  # fmt: skip
            shown = _numbers(page, "loops", field)
            assert {k: int(v) for k, v in shown.items()} == {
                name: getattr(loop_result, attribute) for name, loop_result in stats.loops.items()
            }
        assert set(_numbers(page, "loops", "form").values()) == {loop}
        model = _numbers(page, "stages", "model")
        hz = stats.machine.clock_hz
        for name, record in stats.stages.items():
            assert float(model[name]) == record.cycles / hz
        assert float(model["frame"]) == stats.cycles / hz
        wall = _numbers(page, "stages", "wall")  # this frame's own wall clock, as sent
        assert {k: float(v) for k, v in wall.items()} == {
            **{s["name"]: s["wall"] for s in header["panel"]["stages"]},
            "frame": header["panel"]["frame"]["wall"],
        }
        np.testing.assert_array_equal(images[loop], frame.image)
    assert np.array_equal(images["original"], images["expand"])
    assert np.array_equal(images["original"], images["cost-effective"])


def test_the_level_slider_changes_the_triangles_shown(volume, page):
    samples, command = volume
    first = _open(page, command.url)
    assert first["request"]["level"] == 0.5
    shown = int(_numbers(page, "counts", "count")["triangles"])
    machine = Machine(pes=32, backend="numpy")
    assert shown == renderer.isosurface(samples, 0.5, machine=machine).n_faces
    page.locator("#level").focus()
    page.keyboard.press("Home")  # the lowest level the slider offers: a small ball
    header = _still(page, "r.level < 0.1")
    level = header["request"]["level"]
    shown_after = int(_numbers(page, "counts", "count")["triangles"])
    assert shown_after == renderer.isosurface(samples, level, machine=machine).n_faces
    assert shown_after != shown
    assert float(page.locator("#level-value").text_content()) == pytest.approx(level, rel=1e-4)
