"""The user's simd-emu cache folder: compiled GPU kernels, calibrations and the renderer's data
sets."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_bytes", "cache_dir"]


def cache_dir() -> Path:
    """The user's simd-emu cache folder.

    ``$SIMD_EMU_CACHE_DIR``, else ``$XDG_CACHE_HOME/simd-emu``, else ``~/.cache/simd-emu``.
    Nothing is created here; writers make the folder when they first store something.

    Examples
    --------
    >>> import os
    >>> from unittest import mock
    >>> with mock.patch.dict(os.environ, {"SIMD_EMU_CACHE_DIR": "/tmp/simd-emu-demo"}):
    ...     print(cache_dir())
    /tmp/simd-emu-demo
    """
    base = os.environ.get("SIMD_EMU_CACHE_DIR")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME")
    root = Path(xdg) if xdg else Path.home() / ".cache"
    return root / "simd-emu"


def cache_bytes(folder: str | os.PathLike[str] | None = None) -> int:
    """The bytes of the files in the cache folder (``folder``, else :func:`cache_dir`); 0
    when it does not exist. What it holds is made again when needed, so deleting the
    folder clears the cache.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.npz").write_bytes(b"12345")
    >>> cache_bytes(folder), cache_bytes(folder / "missing")
    (5, 0)
    """
    root = cache_dir() if folder is None else Path(folder)
    total = 0
    for path in root.rglob("*"):
        try:
            if path.is_file() and not path.is_symlink():
                total += path.stat().st_size
        except OSError:  # removed meanwhile
            continue
    return total
