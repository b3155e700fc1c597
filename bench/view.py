"""Frames per second of ``simd-emu view``, with a scripted page over its websocket.

The viewer serves from this process (:func:`renderer.view`, as in a notebook) and a
scripted page drives it as the browser's page does: it asks for one view, waits for its
frame (the header and the PNG), and asks for the next. Measured, each for ``--seconds``:

``drag``
    The built-in 241,498-triangle data set at 512 x 512, the azimuth turning 2 degrees a
    frame, as previews (256 x 256, stretched by the page): what a drag shows.
``still``
    The same with full 512 x 512 frames: a drag if no preview were made, and the frame
    where a drag stops.
``level``
    A Marschner-Lobb volume of 256^3 samples: the time from a new level asked for to its
    full frame (the isosurface extracted again on the machine, prepared, rendered, sent),
    for 8 levels never asked for before.

Beside them, in the same run: ``frames only``, the viewer's frame messages made with no
server or socket (the frame, its workloads, panel and work charts, the PNG), and ``render
only``, :func:`renderer.render` of the prepared scene at each size with nothing else; the
differences are the viewer's own costs. Goals on a 2-core machine
with NumPy: a drag at 10 frames per second or more, a level change within 0.5 s; on an
H100 or H200, a drag at 60 frames per second or more.

Run ``python -m bench.view [--backend B] [--seconds S] [--quick] [--out DIR | --save]``;
the JSON goes to the current folder (or ``--out DIR``, or with ``--save`` this source
tree's ``bench/results``) as ``view[-quick].json``. :func:`measure` is what
``python -m bench.gpu_check`` may call on a GPU machine; without the ``view`` extra's web
packages it measures the frames without the page and says why it measured no page.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any

from bench import ROOT
from simd.outputs import (
    add_output_arguments,
    announce_replace_from_args,
    output_folder_from_args,
    write_text,
)

#: Where ``--save`` writes: the results committed with the source tree.
SAVE_DIR = ROOT / "bench" / "results"

#: Goals: frames per second of a drag (on the CPU with NumPy; on a GPU), and the seconds a
#: level change may take (on the CPU).
GOALS = {"drag_fps_cpu": 10.0, "drag_fps_gpu": 60.0, "level_seconds_cpu": 0.5}

#: The full run and the quick one (a small data set and volume, for a try or a test).
SIZES = {
    False: {"dataset": "250k", "size": 512, "grid": 256, "levels": 8},
    True: {"dataset": 24, "size": 128, "grid": 48, "levels": 3},
}


def measure(
    backend: str = "auto", seconds: float = 5.0, *, quick: bool = False, echo: Any = None
) -> dict:
    """Measure the viewer on ``backend`` (``"numpy"``, ``"cupy"``, ``"auto"``), each part
    for about ``seconds``; returns the record (plain data, with the environment). ``echo``
    (e.g. ``print``) is given the table's lines at the end."""
    import renderer
    from simd import Machine
    from simd.info import environment

    plan = SIZES[quick]
    load_before = os.getloadavg()
    machine = Machine(backend=backend)
    mesh = renderer.load_dataset("balanced", plan["dataset"])
    size = plan["size"]
    record: dict[str, Any] = {
        "benchmark": "view",
        "environment": environment(),
        "backend": machine.backend,
        "requested_backend": backend,
        "triangles": mesh.n_faces,
        "size": [size, size],
        "seconds": seconds,
        "goals": GOALS,
        "render_only": _render_only(mesh, machine, size, seconds),
        "frames_only": _frames_only(mesh, machine, size, seconds),
    }
    try:
        from simd.errors import require

        for package in ("starlette", "uvicorn", "websockets"):
            require(package, "view", "the scripted page")
    except ImportError as err:
        record["page"] = {"skipped": str(err)}
    else:
        record["page"] = _through_the_page(mesh, machine, size, seconds)
        record["level"] = _level_changes(machine, plan["grid"], plan["levels"], size)
    # the host's load: on a shared machine other work slows every part
    record["load_average"] = {"before": load_before, "after": os.getloadavg()}
    for line in table(record) if echo is not None else ():
        echo(line)
    return record


