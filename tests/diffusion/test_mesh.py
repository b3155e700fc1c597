"""The PE-mesh path: equal to the dense path bit for bit, sound balancing, clear errors."""

from __future__ import annotations

import numpy as np
import pytest

from diffusion import anisotropic_diffusion, mesh_diffusion
from simd import Machine


@pytest.fixture(scope="module")
def image():
    import skimage.data

    return skimage.data.camera()[200:296:2, 150:262:2].astype(np.float32)  # 48 x 56


def dense(img, **kw):
    return anisotropic_diffusion(img, return_info=True, **kw)


@pytest.mark.parametrize(
    "mesh,kw,bal",
    [
        ((4, 4), dict(niter=8), dict()),
        ((5, 7), dict(niter=25, kappa=20, gamma=0.2, epsilon=0.5), dict(balance_every=1)),
        (
            (6, 3),
            dict(niter=25, kappa=20, gamma=0.2, epsilon=0.5),
            dict(balance_every=2, balance_axes=(0,)),
        ),
        (
            (4, 8),
            dict(niter=25, kappa=20, gamma=0.2, epsilon=0.5),
            dict(balance_every=3, balance_axes=(1,), limited_buffers=False),
        ),
        (
            (8, 8),
            dict(niter=25, kappa=15, gamma=0.2, epsilon=0.3, freeze=True),
            dict(balance_every=1, buffer=9),
        ),
        (
            (3, 4),
            dict(niter=12, kappa=30, gamma=0.1, option=3, voxelspacing=(1.0, 1.5), epsilon=0.2),
            dict(balance_every=2),
        ),
        (
            (4, 4),
            dict(niter=12, kappa=30, gamma=0.15, option=2, epsilon=0.2),
            dict(balance_every=5),
        ),
    ],
)
def test_mesh_equals_dense_bit_for_bit(image, mesh, kw, bal):
    ref, info = dense(image, **kw)
    res = mesh_diffusion(image, mesh=mesh, backend="numpy", check=True, **kw, **bal)
    assert res.image.dtype == np.float32
    assert np.array_equal(res.image, ref)
    assert res.iterations == info.iterations
    np.testing.assert_allclose(res.active_fraction, info.active_fraction)
    assert res.converged == info.converged
    # Buffers never overflowed and every PE still holds data.
    for e in res.grid.extents:
        assert 1 <= e.min() and e.max() <= res.grid.buffer


def test_numpy_scalar_parameters_give_the_dense_result(image):
    """The parameters are validated and made Python floats once (``PMParameters.check``),
    for the mesh as for the dense path: a float64 ``gamma`` or ``epsilon`` used to promote
    the mesh's update, or its test against ``epsilon``, to float64."""
    kw = dict(kappa=np.float64(30.3), gamma=np.float64(0.13), epsilon=np.float64(0.37))
    ref, _ = dense(image, niter=15, **kw)
    res = mesh_diffusion(image, niter=15, mesh=(4, 4), backend="numpy", **kw)
    assert np.array_equal(res.image, ref)
    python = {k: v.item() for k, v in kw.items()}
    assert np.array_equal(ref, dense(image, niter=15, **python)[0])


def test_cost_is_the_busiest_pe(image):
    m = Machine(pes=(4, 4), backend="numpy")
    res = mesh_diffusion(image, niter=10, kappa=20, gamma=0.2, epsilon=0.5, machine=m)
    # No balancing: the busiest PE under the static decomposition, both ways.
    assert res.max_load == res.static_max_load
    assert res.load_ratio == 1.0
    assert res.max_load[0] == 12 * 14  # all 48x56 / 16 points active at first
    calls = m.stats["diffusion"].calls
    assert calls["halo_exchange"] >= res.iterations  # X-Net halo every iteration
    assert calls["local"] >= res.iterations
    assert res.cycles["balancing"] == 0 and res.cycles["diffusion"] > 0


