"""GPU budgets of the dense ``anisotropic_diffusion`` per iteration, counted without a GPU.

The run goes through the CuPy code path on the counting stand-in (``kernels.counting``):
arrays from ``counting.cupy.asarray``, one counted launch per fused kernel, computed by
the NumPy model of the kernel (``diffusion.cuda_kernels.model_step``). Per iteration is the
difference between runs of 16 and 8 iterations, so the one-off work cancels.

As array code (``SIMD_FORCE_REFERENCE=1``) the ``epsilon`` path costs 3 syncs, about 43
launches and 240 bytes a point per iteration. Fused, every iteration is one launch (two
when the info needs the active counts without ``freeze``) and the loop reads the counts
back once every ``CHECK_EVERY`` iterations.
"""

from __future__ import annotations

import numpy as np
import pytest

from diffusion import anisotropic_diffusion
from diffusion.fused import CHECK_EVERY
from kernels import counting

SHAPE = (48, 64)
#: Per iteration: (launches, syncs, traffic bytes a point as the counting model counts it:
#: every array argument of a launch once, so the frozen flags are 1 byte, the changed mask
#: 1 written and 1 read by the counting kernel).
BUDGETS = {
    "plain": (1, 0, 8),
    "epsilon": (1, 1 / CHECK_EVERY, 8),
    "epsilon/info": (2, 1 / CHECK_EVERY, 10),
    "epsilon/freeze": (1, 1 / CHECK_EVERY, 9),
}
KWARGS = {
    "plain": {},
    "epsilon": {"epsilon": 1e-4},
    "epsilon/info": {"epsilon": 1e-4, "return_info": True},
    "epsilon/freeze": {"epsilon": 1e-4, "freeze": True, "return_info": True},
}


def image():
    return (np.random.default_rng(0).random(SHAPE) * 100).astype(np.float32)


def per_iteration(kw, monkeypatch=None, reference=False):
    if reference:
        monkeypatch.setenv("SIMD_FORCE_REFERENCE", "1")
    counts = []
    for niter in (8, 16):
        with counting.measure() as c:
            res = anisotropic_diffusion(counting.cupy.asarray(image()), niter=niter, **kw)
        out, info = res if kw.get("return_info") else (res, None)
        assert info is None or info.iterations == niter  # no convergence in 16
        counts.append(c.total)
    a, b = counts
    n = SHAPE[0] * SHAPE[1]
    return (
        (b.launches - a.launches) / 8,
        (b.syncs - a.syncs) / 8,
        (b.traffic_bytes - a.traffic_bytes) / 8 / n,
    )


@pytest.mark.parametrize("case", sorted(BUDGETS))
def test_iteration_within_budget(case):
    launches, syncs, traffic = per_iteration(KWARGS[case])
    want_launches, want_syncs, want_traffic = BUDGETS[case]
    assert launches <= want_launches, f"{case}: {launches} launches per iteration"
    assert syncs <= want_syncs, f"{case}: {syncs} syncs per iteration"
    assert traffic <= want_traffic + 0.1, f"{case}: {traffic} bytes a point per iteration"


def test_array_code_path_cost_more(monkeypatch):
    """The array-code path (still there with SIMD_FORCE_REFERENCE=1), for the record."""
    launches, syncs, traffic = per_iteration({"epsilon": 1e-4}, monkeypatch, reference=True)
    assert launches >= 40 and syncs >= 2 and traffic >= 200  # 2 count read-backs
    print(f"array code: {launches} launches, {syncs} syncs, {traffic:.0f} B a point")


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"epsilon": 0.5},
        {"epsilon": 0.5, "freeze": True},
        {"epsilon": 3.0},  # converges: stops where the NumPy path stops
        {"epsilon": 3.0, "freeze": True},
    ],
)
@pytest.mark.parametrize("shape,spacing", [((40, 52), None), ((7, 9, 10), (1.0, 2.0, 0.8))])
def test_counting_path_matches_numpy_path(kw, shape, spacing):
    img = (np.random.default_rng(4).random(shape) * 255).astype(np.float32)
    args = dict(niter=30, kappa=30, gamma=0.1, voxelspacing=spacing, return_info=True, **kw)
    out, info = anisotropic_diffusion(counting.cupy.asarray(img), **args)
    ref, ref_info = anisotropic_diffusion(img, **args)
    assert isinstance(out, counting.DeviceArray)
    np.testing.assert_allclose(np.asarray(out), ref, rtol=0, atol=2e-4)
    assert (info.iterations, info.converged) == (ref_info.iterations, ref_info.converged)
    np.testing.assert_allclose(info.active_fraction, ref_info.active_fraction, atol=1e-3)
    np.testing.assert_allclose(info.updated_fraction, ref_info.updated_fraction, atol=1e-3)


def test_plain_iterations_replay_as_a_cuda_graph(monkeypatch):
    """Many plain iterations: 16 captured once as a CUDA graph, launched again, the rest
    one launch each; the image is the one of a launch per iteration."""
    from diffusion.fused import GRAPH_STEPS

    image = np.random.default_rng(3).random(SHAPE).astype(np.float32) * 255
    x = counting.cupy.asarray(image)
    with counting.measure() as c:
        graphed = anisotropic_diffusion(x, niter=3 * GRAPH_STEPS + 2, kappa=20, gamma=0.1)
    assert c.total.captures == 1 and c.total.graph_launches == 3
    assert c.total.launches <= GRAPH_STEPS + 2 + 4  # captured, the rest, the set-up
    monkeypatch.setenv("SIMD_GRAPHS", "0")
    with counting.measure() as c:
        plain = anisotropic_diffusion(x, niter=3 * GRAPH_STEPS + 2, kappa=20, gamma=0.1)
    assert c.total.captures == 0
    np.testing.assert_array_equal(np.asarray(graphed), np.asarray(plain))
