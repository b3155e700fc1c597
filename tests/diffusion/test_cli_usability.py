"""``simd-emu diffuse`` as a user meets it: one run by default, the result
keeps the input's data, ``--pes`` for the PE grid, quiet output, plain help. The tests
read back the files the command writes."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from diffusion import anisotropic_diffusion
from diffusion.images import builtin_image, load_image, read_image, save_image
from simd.cli import build_parser, main

NITER = 4
PARAMS = dict(niter=NITER, kappa=20.0, gamma=0.2, epsilon=0.25)


def _diffuse(*argv):
    return main(["diffuse", *map(str, argv), "--backend", "numpy", "--no-progress"])


def _small(dtype=np.float32, scale=1.0):
    return (builtin_image("camera", size=(256, 256))[64:112, 80:136] * scale).astype(dtype)


def _expected(img):
    """The library's result (medpy's bit for bit) on the values the command reads."""
    return anisotropic_diffusion(np.asarray(img, dtype=np.float32), **PARAMS)


def _run(src, out, *extra):
    return _diffuse(src, "--pes", 4, 4, "--niter", NITER, "--every", 2, "-o", out, *extra)


def _ct_small():
    pydicom = pytest.importorskip("pydicom")
    path = pydicom.data.get_testdata_file("CT_small.dcm")
    if path is None:
        pytest.skip("pydicom's test files are not installed")
    return Path(path)


# ------------------------------------------------------------------ 1: one run by default


@pytest.fixture()
def calls(monkeypatch):
    """The images ``mesh_diffusion`` is called on (the warm-up's is 8 x 8)."""
    import diffusion.mesh

    seen = []
    real = diffusion.mesh.mesh_diffusion

    def spy(image, *args, **kwargs):
        seen.append((np.shape(image), kwargs.get("balance_every")))
        return real(image, *args, **kwargs)

    monkeypatch.setattr(diffusion.mesh, "mesh_diffusion", spy)
    return seen


def test_one_run_by_default_and_two_with_compare(tmp_path, calls, capsys):
    src = tmp_path / "in.npy"
    np.save(src, _small())
    assert _run(src, tmp_path / "o.npy") == 0
    assert [c for c in calls if c[0] != (8, 8)] == [((48, 56), 2)]
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("wrote ")
    assert "balancing every 2, busiest PE at" in out and "model" in out and "wall" in out
    calls.clear()
    assert _run(src, tmp_path / "o2.npy", "--compare") == 0
    assert [c for c in calls if c[0] != (8, 8)] == [((48, 56), 0), ((48, 56), 2)]
    out = capsys.readouterr().out
    assert re.search(r"with / without balancing every 2 \(both\): busiest PE's load \d", out)
    assert "model time" in out and "wall time" in out
    # --every 0: one run, without balancing.
    calls.clear()
    assert _run(src, tmp_path / "o3.npy", "--every", 0) == 0
    assert [c for c in calls if c[0] != (8, 8)] == [((48, 56), 0)]
    assert "no balancing" in capsys.readouterr().out
    # Whatever was run, the result is the library's.
    for name in ("o.npy", "o2.npy", "o3.npy"):
        assert np.array_equal(np.load(tmp_path / name), _expected(_small()))


def test_says_when_balancing_cannot_help(tmp_path, capsys):
    src = tmp_path / "in.npy"
    np.save(src, np.tile(_small(), (3, 3))[:128, :128])
    argv = ["--niter", 1, "-o", tmp_path / "o.npy", "--force"]  # one output, three runs
    assert _diffuse(src, "--pes", 64, 64, *argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("balancing can hardly help: each PE holds at most 2 x 2 points")
    assert "--pes 16 16" in lines[0]
    assert _diffuse(src, "--pes", 16, 16, *argv) == 0
    assert "hardly help" not in capsys.readouterr().out
    assert _diffuse(src, "--pes", 64, 64, "--every", 0, *argv) == 0  # no balancing asked
    assert "hardly help" not in capsys.readouterr().out


# ------------------------------------------------------------------ 2: the data are kept


@pytest.mark.parametrize(
    "dtype,scale,suffix",
    [
        (np.uint16, 200.0, ".tif"),
        (np.uint8, 1.0, ".tif"),
        (np.float32, 1 / 255, ".tif"),
        (np.int16, -3.0, ".npy"),
        (np.float64, 1.0, ".npy"),
    ],
)
def test_tif_and_npy_keep_type_and_values(tmp_path, capsys, dtype, scale, suffix):
    img = _small(dtype, scale)
    src = tmp_path / f"in{suffix}"
    assert save_image(src, img) == []
    assert read_image(src).dtype == dtype
    out = tmp_path / f"out{suffix}"
    assert _run(src, out) == 0
    back = np.load(out) if suffix == ".npy" else __import__("imageio.v3").v3.imread(out)
    assert back.dtype == dtype and back.shape == img.shape
    ref = _expected(img)
    if np.issubdtype(dtype, np.integer):
        assert np.array_equal(back, np.rint(ref).astype(dtype))
    else:
        assert np.array_equal(back, ref.astype(dtype))
    assert capsys.readouterr().out.count("\n") == 1  # nothing rescaled, nothing to say


def test_float_option_writes_the_float32_result(tmp_path):
    src = tmp_path / "in.tif"
    save_image(src, _small(np.uint16, 200.0))
    out = tmp_path / "out.npy"
    assert _run(src, out, "--float") == 0
    back = np.load(out)
    assert back.dtype == np.float32
    assert np.array_equal(back, _expected(_small(np.uint16, 200.0)))


def test_dicom_keeps_tags_and_hounsfield_units(tmp_path, capsys):
    import pydicom

    dcm = _ct_small()
    out = tmp_path / "ct.dcm"
    assert _run(dcm, out) == 0
    a, b = pydicom.dcmread(dcm), pydicom.dcmread(out)
    changed = [e.keyword for e in a if e.keyword != "PixelData" and b.get(e.tag) != e]
    assert changed == ["SOPInstanceUID"]  # the result is a new image of the same series
    assert b.file_meta.MediaStorageSOPInstanceUID == b.SOPInstanceUID
    assert b.pixel_array.dtype == a.pixel_array.dtype == np.int16
    hu = load_image(dcm)
    assert hu.min() < 0  # Hounsfield units, not the stored values
    assert np.array_equal(load_image(out), np.rint(_expected(hu)))
    assert capsys.readouterr().out.count("\n") == 1


def test_dicom_rescale_slope_and_intercept_are_respected(tmp_path):
    import pydicom

    ds = pydicom.dcmread(_ct_small())
    ds.RescaleSlope, ds.RescaleIntercept = 0.5, -2000  # stored values mean half as much
    src = tmp_path / "scaled.dcm"
    ds.save_as(src)
    hu = load_image(src)
    assert np.array_equal(hu, ds.pixel_array * 0.5 - 2000)
    out = tmp_path / "out.dcm"
    assert _run(src, out) == 0
    back = pydicom.dcmread(out)
    assert (back.RescaleSlope, back.RescaleIntercept) == (0.5, -2000)
    ref = _expected(hu)
    assert np.array_equal(back.pixel_array, np.rint((ref + 2000) / 0.5).astype(np.int16))
    assert np.abs(load_image(out) - ref).max() <= 0.25
    # To .npy, a rescaled DICOM gives the rescaled values as float32.
    assert _run(src, tmp_path / "hu.npy") == 0
    assert np.array_equal(np.load(tmp_path / "hu.npy"), ref)


def test_dicom_output_needs_a_dicom_input(tmp_path, capsys):
    src = tmp_path / "in.npy"
    np.save(src, _small())
    assert _run(src, tmp_path / "o.dcm") == 2
    captured = capsys.readouterr()
    assert "a DICOM result needs a DICOM input" in captured.err
    assert captured.out == "" and not (tmp_path / "o.dcm").exists()


def test_dicom_that_cannot_be_written_back_is_refused():
    import pydicom
    from pydicom.uid import ExplicitVRBigEndian

    from diffusion.images import SourceImage, check_dicom_output

    ds = pydicom.dcmread(_ct_small())
    check_dicom_output(SourceImage(np.zeros((2, 2), np.float32), np.dtype(np.int16), ds))
    ds.file_meta.TransferSyntaxUID = ExplicitVRBigEndian
    with pytest.raises(ValueError, match="cannot write DICOM back in Explicit VR Big Endian"):
        check_dicom_output(SourceImage(np.zeros((2, 2), np.float32), np.dtype(np.int16), ds))
    ds = pydicom.dcmread(_ct_small())
    ds.PhotometricInterpretation = "RGB"
    with pytest.raises(ValueError, match="cannot write RGB DICOM back"):
        check_dicom_output(SourceImage(np.zeros((2, 2), np.float32), np.dtype(np.int16), ds))


def test_png_of_8_bit_input_keeps_values(tmp_path, capsys):
    img = _small(np.uint8)
    src = tmp_path / "in.png"
    save_image(src, img)
    out = tmp_path / "out.png"
    assert _run(src, out) == 0
    assert "rescaled" not in capsys.readouterr().out
    assert np.array_equal(load_image(out), np.rint(_expected(img)))


def test_png_of_other_values_is_rescaled_and_says_so(tmp_path, capsys):
    src = tmp_path / "in.npy"
    np.save(src, _small(np.float32, 10.0))  # 0 to 2550
    out = tmp_path / "out.png"
    assert _run(src, out) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert re.fullmatch(rf"{re.escape(str(out))}: rescaled \S+ to \S+ into 0-255 .*", lines[0])
    back = load_image(out)
    assert back.min() == 0 and back.max() == 255
    ref = _expected(_small(np.float32, 10.0)).astype(np.float64)
    expect = np.rint((ref - ref.min()) / (ref.max() - ref.min()) * 255)
    assert np.array_equal(back, expect)


@pytest.mark.parametrize("value,dtype,grey", [(200, np.uint8, 200), (1000.0, np.float32, 128)])
def test_uniform_image_is_not_written_black(tmp_path, capsys, value, dtype, grey):
    src = tmp_path / "flat.npy"
    np.save(src, np.full((16, 16), value, dtype=dtype))
    out = tmp_path / "flat.png"
    assert _diffuse(src, "--pes", 2, 2, "--niter", 2, "-o", out) == 0
    assert np.all(load_image(out) == grey)
    text = capsys.readouterr().out
    assert ("uniform image" in text) == (dtype != np.uint8)


def test_colour_is_refused_or_diffused_as_grey(tmp_path, capsys):
    rgb = np.stack([_small(np.uint8), _small(np.uint8)[::-1], _small(np.uint8)[:, ::-1]], -1)
    src = tmp_path / "rgb.png"
    import imageio.v3 as iio

    iio.imwrite(src, rgb)
    out = tmp_path / "o.png"
    assert _run(src, out) == 2
    err = capsys.readouterr().err
    assert re.search(r"rgb.png is a colour image \(48 x 56, 3 channels\): pass --grey", err)
    assert not out.exists()
    assert _run(src, out, "--grey") == 0
    grey = load_image(src)  # ITU-R 709 luma
    assert np.array_equal(load_image(out), np.rint(_expected(grey)))
    assert read_image(out).data.ndim == 2


# ------------------------------------------------------------------ 3: --pes, not --mesh


def test_pes_names_the_grid_and_mesh_is_refused(tmp_path, capsys):
    src = tmp_path / "in.npy"
    np.save(src, _small())
    assert _diffuse(src, "--mesh", 4, 4, "-o", tmp_path / "o.npy") == 2
    err = capsys.readouterr().err
    assert "--mesh R C is renamed --pes R C" in err and "Traceback" not in err
    assert not (tmp_path / "o.npy").exists()
    assert _run(src, tmp_path / "o.npy", "-v") == 0
    assert "4 x 4 PEs" in capsys.readouterr().out


# ------------------------------------------------------------------ 4: messages


def _help(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["diffuse", "--help"])
    return capsys.readouterr().out


def test_help_is_plain(capsys):
    text = _help(capsys)
    for bad in ("(default: None)", "(default: False)", "``", "seed 0", "--mesh"):
        assert bad not in text
    assert "--pes R C" in text and "--compare" in text and "--verbose" in text
    assert "(default: 100)" in text  # real defaults are still shown


def test_existing_outputs_are_replaced_only_with_force(tmp_path, capsys):
    src = tmp_path / "in.npy"
    np.save(src, _small())
    out, plot = tmp_path / "o.npy", tmp_path / "load.png"
    assert _run(src, out, "--plot-load", plot) == 0
    assert "replacing" not in capsys.readouterr().out
    before = out.read_bytes()
    plot.unlink()  # the image alone is in the way
    assert _run(src, out, "--plot-load", plot) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and not plot.exists() and out.read_bytes() == before
    assert captured.err == (
        f"simd-emu diffuse: {out}: exists; add --force to replace it, or choose another name\n"
    )
    assert _run(src, out, "--plot-load", plot, "--force") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"replacing {out}"
    assert lines[1].startswith(f"wrote {out}, {plot}: 48 x 56, {NITER} iterations")


@pytest.mark.parametrize(
    "option,make,match",
    [
        ("-o", lambda p: p.mkdir(), "is a folder"),
        ("-o", lambda p: p.write_bytes(b"x"), "the existing file is read-only"),
        ("--activity-map", lambda p: p.mkdir(), "is a folder"),
        ("--plot-load", lambda p: None, "named for two outputs"),
    ],
)
def test_more_unwritable_outputs_are_refused_first(
    tmp_path, capsys, monkeypatch, option, make, match
):
    import os

    src = tmp_path / "in.npy"
    np.save(src, _small())
    target = tmp_path / ("o.npy" if option == "-o" else "a.png")
    make(target)
    if "read-only" in match:  # as chmod 444 would, also when the tests run as root
        real = os.access
        monkeypatch.setattr(os, "access", lambda p, mode: Path(p) != target and real(p, mode))
    argv = [src, "--pes", 4, 4, "--niter", 1]
    if option == "-o":
        argv += ["-o", target]
    else:
        argv += ["-o", tmp_path / "r.npy", option, target]
        if match == "named for two outputs":
            argv += ["--activity-map", target]
    assert _diffuse(*argv) == 2
    captured = capsys.readouterr()
    assert re.search(match, captured.err) and "Traceback" not in captured.err
    assert captured.out == "" and not (tmp_path / "r.npy").exists()


def test_replacing_is_said_before_the_run(tmp_path, capsys, monkeypatch):
    """The user learns that a file will be replaced while they can still stop the run."""
    import diffusion.mesh

    src, out = tmp_path / "in.npy", tmp_path / "o.npy"
    np.save(src, _small())
    out.write_bytes(b"old")
    said = []
    real = diffusion.mesh.mesh_diffusion

    def spy(image, *args, **kwargs):
        said.append(capsys.readouterr().out)
        return real(image, *args, **kwargs)

    monkeypatch.setattr(diffusion.mesh, "mesh_diffusion", spy)
    assert _run(src, out, "--force") == 0
    assert said[0] == f"replacing {out}\n"  # before the warm-up, the first call


@pytest.mark.parametrize("plot", ["--plot-load", "--activity-map"])
def test_a_late_failure_leaves_no_output_behind(tmp_path, capsys, monkeypatch, plot):
    """The outputs are written together: a failing plot leaves neither the image nor a
    half-written file, and an old result stays as it was."""
    import diffusion.cli

    def broken(path, *args, **kwargs):
        Path(path).write_bytes(b"half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(diffusion.cli, "_plot_load", broken)
    monkeypatch.setattr(diffusion.cli, "_plot_activity", broken)
    src, out, picture = tmp_path / "in.npy", tmp_path / "o.npy", tmp_path / "p.png"
    np.save(src, _small())
    out.write_bytes(b"old")
    with pytest.raises(OSError, match="No space"):
        _run(src, out, plot, picture, "--force")
    assert out.read_bytes() == b"old" and not picture.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.npy", "o.npy"]


@pytest.mark.parametrize(
    "argv,match",
    [
        (["IN", "--every", "-1"], "--every must be 0 (never balance) or more, got -1"),
        (["", "-o", "OUT"], "empty image file name"),
        (["IN", "-o", ""], "empty output file name; give a file name (smooth.png)"),
        (["IN", "-o", "OUT", "--plot-load", ""], "empty output file name; give a file name"),
        (["EMPTY.png", "-o", "OUT"], "cannot read EMPTY.png as an image: the file is empty"),
        (["IN", "--niter", "x"], "error: argument --niter: invalid int value: 'x' (see "),
        (["IN", "--pes", "0", "4"], "--pes must be two positive numbers of PEs, got 0 4"),
        (
            ["IN", "--pes", "8192", "4096"],
            "--pes 8192 4096 is 33,554,432 PEs; the machine's limit is 16,777,216 (2**24)",
        ),
        (["IN", "--niter", "-1"], "--niter must be 0 or more, got -1"),
        (["IN", "--buffer", "0"], "--buffer must be a positive number of points, got 0"),
        (["IN", "-o", "IN"], "in.npy: is this command's input; write the result to another file"),
        (["IN", "--spacing", "0", "1"], "--spacing must be two positive numbers (DY DX), got 0 1"),
        (["IN", "-o", "OUT.png", "--float"], "--float writes float32 values, which a .png cannot"),
        (["IN", "--pes", "64", "64"], "--pes 64 64 is more PEs than in.npy has pixels (48 x 56)"),
        (["IN", "--kappa", "0"], "--kappa must be a positive number, got 0"),
    ],
)
def test_bad_input_is_one_line_before_any_work(tmp_path, capsys, calls, argv, match):
    src, empty, out = tmp_path / "in.npy", tmp_path / "EMPTY.png", tmp_path / "o.npy"
    np.save(src, _small())
    empty.write_bytes(b"")
    names = {"IN": src, "OUT": out, "EMPTY.png": empty, "OUT.png": tmp_path / "o.png"}
    argv = [str(names.get(a, a)) for a in argv]
    try:
        status = _diffuse(*argv)
    except SystemExit as exc:  # a usage error
        status = exc.code
    assert status == 2
    captured = capsys.readouterr()
    err = captured.err.replace(str(tmp_path) + "/", "")
    assert match in err and err.count("\n") == 1 and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["EMPTY.png", "in.npy"]
    assert calls == [] and captured.out == ""  # not even the warm-up ran


def _damaged_tiffs(folder):
    """A good TIFF cut short, one whose header points at no page (as tifffile logs and
    then returns no values for), one whose directory is garbage."""
    tifffile = pytest.importorskip("tifffile")
    good = folder / "good.tif"
    tifffile.imwrite(good, np.arange(32 * 32, dtype=np.uint8).reshape(32, 32))
    data = good.read_bytes()
    (folder / "cut.tif").write_bytes(data[:200])
    (folder / "nopage.tif").write_bytes(b"II*\x00" + b"\xff" * 100)
    # a header and then no directory: Pillow warns of corrupt EXIF data before failing
    (folder / "nodirectory.tif").write_bytes(b"II*\x00\x08\x00\x00\x00garbagegarbage")
    return {
        "nodirectory.tif": "cannot read nodirectory.tif as an image: ",
        "cut.tif": "cannot read cut.tif as an image: failed to read",
        "nopage.tif": "cannot read nopage.tif as an image: it holds no image data (invalid "
        "offset to first page 4294967295)",
    }


def test_a_damaged_tiff_is_one_line_saying_why(tmp_path, capsys, calls, monkeypatch, recwarn):
    monkeypatch.chdir(tmp_path)
    for name, says in _damaged_tiffs(tmp_path).items():
        assert _diffuse(name, "-o", "o.png") == 2
        captured = capsys.readouterr()
        assert captured.err.startswith(f"simd-emu diffuse: {says}"), captured.err
        assert captured.err.count("\n") == 1 and captured.out == ""  # no reader's raw line
        assert not recwarn.list, [str(w.message) for w in recwarn]  # nor a reader's warning
    assert calls == [] and not (tmp_path / "o.png").exists()


def test_a_reader_message_of_several_lines_is_one(tmp_path, monkeypatch):
    import imageio.v3 as iio

    def reader(path, **kwargs):
        raise RuntimeError("Exception thrown in Reader:\nline 2:\n\nERROR: cannot read it")

    monkeypatch.setattr(iio, "imread", reader)
    path = tmp_path / "a.png"
    path.write_bytes(b"not a png")
    with pytest.raises(ValueError) as exc:
        read_image(path)
    assert str(exc.value) == (
        f"cannot read {path} as an image: Exception thrown in Reader: line 2: ERROR: cannot read it"
    )


# ------------------------------------------------------------------ 5: bit depths


def test_relative_thresholds_smooth_any_bit_depth_alike(tmp_path, capsys):
    """The same picture in 8 and 16 bits, with --relative: the same result, scaled (Perona
    and Malik's diffusion scales with the data when its thresholds do)."""
    eight = _small(np.float32).round().clip(0, 255)
    sixteen = eight * 257  # 0..255 -> 0..65535
    results = []
    for name, img in (("8.npy", eight), ("16.npy", sixteen)):
        np.save(tmp_path / name, img)
        out = tmp_path / f"out{name}"
        assert _run(tmp_path / name, out, "--relative", "--float") == 0
        results.append(np.load(out))
    np.testing.assert_allclose(results[1] / 257, results[0], rtol=1e-4, atol=1e-3)
    # on an image spanning 0..255, --relative changes nothing
    span = np.arange(256, dtype=np.float32).reshape(16, 16)
    np.save(tmp_path / "span.npy", span)
    for name, extra in (("a.npy", ["--relative"]), ("b.npy", [])):
        assert _run(tmp_path / "span.npy", tmp_path / name, "--float", *extra) == 0
    assert np.array_equal(np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy"))
    assert "note" not in capsys.readouterr().err


def test_a_result_that_barely_differs_says_why(tmp_path, capsys):
    img = (_small(np.float32) * 257).round().astype(np.uint16)  # 16-bit values
    np.save(tmp_path / "in.npy", img)
    assert _run(tmp_path / "in.npy", tmp_path / "o.npy", "--kappa", 20) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("simd-emu diffuse: note: the result differs")
    assert "--kappa 20 and --epsilon 0.25 are in the image's units; try --relative" in err[0]


@pytest.mark.parametrize(
    ("extra", "note"),
    [
        (["--relative", "--kappa", "0.001"], "try a larger --kappa or a smaller --epsilon"),
        (["--relative", "--niter", "0"], None),  # the input as it is, as asked
        (["--niter", "0"], None),
    ],
)
def test_the_note_suggests_only_what_can_help(tmp_path, capsys, extra, note):
    img = (_small(np.float32) * 257).round().astype(np.uint16)
    np.save(tmp_path / "in.npy", img)
    assert _run(tmp_path / "in.npy", tmp_path / "o.npy", *extra) == 0
    err = capsys.readouterr().err
    if note is None:
        assert err == ""
    else:
        assert err.startswith("simd-emu diffuse: note: the result differs") and note in err
        assert "try --relative" not in err
