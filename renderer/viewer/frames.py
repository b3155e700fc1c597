"""A viewer's frames: the view a page asks for, rendered on the machine, with the numbers of
its panel.

:class:`FrameMaker` renders a :class:`~renderer.viewer.requests.ViewRequest` of its
:class:`~renderer.viewer.source.Source` with :func:`renderer.render` (a prepared
:class:`renderer.Scene` on one process; this rank's share, sort-last, on MPI ranks) and
turns the frame into what the page is sent (:meth:`FrameMaker.message`): one binary
message, a header and the image's PNG file::

    4 bytes   the header's length in bytes, big-endian
    header    JSON: the request's id, the frame's size, the panel (:func:`panel`) and
              the work per processor before and after balancing (:mod:`.workchart`)
    PNG       the frame's image, the bytes ``renderer.image.png_bytes`` makes

A preview (a frame asked for while the view is dragged) is half as wide and high; the
page stretches it over the full frame until the full frame of the view where the drag
stopped arrives.

Examples
--------
>>> import numpy as np, renderer
>>> from simd import Machine
>>> from renderer.viewer.source import Source
>>> quad = (np.array([[0.0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]]), [[0, 1, 2], [0, 2, 3]])
>>> maker = FrameMaker(Source.of_mesh(quad, Machine(pes=16, backend="numpy")), (32, 32))
>>> data = maker.message(ViewRequest(azimuth=0, elevation=0, id=7))
>>> header, png = split_message(data)
>>> header["id"], header["size"], header["panel"]["counts"]["triangles"], png[:4]
(7, [32, 32], 2, b'\\x89PNG')
"""

from __future__ import annotations

import json
import time
from typing import Any

from renderer.image import png_bytes
from renderer.pipeline import render
from renderer.viewer.requests import ViewRequest
from renderer.viewer.workchart import loop_charts, rank_chart

__all__ = ["FrameMaker", "panel", "preview_size", "split_message"]


def preview_size(size: tuple[int, int]) -> tuple[int, int]:
    """The size of a preview frame: half as wide and high (at least 1 pixel).

    >>> preview_size((512, 384)), preview_size((1, 1))
    ((256, 192), (1, 1))
    """
    return (max(1, size[0] // 2), max(1, size[1] // 2))


class FrameMaker:
    """Renders a source's views as the page asks for them.

    Parameters
    ----------
    source : Source
        What is shown, and the machine it is shown on.
    size : (width, height)
        Of a full frame.
    picture : dict, optional
        :func:`renderer.render`'s options that stay as the command set them (``fov``,
        ``distance``, ``up``, ``framing``, ``colour``, ``background``, ``crease_angle``,
        ``supersample``); the page chooses the rest.
    clock : {"model", "wall"}
        The clock the cost-effective balancer decides with.
    """

    def __init__(
        self,
        source: Any,
        size: tuple[int, int],
        *,
        picture: dict[str, Any] | None = None,
        clock: str = "model",
    ) -> None:
        self.source = source
        self.size = (int(size[0]), int(size[1]))
        self.picture = dict(picture or {})
        self.clock = clock

    def render(self, request: ViewRequest) -> Any:
        """The frame of ``request`` (on MPI ranks: rank 0's, None on the others; every
        rank must call this with the same request)."""
        source = self.source
        options = dict(self.picture)
        if request.colormap is not None:
            options.pop("colour", None)
            options["values"] = source.scalars(request.level, request.colour_by)
            options["colormap"] = request.colormap
        size = preview_size(self.size) if request.preview else self.size
        return render(
            source.surface(request.level),
            view=request.view,
            magnification=request.magnification,
            size=size,
            loop=request.loop,
            machine=source.machine,
            shading=request.shading,
            clock=self.clock,
            light=request.light,
            keep_workloads=source.ranks is None,
            **options,
        )

    def message(self, request: ViewRequest) -> bytes:
        """The frame of ``request`` as the page is sent it (see the module docstring)."""
        t0 = time.perf_counter()
        frame = self.render(request)
        t1 = time.perf_counter()
        png = png_bytes(frame.image)
        t2 = time.perf_counter()
        if frame.stats.ranks is not None:
            charts = [rank_chart(frame.stats.ranks)]
        else:
            charts = loop_charts(frame, self.source.machine.npes)
        t3 = time.perf_counter()
        height, width = frame.image.shape[:2]
        header = {
            "id": request.id,
            "preview": request.preview,
            "request": request.to_dict(),
            "size": [width, height],
            "panel": panel(frame),
            "charts": charts,
            "server": {"render": t1 - t0, "png": t2 - t1, "charts": t3 - t2},
        }
        text = json.dumps(header).encode()
        return len(text).to_bytes(4, "big") + text + png


def split_message(data: bytes) -> tuple[dict[str, Any], bytes]:
    """A frame's message as the page reads it: (the header, the PNG file's bytes)."""
    length = int.from_bytes(data[:4], "big")
    return json.loads(data[4 : 4 + length]), data[4 + length :]


def panel(frame: Any) -> dict[str, Any]:
    """The numbers of a frame that the page's panel shows, from ``frame.stats``: the
    pipeline's counts; each stage's wall seconds, model cycles and model seconds; each
    balanced loop's form, iterations with balancing and without (the largest workload:
    the loop of Figure 1 of Ahrens & Hansen runs that many), largest and mean workload,
    tasks and balancing decisions; and the frame's totals.

    >>> import renderer
    >>> quad = ([[0.0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], [[0, 1, 2], [0, 2, 3]])
    >>> numbers = panel(renderer.render(quad, size=16, loop="original"))
    >>> [s["name"] for s in numbers["stages"]][:3], numbers["loops"][0]["without"]
    (['transform', 'clip', 'setup'], 8)
    """
    stats = frame.stats
    hz = stats.machine.clock_hz

    def model(cycles: float) -> float | None:
        return cycles / hz if hz else None

    counts = stats.counts
    return {
        "counts": {name: int(getattr(counts, name)) for name in counts.__dataclass_fields__},
        "stages": [
            {"name": name, "wall": r.wall, "cycles": r.cycles, "model": model(r.cycles)}
            for name, r in stats.stages.items()
        ],
        "loops": [
            {
                "name": name,
                "form": loop.form,
                "iterations": int(loop.iterations),
                "without": int(loop.max_workload),
                "max_workload": int(loop.max_workload),
                "mean_workload": float(loop.mean_workload),
                "tasks": int(loop.total_tasks),
                "decisions": int(loop.decisions),
            }
            for name, loop in stats.loops.items()
        ],
        "frame": {"wall": stats.wall, "cycles": stats.cycles, "model": model(stats.cycles)},
    }