def test_balancing_lowers_the_max_load_and_charges_scans():
    img = np.zeros((64, 64), np.float32)
    rng = np.random.default_rng(0)
    img[:24, :24] = rng.random((24, 24)) * 100  # activity in one corner
    m = Machine(pes=(8, 8), backend="numpy")
    res = mesh_diffusion(
        img, niter=30, kappa=20, gamma=0.2, epsilon=0.5, machine=m, balance_every=2, check=True
    )
    assert res.mean_max_load < 0.8 * res.mean_static_max_load
    assert res.load_ratio < 0.8
    bal = m.stats["balancing"].calls
    assert bal["scan"] > 0 and bal["shift"] > 0
    assert res.cycles["balancing"] > 0
    assert np.array_equal(
        res.image, anisotropic_diffusion(img, niter=30, kappa=20, gamma=0.2, epsilon=0.5)
    )


def test_activity_map_counts_iterations(image):
    res = mesh_diffusion(
        image, niter=15, kappa=20, gamma=0.2, epsilon=0.5, mesh=(4, 4), backend="numpy"
    )
    assert res.activity.shape == image.shape
    assert res.activity.max() == res.iterations
    assert res.activity.sum() == pytest.approx(sum(res.active_fraction) * image.size)


def test_progress_callback(image):
    seen = []
    mesh_diffusion(
        image, niter=3, mesh=(2, 2), backend="numpy", progress=lambda it, res: seen.append(it)
    )
    assert seen == [0, 1, 2]


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(mesh=(64, 64)), "larger than the image"),
        (dict(mesh=(4, 100)), "larger than the image"),
        (dict(kappa=0), "kappa"),
        (dict(balance_every=-1), "balance_every"),
        (dict(balance_axes=(2,)), "balance_axes"),
        (dict(buffer=3), "buffer"),
    ],
)
def test_bad_mesh_arguments(image, kw, match):
    args = dict(niter=1, backend="numpy", mesh=(4, 4))
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        mesh_diffusion(image, **args)


def test_bad_images_on_the_mesh():
    with pytest.raises(ValueError, match="NaN"):
        mesh_diffusion(np.full((8, 8), np.nan), mesh=(2, 2), backend="numpy")
    with pytest.raises(ValueError, match="2-D"):
        mesh_diffusion(np.zeros((8, 8, 8)), mesh=(2, 2), backend="numpy")
    with pytest.raises(ValueError, match="empty"):
        mesh_diffusion(np.zeros((0, 8)), mesh=(2, 2), backend="numpy")


@pytest.mark.slow
def test_mp1_mesh_on_a_512_image():
    import skimage.data

    img = skimage.data.camera().astype(np.float32)
    kw = dict(niter=40, kappa=20, gamma=0.2, epsilon=0.25)
    ref = anisotropic_diffusion(img, **kw)
    res = mesh_diffusion(img, backend="numpy", balance_every=5, check=True, **kw)
    assert res.grid.pes == (64, 64)
    assert np.array_equal(res.image, ref)
    assert res.load_ratio < 1.0


def test_static_tracking_is_bookkeeping_off_the_machine(image):
    # Recording the unbalanced loads and the activity map is the emulator's business:
    # the machine's instructions, model cycles and results are the same without it.
    kw = dict(niter=10, kappa=20, gamma=0.2, epsilon=0.5, balance_every=2, backend="numpy")
    runs = {}
    for track in (True, False):
        m = Machine(pes=(4, 4), backend="numpy")
        res = mesh_diffusion(image, machine=m, track_static=track, **kw)
        runs[track] = (res, dict(m.stats["diffusion"].calls))
    (tracked, calls_t), (plain, calls_p) = runs[True], runs[False]
    assert calls_t == calls_p
    assert tracked.cycles == plain.cycles
    assert tracked.max_load == plain.max_load and np.array_equal(tracked.image, plain.image)
    assert plain.static_max_load == [] and plain.activity is None
    assert len(tracked.static_max_load) == tracked.iterations
