"""The ``simd_emu.commands`` entry points as ``pyproject.toml`` declares them.

Tests of the command line register exactly these (``simd.cli.main(..., commands=...)``)
rather than whatever an installed, possibly stale, distribution's metadata says, so that a
wrong ``pyproject.toml`` fails them.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def pyproject_commands() -> dict[str, str]:
    """``{command: "module:function"}`` of the ``simd_emu.commands`` group."""
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    return dict(project["entry-points"]["simd_emu.commands"])
