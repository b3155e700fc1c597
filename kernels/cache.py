"""The user's simd-emu cache folder: compiled GPU kernels, calibrations and the renderer's data
sets."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir"]


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
