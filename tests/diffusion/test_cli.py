"""``simd-emu diffuse``: files in, files out, the numbers printed."""

from __future__ import annotations

import re

import numpy as np
import pytest

from diffusion import anisotropic_diffusion
from diffusion.images import builtin_image, load_image, save_image
from simd.cli import main
from simd.outputs import OutputError


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
            "--pes",
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
            "--verbose",
            "--compare",
        ]
    )
    assert status == 0
    text = capsys.readouterr().out
    for needle in (
        "iterations: 12",
        "busiest PE's load, mean over the iterations, without balancing",
        "busiest PE's load, mean over the iterations, with balancing every 2",
        "with / without balancing every 2 (both): busiest PE's load",
        "without balancing: model",
        "   with balancing: model",
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
                "--pes",
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
                "--pes",
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
                "--pes",
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
    assert "is more PEs than" in capsys.readouterr().err
    bad = tmp_path / "nan.npy"
    np.save(bad, np.full((8, 8), np.nan))
    assert (
        main(
            [
                "diffuse",
                str(bad),
                "--pes",
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


# ------------------------------------------------------------------ review fixes


def _diffuse(*argv):
    return main(["diffuse", *map(str, argv), "--backend", "numpy", "--no-progress"])


def _pydicom_file(name):
    pydicom = pytest.importorskip("pydicom")
    from pathlib import Path

    path = Path(pydicom.__file__).parent / "data" / "test_files" / name
    if not path.exists():
        pytest.skip(f"pydicom's test file {name} is not installed")
    return path


def test_zero_iterations_prints_no_ratio(tmp_path, small_npy, capsys):
    path, img = small_npy
    out = tmp_path / "o.npy"
    assert _diffuse(path, "--niter", "0", "--pes", "4", "4", "-o", out, "--compare") == 0
    assert "load n/a, model time n/a" in capsys.readouterr().out
    assert np.array_equal(np.load(out), img)


@pytest.mark.parametrize(
    "option,value,match",
    [
        ("-o", "{tmp}/missing/o.png", "folder .* does not exist"),
        ("-o", "{tmp}/o.xyz", "unknown format"),
        ("--plot-load", "{tmp}/missing/l.png", "does not exist"),
        ("--activity-map", "{tmp}/a.nope", "unknown picture type"),
    ],
)
def test_unwritable_outputs_are_refused_before_the_run(
    tmp_path, small_npy, capsys, option, value, match
):
    path, _ = small_npy
    argv = [path, "--pes", "4", "4", "--niter", "1", "-o", tmp_path / "o.npy"]
    assert _diffuse(*argv, option, value.format(tmp=tmp_path)) == 2
    captured = capsys.readouterr()
    assert re.search(match, captured.err)
    assert "Traceback" not in captured.err
    assert "image   :" not in captured.out  # refused before anything ran


def test_unreadable_inputs_give_one_line_errors(tmp_path, capsys):
    bad_png = tmp_path / "bad.png"
    bad_png.write_bytes(b"not a png")
    empty = tmp_path / "empty.npy"
    empty.write_bytes(b"")
    volume = tmp_path / "vol.npy"
    np.save(volume, np.zeros((3, 8, 8), np.float32))
    for path, match in (
        (bad_png, "cannot read .*bad.png"),
        (empty, "cannot read .*empty.npy"),
        (tmp_path, "is a folder"),
        (volume, r"need a 2-D image .* \(3, 8, 8\)"),
    ):
        assert _diffuse(path, "--pes", "2", "2", "-o", tmp_path / "o.npy") == 2
        err = capsys.readouterr().err
        assert re.search(match, err), err
        assert "Traceback" not in err


def test_unavailable_backend_is_a_clear_error(tmp_path, small_npy, capsys):
    from simd.backend import cupy_status

    if cupy_status()[0]:
        pytest.skip("CuPy works here")
    path, _ = small_npy
    argv = ["diffuse", str(path), "--pes", "4", "4", "--no-progress", "--backend", "cupy"]
    assert main([*argv, "-o", str(tmp_path / "o.npy")]) == 2
    err = capsys.readouterr().err
    assert "backend 'cupy'" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("extra", "bound"),
    [([], "0.25"), (["--option", "3"], "0.5"), (["--spacing", "1", "0.5"], "0.1667")],
)
@pytest.mark.parametrize("method", ["mesh", "dense"])
def test_gamma_past_the_stability_bound_is_refused_before_any_work(
    tmp_path, small_npy, capsys, monkeypatch, extra, bound, method
):
    import diffusion.images

    path, _ = small_npy
    read = []
    monkeypatch.setattr(diffusion.images, "read_image", lambda *a: read.append(a))
    out = tmp_path / "o.npy"
    argv = [path, "--gamma", "10", "--method", method, *extra, "-o", out]
    assert _diffuse(*argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and not read and not out.exists()
    assert captured.err == (
        f"simd-emu diffuse: gamma 10 is past the explicit scheme's stability bound {bound} for "
        "this image (1/(number of neighbours) at unit spacing: 1/4 in 2-D, 1/6 in 3-D; twice "
        "that with option 3, less with a finer spacing): past it the result turns to noise\n"
    )


def test_the_stability_bound_is_in_the_help(capsys):
    with pytest.raises(SystemExit):
        main(["diffuse", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "at most the explicit scheme's stability bound: 1/(number of neighbours), 0.25" in text


def test_progress_bars_name_their_run(tmp_path, small_npy, capsys, monkeypatch):
    import sys

    path, _ = small_npy
    argv = ["diffuse", str(path), "--pes", "4", "4", "--niter", "2", "--every", "1"]
    out = str(tmp_path / "o.npy")
    # Not a terminal: no bar.
    assert main([*argv, "--backend", "numpy", "-o", out, "--compare"]) == 0
    assert "2/2" not in capsys.readouterr().err
    # On a terminal: one bar per run, named.
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert main([*argv, "--backend", "numpy", "-o", out, "--compare", "-v", "--force"]) == 0
    err = capsys.readouterr().err
    assert "no balancing" in err and "balancing every 1" in err
    assert "2/2" in err


def test_dicom_variants_load_as_2d_grey():
    # Multi-frame colour: the first frame, in grey.
    assert load_image(_pydicom_file("SC_rgb_rle_2frame.dcm")).shape == (100, 100)
    # Palette colour goes through its LUT (not the raw indices).
    palette = load_image(_pydicom_file("examples_palette.dcm"))
    assert palette.ndim == 2 and palette.max() > 255
    # CT values are Hounsfield units (rescale slope and intercept applied).
    assert load_image(_pydicom_file("CT_small.dcm")).min() < 0
    with pytest.raises(ValueError, match="no pixel data"):
        load_image(_pydicom_file("rtplan.dcm"))


def test_save_image_refuses_unknown_types(tmp_path):
    with pytest.raises(OutputError, match="unknown format"):
        save_image(tmp_path / "x.xyz", np.zeros((2, 2)))
