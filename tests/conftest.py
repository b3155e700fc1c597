"""Shared test configuration: hypothesis profiles and the GPU fixtures.

Tests marked ``gpu`` run only where CuPy reaches a GPU; elsewhere they are skipped, and
with ``REQUIRE_GPU=1`` the skip becomes a failure (so a GPU run cannot pass vacuously).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "thorough",
    deadline=None,
    max_examples=500,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def _require_gpu() -> bool:
    return os.environ.get("REQUIRE_GPU", "") not in ("", "0")


def pytest_runtest_setup(item):
    """Skip ``gpu`` tests without a GPU, or fail them when ``REQUIRE_GPU=1``."""
    if "gpu" not in item.keywords:
        return
    from simd.backend import cupy_status

    ok, reason = cupy_status()
    if ok:
        return
    if _require_gpu():
        pytest.fail(f"REQUIRE_GPU=1 but no GPU is usable: {reason}")
    pytest.skip(f"no GPU: {reason} (REQUIRE_GPU=1 makes this a failure)")


@pytest.fixture
def gpu_machine():
    """A ``Machine(backend="cupy")`` on 512 PEs (tests using it must be marked ``gpu``)."""
    from simd import Machine

    return Machine(pes=512, backend="cupy")


@pytest.fixture
def cpu_machine():
    """A ``Machine(backend="numpy")`` on 512 PEs."""
    from simd import Machine

    return Machine(pes=512, backend="numpy")
