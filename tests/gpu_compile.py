"""The tests that compile GPU code without a GPU need the ``test-gpu-compile`` extra.

``pip install ".[test]"`` leaves out the CUDA compiler wheels (CuPy, numba-cuda, NVRTC,
cuda-bindings, nvdisasm); the tests that need one skip, naming the extra. CI installs the
extra and sets ``REQUIRE_GPU_COMPILE=1``, which makes such a skip a failure, so that the
NVRTC/SASS compilation tests and the CUDA simulator tests cannot stop running unnoticed.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

__all__ = ["EXTRA", "require_installed", "required", "skip"]

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
