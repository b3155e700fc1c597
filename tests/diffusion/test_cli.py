"""``simd-emu diffuse``: files in, files out, the numbers printed."""

from __future__ import annotations

import numpy as np
import pytest

from diffusion import anisotropic_diffusion
from diffusion.images import builtin_image, load_image, save_image
from simd.cli import main


@pytest.fixture()
def small_npy(tmp_path):
    img = builtin_image("camera", size=(256, 256))[64:112, 80:136]  # 48 x 56
    path = tmp_path / "img.npy"
    np.save(path, img)
    return path, img


def test_diffuse_npy_writes_result_and_plots(tmp_path, small_npy, capsys):
    path, img = small_npy
    out = tmp_path / "out.npy"
    load_png = tmp_path / "load.png"
    act_png = tmp_path / "activity.png"
    status = main(
        [
            "diffuse",
            str(path),
            "--niter",
            "12",
            "--mesh",
            "4",
            "4",
            "--every",
            "2",
            "--epsilon",
            "0.5",
            "-o",
            str(out),
            "--backend",
            "numpy",
            "--no-progress",
            "--plot-load",
            str(load_png),
            "--activity-map",
            str(act_png),
        ]
    )
    assert status == 0
    text = capsys.readouterr().out
    for needle in (
        "iterations: 12",
        "avg max load per PE without balancing",
        "avg max load per PE with balancing every 2",
        "ratio (with / without)",
        "model",
        "wall",
    ):
        assert needle in text
    ref = anisotropic_diffusion(img, niter=12, kappa=20, gamma=0.2, epsilon=0.5)
    assert np.array_equal(np.load(out), ref)
    assert load_png.stat().st_size > 1000 and act_png.stat().st_size > 1000


def test_diffuse_dicom_and_png(tmp_path, capsys):
    pydicom = pytest.importorskip("pydicom")
    from pathlib import Path

    dcm = Path(pydicom.__file__).parent / "data" / "test_files" / "CT_small.dcm"
    if not dcm.exists():
        pytest.skip("pydicom's test files are not installed")
    out = tmp_path / "ct.png"
    assert (
        main(
            [
                "diffuse",
                str(dcm),
                "--niter",
                "3",
                "--mesh",
                "8",
                "8",
                "--every",
                "1",
                "--axes",
                "rows",
                "-o",
                str(out),
                "--backend",
                "numpy",
                "--no-progress",
            ]
        )
        == 0
    )
    back = load_image(out)
    assert back.shape == (128, 128)
    png = tmp_path / "in.png"
    save_image(png, builtin_image("camera", size=(256, 256))[:40, :40])
    assert (
        main(
            [
                "diffuse",
                str(png),
                "--niter",
                "2",
                "--mesh",
                "4",
                "4",
                "-o",
                str(tmp_path / "o.tif"),
                "--backend",
                "numpy",
                "--no-progress",
            ]
        )
        == 0
    )
    assert load_image(tmp_path / "o.tif").shape == (40, 40)


def test_diffuse_errors(tmp_path, small_npy, capsys):
    path, _ = small_npy
    assert main(["diffuse", str(tmp_path / "missing.png"), "--backend", "numpy"]) == 2
    assert "no such image" in capsys.readouterr().err
    assert (
        main(
            [
                "diffuse",
                str(path),
                "--mesh",
                "64",
                "64",
                "--backend",
                "numpy",
                "--no-progress",
                "-o",
                str(tmp_path / "x.npy"),
            ]
        )
        == 2
    )
    assert "larger than the image" in capsys.readouterr().err
    bad = tmp_path / "nan.npy"
    np.save(bad, np.full((8, 8), np.nan))
    assert (
        main(
            [
                "diffuse",
                str(bad),
                "--mesh",
                "2",
                "2",
                "--backend",
                "numpy",
                "--no-progress",
                "-o",
                str(tmp_path / "y.npy"),
            ]
        )
        == 2
    )
    assert "NaN" in capsys.readouterr().err


def test_builtin_images_ship_with_packages():
    assert builtin_image("camera").shape == (512, 512)
    assert builtin_image("camera", size=(256, 256)).shape == (256, 256)
    assert builtin_image("coffee", size=(400, 448)).shape == (400, 448)
    with pytest.raises(ValueError, match="unknown built-in"):
        builtin_image("nope")
