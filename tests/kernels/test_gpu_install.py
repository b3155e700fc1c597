"""A driver-only machine: the ``gpu`` extra installs what CuPy and Numba CUDA load at run
time, and ``simd.backend.gpu_missing`` (shown by ``simd-emu info``) names what is missing."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from simd import backend

ROOT = Path(__file__).resolve().parents[2]


def _gpu_extra() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return project["optional-dependencies"]["gpu"]


def test_gpu_extra_brings_the_cuda_libraries():
    extra = " ".join(_gpu_extra())
    for needed in (
        "cupy-cuda13x[ctk]",  # NVRTC, the runtime and its headers from wheels
        "numba-cuda[cu13]",  # NVVM, nvJitLink, cuda-bindings
        "nvidia-cuda-nvrtc",
        "nvidia-cuda-runtime",
        "cuda-bindings",
    ):
        assert needed in extra, needed


@pytest.fixture
def nothing_missing(monkeypatch):
    monkeypatch.setattr(backend, "_driver_missing", lambda: None)
    monkeypatch.setattr(backend, "_has_module", lambda name: True)
    monkeypatch.setattr(backend, "_load_cuda_lib", lambda name, sonames: None)
    return monkeypatch


def test_gpu_missing_is_empty_when_everything_is_there(nothing_missing):
    pathfinder = pytest.importorskip("cuda.pathfinder")
    nothing_missing.setattr(pathfinder, "find_nvidia_header_directory", lambda name: "/inc")
    assert backend.gpu_missing() == []


@pytest.mark.parametrize(
    ("gone", "says"),
    [
        ("cupy", "CuPy"),
        ("numba_cuda", "numba-cuda"),
        ("cuda.bindings", "cuda-bindings"),
    ],
)
def test_gpu_missing_names_a_missing_package(nothing_missing, gone, says):
    pathfinder = pytest.importorskip("cuda.pathfinder")
    nothing_missing.setattr(pathfinder, "find_nvidia_header_directory", lambda name: "/inc")
    nothing_missing.setattr(backend, "_has_module", lambda name: name != gone)
    missing = backend.gpu_missing()
    assert len(missing) == 1 and says in missing[0] and "pip install" in missing[0]


@pytest.mark.parametrize(("lib", "says"), [("nvrtc", "NVRTC"), ("nvvm", "NVVM")])
def test_gpu_missing_names_a_missing_library(nothing_missing, lib, says):
    pathfinder = pytest.importorskip("cuda.pathfinder")
    nothing_missing.setattr(pathfinder, "find_nvidia_header_directory", lambda name: "/inc")
    nothing_missing.setattr(
        backend, "_load_cuda_lib", lambda name, sonames: "not found" if name == lib else None
    )
    missing = backend.gpu_missing()
    assert len(missing) == 1 and missing[0].startswith(says) and "not found" in missing[0]


def test_gpu_missing_names_headers_and_driver(nothing_missing):
    pathfinder = pytest.importorskip("cuda.pathfinder")
    nothing_missing.setattr(pathfinder, "find_nvidia_header_directory", lambda name: None)
    nothing_missing.setattr(backend, "_driver_missing", lambda: "the NVIDIA driver")
    missing = backend.gpu_missing()
    assert missing[0] == "the NVIDIA driver"
    assert any("runtime headers" in m and "nvidia-cuda-runtime" in m for m in missing)


def test_gpu_missing_runs_here():
    # Whatever this machine has: a list of lines, and the probe's reason names them.
    missing = backend.gpu_missing()
    assert all(isinstance(m, str) and m for m in missing)
    ok, reason = backend.cupy_status()
    if not ok and missing and _has_cupy():
        assert "missing: " in reason


def _has_cupy() -> bool:
    import importlib.util

    return importlib.util.find_spec("cupy") is not None
