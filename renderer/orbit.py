"""A turntable: frames of a mesh seen from all around, and their animation file.

:func:`orbit` renders ``frames`` views at equally spaced azimuths and a fixed elevation.
Every view frames the same bounding sphere (:func:`renderer.scene.camera.default_camera`), so the
object stays put while the camera turns. :func:`save_animation` writes the images as an
animated GIF (Pillow) or an MP4 video (imageio with its ffmpeg plugin).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from renderer.frame import Frame
from renderer.pipeline import render
from renderer.scene.prepared import Scene
from simd.outputs import check_output_file

__all__ = ["ANIMATION_FORMATS", "check_animation_path", "orbit", "save_animation"]

#: File suffixes :func:`save_animation` writes.
ANIMATION_FORMATS = (".gif", ".mp4")


def orbit(
    mesh: Any,
    frames: int = 36,
    *,
    azimuth: float = 0.0,
    elevation: float = 30.0,
    machine: Any = None,
    **render_options: Any,
) -> Iterator[Frame]:
    """Render ``mesh`` from ``frames`` azimuths, one full turn starting at ``azimuth``.

    Parameters
    ----------
    mesh : Scene, Mesh or (vertices, faces)
        A mesh is prepared once as a :class:`~renderer.Scene` for the whole turn.
    frames : int
        Number of views, at least 1.
    azimuth, elevation : float
        Azimuth of the first view and the elevation of all, in degrees.
    machine : simd.Machine, optional
        The machine that renders every frame (a default ``Machine()`` when omitted); a
        Scene renders on its own.
    **render_options
        Passed to :func:`renderer.render` (``size``, ``loop``, ``magnification``,
        ``shading``, ...).

    Yields
    ------
    Frame
        One per view, in order.

    Examples
    --------
    >>> import numpy as np
    >>> from simd import Machine
    >>> quad = (np.array([[0., 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]]),
    ...         np.array([[0, 1, 2], [0, 2, 3]]))
    >>> turn = list(orbit(quad, 4, elevation=10, size=32, loop="expand",
    ...                   machine=Machine(pes=8, backend="numpy")))
    >>> len(turn), turn[0].image.shape
    (4, (32, 32, 3))
    """
    if isinstance(frames, bool) or not isinstance(frames, int | np.integer) or frames < 1:
        raise ValueError(f"frames must be a whole number >= 1, got {frames!r}")
    if "view" in render_options:
        raise TypeError("orbit chooses the views: give azimuth= and elevation= instead of view=")
    scene = mesh if isinstance(mesh, Scene) else Scene(mesh, machine=machine)
    if machine is not None and machine is not scene.machine:
        raise ValueError("the scene lives on another machine; leave machine= out")
    for k in range(int(frames)):
        view = (azimuth + 360.0 * k / frames, elevation)
        yield render(scene, view=view, **render_options)


def check_animation_path(path: str | os.PathLike[str]) -> None:
    """Fail before any rendering when ``path`` cannot take an animation
    (:func:`simd.outputs.check_output_file`, and the MP4 writer's plugin)."""
    check_output_file(path, ANIMATION_FORMATS, example="-o orbit.gif")
    if os.fspath(path).lower().endswith(".mp4"):
        try:
            import imageio_ffmpeg  # noqa: F401
        except ImportError as err:
            raise ValueError(
                f"{os.fspath(path)}: MP4 needs the package imageio-ffmpeg: pip install "
                "imageio-ffmpeg (or write a .gif)"
            ) from err


def check_video_size(path: str | os.PathLike[str], width: int, height: int) -> None:
    """ValueError unless an animation at ``path`` can have ``width`` x ``height`` frames:
    an MP4 (H.264 in yuv420p) needs both even; ffmpeg refuses odd ones, and the writer
    then leaves an empty file behind without raising."""
    if os.fspath(path).lower().endswith(".mp4") and (width % 2 or height % 2):
        raise ValueError(
            f"{os.fspath(path)}: an MP4 video needs an even width and height, got "
            f"{width}x{height}; give an even --size, or write a .gif"
        )


def save_animation(
    images: Sequence[np.ndarray], path: str | os.PathLike[str], *, fps: float = 12.0
) -> None:
    """Write (H, W, 3) uint8 images as an animated GIF (looping) or an MP4 video.

    Examples
    --------
    >>> import os, tempfile
    >>> from PIL import Image
    >>> images = [np.full((8, 8, 3), v, dtype=np.uint8) for v in (0, 128, 255)]
    >>> path = os.path.join(tempfile.mkdtemp(), "a.gif")
    >>> save_animation(images, path, fps=10)
    >>> with Image.open(path) as gif:
    ...     gif.n_frames
    3
    """
    check_animation_path(path)
    if not images:
        raise ValueError("no images to animate")
    if not (fps > 0 and np.isfinite(fps)):
        raise ValueError(f"fps must be a positive number, got {fps!r}")
    stack = [np.asarray(im) for im in images]
    if any(im.dtype != np.uint8 or im.ndim != 3 or im.shape != stack[0].shape for im in stack):
        raise ValueError("the images must all be (H, W, 3) uint8 of one size")
    check_video_size(path, stack[0].shape[1], stack[0].shape[0])
    if os.fspath(path).lower().endswith(".gif"):
        from PIL import Image

        first, *rest = (Image.fromarray(im) for im in stack)
        first.save(path, save_all=True, append_images=rest, duration=round(1000 / fps), loop=0)
        return
    import imageio.v2 as imageio

    # macro_block_size=1: any frame size, no silent resizing
    with imageio.get_writer(path, fps=fps, macro_block_size=1) as writer:
        for im in stack:
            writer.append_data(im)
