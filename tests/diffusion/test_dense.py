"""The dense path against medpy, against hand-computed ITK cases and SimpleITK."""

from __future__ import annotations

import math

import numpy as np
import pytest

from diffusion import (
    DiffusionStabilityWarning,
    anisotropic_diffusion,
    gradient_anisotropic_diffusion,
)


@pytest.fixture(scope="module")
def medpy_smoothing():
    """medpy's anisotropic diffusion, the oracle of the tests that take it."""
    return pytest.importorskip("medpy.filter.smoothing")


@pytest.fixture(scope="module")
def camera():
    import skimage.data

    return skimage.data.camera()[128:320, 96:352].astype(np.float32)  # 0..255 data


# ------------------------------------------------------------------ medpy


@pytest.mark.parametrize("option", [1, 2, 3])
def test_matches_medpy_2d(medpy_smoothing, camera, option):
    ours = anisotropic_diffusion(camera, niter=10, kappa=50, gamma=0.1, option=option)
    ref = medpy_smoothing.anisotropic_diffusion(
        camera, niter=10, kappa=50, gamma=0.1, option=option
    )
    assert ours.dtype == np.float32 and ours.shape == camera.shape
    np.testing.assert_allclose(ours, ref, rtol=0, atol=2e-4)
    # Same float32 operations in the same order: in fact identical.
    assert np.array_equal(ours, ref)


def test_matches_medpy_3d_with_spacing(medpy_smoothing):
    rng = np.random.default_rng(3)
    vol = (rng.random((9, 10, 11)) * 255).astype(np.float32)
    kw = dict(niter=10, kappa=40, gamma=0.08, voxelspacing=(1.0, 2.0, 0.8), option=2)
    ours = anisotropic_diffusion(vol, **kw)
    ref = medpy_smoothing.anisotropic_diffusion(vol, **kw)
    np.testing.assert_allclose(ours, ref, rtol=0, atol=2e-4)


def test_integer_input_and_defaults(medpy_smoothing, camera):
    img = camera.astype(np.uint8)
    ours = anisotropic_diffusion(img)
    ref = medpy_smoothing.anisotropic_diffusion(img)
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours, ref, atol=2e-4)
    assert img.dtype == np.uint8  # input untouched


def test_zero_flux_conserves_the_mean(camera):
    out = anisotropic_diffusion(camera, niter=20, kappa=30, gamma=0.2)
    assert out.sum(dtype=np.float64) == pytest.approx(camera.sum(dtype=np.float64), rel=1e-6)


def test_hand_computed_single_step():
    # A 100 spike: every face has d = 100, c = exp(-(100/50)^2) = exp(-4); the spike loses
    # 0.1 * 4 * 100 exp(-4), each neighbour gains 0.1 * 100 exp(-4).
    img = np.zeros((5, 5), np.float32)
    img[2, 2] = 100
    out = anisotropic_diffusion(img, niter=1, kappa=50, gamma=0.1)
    assert out[2, 2] == pytest.approx(100 - 40 * math.exp(-4), abs=1e-4)
    assert out[1, 2] == pytest.approx(10 * math.exp(-4), abs=1e-5)
    assert out[1, 1] == 0


# ------------------------------------------------------------------ fixed point


def test_epsilon_fixed_point_reports_activity(camera):
    out, info = anisotropic_diffusion(
        camera, niter=300, kappa=20, gamma=0.2, epsilon=1.0, return_info=True
    )
    assert info.converged and info.iterations < 300
    assert info.active_fraction[0] == 1.0
    assert len(info.active_fraction) == info.iterations
    assert 0 < info.active_fraction[-1] < 0.5
    # Oracle: one more plain step changes no point by epsilon or more.
    upd = anisotropic_diffusion(out, niter=1, kappa=20, gamma=0.2) - out
    assert np.abs(upd).max() < 1.0 + 1e-4


def test_epsilon_zero_is_plain_diffusion(camera):
    a = anisotropic_diffusion(camera, niter=5, epsilon=0.0)
    b = anisotropic_diffusion(camera, niter=5)
    assert np.array_equal(a, b)


def test_freeze_never_reactivates(camera):
    out, info = anisotropic_diffusion(
        camera, niter=60, kappa=20, gamma=0.2, epsilon=0.5, freeze=True, return_info=True
    )
    frac = np.array(info.active_fraction)
    assert np.all(np.diff(frac) <= 0)  # the active set only shrinks
    _, info2 = anisotropic_diffusion(
        camera, niter=60, kappa=20, gamma=0.2, epsilon=0.5, return_info=True
    )
    assert sum(info.active_fraction) <= sum(info2.active_fraction)


# ------------------------------------------------------------------ ITK


