"""Reading and writing images for the diffusion command and benchmark.

PNG, TIFF and other formats through imageio, DICOM through pydicom, NumPy ``.npy``
files; colour is converted to grey. The built-in test images are scikit-image's and
pydicom's bundled files (nothing is downloaded).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "BUILTIN",
    "SAVE_SUFFIXES",
    "builtin_image",
    "check_output_path",
    "load_image",
    "save_image",
]

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
    """Read PNG, TIFF, JPEG (imageio), DICOM (pydicom) or ``.npy`` as float32 grey.

    DICOM values go through the modality LUT (rescale slope and intercept: Hounsfield
    units for CT), palette colour through its LUT; a multi-frame file gives its first
    frame. Colour is converted to grey (ITU-R 709 luma).

    Raises
    ------
    FileNotFoundError
        When ``path`` does not exist.
    ValueError
        When the file cannot be read as an image (the message names the file and why).

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "a.npy")
    >>> np.save(path, np.arange(6).reshape(2, 3))
    >>> load_image(path).dtype, load_image(path).shape
    (dtype('float32'), (2, 3))
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such image file: {path}")
    if path.is_dir():
        raise ValueError(f"{path} is a folder, not an image file")
    suffix = path.suffix.lower()
    try:
        if suffix == ".npy":
            a = np.load(path, allow_pickle=False)
        elif suffix in (".dcm", ".dicom") or _is_dicom(path):
            a = _read_dicom(path)
        else:
            import imageio.v3 as iio

            a = iio.imread(path)
    except Exception as exc:  # every reader has its own errors: report them as one kind
        raise ValueError(f"cannot read {path} as an image: {exc}") from exc
    a = _grey(np.asarray(a))
    if a.dtype.kind not in "biuf":
        raise ValueError(f"{path}: not a numeric image (dtype {a.dtype})")
    return np.asarray(a, dtype=np.float32)


def _read_dicom(path: Path) -> np.ndarray:
    import pydicom
    from pydicom.pixels import apply_color_lut, apply_modality_lut

    # force: files without the 128-byte preamble and "DICM" prefix are still DICOM.
    ds = pydicom.dcmread(path, force=True)
    if not any(tag in ds for tag in ("PixelData", "FloatPixelData", "DoubleFloatPixelData")):
        raise ValueError("the DICOM file holds no pixel data")
    a = ds.pixel_array
    if int(getattr(ds, "NumberOfFrames", 1) or 1) > 1:
        a = a[0]  # first frame of a multi-frame file
    if getattr(ds, "PhotometricInterpretation", "") == "PALETTE COLOR":
        return apply_color_lut(a, ds)
    if int(getattr(ds, "SamplesPerPixel", 1) or 1) == 1:
        a = apply_modality_lut(a, ds)
    return np.asarray(a, dtype=np.float64)


def _is_dicom(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(132)
    except OSError:
        return False
    return len(head) == 132 and head[128:132] == b"DICM"


#: Suffixes :func:`save_image` writes.
SAVE_SUFFIXES = (".npy", ".tif", ".tiff", ".png", ".jpg", ".jpeg", ".bmp")


def check_output_path(path: str | Path) -> Path:
    """``path`` as a Path if :func:`save_image` can write there, else a ValueError.

    Lets a command refuse a bad ``-o`` before a long run rather than after it.
    """
    path = Path(path)
    if path.suffix.lower() not in SAVE_SUFFIXES:
        raise ValueError(
            f"cannot write {path}: unknown image type {path.suffix!r} "
            f"(use one of {', '.join(SAVE_SUFFIXES)})"
        )
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise ValueError(f"cannot write {path}: folder {parent} does not exist")
    return path


def save_image(path: str | Path, image: Any) -> None:
    """Write ``image``: ``.npy`` exactly, TIFF as float32, anything else as 8-bit grey
    scaled to its range.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "a.png")
    >>> save_image(path, np.array([[0.0, 2.0], [4.0, 8.0]]))
    >>> load_image(path).tolist()
    [[0.0, 64.0], [128.0, 255.0]]
    """
    path = check_output_path(path)
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
