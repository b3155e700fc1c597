"""``simd-emu warmup``: do once what the main jobs would do on their first run.

Each program of the machine declares its warm-up in the ``simd_emu.warmups`` entry-point
group of its distribution (``pyproject.toml``)::

    [project.entry-points."simd_emu.warmups"]
    render = "renderer.cli:warm_up"

A warm-up is a function of the backend asked for (as ``Machine(backend=...)`` takes it) that
runs a small
job of its program as the real one runs (building its data, compiling its kernels: the
GPU kernels are kept in the cache folder, the CPU ones in Numba's) and returns what it
made ready, in a few words. :func:`run` calls them all, timing each, and says how many GPU
kernels were compiled rather than loaded from the cache.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from typing import Any

__all__ = ["GROUP", "register", "run"]

#: Entry-point group of the programs' warm-ups.
GROUP = "simd_emu.warmups"


def register(sub: Any) -> None:
    """Add ``warmup`` to the subcommands ``sub``."""
    p = sub.add_parser(
        "warmup",
        help="build the data sets and compile the kernels the main jobs need, once",
        description=(
            "Build the built-in data set and compile the kernels that rendering and "
            "diffusion need, so that their first run does not wait for either (GPU "
            "kernels are compiled once per machine and kept in the cache folder)."
        ),
    )
    p.add_argument("--backend", default="auto", help="numpy, cupy or auto (default)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Handler of ``simd-emu warmup``; returns the exit status."""
    from kernels import numba_launch
    from simd.backend import resolve_backend
    from simd.cli import entry_points

    try:
        backend = resolve_backend(args.backend)[0]
    except (ValueError, TypeError, RuntimeError) as err:
        print(f"simd-emu warmup: {err}", file=sys.stderr)
        return 2
    warm_ups = entry_points(GROUP)
    if not warm_ups:
        print("simd-emu warmup: no program of the machine is installed", file=sys.stderr)
        return 2
    print(f"warming up on {backend}")
    total = time.perf_counter()
    for name, target in warm_ups.items():
        module, _, function = target.partition(":")
        before, t = numba_launch.compiled_count(), time.perf_counter()
        try:
            warm_up = getattr(importlib.import_module(module.strip()), function.strip())
            made = warm_up(args.backend)
        except ModuleNotFoundError as err:  # a package of the data extra
            print(f"  {name:<8} skipped: needs {err.name!r} (pip install 'simd-emu[data]')")
            continue
        compiled = numba_launch.compiled_count() - before
        kernels = f", {compiled} GPU kernels compiled" if compiled else ""
        print(f"  {name:<8} {made} in {time.perf_counter() - t:.1f} s{kernels}")
    print(f"ready in {time.perf_counter() - total:.1f} s")
    return 0
