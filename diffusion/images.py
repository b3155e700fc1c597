"""Reading and writing images for the diffusion command and benchmark.

PNG, TIFF and other formats through imageio, DICOM through pydicom, NumPy ``.npy``
files; colour is converted to grey. The built-in test images are scikit-image's and
pydicom's bundled files (nothing is downloaded).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["BUILTIN", "builtin_image", "load_image", "save_image"]

#: Built-in images: name -> (package, file). Sizes as the paper's (seed 003, section 5):
#: 512 x 512 "large", 400 x 448 "medium" (crops), 256 x 256 "small" (2x2 block means).
BUILTIN = {
    "camera": ("skimage", "camera.png"),
    "moon": ("skimage", "moon.png"),
    "brick": ("skimage", "brick.png"),
    "coffee": ("skimage", "coffee.png"),
    "ct": ("pydicom", "693_J2KI.dcm"),
    "ct-small": ("pydicom", "CT_small.dcm"),
    "mr-small": ("pydicom", "MR_small.dcm"),
}


def _grey(a: np.ndarray) -> np.ndarray:
    if a.ndim == 3 and a.shape[-1] in (3, 4):
        a = a[..., :3].astype(np.float64) @ np.array([0.2125, 0.7154, 0.0721])
    return a


def _builtin_path(name: str) -> Path:
    package, filename = BUILTIN[name]
    if package == "skimage":
        import skimage.data

        return Path(skimage.data.__file__).parent / filename
    import pydicom

    path = Path(pydicom.__file__).parent / "data" / "test_files" / filename
    if not path.exists():
        raise FileNotFoundError(f"pydicom's test file {filename} is not installed")
    return path


def builtin_image(name: str = "camera", *, size: tuple[int, int] | None = None) -> np.ndarray:
    """A bundled test image as float32 grey values.

    Parameters
    ----------
    name : str
        A key of :data:`BUILTIN`.
    size : (int, int), optional
        Shape wanted: the image is reduced by block means when it divides evenly (512 to
        256) and otherwise centre-cropped.
    """
    if name not in BUILTIN:
        raise ValueError(f"unknown built-in image {name!r}; choose from {sorted(BUILTIN)}")
    img = load_image(_builtin_path(name))
    if size is not None:
        h, w = size
        fh, fw = img.shape[0] // h, img.shape[1] // w
        if fh >= 2 and fh == fw and img.shape[0] % h == 0 and img.shape[1] % w == 0:
            img = img.reshape(h, fh, w, fw).mean(axis=(1, 3), dtype=np.float64)
        if img.shape[0] < h or img.shape[1] < w:
            raise ValueError(f"built-in image {name!r} of shape {img.shape} is smaller than {size}")
        r0 = (img.shape[0] - h) // 2
        c0 = (img.shape[1] - w) // 2
        img = img[r0 : r0 + h, c0 : c0 + w]
    return np.ascontiguousarray(img, dtype=np.float32)


def load_image(path: str | Path) -> np.ndarray:
    """Read PNG, TIFF, JPEG (imageio), DICOM (pydicom) or ``.npy`` as float32 grey."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such image file: {path}")
    suffix = path.suffix.lower()
    if suffix == ".npy":
        a = np.load(path, allow_pickle=False)
    elif suffix in (".dcm", ".dicom") or _is_dicom(path):
        import pydicom

        ds = pydicom.dcmread(path)
        a = ds.pixel_array.astype(np.float64)
        slope = float(getattr(ds, "RescaleSlope", 1) or 1)
        intercept = float(getattr(ds, "RescaleIntercept", 0) or 0)
        a = a * slope + intercept
        if a.ndim == 3 and a.shape[-1] not in (3, 4):
            a = a[0]  # first frame of a multi-frame file
    else:
        import imageio.v3 as iio

        a = iio.imread(path)
    a = _grey(np.asarray(a))
    if a.dtype.kind not in "biuf":
        raise ValueError(f"{path}: not a numeric image (dtype {a.dtype})")
    return np.asarray(a, dtype=np.float32)


def _is_dicom(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(132)
    except OSError:
        return False
    return len(head) == 132 and head[128:132] == b"DICM"


def save_image(path: str | Path, image: Any) -> None:
    """Write ``image``: ``.npy`` exactly, anything else as 8-bit grey scaled to its range
    (TIFF keeps float32)."""
    path = Path(path)
    a = np.asarray(image.get() if hasattr(image, "get") else image)
    suffix = path.suffix.lower()
    if suffix == ".npy":
        np.save(path, a)
        return
    import imageio.v3 as iio

    if suffix in (".tif", ".tiff"):
        iio.imwrite(path, a.astype(np.float32))
        return
    lo, hi = float(a.min()), float(a.max())
    scaled = (a - lo) / (hi - lo) * 255 if hi > lo else np.zeros_like(a)
    iio.imwrite(path, np.clip(np.rint(scaled), 0, 255).astype(np.uint8))
