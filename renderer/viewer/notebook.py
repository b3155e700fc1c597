""":func:`renderer.view`: the viewer of ``simd-emu view`` from Python, shown in a notebook.

The viewer is served from a thread of the Python process (a Jupyter kernel, a script) on a
free port of 127.0.0.1; the object :func:`view` returns shows the page in the notebook's
cell (an inline frame of the page's address, with its token), and :meth:`RunningViewer.close`
stops it. A :class:`renderer.Frame` shows itself as its picture in a notebook too.
"""

from __future__ import annotations

import html
import os
from typing import Any

from renderer.scene.camera import EYE_LIGHT
from renderer.viewer.frames import FrameMaker
from renderer.viewer.requests import ViewRequest
from renderer.viewer.sessions import Viewer
from renderer.viewer.source import Source

__all__ = ["RunningViewer", "view"]

#: The panel's width beside the frame in a notebook's cell, in pixels.
_PANEL_WIDTH = 460


def view(  # noqa: PLR0913 (render's own keywords, by name)
    data: Any = None,
    level: float | None = None,
    *,
    size: int | tuple[int, int] = (512, 512),
    view: tuple[float, float] = (45.0, 45.0),
    magnification: float = 1.0,
    loop: str = "cost-effective",
    shading: str = "gouraud",
    colormap: str | None = None,
    colour_by: str = "height",
    light: Any = None,
    machine: Any = None,
    host: str = "127.0.0.1",
    port: int = 0,
    **picture: Any,
) -> RunningViewer:
    """Serve the viewer of ``data`` from this process and show it in a notebook cell.

    Parameters
    ----------
    data : mesh, Volume, 3-D array, file name or None
        A mesh (anything :func:`renderer.render` takes, or a :class:`renderer.Scene`'s
        mesh), a :class:`renderer.Volume` or a 3-D array of samples (then ``level`` is
        the first isovalue and the page has a slider for it), a mesh or volume file, or
        None for the built-in 241,498-triangle data set.
    level : float, optional
        For a volume: the isovalue shown first.
    size, view, magnification, loop, shading, colormap, light
        The first view, as :func:`renderer.render` takes them; the page changes them.
    colour_by : {"height", "distance"}
        What a colour map colours.
    machine : simd.Machine, optional
        The machine the surfaces are made and rendered on (default ``Machine()``).
    host, port : str, int
        Where to listen: this machine only, on a free port, unless told otherwise.
    **picture
        :func:`renderer.render`'s ``fov``, ``distance``, ``up``, ``framing``, ``colour``,
        ``background``, ``crease_angle``, ``supersample``: fixed for the viewer.

    Returns
    -------
    RunningViewer
        Shown as the page in a notebook's cell; its ``url`` opens it in a browser tab;
        ``close()`` stops it.

    Raises
    ------
    simd.errors.MissingPackageError
        The web packages of the ``view`` extra are not installed.
    ValueError
        A level outside the volume's values, or another bad option (checked by rendering
        the first frame, before anything is served).

    Examples
    --------
    >>> import numpy as np, renderer
    >>> x, y, z = np.mgrid[-1:1:24j, -1:1:24j, -1:1:24j]
    >>> viewer = renderer.view(x * x + y * y + z * z, level=0.5, size=128)
    >>> viewer.url.startswith("http://127.0.0.1:"), "<iframe" in viewer._repr_html_()
    (True, True)
    >>> viewer.close()
    """
    from simd.errors import require

    for package in ("starlette", "uvicorn", "websockets"):
        require(package, "view", "renderer.view")
    from renderer.viewer.app import make_app, new_token
    from renderer.viewer.serving import Server, address, bind

    if machine is None:
        from simd import Machine

        machine = Machine()
    source = _source(data, machine, picture.get("up"))
    size = (size, size) if isinstance(size, int) else tuple(size)
    initial = ViewRequest.initial(
        source.choices,
        azimuth=view[0],
        elevation=view[1],
        magnification=magnification,
        level=level,
        loop=loop,
        shading=shading,
        colormap=colormap,
        colour_by=colour_by,
        light=tuple(light) if light is not None else EYE_LIGHT,
    )
    maker = FrameMaker(source, size, picture=picture)
    maker.render(initial)  # a bad option fails here, before anything is served
    viewer = Viewer(maker, initial)
    token = new_token()
    sock = bind(host, port)
    server = Server(make_app(viewer, token), sock)
    server.start()
    return RunningViewer(viewer, server, address(sock, token))


def _source(data: Any, machine: Any, up: Any) -> Source:
    """The source of ``data`` (see :func:`view`)."""
    import numpy as np

    from renderer.contour.volumes import Volume

    if data is None:
        from renderer.datasets.builtin import load_dataset

        data = load_dataset("balanced")
    elif isinstance(data, str | os.PathLike):
        from renderer.contour.volumes import VOLUME_SUFFIXES, read_volume

        path = os.fspath(data)
        if os.path.isdir(path) or path.lower().endswith(VOLUME_SUFFIXES):
            data = read_volume(path)
        else:
            from renderer.scene.mesh import load_mesh

            data = load_mesh(path)
    elif isinstance(data, np.ndarray) and data.ndim == 3:
        data = Volume(data)
    if isinstance(data, Volume):
        return Source.of_volume(data, machine, up=up)
    return Source.of_mesh(getattr(data, "mesh", data), machine, up=up)


class RunningViewer:
    """A viewer served from a thread of this process (made by :func:`view`).

    Attributes
    ----------
    url : str
        The page's address, with its token.
    viewer : renderer.viewer.sessions.Viewer
        What it serves: its frame maker, first view and open sessions.
    """

    def __init__(self, viewer: Viewer, server: Any, url: str) -> None:
        self.viewer = viewer
        self.url = url
        self._server = server

    def __repr__(self) -> str:
        state = "serving" if self._server.running else "stopped"
        return f"RunningViewer({self.viewer.maker.source.name!r}, {state} at {self.url})"

    def _repr_html_(self) -> str:
        """The page in an inline frame: a notebook shows the viewer in the cell."""
        width, height = self.viewer.maker.size
        return (
            f'<iframe src="{html.escape(self.url)}" width="{width + _PANEL_WIDTH}" '
            f'height="{max(height + 90, 760)}" style="border: none"></iframe>'
        )

    def close(self) -> None:
        """Stop serving: the pages' websockets close, the port is free again."""
        self._server.stop()
        self.viewer.close()

    def __enter__(self) -> RunningViewer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
