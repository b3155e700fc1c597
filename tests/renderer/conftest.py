from __future__ import annotations

import pytest

from simd import Machine


@pytest.fixture
def machine():
    """A fresh NumPy machine (the test suite runs everything on NumPy)."""
    return Machine(pes=64, backend="numpy")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Data sets and calibrations go to a per-session temporary cache."""
    root = tmp_path_factory.getbasetemp() / "simd-emu-cache"
    monkeypatch.setenv("SIMD_EMU_CACHE_DIR", str(root))
