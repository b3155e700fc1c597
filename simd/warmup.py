"""``simd-emu warmup``: do once what the main jobs would do on their first run.

Each program of the machine declares its warm-up in the ``simd_emu.warmups`` entry-point
group of its distribution (``pyproject.toml``)::

    [project.entry-points."simd_emu.warmups"]
    render = "renderer.cli.render:warm_up"

A warm-up is a function of the backend asked for (as ``Machine(backend=...)`` takes it)
that runs a small job of its program as the real one runs (building its data, compiling its
kernels: the GPU kernels are kept in the cache folder, the CPU ones in Numba's) and returns
what it made ready, in a few words. :func:`run` calls them all, timing each, and says how
many GPU kernels were compiled rather than loaded from the cache.
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
            "Run a small job of every program of the machine, as its first real run would: "
            "build its built-in data and compile its kernels (GPU kernels are compiled once "
            "per machine and kept in the cache folder), so that later runs wait for neither."
        ),
    )
    p.add_argument(
        "--backend",
        default="auto",
        help="numpy, cupy, counting (the CuPy code path on NumPy) or auto (default)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Handler of ``simd-emu warmup``; returns the exit status."""
    from kernels import numba_launch
    from simd.backend import resolve_backend
    from simd.errors import MissingPackageError, SimdError, one_line
    from simd.programs import entry_points, missing_requirements

    try:
        backend = resolve_backend(args.backend)[0]
    except (ValueError, TypeError, SimdError) as err:
        print(f"simd-emu warmup: {err}", file=sys.stderr)
        return 2
    warm_ups = entry_points(GROUP)
    if not warm_ups:
        print("simd-emu warmup: no program of the machine is installed", file=sys.stderr)
        return 2
    stand_in = " (the counting stand-in)" if args.backend.lower() == "counting" else ""
    print(f"warming up on {backend}{stand_in}")
    total, failed, ran = time.perf_counter(), False, False
    for name, target in warm_ups.items():
        module, _, function = target.partition(":")
        before, t = numba_launch.compiled_count(), time.perf_counter()
        try:
            warm_up = getattr(importlib.import_module(module.strip()), function.strip())
        except ImportError as err:
            print(f"  {name:<8} skipped: needs the package {err.name!r}, which is not installed")
            continue
        problem = missing_requirements(warm_up, f"simd-emu {name}")
        if problem is not None:  # the packages its module declares (REQUIRES)
            print(f"  {name:<8} skipped: {problem}")
            continue
        try:
            made = warm_up(args.backend)
        except MissingPackageError as err:
            print(f"  {name:<8} skipped: {one_line(err)}")
            continue
        except (SimdError, OSError, RuntimeError, ValueError) as err:
            print(f"  {name:<8} failed: {one_line(err)}")
            failed = True
            continue
        ran = True
        compiled = numba_launch.compiled_count() - before
        kernels = f", {compiled} GPU kernels compiled" if compiled else ""
        print(f"  {name:<8} {made} in {time.perf_counter() - t:.1f} s{kernels}")
    took = f"in {time.perf_counter() - total:.1f} s"
    print("failed " + took if failed else "ready " + took if ran else "nothing warmed up")
    return 1 if failed else 0
