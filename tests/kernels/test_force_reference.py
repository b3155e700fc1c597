"""``SIMD_FORCE_REFERENCE``: one reading of the variable, for the registry and diffusion."""

from __future__ import annotations

import pytest

import diffusion.dense
from kernels import registry


@pytest.mark.parametrize(
    ("value", "forced"),
    [(None, False), ("", False), ("0", False), ("1", True), ("yes", True), ("true", True)],
)
def test_force_reference_values(monkeypatch, value, forced):
    if value is None:
        monkeypatch.delenv("SIMD_FORCE_REFERENCE", raising=False)
    else:
        monkeypatch.setenv("SIMD_FORCE_REFERENCE", value)
    assert registry.force_reference() is forced
    expected = "kernels.reference" if forced else "kernels.numba_cpu"
    assert registry.lookup("scan", "numpy").__module__ == expected


def test_diffusion_asks_the_registry():
    """The fused CuPy diffusion path is switched off by the same reading of the variable."""
    assert diffusion.dense.force_reference is registry.force_reference
