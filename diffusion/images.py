"""Reading and writing images for the diffusion command and benchmark.

PNG, TIFF and other formats through imageio, DICOM through pydicom, NumPy ``.npy``
files. :func:`read_image` keeps what is needed to write a result back as the input was
(value type, DICOM tags and rescaling); :func:`load_image` gives float32 grey. The
built-in test images are scikit-image's and pydicom's bundled files (nothing is
downloaded).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from simd.errors import one_line, require
from simd.outputs import check_output_file
from simd.transfers import to_host

__all__ = [
    "BUILTIN",
    "SAVE_SUFFIXES",
    "SourceImage",
    "builtin_image",
    "builtin_path",
    "check_dicom_output",
    "check_output_path",
    "load_image",
    "read_image",
    "save_image",
]

#: Built-in images: name -> (package, file). Sizes as Biagioni & Prins' (section 5):
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


def builtin_path(name: str) -> Path:
    """The file of the built-in image ``name`` (a key of :data:`BUILTIN`)."""
    if name not in BUILTIN:
        raise ValueError(f"unknown built-in image {name!r}; choose from {sorted(BUILTIN)}")
    package, filename = BUILTIN[name]
    if package == "skimage":
        import skimage.data

        return Path(skimage.data.__file__).parent / filename
    pydicom = require("pydicom", "data", f"the built-in image {name!r}")
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
    img = load_image(builtin_path(name))
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


@dataclass
class SourceImage:
    """An image as read from its file, with what is needed to write the result back.

    Attributes
    ----------
    data : numpy.ndarray
        float32 values, ``(H, W)`` or ``(H, W, channels)`` for colour. For DICOM, the
        values after the modality LUT (Hounsfield units for CT).
    dtype : numpy.dtype
        The type the values are written back as in ``.npy`` and ``.tif`` files: the
        file's own (``uint8`` for an 8-bit PNG, ``float32`` for a float32 ``.npy``); for
        DICOM, ``float32`` when the stored values are rescaled (slope and intercept), as
        the rescaled values are not integers in general.
    dicom : pydicom.Dataset or None
        The DICOM data set (tags), for writing a DICOM result with the same tags.
    """

    data: np.ndarray
    dtype: np.dtype
    dicom: Any = None

    @property
    def is_colour(self) -> bool:
        """True for colour (grey + alpha, RGB or RGBA) images."""
        return self.data.ndim == 3 and self.data.shape[-1] in (2, 3, 4)

    def grey(self) -> SourceImage:
        """The same image in grey (ITU-R 709 luma; alpha dropped)."""
        if not self.is_colour:
            return self
        a = self.data[..., :1] if self.data.shape[-1] == 2 else self.data[..., :3]
        g = a[..., 0] if a.shape[-1] == 1 else _grey(a)
        return SourceImage(np.asarray(g, dtype=np.float32), self.dtype, self.dicom)


def read_image(path: str | Path) -> SourceImage:
    """Read PNG, TIFF, JPEG (imageio), DICOM (pydicom) or ``.npy`` as they are stored.

    Colour stays colour (see :meth:`SourceImage.grey`). DICOM values go through the
    modality LUT (rescale slope and intercept: Hounsfield units for CT), palette colour
    through its LUT; a multi-frame file gives its first frame.

    Raises
    ------
    FileNotFoundError
        When ``path`` does not exist.
    ValueError
        When the file cannot be read as an image (the message names the file and why).
    """
    if not os.fspath(path):  # Path("") is the current folder
        raise ValueError("empty image file name")
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such image file: {path}")
    if path.is_dir():
        raise ValueError(f"{path} is a folder, not an image file")
    if path.stat().st_size == 0:
        raise ValueError(f"cannot read {path} as an image: the file is empty (0 bytes)")
    suffix = path.suffix.lower()
    ds = None
    with _readers_log() as said:
        try:
            if suffix == ".npy":
                a = np.load(path, allow_pickle=False)
            elif suffix in (".dcm", ".dicom") or _is_dicom(path):
                a, ds = _read_dicom(path)
            else:
                import imageio.v3 as iio

                a = iio.imread(path)
        except Exception as exc:  # every reader has its own errors: report them as one kind
            raise ValueError(
                f"cannot read {path} as an image: {one_line(exc) or type(exc).__name__}"
            ) from exc
        a = np.asarray(a)
        if a.size == 0:  # a damaged file some readers give back as no values, saying why
            why = f" ({said[0]})" if said else ""
            raise ValueError(f"cannot read {path} as an image: it holds no image data{why}")
    if a.dtype.kind not in "biuf":
        raise ValueError(f"{path}: not a numeric image (dtype {a.dtype})")
    if ds is not None:
        dtype = np.dtype(np.float32) if _rescaled(ds) else a.dtype
    else:
        dtype = np.dtype(np.float32) if a.dtype.kind == "b" else a.dtype
    return SourceImage(np.asarray(a, dtype=np.float32), dtype, ds)


#: The loggers of the image readers, which say what is wrong with a damaged file there.
_READER_LOGGERS = ("tifffile", "imageio")


@contextlib.contextmanager
def _readers_log() -> Iterator[list[str]]:
    """Within it, what the image readers log goes to the list yielded (each message on one
    line, without the reader's ``<object>`` prefixes), not to stderr: a damaged file is
    then reported in the one line of the error, not by the reader's raw lines before it.
    The readers' warnings (Pillow's) are held too, and given again only if the read
    succeeds."""
    said: list[str] = []
    with warnings.catch_warnings(record=True) as held:
        warnings.simplefilter("always")
        with _readers_logging(said):
            yield said
    for w in held:  # reached only when the block raised nothing
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


@contextlib.contextmanager
def _readers_logging(said: list[str]) -> Iterator[None]:
    """What the readers log, appended to ``said`` within the block."""

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            text = " ".join(record.getMessage().split())
            said.append(re.sub(r"^(<[^>]*>\s*)+", "", text))

    keep = Keep(logging.WARNING)
    loggers = [logging.getLogger(name) for name in _READER_LOGGERS]
    propagated = [lg.propagate for lg in loggers]
    for lg in loggers:
        lg.addHandler(keep)
        lg.propagate = False
    try:
        yield
    finally:
        for lg, propagate in zip(loggers, propagated, strict=True):
            lg.removeHandler(keep)
            lg.propagate = propagate


def load_image(path: str | Path) -> np.ndarray:
    """Read PNG, TIFF, JPEG (imageio), DICOM (pydicom) or ``.npy`` as float32 grey.

    As :func:`read_image`, with colour converted to grey (ITU-R 709 luma).

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "a.npy")
    >>> np.save(path, np.arange(6).reshape(2, 3))
    >>> load_image(path).dtype, load_image(path).shape
    (dtype('float32'), (2, 3))
    """
    return read_image(path).grey().data


def _rescaled(ds: Any) -> bool:
    slope = float(getattr(ds, "RescaleSlope", 1) or 1)
    intercept = float(getattr(ds, "RescaleIntercept", 0) or 0)
    return slope != 1 or intercept != 0 or "ModalityLUTSequence" in ds


def _read_dicom(path: Path) -> tuple[np.ndarray, Any]:
    pydicom = require("pydicom", "data", "reading a DICOM file")
    from pydicom.pixels import apply_color_lut, apply_modality_lut

    # force: files without the 128-byte preamble and "DICM" prefix are still DICOM.
    ds = pydicom.dcmread(path, force=True)
    if not any(tag in ds for tag in ("PixelData", "FloatPixelData", "DoubleFloatPixelData")):
        raise ValueError("the DICOM file holds no pixel data")
    a = ds.pixel_array
    if int(getattr(ds, "NumberOfFrames", 1) or 1) > 1:
        a = a[0]  # first frame of a multi-frame file
    if getattr(ds, "PhotometricInterpretation", "") == "PALETTE COLOR":
        return apply_color_lut(a, ds), ds
    if int(getattr(ds, "SamplesPerPixel", 1) or 1) == 1:
        a = apply_modality_lut(a, ds)
    return a, ds


def _is_dicom(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(132)
    except OSError:
        return False
    return len(head) == 132 and head[128:132] == b"DICM"


#: Suffixes :func:`save_image` writes.
SAVE_SUFFIXES = (".npy", ".tif", ".tiff", ".dcm", ".png", ".jpg", ".jpeg", ".bmp")

#: Suffixes written with 8 bits per pixel (values rescaled when they are not 8-bit).
EIGHT_BIT_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp")


def check_output_path(path: str | Path) -> Path:
    """``path`` as a Path if :func:`save_image` can write there, else an ``OutputError``.

    Lets a command refuse a bad ``-o`` before a long run rather than after it: the type,
    the folder, and an existing file or folder in the way (``simd.outputs``).
    """
    return check_output_file(path, SAVE_SUFFIXES, example="smooth.png")


def check_dicom_output(source: SourceImage | None) -> None:
    """ValueError unless :func:`save_image` can write ``source``'s result as DICOM.

    A DICOM result copies the input's tags, so the input must be a single-channel
    (monochrome) DICOM image with 8- or 16-bit integer pixels and a linear rescale.
    """
    ds = None if source is None else source.dicom
    if ds is None:
        raise ValueError(
            "a DICOM result needs a DICOM input (its tags are copied); write .tif or .npy"
        )
    photometric = str(getattr(ds, "PhotometricInterpretation", ""))
    if not photometric.startswith("MONOCHROME"):
        raise ValueError(f"cannot write {photometric} DICOM back; write .tif or .npy")
    if "PixelData" not in ds or int(ds.BitsAllocated) not in (8, 16):
        raise ValueError("can write DICOM back only with 8- or 16-bit integer pixels")
    if "ModalityLUTSequence" in ds:
        raise ValueError("cannot write DICOM back through a modality LUT sequence")
    syntax = getattr(getattr(ds, "file_meta", None), "TransferSyntaxUID", None)
    if syntax is not None and not syntax.is_little_endian:
        raise ValueError(f"cannot write DICOM back in {syntax.name}; write .tif or .npy")


def save_image(path: str | Path, image: Any, *, dtype: Any = None, dicom: Any = None) -> list[str]:
    """Write ``image``, keeping its values where the format can; returns notes (one line
    each) on what was changed to fit the format.

    - ``.npy`` and ``.tif``: the values as ``dtype`` (default: the image's own), rounded
      and clipped for integer types;
    - ``.dcm``: the tags of ``dicom`` (a pydicom Dataset) with the pixels replaced, the
      values mapped back through its rescale slope and intercept to the stored integers,
      and a new SOP Instance UID (the result is another image);
    - ``.png``, ``.jpg``, ``.bmp``: 8-bit grey. A ``uint8`` image keeps its values;
      anything else is rescaled from its range to 0-255 (said in a note); a uniform image
      keeps its value when it lies in 0-255 and is mid-grey (128) otherwise.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "a.png")
    >>> save_image(path, np.array([[0.0, 2.0], [4.0, 8.0]]))
    ['rescaled 0 to 8 into 0-255 for the 8-bit .png (.tif or .npy keep the values)']
    >>> load_image(path).tolist()
    [[0.0, 64.0], [128.0, 255.0]]
    """
    path = check_output_path(path)
    a = to_host(image)
    dtype = a.dtype if dtype is None else np.dtype(dtype)
    suffix = path.suffix.lower()
    notes: list[str] = []
    if suffix == ".dcm":
        _write_dicom(path, a, dicom, notes)
    elif suffix in EIGHT_BIT_SUFFIXES:
        import imageio.v3 as iio

        iio.imwrite(path, _eight_bit(a, dtype, suffix, notes))
    else:
        out = _as_dtype(a, dtype, notes)
        if suffix == ".npy":
            np.save(path, out)
        else:
            import imageio.v3 as iio

            iio.imwrite(path, out)
    return notes


def _as_dtype(a: np.ndarray, dtype: np.dtype, notes: list[str]) -> np.ndarray:
    """``a`` as ``dtype``: rounded and clipped (with a note) for integer types."""
    if dtype.kind not in "iu" or a.dtype == dtype:
        return a.astype(dtype)
    info = np.iinfo(dtype)
    r = np.rint(a.astype(np.float64))
    outside = int(np.count_nonzero((r < info.min) | (r > info.max)))
    if outside:
        notes.append(f"{outside} values outside the {dtype} range were clipped")
    return np.clip(r, info.min, info.max).astype(dtype)


def _eight_bit(a: np.ndarray, dtype: np.dtype, suffix: str, notes: list[str]) -> np.ndarray:
    if dtype == np.uint8:
        return _as_dtype(a, dtype, notes)
    lo, hi = float(a.min()), float(a.max())
    if hi > lo:
        notes.append(
            f"rescaled {lo:.6g} to {hi:.6g} into 0-255 for the 8-bit {suffix} "
            "(.tif or .npy keep the values)"
        )
        return np.rint((a.astype(np.float64) - lo) / (hi - lo) * 255).astype(np.uint8)
    grey = int(round(lo)) if 0 <= lo <= 255 else 128
    notes.append(f"uniform image (every value {lo:.6g}): written as grey {grey}")
    return np.full(a.shape, grey, dtype=np.uint8)


def _write_dicom(path: Path, a: np.ndarray, ds: Any, notes: list[str]) -> None:
    import copy

    check_dicom_output(SourceImage(a, a.dtype, ds))
    out = copy.deepcopy(ds)
    slope = float(getattr(ds, "RescaleSlope", 1) or 1)
    intercept = float(getattr(ds, "RescaleIntercept", 0) or 0)
    stored = (a.astype(np.float64) - intercept) / slope
    bits = int(ds.BitsStored)
    signed = int(ds.PixelRepresentation) == 1
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    r = np.rint(stored)
    outside = int(np.count_nonzero((r < lo) | (r > hi)))
    if outside:
        notes.append(f"{outside} values outside the {bits}-bit stored range were clipped")
    kind = "i" if signed else "u"
    pixels = np.clip(r, lo, hi).astype(f"{kind}{int(ds.BitsAllocated) // 8}")
    out.set_pixel_data(pixels, str(ds.PhotometricInterpretation), bits)
    if "MediaStorageSOPInstanceUID" in out.file_meta:
        out.file_meta.MediaStorageSOPInstanceUID = out.SOPInstanceUID
    out.save_as(path, enforce_file_format=True)
