"""Stored cost overestimates: where calibrations live and how they are keyed.

A calibration is keyed by loop name, clock and machine preset (the cost model's name,
e.g. ``CM-5/512``; for the wall clock also the backend and host). The user file
(``overestimates.json`` in :func:`kernels.cache.cache_dir`) is searched before the file
shipped with the package (``simd/balance/overestimates.json``). An entry records the
smallest VP ratio it was calibrated at and is only used at that VP ratio or above.
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from pathlib import Path
from typing import Any

from kernels.cache import cache_dir
from simd.balance.cost_effective.records import check_clock

__all__ = ["load_overestimate", "overestimate_key", "store_overestimate", "user_store_path"]

PACKAGE_STORE = Path(__file__).parents[1] / "overestimates.json"


def user_store_path() -> Path:
    """The user's calibration file (see the module docstring for the search order).

    Examples
    --------
    >>> user_store_path() == cache_dir() / "overestimates.json"
    True
    """
    return cache_dir() / "overestimates.json"


def overestimate_key(machine: Any, *, name: str, clock: str = "model") -> str:
    """Key of a calibration: loop name, clock, machine preset (and host for the wall clock).

    Examples
    --------
    >>> from simd import Machine
    >>> overestimate_key(Machine(pes=512, backend="numpy"), name="z-buffer")
    'z-buffer|model|CM-5/512'
    """
    check_clock(clock)
    preset = getattr(machine.cost, "name", f"P={machine.npes}")
    key = f"{name}|{clock}|{preset}"
    if clock == "wall":
        key += f"|{machine.backend}|{platform.node()}"
    return key


#: path -> (its (inode, mtime, size) when read, its calibrations): a cost-effective loop
#: looks its overestimate up at every run, which a stat answers rather than a parse.
_READ: dict[Path, tuple[tuple[int, int, int], dict[str, Any]]] = {}


def _read_store(path: Path) -> dict[str, Any]:
    """The calibrations in ``path`` (not to be modified: shared by later reads); none when
    it is missing, unreadable or not a JSON object (the search then goes on with the next
    file, or the online estimate)."""
    try:
        st = os.stat(path)
    except OSError:
        return {}
    stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
    hit = _READ.get(path)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, json.JSONDecodeError):
        return {}
    data = data if isinstance(data, dict) else {}
    _READ[path] = (stamp, data)
    return data


def load_overestimate(
    machine: Any,
    *,
    name: str,
    clock: str = "model",
    n: int | None = None,
    path: str | os.PathLike | None = None,
) -> float | None:
    """The stored cost overestimate for this loop and machine, or None.

    Parameters
    ----------
    machine : simd.Machine
    name : str
        Loop name.
    clock : str
        "model" or "wall".
    n : int, optional
        VP set size; an entry calibrated at a larger VP ratio than ``n`` gives is not used.
    path : path, optional
        Only this file; default: the user file, then the package file.

    Examples
    --------
    >>> import os, tempfile
    >>> from simd import Machine
    >>> m, path = Machine(pes=8, backend="numpy"), os.path.join(tempfile.mkdtemp(), "o.json")
    >>> _ = store_overestimate(m, 12.5, name="demo", min_vp_ratio=4, path=path)
    >>> load_overestimate(m, name="demo", n=64, path=path)   # VP ratio 8: valid
    12.5
    >>> load_overestimate(m, name="demo", n=16, path=path) is None   # VP ratio 2: not
    True
    """
    key = overestimate_key(machine, name=name, clock=clock)
    paths = [Path(path)] if path is not None else [user_store_path(), PACKAGE_STORE]
    for p in paths:
        entry = _read_store(p).get(key)
        if not isinstance(entry, dict) or "overestimate" not in entry:
            continue
        if n is not None and machine.cost.vp_ratio(n) < entry.get("min_vp_ratio", 1):
            continue
        return float(entry["overestimate"])
    return None


def store_overestimate(
    machine: Any,
    overestimate: float,
    *,
    name: str,
    clock: str = "model",
    min_vp_ratio: int = 1,
    path: str | os.PathLike | None = None,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Store a cost overestimate (JSON, read back by :func:`load_overestimate`).

    Returns the file written (default: :func:`user_store_path`); see
    :func:`load_overestimate` for an example.
    """
    if not (
        isinstance(overestimate, (int, float)) and math.isfinite(overestimate) and overestimate >= 0
    ):
        raise ValueError(f"overestimate must be a finite number >= 0, got {overestimate!r}")
    p = Path(path) if path is not None else user_store_path()
    data = dict(_read_store(p))
    entry = {
        "overestimate": float(overestimate),
        "min_vp_ratio": int(min_vp_ratio),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if extra:
        entry.update(extra)
    data[overestimate_key(machine, name=name, clock=clock)] = entry
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".tmp")
    with open(tmp, "w") as f:
        json.dump(data, f, indent=2, sort_keys=True)
    os.replace(tmp, p)
    _READ.pop(p, None)  # written here: read again whatever its stamp says
    return p
