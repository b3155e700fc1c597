"""The docstring examples of the public modules run as doctests."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "kernels.cuda_router_source",
    "kernels.cuda_scan_source",
    "kernels.reference",
    "kernels.registry",
    "renderer.camera",
    "renderer.cli",
    "renderer.clip",
    "renderer.datasets",
    "renderer.image",
    "renderer.mesh",
    "renderer.pipeline",
    "renderer.scan",
    "renderer.shading",
    "renderer.transform",
    "renderer.zbuffer",
    "simd.balance.cost_effective",
    "simd.cost",
    "simd.info",
    "simd.machine",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0
