"""The picture options of a frame that act on its pixels: background and supersampling.

Both run on the machine's device after shading, with device arrays only, and only when
asked for: the default frame is untouched (OpenGL-exact, no extra launches).

Supersampling (anti-aliasing) renders the frame at ``k`` times the width and height and
averages each ``k`` x ``k`` block of samples into one pixel (a box filter, as OpenGL's
supersampled framebuffers resolve). The depth and the face of a pixel are those of its
nearest sample (the minimum of the block's depth keys).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["MAX_SUPERSAMPLE", "check_supersample", "fill_background", "resolve"]

#: Largest supersampling factor accepted.
MAX_SUPERSAMPLE = 16


def check_supersample(k: Any, width: int, height: int, max_size: int) -> int:
    """``k`` as an int >= 1 whose supersampled frame fits ``max_size`` each way."""
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or not 1 <= k <= MAX_SUPERSAMPLE:
        raise ValueError(f"supersample must be a whole number 1..{MAX_SUPERSAMPLE}, got {k!r}")
    k = int(k)
    if width * k > max_size or height * k > max_size:
        raise ValueError(
            f"supersample {k} renders {width * k}x{height * k} samples, more than "
            f"{max_size} each way: use a smaller factor or image"
        )
    return k


def background_rgb(background: Any) -> np.ndarray:
    """The background colour (see :func:`renderer.stages.shading.parse_colour`) as 3 uint8, rounded
    as shading rounds."""
    from renderer.stages.shading import parse_colour

    rgb = np.asarray(parse_colour(background, "background"))
    return np.floor(rgb * 255.0 + 0.5).astype(np.uint8)


def fill_background(xp: Any, machine: Any, image: Any, covered: Any, background: Any) -> Any:
    """``image`` (P, 3) uint8 with the uncovered pixels set to ``background``."""
    bg = machine.asarray(background_rgb(background))
    return xp.where(covered[:, None], image, bg[None, :])


def resolve(xp: Any, image: Any, keys: Any, width: int, height: int, k: int) -> tuple[Any, Any]:
    """Average ``k`` x ``k`` blocks of a (k height * k width, 3) uint8 image of samples
    (rows of ``k * width`` samples) into (height * width, 3) uint8, rounding to nearest;
    and the nearest depth key of each block.

    Examples
    --------
    >>> samples = np.array([[0, 0, 0], [255, 255, 255], [255, 255, 255], [255, 0, 0]],
    ...                    dtype=np.uint8)
    >>> image, keys = resolve(np, samples, np.array([5, 3, 9, 7]), 1, 1, 2)
    >>> image.tolist(), keys.tolist()
    ([[191, 128, 128]], [3])
    """
    blocks = image.reshape(height, k, width, k, 3).astype(xp.float64)
    mean = blocks.sum(axis=(1, 3)) / float(k * k)
    out = xp.floor(mean + 0.5).astype(xp.uint8).reshape(height * width, 3)
    nearest = keys.reshape(height, k, width, k).min(axis=(1, 3)).reshape(height * width)
    return out, nearest