def _render_only(mesh: Any, machine: Any, size: int, seconds: float) -> dict:
    """Frames per second of renderer.render of the prepared scene, full size and half."""
    import renderer

    scene = renderer.Scene(mesh, machine=machine)
    out = {}
    for name, pixels in (("still", size), ("drag", size // 2)):
        renderer.render(scene, size=pixels)  # compiled and warm
        frames, start, azimuth = 0, time.perf_counter(), 45.0
        while time.perf_counter() - start < seconds:
            renderer.render(scene, view=(azimuth, 45.0), size=pixels)
            frames, azimuth = frames + 1, azimuth + 2.0
        out[name] = {"fps": frames / (time.perf_counter() - start), "frames": frames}
    return out


def _frames_only(mesh: Any, machine: Any, size: int, seconds: float) -> dict:
    """Frames per second of the viewer's frame messages made in this thread, with no
    server or socket (and no web package): render, workloads, panel, work charts, PNG."""
    from renderer.viewer.frames import FrameMaker
    from renderer.viewer.requests import ViewRequest
    from renderer.viewer.source import Source

    maker = FrameMaker(Source.of_mesh(mesh, machine), (size, size))
    out = {}
    for name, preview in (("drag", True), ("still", False)):
        maker.message(ViewRequest(preview=preview))  # warm
        frames, start, azimuth = 0, time.perf_counter(), 45.0
        while time.perf_counter() - start < seconds:
            maker.message(ViewRequest(azimuth=azimuth, preview=preview))
            frames, azimuth = frames + 1, azimuth + 2.0
        out[name] = {"fps": frames / (time.perf_counter() - start), "frames": frames}
    return out


def _through_the_page(mesh: Any, machine: Any, size: int, seconds: float) -> dict:
    """A drag (previews) and full frames through the server and its websocket."""
    import renderer

    out = {}
    with renderer.view(mesh, size=size, machine=machine) as viewer, _Page(viewer.url) as page:
        for name, preview in (("drag", True), ("still", False)):
            page.frame(azimuth=45.0, preview=preview)  # warm
            frames, start, azimuth, server = 0, time.perf_counter(), 45.0, []
            while time.perf_counter() - start < seconds:
                azimuth += 2.0
                header = page.frame(azimuth=azimuth, preview=preview)
                frames += 1
                server.append(header["server"])
            elapsed = time.perf_counter() - start
            out[name] = {
                "fps": frames / elapsed,
                "frames": frames,
                "size": header["size"],
                "median_render_s": statistics.median(s["render"] for s in server),
                "median_png_s": statistics.median(s["png"] for s in server),
                "median_charts_s": statistics.median(s["charts"] for s in server),
            }
    return out


def _level_changes(machine: Any, grid: int, levels: int, size: int) -> dict:
    """Seconds from a new level asked for to its full frame, on a grid^3 volume."""
    import renderer
    from renderer.datasets.builtin import marschner_lobb

    volume = marschner_lobb(grid)
    asked = [0.35 + 0.3 * i / max(1, levels - 1) for i in range(levels)]
    times, triangles = [], []
    with renderer.view(volume, level=0.5, size=size, machine=machine) as viewer:
        with _Page(viewer.url) as page:
            for level in asked:
                start = time.perf_counter()
                header = page.frame(level=level)
                times.append(time.perf_counter() - start)
                triangles.append(header["panel"]["counts"]["triangles"])
    return {
        "grid": grid,
        "levels": asked,
        "seconds": times,
        "median_s": statistics.median(times),
        "max_s": max(times),
        "triangles": triangles,
    }


class _Page:
    """The scripted page: one websocket, one request at a time."""

    def __init__(self, url: str) -> None:
        from contextlib import ExitStack

        from websockets.sync.client import connect

        self._stack = ExitStack()
        address = url.replace("http://", "ws://", 1).replace("/?token=", "/ws?token=", 1)
        self.socket = self._stack.enter_context(connect(address, max_size=2**26))
        self.socket.recv(timeout=600)  # the hello
        self.id = 0

    def frame(self, **view: Any) -> dict:
        from renderer.viewer.frames import split_message

        self.id += 1
        self.socket.send(json.dumps({**view, "id": self.id}))
        message = self.socket.recv(timeout=600)
        if isinstance(message, str):
            raise RuntimeError(f"the viewer answered: {message}")
        return split_message(message)[0]

    def __enter__(self) -> _Page:
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stack.close()


def table(record: dict) -> list[str]:
    """The printed table of a record."""
    w, h = record["size"]
    lines = [f"{record['triangles']:,} triangles at {w}x{h} on {record['backend']}"]
    lines.append(f"{'frames per second':<22} {'page':>8} {'frames only':>12} {'render only':>12}")
    page = record["page"]
    for name, what in (("drag", "drag (previews)"), ("still", "full frames")):
        viewer = "-" if "skipped" in page else f"{page[name]['fps']:.1f}"
        frames = record["frames_only"][name]["fps"]
        alone = record["render_only"][name]["fps"]
        lines.append(f"{what:<22} {viewer:>8} {frames:>12.1f} {alone:>12.1f}")
    if "skipped" in page:
        lines.append(f"no page measured: {page['skipped']}")
    else:
        level = record["level"]
        lines.append(
            f"level change on {level['grid']}^3: median {level['median_s']:.3f} s, "
            f"slowest {level['max_s']:.3f} s over {len(level['levels'])} new levels"
        )
    load = record["load_average"]
    lines.append(
        f"load average of the host (1 minute): {load['before'][0]:.1f} before, "
        f"{load['after'][0]:.1f} after, on {os.cpu_count()} cores"
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.view", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--backend", default="auto", help="machine backend (default auto)")
    parser.add_argument(
        "--seconds", type=float, default=5.0, help="seconds of each measurement (default 5)"
    )
    parser.add_argument("--quick", action="store_true", help="a small data set and volume")
    add_output_arguments(parser, save_dir=SAVE_DIR)
    args = parser.parse_args(argv)
    if not args.seconds > 0:
        parser.error("--seconds must be positive")
    path = output_folder_from_args(parser, args, save_dir=SAVE_DIR) / (
        "view-quick.json" if args.quick else "view.json"
    )
    announce_replace_from_args(parser, args, path)
    record = measure(args.backend, args.seconds, quick=args.quick, echo=print)
    write_text(path, json.dumps(record, indent=2))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
