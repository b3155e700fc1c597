"""Whether this process was started by ``mpiexec``, and the communicator if so.

``mpiexec -n N simd-emu render ...`` runs the command on N ranks with no extra flag: the
commands make their machine with ``Machine(..., comm=world())``. :func:`world` imports
``mpi4py`` only when the launcher's environment says there are ranks, so a plain run never
loads MPI, and ``-n 1`` behaves exactly as a plain run (no communicator at all).

Examples
--------
>>> launched_ranks({"OMPI_COMM_WORLD_SIZE": "4"})
4
>>> launched_ranks({})
1
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "find_mpiexec",
    "launch_environment",
    "launched_rank",
    "launched_ranks",
    "mpi_status",
    "world",
]

#: Environment variables in which launchers (Open MPI, MPICH/Hydra, PMIx, Slurm's srun,
#: Intel MPI) put the number of ranks of the job.
_SIZE_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "MPI_LOCALNRANKS")


def launched_ranks(environ: Mapping[str, str] | None = None) -> int:
    """How many ranks the launcher started (1 when not started by ``mpiexec``)."""
    environ = os.environ if environ is None else environ
    for name in _SIZE_VARIABLES:
        value = environ.get(name, "")
        if value.isdigit() and int(value) > 0:
            return int(value)
    return 1


#: Environment variables in which launchers put this process's rank.
_RANK_VARIABLES = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "MPI_LOCALRANKID")


def launched_rank(environ: Mapping[str, str] | None = None) -> int:
    """This process's rank as the launcher says (0 when not started by ``mpiexec``); read
    without MPI, so that only rank 0 reports a bad command line.

    Examples
    --------
    >>> launched_rank({"OMPI_COMM_WORLD_RANK": "2"}), launched_rank({})
    (2, 0)
    """
    environ = os.environ if environ is None else environ
    for name in _RANK_VARIABLES:
        value = environ.get(name, "")
        if value.isdigit():
            return int(value)
    return 0


@functools.cache
def mpi_status() -> tuple[bool, str]:
    """Whether MPI can be used here, with the MPI library's name or, if not, why not in one
    line (mpi4py missing, or mpi4py installed without an MPI library to load).

    Loads (and so initialises) MPI when mpi4py is installed; checked once per process.
    """
    if importlib.util.find_spec("mpi4py") is None:
        return False, "mpi4py is not installed: pip install 'simd-emu[mpi]'"
    try:
        from simd.ranks import mpi_library  # imports mpi4py's MPI, which loads the library
    except (ImportError, RuntimeError, OSError):
        return False, (
            "mpi4py is installed but cannot load an MPI library: "
            "pip install 'simd-emu[mpi]' brings Open MPI"
        )
    return True, mpi_library()


def world() -> Any:
    """``MPI.COMM_WORLD`` when running on more than one rank, else None.

    Raises a one-line ``RuntimeError`` naming the fix when ``mpiexec`` started several
    ranks but MPI cannot be used (each rank would otherwise run the whole job alone).
    """
    if launched_ranks() <= 1:
        return None
    ok, detail = mpi_status()
    if not ok:
        raise RuntimeError(f"started on several MPI ranks, but {detail}")
    from mpi4py import MPI

    return MPI.COMM_WORLD if MPI.COMM_WORLD.Get_size() > 1 else None


def find_mpiexec() -> str | None:
    """The ``mpiexec`` beside this Python (where Open MPI's wheel puts it), else the one on
    ``PATH``, else None: for scripts and tests that launch ranks themselves."""
    here = shutil.which("mpiexec", path=str(Path(sys.executable).parent))
    return here or shutil.which("mpiexec")


def launch_environment() -> dict[str, str]:
    """This process's environment for ``mpiexec`` launched from a script: Open MPI's consent
    to run as root (containers, CI) and, since ranks may outnumber cores, ranks that yield
    the core while they wait."""
    return {
        **os.environ,
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        "OMPI_MCA_mpi_yield_when_idle": "1",
    }
