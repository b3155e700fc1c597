"""Image output (Pillow)."""

from __future__ import annotations

from os import PathLike

import numpy as np

__all__ = ["save_image"]


def save_image(image: np.ndarray, path: str | PathLike[str]) -> None:
    """Write an (H, W, 3) or (H, W) uint8 image, row 0 at the top, to ``path`` (PNG by
    default; the format follows the suffix).

    Raises
    ------
    ValueError
        ``image`` is not a uint8 greyscale or RGB array.
    """
    from PIL import Image

    image = np.asarray(image)
    if (
        image.dtype != np.uint8
        or image.ndim not in (2, 3)
        or (image.ndim == 3 and image.shape[2] not in (3, 4))
    ):
        raise ValueError(
            f"image must be uint8 (H, W), (H, W, 3) or (H, W, 4), got {image.dtype} {image.shape}"
        )
    Image.fromarray(image).save(path)
