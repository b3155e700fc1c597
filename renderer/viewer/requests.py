"""What the page may ask for: a view of the surface the viewer was started with.

The page sends one JSON object per view it wants (:class:`ViewRequest`); the server reads
it with :meth:`ViewRequest.parse` against the viewer's :class:`Choices` before anything is
rendered. Only these fields exist: the view angles and magnification, the isovalue (for a
volume, inside the volume's range of values), the loop form, the shading, the colour map
and what it colours by, the light's direction, and whether the frame is a smaller preview
of a drag. No field names a file, and a field that is not one of these is refused, so the
page can only look at what the command was started with.

Examples
--------
>>> choices = Choices(levels=(0.0, 10.0))
>>> request = ViewRequest.parse({"azimuth": 30, "elevation": 20, "level": 4.5}, choices,
...                             ViewRequest.initial(choices, level=2.0))
>>> request.view, request.level, request.loop
((30.0, 20.0), 4.5, 'cost-effective')
>>> ViewRequest.parse({"path": "/etc/passwd"}, choices)  # doctest: +ELLIPSIS
Traceback (most recent call last):
ValueError: unknown field 'path' (a view has azimuth, colormap, ...)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from renderer.scene.camera import EYE_LIGHT
from renderer.settings import LOOP_FORMS
from renderer.stages.shading import SHADINGS

__all__ = ["COLORMAPS", "MAGNIFICATION", "Choices", "ViewRequest"]

#: The colour maps the page offers (matplotlib's names), besides the surface's own colour.
COLORMAPS = ("viridis", "plasma", "inferno", "magma", "cividis", "coolwarm", "turbo", "gray")

#: The magnifications a view may have (a wheel zooms within them).
MAGNIFICATION = (0.05, 100.0)


@dataclass(frozen=True)
class Choices:
    """What the page may choose from.

    Attributes
    ----------
    levels : (low, high) or None
        For a volume, its range of values: a level must lie in ``low < level <= high``
        (values below it and at or above it, so that there is a surface). None: a mesh.
    loops, shadings, colormaps, colour_by : tuples of str
        The loop forms, the shadings, the colour maps (besides none: the surface colour)
        and what a colour map colours by.
    """

    levels: tuple[float, float] | None = None
    loops: tuple[str, ...] = LOOP_FORMS
    shadings: tuple[str, ...] = SHADINGS
    colormaps: tuple[str, ...] = COLORMAPS
    colour_by: tuple[str, ...] = ("height", "distance")

    def check_level(self, level: Any) -> float | None:
        """``level`` as a float inside the volume's range (None for a mesh), or a one-line
        ValueError.

        >>> Choices(levels=(0.0, 1.0)).check_level(0.5)
        0.5
        >>> Choices(levels=(0.0, 1.0)).check_level(0)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ValueError: level 0 has no surface: the volume's values run from 0 to 1 (...)
        """
        if self.levels is None:
            if level is not None:
                raise ValueError("level: this viewer shows a mesh, which has no level")
            return None
        value = _number(level, "level")
        low, high = self.levels
        if not low < value <= high:
            raise ValueError(
                f"level {value:g} has no surface: the volume's values run from {low:g} to "
                f"{high:g} (a surface needs values below the level and values at or above it)"
            )
        return value

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the page."""
        return {
            "levels": None if self.levels is None else list(self.levels),
            "loops": list(self.loops),
            "shadings": list(self.shadings),
            "colormaps": list(self.colormaps),
            "colour_by": list(self.colour_by),
            "magnification": list(MAGNIFICATION),
        }


@dataclass(frozen=True)
class ViewRequest:
    """One view the page asks for, checked.

    Attributes
    ----------
    azimuth, elevation : float
        Degrees, as :func:`renderer.render`'s ``view``; the elevation within -90 to 90.
    magnification : float
        Within :data:`MAGNIFICATION`.
    level : float or None
        The isovalue, for a volume.
    loop, shading : str
        A loop form and a shading of :class:`Choices`.
    colormap : str or None
        A colour map of :class:`Choices`, or None for the surface's colour.
    colour_by : str
        What the colour map colours: ``"height"`` or ``"distance"``.
    light : (3,) tuple of float
        The direction towards the light, seen from the camera (``render``'s ``light``).
    preview : bool
        A smaller frame, while the view is being dragged.
    id : int
        The page's number for the request, sent back with its frame.
    """

    azimuth: float = 45.0
    elevation: float = 45.0
    magnification: float = 1.0
    level: float | None = None
    loop: str = "cost-effective"
    shading: str = "gouraud"
    colormap: str | None = None
    colour_by: str = "height"
    light: tuple[float, float, float] = field(default=EYE_LIGHT)
    preview: bool = False
    id: int = 0

    @property
    def view(self) -> tuple[float, float]:
        """(azimuth, elevation), as :func:`renderer.render` takes it."""
        return (self.azimuth, self.elevation)

    @classmethod
    def initial(cls, choices: Choices, **given: Any) -> ViewRequest:
        """The first view: ``given`` fields (the command's options) over the defaults,
        checked as a request from the page is."""
        return cls.parse(given, choices, cls())

    @classmethod
    def parse(cls, message: Any, choices: Choices, base: ViewRequest | None = None) -> ViewRequest:
        """The request in ``message`` (a mapping from the page's JSON): the fields it
        gives over ``base`` (default: the defaults), each checked; a ValueError with one
        line names the first bad field."""
        if not isinstance(message, Mapping):
            raise ValueError("a view must be a JSON object")
        names = {f for f in cls.__dataclass_fields__}
        for key in message:
            if key not in names:
                raise ValueError(f"unknown field {key!r} (a view has {', '.join(sorted(names))})")
        base = base or cls()
        fields = {**asdict(base), **message}
        return replace(
            base,
            azimuth=_number(fields["azimuth"], "azimuth"),
            elevation=_number(fields["elevation"], "elevation", -90.0, 90.0),
            magnification=_number(fields["magnification"], "magnification", *MAGNIFICATION),
            level=choices.check_level(fields["level"]),
            loop=_choice(fields["loop"], "loop", choices.loops),
            shading=_choice(fields["shading"], "shading", choices.shadings),
            colormap=None
            if fields["colormap"] is None
            else _choice(fields["colormap"], "colormap", choices.colormaps),
            colour_by=_choice(fields["colour_by"], "colour_by", choices.colour_by),
            light=_direction(fields["light"]),
            preview=_flag(fields["preview"], "preview"),
            id=_whole(fields["id"], "id"),
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the page (the form :meth:`parse` reads).

        >>> ViewRequest().to_dict()["light"]
        [0.3, 0.5, 1.0]
        """
        data = asdict(self)
        data["light"] = list(self.light)
        return data


def _number(value: Any, name: str, low: float = -math.inf, high: float = math.inf) -> float:
    """A finite number in [low, high] (not a bool), or a one-line ValueError."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be within {low:g} to {high:g}, got {value:g}")
    return value


def _choice(value: Any, name: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
    return value


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}")
    return value


def _whole(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**53:
        raise ValueError(f"{name} must be a whole number from 0 to 2**53, got {value!r}")
    return value


def _direction(value: Any) -> tuple[float, float, float]:
    """Three finite numbers, not all zero (a direction)."""
    if not isinstance(value, list | tuple) or len(value) != 3:
        raise ValueError(f"light must be three numbers (x, y, z), got {value!r}")
    xyz = tuple(_number(v, "light") for v in value)
    if not any(xyz):
        raise ValueError("light must be a direction, not (0, 0, 0)")
    return xyz
