"""The viewer's server (renderer.viewer.app, sessions, serving) with scripted pages over
the websocket: the token on every request, the newest request wins, two pages at once, a
closed page frees its session, renderer.view in a notebook."""

from __future__ import annotations

import re
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

import renderer
from renderer.viewer.app import STATIC_FILES
from renderer.viewer.serving import bind
from simd import Machine
from tests.renderer.viewer_support import Page, pixels, port_is_free, port_of, socket_url

pytest.importorskip("starlette", reason="the viewer's tests need the view extra")

SIZE = 64


@pytest.fixture(scope="module")
def mesh():
    return renderer.load_dataset("balanced", 24)


@pytest.fixture(scope="module")
def running(mesh):
    viewer = renderer.view(mesh, size=SIZE, machine=Machine(pes=32, backend="numpy"))
    yield viewer
    viewer.close()


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def _wait(condition, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_every_http_request_needs_the_token(running):
    base, token = running.url.split("/?token=")
    assert _get(running.url)[0] == 200
    for path in ("/", "/static/viewer.js", "/static/viewer.css"):
        assert _get(base + path)[0] == 403
        assert _get(f"{base}{path}?token={'0' * len(token)}")[0] == 403
        assert _get(f"{base}{path}?token={token}")[0] == 200
    assert _get(f"{base}/static/secrets.txt?token={token}")[0] == 404
    assert _get(f"{base}/static/..%2F..%2Fapp.py?token={token}")[0] == 404


def test_a_websocket_without_the_token_is_refused(running):
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    with (
        pytest.raises(InvalidStatus, match="403"),
        connect(socket_url(running.url).split("?")[0] + "?token=wrong", open_timeout=10),
    ):
        pass


def test_the_page_needs_nothing_from_another_site(running):
    base, token = running.url.split("/?token=")
    for name in STATIC_FILES:
        text = _get(f"{base}/static/{name}?token={token}" if name != "index.html"
                    else running.url)[1].decode()  # fmt: skip
        assert not re.search(r"(https?:)?//[\w.-]+\.\w", text.replace("http://www.w3", "")), name


def test_a_page_gets_the_frame_of_the_view_it_asks_for(running, mesh):
    with Page(running.url) as page:
        assert page.hello["size"] == [SIZE, SIZE] and page.hello["choices"]["levels"] is None
        header, png = page.frame(azimuth=120, elevation=-30, loop="expand", id=5)
    assert header["id"] == 5
    frame = renderer.render(mesh, view=(120, -30), size=SIZE, loop="expand",
                            machine=Machine(pes=32, backend="numpy"))  # fmt: skip
    np.testing.assert_array_equal(pixels(png), frame.image)
    assert header["panel"]["counts"]["triangles"] == mesh.n_faces


def test_the_newest_request_wins_and_no_queue_grows(running):
    with Page(running.url) as page:
        for i in range(1, 31):
            page.send(azimuth=float(i), id=i)
        ids = []
        while not ids or ids[-1] != 30:
            header, png = page.receive()
            assert png is not None, header
            ids.append(header["id"])
    assert ids == sorted(ids) and len(ids) < 30  # the requests that waited were dropped
    assert header["request"]["azimuth"] == 30.0


def test_a_bad_request_is_answered_with_its_error_and_the_page_goes_on(running):
    with Page(running.url) as page:
        page.send(azimuth=10, path="/etc/passwd")
        error, png = page.receive()
        assert (
            png is None and error["type"] == "error" and "unknown field 'path'" in error["message"]
        )
        page.socket.send("not json")
        assert "must be JSON" in page.receive()[0]["message"]
        header, _ = page.frame(azimuth=10, id=2)
        assert header["id"] == 2


def test_two_pages_at_once_each_get_their_own_views(running, mesh):
    with Page(running.url) as one, Page(running.url) as two:
        for azimuth in (0, 90, 180):
            one.send(azimuth=azimuth, id=azimuth + 1)
            two.send(azimuth=azimuth + 45, id=azimuth + 2)
            (h1, p1), (h2, p2) = one.receive(), two.receive()
            assert (h1["id"], h2["id"]) == (azimuth + 1, azimuth + 2)
            for header, png in ((h1, p1), (h2, p2)):
                expected = renderer.render(
                    mesh,
                    view=(header["request"]["azimuth"], 45),
                    size=SIZE,
                    machine=Machine(pes=32, backend="numpy"),
                )
                np.testing.assert_array_equal(pixels(png), expected.image)


def test_a_closed_page_frees_its_session(running):
    sessions = running.viewer.sessions
    assert _wait(lambda: not sessions)
    page = Page(running.url)
    page.frame(azimuth=5)
    assert len(sessions) == 1
    page.close()
    assert _wait(lambda: not sessions)


def test_renderer_view_shows_the_page_in_a_cell_and_close_frees_the_port(mesh):
    viewer = renderer.view(
        mesh, size=(48, 32), view=(10, 20), machine=Machine(pes=32, backend="numpy")
    )
    assert f'src="{viewer.url}"' in viewer._repr_html_().replace("&amp;", "&")
    assert "serving" in repr(viewer)
    with Page(viewer.url) as page:
        assert page.hello["initial"]["azimuth"] == 10 and page.hello["size"] == [48, 32]
    port = port_of(viewer.url)
    viewer.close()
    assert port_is_free(port)


def test_renderer_view_of_a_volume_has_a_level_to_move():
    x, y, z = np.mgrid[-1:1:20j, -1:1:20j, -1:1:20j]
    volume = x * x + y * y + z * z
    machine = Machine(pes=32, backend="numpy")
    with (
        renderer.view(volume, level=0.5, size=SIZE, machine=machine) as viewer,
        Page(viewer.url) as page,
    ):
        low, high = page.hello["choices"]["levels"]
        assert (low, high) == (float(volume.min()), float(volume.max()))
        counts = [
            page.frame(level=level)[0]["panel"]["counts"]["triangles"] for level in (0.3, 0.9)
        ]
        assert counts == [renderer.isosurface(volume, level, machine=machine).n_faces
                          for level in (0.3, 0.9)]  # fmt: skip
        page.frame(level=0.3)
        page.send(level=5.0)
        assert "has no surface" in page.receive()[0]["message"]


def test_a_port_in_use_is_one_line():
    with bind("127.0.0.1", 0) as taken:
        port = taken.getsockname()[1]
        with pytest.raises(OSError, match=f"^port {port} is in use on 127.0.0.1: give another"):
            bind("127.0.0.1", port)