def test_itk_hand_computed_step_edge():
    # Columns [0, 0, 4]: only axis-1 differences. Mean squared gradient (central
    # differences with replicated border, halved): (0 + 4 + 4) per row over 3 pixels = 8/3,
    # so K = -2 * 9 * 8/3 = -48. Column 1 gains dt * 4 exp(-16/48), column 2 loses it.
    img = np.array([[0, 0, 4], [0, 0, 4]], np.float32)
    out = gradient_anisotropic_diffusion(img, number_of_iterations=1)
    gain = 0.125 * 4 * math.exp(-1 / 3)
    np.testing.assert_allclose(out, [[0, gain, 4 - gain]] * 2, atol=1e-6)
    # Spacing 2 along columns halves every difference: K = -12, c = exp(-4/12) again,
    # and the flux 2 exp(-1/3).
    out = gradient_anisotropic_diffusion(img, number_of_iterations=1, spacing=(1.0, 2.0))
    gain = 0.125 * 2 * math.exp(-1 / 3)
    np.testing.assert_allclose(out, [[0, gain, 4 - gain]] * 2, atol=1e-6)


def test_itk_hand_computed_transverse_term():
    # [[0, 0], [0, 4]]: central differences (replicated border) are 2 where they meet the
    # 4, so the mean squared gradient is (0 + 4 + 4 + 8) / 4 = 4 and K = -72. The face
    # between (0, 1) and (1, 1) has difference 4 and a transverse term
    # 0.25 * (2 + 0)^2 = 1: conductance exp(-17/72). Pixel (1, 1) loses through two such
    # faces: 4 - 0.125 * 8 exp(-17/72); (0, 1) and (1, 0) gain half of that each.
    img = np.array([[0, 0], [0, 4]], np.float32)
    out = gradient_anisotropic_diffusion(img, number_of_iterations=1)
    c = math.exp(-17 / 72)
    np.testing.assert_allclose(out, [[0, 0.5 * c], [0.5 * c, 4 - c]], atol=1e-6)


def test_itk_constant_image_is_left_alone():
    img = np.full((6, 7), 3.5, np.float32)
    np.testing.assert_array_equal(gradient_anisotropic_diffusion(img), img)


@pytest.mark.parametrize(
    "shape,spacing,interval",
    [((40, 50), None, 1), ((40, 50), (1.0, 2.0), 2), ((8, 9, 10), (0.5, 1.0, 2.0), 1)],
)
def test_itk_matches_simpleitk(shape, spacing, interval):
    sitk = pytest.importorskip("SimpleITK")
    rng = np.random.default_rng(7)
    img = (rng.random(shape) * 255).astype(np.float32)
    k = len(shape)
    dt = (min(spacing) if spacing else 1.0) / 2 ** (k + 1)
    image = sitk.GetImageFromArray(img)
    if spacing:
        image.SetSpacing(tuple(reversed(spacing)))  # ITK orders axes x, y, z
    ref = sitk.GetArrayFromImage(
        sitk.GradientAnisotropicDiffusion(
            image,
            timeStep=dt,
            conductanceParameter=3.0,
            conductanceScalingUpdateInterval=interval,
            numberOfIterations=5,
        )
    )
    ours = gradient_anisotropic_diffusion(
        img,
        time_step=dt,
        conductance=3.0,
        conductance_scaling_update_interval=interval,
        number_of_iterations=5,
        spacing=spacing,
    )
    # ITK rounds a few intermediate values to float32; we agree to about one float32 ulp
    # of 0..255 data.
    np.testing.assert_allclose(ours, ref, rtol=0, atol=5e-5)


# ------------------------------------------------------------------ warnings and errors


@pytest.mark.parametrize(
    ("shape", "kw", "bound"),
    [
        ((8, 8), {}, 0.25),  # 1/(4 neighbours): Perona & Malik's 0 <= gamma <= 1/4
        ((4, 4, 4), {}, 1 / 6),  # 1/(6 neighbours)
        ((8, 8), {"option": 3}, 0.5),  # Tukey's conduction is at most 1/2
        ((8, 8), {"voxelspacing": (0.5, 1.0)}, 1 / 6),  # 1 / (2 * (1/0.5 + 1/1))
    ],
)
def test_gamma_past_the_stability_bound_is_refused(shape, kw, bound):
    """The bound is where the centre weight of the update, ``1 - gamma * sum of the
    neighbours' largest conductances``, reaches 0: at it the result is a weighted average
    of a point and its neighbours (it stays within the image's range); past it, refused."""
    from diffusion import mesh_diffusion

    rng = np.random.default_rng(1)
    image = (rng.random(shape) * 255).astype(np.float32)
    at = anisotropic_diffusion(image, niter=5, kappa=1e6, gamma=bound, **kw)
    assert image.min() - 1e-3 <= at.min() and at.max() <= image.max() + 1e-3
    past = np.nextafter(bound, 1.0)
    with pytest.raises(ValueError, match=r"gamma .* is past the explicit scheme's stability"):
        anisotropic_diffusion(image, niter=1, gamma=past, **kw)
    if len(shape) == 2:
        with pytest.raises(ValueError, match="stability bound"):
            mesh_diffusion(image, niter=1, gamma=past, mesh=(2, 2), backend="numpy", **kw)


