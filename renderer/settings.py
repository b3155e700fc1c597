"""What a frame is made with: :class:`FrameSettings`, every option checked once.

:func:`renderer.render` takes its options as keyword arguments, checks them here before any
work (one-line errors), and hands the frozen settings to the stages
(:mod:`renderer.steps`), which read them and nothing else of the call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from renderer.scene.camera import Camera
from renderer.stages.picture import background_rgb, check_supersample
from renderer.stages.shading import SHADINGS
from simd import balance

__all__ = ["CLOCKS", "FrameSettings", "LOOP_FORMS", "MAX_SIZE", "SHADINGS", "parse_size"]

#: The balanced loop's forms, by name (``simd.balance.LOOP_FORMS``, in its order).
LOOP_FORMS = tuple(balance.LOOP_FORMS)
CLOCKS = ("model", "wall")
MAX_SIZE = 4096


@dataclass(frozen=True)
class FrameSettings:
    """The options of one frame, checked (:meth:`check`).

    Attributes
    ----------
    width, height : int
        The image's size in pixels.
    supersample : int
        The frame is rendered ``supersample`` times as wide and high (:attr:`render_size`)
        and each block of samples averaged into a pixel.
    loop, shading, clock, overestimate
        The loops' form, the shading, the balancer's clock and cost overestimate (one for
        both loops or a pair: scan conversion, z-buffer).
    count_writes, keep_workloads : bool
        Count the fragments sent to each pixel; keep both loops' workloads.
    background : colour or None
    crease_angle : float or None
    rank_balance : bool
        On MPI ranks: balance the clipped triangles across them when it pays.
    """

    width: int
    height: int
    supersample: int = 1
    loop: str = "cost-effective"
    shading: str = "gouraud"
    clock: str = "model"
    overestimate: Any = None
    count_writes: bool = False
    keep_workloads: bool = False
    background: Any = None
    crease_angle: float | None = None
    rank_balance: bool = True

    @classmethod
    def check(cls, size: Any, **options: Any) -> FrameSettings:
        """Settings from a frame's options, each checked; ValueError or TypeError naming
        the first bad one.

        Examples
        --------
        >>> s = FrameSettings.check(64, loop="expand", supersample=2)
        >>> s.render_size, s.corners
        ((128, 128), False)
        """
        width, height = parse_size(size)
        s = cls(width, height, **options)
        if s.loop not in LOOP_FORMS:
            raise ValueError(f"loop must be one of {', '.join(LOOP_FORMS)}; got {s.loop!r}")
        if s.shading not in SHADINGS:
            raise ValueError(f"shading must be one of {', '.join(SHADINGS)}; got {s.shading!r}")
        if s.clock not in CLOCKS:
            raise ValueError(f"clock must be 'model' or 'wall', got {s.clock!r}")
        k = check_supersample(s.supersample, width, height, MAX_SIZE)
        if k > 1 and s.count_writes:
            raise ValueError("count_writes counts fragments per pixel; not with supersample")
        angle = s.crease_angle
        if angle is not None and not (
            isinstance(angle, int | float | np.number) and 0 <= angle <= 180
        ):
            raise ValueError(f"crease_angle must be in [0, 180] degrees, got {angle!r}")
        if s.background is not None:
            background_rgb(s.background)
        return s

    @property
    def render_size(self) -> tuple[int, int]:
        """The size the frame is rendered at (the image's, times ``supersample``)."""
        return self.width * self.supersample, self.height * self.supersample

    @property
    def corners(self) -> bool:
        """Whether the attributes go per triangle corner (flat shading, or a crease angle:
        each corner its own normal), not per vertex."""
        return self.shading == "flat" or self.crease_angle is not None

    def overestimate_of(self, k: int) -> Any:
        """The cost overestimate of loop ``k`` (0: scan conversion, 1: z-buffer)."""
        if isinstance(self.overestimate, tuple | list):
            return self.overestimate[k]
        return self.overestimate


def check_camera_options(camera: Any, mvp: Any, camera_options: dict[str, Any]) -> None:
    """A camera, or a matrix, or the default camera's options, not two of them."""
    if camera is not None and not isinstance(camera, Camera):
        raise TypeError(f"camera must be a renderer.Camera, got {type(camera).__name__}")
    if camera_options and (camera is not None or mvp is not None):
        raise ValueError(
            "fov, distance, up and framing set up the default camera; not with camera= or mvp="
        )


def parse_size(size: Any) -> tuple[int, int]:
    """``N`` or ``(width, height)`` of whole numbers of pixels -> (width, height).

    >>> parse_size(64), parse_size((640, 480))
    ((64, 64), (640, 480))
    """

    def whole(v: Any) -> bool:
        return isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_)

    if whole(size):
        size = (size, size)
    try:
        w, h = size
    except (TypeError, ValueError) as err:
        raise ValueError(f"size must be an int or (width, height), got {size!r}") from err
    if not (whole(w) and whole(h)):
        raise ValueError(f"size must be whole numbers of pixels, got {size!r}")
    w, h = int(w), int(h)
    if not (1 <= w <= MAX_SIZE and 1 <= h <= MAX_SIZE):
        raise ValueError(f"image size must be 1..{MAX_SIZE} in each direction, got {w}x{h}")
    return w, h
