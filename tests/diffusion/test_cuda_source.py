"""The fused Perona-Malik CUDA kernel compiles for sm_90 with NVRTC (no GPU needed) and,
on a GPU, agrees with the NumPy path."""

from __future__ import annotations

import numpy as np
import pytest

from diffusion.cuda_source import KERNEL_NAME, pm_source
from tests.nvrtc_support import compile_sm90, nvrtc_unavailable

_why = nvrtc_unavailable()


def _compile_sm90(source: str) -> str:
    if _why is not None:
        pytest.skip(_why)
    return compile_sm90(source, "pm.cu")[0]


@pytest.mark.parametrize("option", [1, 2, 3])
@pytest.mark.parametrize("ndim", [2, 3])
def test_kernel_compiles_for_sm90(option, ndim):
    ptx = _compile_sm90(pm_source(option, ndim))
    assert f".entry {KERNEL_NAME}" in ptx


def test_bad_variants():
    with pytest.raises(ValueError, match="option"):
        pm_source(4, 2)
    with pytest.raises(ValueError, match="ndim"):
        pm_source(1, 4)


@pytest.mark.gpu
@pytest.mark.parametrize("option", [1, 2, 3])
def test_fused_kernel_matches_numpy(option):
    cupy = pytest.importorskip("cupy")
    from diffusion import anisotropic_diffusion

    rng = np.random.default_rng(5)
    for shape, spacing in (((67, 93), (1.0, 1.5)), ((9, 11, 13), (1.0, 2.0, 0.7))):
        img = (rng.random(shape) * 255).astype(np.float32)
        kw = dict(niter=10, kappa=30, gamma=0.08, voxelspacing=spacing, option=option)
        ours = anisotropic_diffusion(cupy.asarray(img), **kw)
        assert isinstance(ours, cupy.ndarray)
        np.testing.assert_allclose(cupy.asnumpy(ours), anisotropic_diffusion(img, **kw), atol=2e-4)