def test_stability_warnings_of_itk(camera):
    with pytest.warns(DiffusionStabilityWarning, match="ITK"):
        gradient_anisotropic_diffusion(camera, time_step=0.2, number_of_iterations=1)
    with pytest.warns(DiffusionStabilityWarning):
        gradient_anisotropic_diffusion(
            camera, time_step=0.1, spacing=(0.5, 1.0), number_of_iterations=1
        )


def test_stability_warnings_point_at_the_caller():
    """The warning (``ITKParameters.warn_if_unstable``) names the file of the public
    function's caller, not a line of the package."""
    image = np.zeros((8, 8), np.float32)
    with pytest.warns(DiffusionStabilityWarning) as record:
        gradient_anisotropic_diffusion(image, time_step=0.2, number_of_iterations=1)
    assert [w.filename for w in record] == [__file__]


@pytest.mark.parametrize(
    "bad,match",
    [
        (np.array([[1.0, np.nan], [0, 0]]), "NaN"),
        (np.zeros((0, 5)), "empty"),
        (np.zeros(5), "2-D or 3-D"),
        (np.zeros((2, 2, 2, 2)), "2-D or 3-D"),
        (np.array([["a"]]), "real numbers"),
    ],
)
def test_bad_images(bad, match):
    with pytest.raises((ValueError, TypeError), match=match):
        anisotropic_diffusion(bad)
    with pytest.raises((ValueError, TypeError), match=match):
        gradient_anisotropic_diffusion(bad)


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(kappa=0), "kappa"),
        (dict(kappa=-5), "kappa"),
        (dict(gamma=0), "gamma"),
        (dict(option=4), "option"),
        (dict(niter=-1), "niter"),
        (dict(niter=1.5), "niter"),
        (dict(voxelspacing=(1.0,)), "voxelspacing"),
        (dict(voxelspacing=(1.0, 0.0)), "positive"),
        (dict(epsilon=-1), "epsilon"),
    ],
)
def test_bad_parameters(kw, match):
    with pytest.raises(ValueError, match=match):
        anisotropic_diffusion(np.zeros((4, 4), np.float32), **kw)


@pytest.mark.parametrize("machine", ["numpy", 512, object()])
def test_a_machine_that_is_not_one_is_refused(machine):
    """Not ignored (it was, on one process) and not an AttributeError deep inside."""
    image = np.zeros((4, 4), np.float32)
    match = f"machine must be a simd.Machine or None, got {type(machine).__name__}"
    with pytest.raises(TypeError, match=match):
        anisotropic_diffusion(image, machine=machine)
    with pytest.raises(TypeError, match=match):
        gradient_anisotropic_diffusion(image, machine=machine)
    from diffusion import mesh_diffusion

    with pytest.raises(TypeError, match=match):
        mesh_diffusion(image, niter=1, machine=machine)


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(conductance=0), "conductance"),
        (dict(time_step=-1), "time_step"),
        (dict(conductance_scaling_update_interval=0), "interval"),
        (dict(number_of_iterations=-2), "number_of_iterations"),
        (dict(spacing=(1, 2, 3)), "spacing"),
    ],
)
def test_bad_itk_parameters(kw, match):
    with pytest.raises(ValueError, match=match):
        gradient_anisotropic_diffusion(np.zeros((4, 4), np.float32), **kw)


@pytest.mark.gpu
def test_cupy_in_cupy_out(camera):
    cupy = pytest.importorskip("cupy")
    try:
        g = cupy.asarray(camera)
    except Exception as exc:  # no device
        pytest.skip(f"no GPU: {exc}")
    out = anisotropic_diffusion(g, niter=10, kappa=50, gamma=0.1)
    assert isinstance(out, cupy.ndarray) and out.dtype == np.float32
    ref = anisotropic_diffusion(camera, niter=10, kappa=50, gamma=0.1)
    np.testing.assert_allclose(cupy.asnumpy(out), ref, atol=2e-4)
    out = gradient_anisotropic_diffusion(g)
    assert isinstance(out, cupy.ndarray)
    np.testing.assert_allclose(cupy.asnumpy(out), gradient_anisotropic_diffusion(camera), atol=1e-4)
