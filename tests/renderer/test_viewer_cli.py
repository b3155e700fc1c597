"""``simd-emu view``: bad input is one line before anything serves; the command serves the
page at the address it prints and stops cleanly on Ctrl-C; under mpiexec rank 0 serves and
the ranks render each frame together."""

from __future__ import annotations

import re
import signal
import urllib.request

import numpy as np
import pytest

import renderer
from renderer.viewer.serving import bind
from simd import Machine
from simd.cli import main
from tests.mpi_support import mpiexec
from tests.renderer.viewer_support import SMALL, Command, Page, pixels, port_is_free, port_of

pytest.importorskip("starlette", reason="the viewer's tests need the view extra")


def _one_line_before_serving(capsys, args) -> str:
    status = main(["view", *args, "--no-browser", "--port", "0"])
    out, err = capsys.readouterr()
    assert status == 2
    assert "http://" not in out  # nothing served
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("simd-emu view: ")
    return lines[0]


def test_a_missing_file_is_one_line(capsys, tmp_path):
    line = _one_line_before_serving(capsys, [str(tmp_path / "scan.npy"), "--level", "1"])
    assert "scan.npy" in line


def test_a_level_outside_the_volume_is_one_line(capsys, tmp_path):
    path = tmp_path / "cube.npy"
    np.save(path, np.linspace(0, 1, 6**3, dtype=np.float32).reshape(6, 6, 6))
    line = _one_line_before_serving(capsys, [str(path), "--level", "5"])
    assert "level 5 has no surface: the volume's values run from 0 to 1" in line


def test_a_port_in_use_is_one_line(capsys):
    with bind("127.0.0.1", 0) as taken:
        port = taken.getsockname()[1]
        status = main(["view", *SMALL, "--no-browser", "--port", str(port)])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert err == [
        f"simd-emu view: port {port} is in use on 127.0.0.1: give another with --port "
        "(--port 0 takes any free one)"
    ]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--mesh", "part.ply", "--dataset", "oilwell"], "not with --mesh FILE"),
        (["--level", "3"], "--level extracts the isosurface of a VOLUME"),
        (["--view", "0", "100"], "elevation must be within -90 to 90"),
        (["-M", "1000"], "magnification must be within 0.05 to 100"),
        (["--colormap", "no-such-map"], "no-such-map"),
    ],
)
def test_contradicting_or_impossible_options_are_one_line(capsys, args, words):
    assert words in _one_line_before_serving(capsys, [*SMALL, *args])


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_the_command_serves_the_page_and_stops_cleanly(stop):
    from websockets.exceptions import ConnectionClosed

    command = Command(*SMALL, "--host", "127.0.0.1")
    try:
        with urllib.request.urlopen(command.url, timeout=30) as response:
            assert response.status == 200 and b"simd-emu view" in response.read()
        with Page(command.url) as page:
            page.frame(azimuth=10)
            page.send(azimuth=20)  # a frame on its way as the viewer is stopped
            status, out, err = command.interrupt(stop)
            with pytest.raises(ConnectionClosed):  # the server closed the page's socket
                while True:
                    page.receive()
    finally:
        command.kill()
    assert status == 0, err
    assert re.fullmatch(r"simd-emu view: stopped after [12] frames?", out.strip().splitlines()[-1])
    assert "Traceback" not in err
    assert port_is_free(port_of(command.url))


def test_listening_beyond_this_machine_warns():
    command = Command(*SMALL, "--host", "0.0.0.0")
    status, _, err = command.interrupt()
    assert status == 0
    assert "warning: listening on 0.0.0.0, beyond this machine" in err


@pytest.mark.mpi
def test_under_mpiexec_rank_0_serves_and_the_ranks_render_together():
    launcher = (mpiexec(), "--oversubscribe", "-n", "3")
    command = Command(*SMALL, launcher=launcher, timeout=240)
    try:
        with Page(command.url) as page:
            assert page.hello["ranks"] == 3 and page.hello["name"] == "marschner-lobb-24"
            header, png = page.frame(azimuth=70, elevation=10, loop="original")
        chart = header["charts"][0]
        assert chart["loop"] == "ranks" and len(chart["before"]) == 3
    finally:
        # mpiexec ends every rank on Ctrl-C (its SIGTERM, then SIGKILL)
        command.interrupt(signal.SIGINT, timeout=60)
    frame = renderer.render(renderer.load_dataset("balanced", 24), view=(70, 10), size=96,
                            loop="original", machine=Machine(pes=32, backend="numpy"))  # fmt: skip
    np.testing.assert_array_equal(pixels(png), frame.image)
    assert header["panel"]["counts"]["triangles"] == frame.stats.counts.triangles
    assert port_is_free(port_of(command.url))


def test_without_the_view_extra_the_command_names_it_in_one_line(monkeypatch, capsys):
    import simd.programs

    monkeypatch.setattr(simd.programs, "_installed", lambda name: name != "starlette")
    assert main(["view", "--no-browser"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "'simd-emu view' needs the package 'starlette', which is not installed: "
        "pip install 'simd-emu[view]'"
    ]


def test_the_view_extra_installs_what_the_command_needs():
    import importlib.metadata
    import re
    import tomllib

    from renderer.cli.view import REQUIRES
    from tests.renderer.viewer_support import ROOT

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    view = {re.split(r"[\[<>=!~; ]", r, maxsplit=1)[0].lower() for r in extras["view"]}
    assert "simd-emu" in view  # with the data extra
    owners = importlib.metadata.packages_distributions()
    for name in REQUIRES["view"]:
        assert {d.lower() for d in owners[name]} & view, f"{name} is not in the view extra"
