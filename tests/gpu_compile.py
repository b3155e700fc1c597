"""The tests that compile GPU code without a GPU need the ``test-gpu-compile`` extra.

``pip install ".[test]"`` leaves out the CUDA compiler wheels (CuPy, numba-cuda, NVRTC,
cuda-bindings, nvdisasm); the tests that need one skip, naming the extra. CI installs the
extra and sets ``REQUIRE_GPU_COMPILE=1``, which makes such a skip a failure, so that the
NVRTC/SASS compilation tests and the CUDA simulator tests cannot stop running unnoticed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "EXTRA",
    "require_installed",
    "required",
    "ptx_from_child",
    "run_in_simulator",
    "simulator_case_names",
    "skip",
]

ROOT = Path(__file__).resolve().parents[1]

#: How to install what these tests need.
EXTRA = "pip install '.[test-gpu-compile]'"


def require_installed(module: str, distribution: str) -> None:
    """Skip the calling test module (at import) unless ``module`` can be imported; with
    ``REQUIRE_GPU_COMPILE=1``, fail instead."""
    try:
        found = importlib.util.find_spec(module) is not None
    except ImportError:  # a parent package is missing
        found = False
    if found:
        return
    skip(f"{distribution} is not installed ({EXTRA})")


def required() -> bool:
    """Whether ``REQUIRE_GPU_COMPILE`` is set (as CI sets it)."""
    return os.environ.get("REQUIRE_GPU_COMPILE", "") not in ("", "0")


def skip(reason: str) -> None:
    """Skip the calling test (or test module, at import) for ``reason``; with
    ``REQUIRE_GPU_COMPILE=1``, fail instead."""
    if required():
        pytest.fail(f"REQUIRE_GPU_COMPILE=1 but {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def simulator_case_names(worker: Path) -> list[str]:
    """The case names of a CUDA-simulator worker script (its ``case_names()``), read
    without enabling the simulator in this process."""
    spec = importlib.util.spec_from_file_location(worker.stem, worker)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.case_names()


def _json_from_child(args: list[str], cudasim: bool, failure: str) -> Any:
    """Run ``python args`` in a child process (the simulator on or off); the JSON of its
    last line of output."""
    env = dict(os.environ)
    env["NUMBA_ENABLE_CUDASIM"] = "1" if cudasim else "0"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, f"{failure}:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_in_simulator(worker: Path) -> dict[str, str | None]:
    """Run a worker script in one child process with ``NUMBA_ENABLE_CUDASIM=1``; its result
    per case (None, or the error), read from the JSON of its last line of output."""
    return _json_from_child([str(worker)], cudasim=True, failure="simulator run failed")


def report_cases(names: Iterable[str], run_case: Callable[[str], None]) -> None:
    """The ``main`` of a CUDA-simulator worker script: run every case and print one JSON
    line ``{case: null | "error"}``, which :func:`run_in_simulator` reads."""
    results: dict[str, str | None] = {}
    for name in names:
        try:
            run_case(name)
            results[name] = None
        except Exception:  # reported per case by the test
            results[name] = traceback.format_exc()
    print(json.dumps(results))


def ptx_from_child(script: str) -> dict[str, str]:
    """Run ``script`` (Python source that prints a JSON object of PTX texts on its last
    line) in a child process with the real ``numba.cuda``, warnings as errors as in the
    pytest configuration (with its exception for numba-cuda's own import under
    NumPy >= 2.5); that object."""
    warnings = [
        "-W",
        "error",
        "-W",
        "ignore:The 'generic' unit for NumPy timedelta:DeprecationWarning",
    ]
    return _json_from_child(
        [*warnings, "-c", script], cudasim=False, failure="PTX compilation failed"
    )
