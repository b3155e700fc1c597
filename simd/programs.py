"""The programs of the machine: where their entry points are declared, what they need.

Each program declares its command (``simd_emu.commands``) and its warm-up
(``simd_emu.warmups``) as entry points of its distribution; :func:`entry_points` reads a
group from the installed metadata or, in a source tree used without being installed, from
the ``pyproject.toml`` beside the ``simd`` package. A program's command module declares
the packages it needs beyond the machine in ``REQUIRES`` (by the extra of ``simd-emu``
that installs them); :func:`missing_requirements` says which are missing, importing
nothing. ``simd-emu`` (:mod:`simd.cli`) and ``simd-emu warmup`` (:mod:`simd.warmup`) use
both.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["DISTRIBUTION", "entry_points", "missing_requirements"]

#: The distribution that installs the machine and its programs.
DISTRIBUTION = "simd-emu"


def entry_points(group: str) -> dict[str, str]:
    """The entry points of ``group`` as ``{name: "module:function"}``, sorted by name: from
    the installed metadata, else from this source tree's ``pyproject.toml``."""
    found: dict[str, str] = {}
    for ep in importlib.metadata.entry_points(group=group):
        found.setdefault(ep.name, ep.value)
    return dict(sorted((found or _source_tree_entry_points(group)).items()))


def _source_tree_entry_points(group: str) -> dict[str, str]:
    """``group`` as declared in the ``pyproject.toml`` of the checkout ``simd`` runs from."""
    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    try:
        import tomllib

        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    except (OSError, ValueError):
        return {}
    if project.get("name") != "simd-emu":
        return {}
    return {str(k): str(v) for k, v in project.get("entry-points", {}).get(group, {}).items()}


def _requirements(func: Any) -> Mapping[str, tuple[str, ...]]:
    """``REQUIRES`` of the module that defines the handler ``func`` (empty if none)."""
    module = sys.modules.get(getattr(func, "__module__", None) or "")
    requires = getattr(module, "REQUIRES", None) or {}
    return {extra: tuple(names) for extra, names in requires.items()}


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent package missing, or a broken entry
        return False


def missing_requirements(func: Any, command: str = "this command") -> str | None:
    """One line saying which packages the handler ``func`` needs and how to install them,
    or None when every package its module declares in ``REQUIRES`` is installed."""
    missing: list[str] = []
    extras: list[str] = []
    for extra, names in _requirements(func).items():
        absent = [name for name in names if not _installed(name)]
        if absent:
            missing += [name for name in absent if name not in missing]
            extras.append(extra)
    if not missing:
        return None
    quoted = [repr(name) for name in missing]
    if len(quoted) == 1:
        what = f"the package {quoted[0]}, which is not installed"
    else:
        what = f"the packages {', '.join(quoted[:-1])} and {quoted[-1]}, which are not installed"
    return f"'{command}' needs {what}: pip install '{DISTRIBUTION}[{','.join(extras)}]'"
