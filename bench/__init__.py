"""The benchmarks: tables, machine-readable results (``bench/results``) and plots.

Each script is a module of this package, run from the source tree's root as
``python -m bench.<name>`` (``python -m bench.cm5.fit`` for the CM-5 fit). Python then puts
the root, not ``bench/``, first on the path, so a script imports the source tree's packages
(``simd``, ``diffusion``, ...) and its siblings (``bench.cm5.paper``) as any module does, with
or without the project installed, and ``bench/diffusion.py`` and ``bench/mimd.py`` cannot
shadow the packages they are named after; tests import the scripts the same way. This
package is not installed (``pip install .`` installs the library packages only).
"""

from __future__ import annotations

import os
from pathlib import Path

#: The source tree's root (``bench/``'s parent).
ROOT = Path(__file__).resolve().parent.parent


def child_environment() -> dict[str, str]:
    """The environment for a script's own worker processes (``sys.executable -m
    bench.<name>``, under ``mpiexec`` or not): :func:`simd.launch.launch_environment` with
    the source tree's root first on ``PYTHONPATH``, so the workers find this package, and
    the same packages as their parent, whatever their current folder."""
    from simd.launch import launch_environment

    env = launch_environment()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env
