"""Every docstring example of every module of the project's packages runs as a doctest.

The modules are found by walking the packages, so a new module cannot be forgotten.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import tempfile

import pytest

from tests import gpu_compile

PACKAGES = ("kernels", "simd", "renderer", "diffusion", "mimd")

#: The packages of the test-gpu-compile extra that a module may import at its top (CuPy's
#: kernels, diffusion.cuda_kernels).
GPU_PACKAGES = ("cupy", "cupyx", "numba_cuda", "cuda")


def _modules() -> list[str]:
    names = []
    for package in PACKAGES:
        root = importlib.import_module(package)
        names.append(package)
        for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
            names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name, tmp_path, monkeypatch):
    # the examples' temporary files (tempfile.mkdtemp, ...) in the test's own folder
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in GPU_PACKAGES:
            raise
        gpu_compile.skip(f"{name} imports {exc.name}, which is not installed ({gpu_compile.EXTRA})")
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_the_walk_finds_the_packages_modules():
    names = _modules()
    assert {"simd.machine", "simd.balance.cost_effective.loops", "renderer.pipeline"} <= set(names)
