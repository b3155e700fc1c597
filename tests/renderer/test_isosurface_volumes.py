"""renderer.read_volume: files written by each format's own library read back with their
values, axis order, spacing, origin and direction; broken files, unknown suffixes and
missing readers refused in one line."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import renderer
from simd import Machine
from simd.errors import MissingPackageError

SPACING = (0.5, 0.75, 2.0)
ORIGIN = (-10.0, 4.0, 1.5)


@pytest.fixture
def grid():
    """A (x, y, z) volume whose values name their indices: 100 x + 10 y + z."""
    x, y, z = np.meshgrid(np.arange(4), np.arange(5), np.arange(6), indexing="ij")
    return (100 * x + 10 * y + z).astype(np.int16)


def assert_volume(vol, array, spacing=SPACING, origin=ORIGIN, direction=None):
    assert vol.array.shape == array.shape
    np.testing.assert_array_equal(vol.array, array)
    np.testing.assert_allclose(vol.spacing, spacing, rtol=1e-6)
    np.testing.assert_allclose(vol.origin, origin, rtol=1e-6, atol=1e-9)
    want = np.eye(3) if direction is None else direction
    np.testing.assert_allclose(vol.direction, want, atol=1e-6)


def test_npy(tmp_path, grid):
    path = tmp_path / "grid.npy"
    np.save(path, grid)
    vol = renderer.read_volume(path)
    assert_volume(vol, grid, (1, 1, 1), (0, 0, 0))
    assert vol.name == "grid.npy"


def test_a_tiffs_print_resolution_is_no_spacing(tmp_path, grid):
    tifffile = pytest.importorskip("tifffile")
    path = tmp_path / "dpi.tif"
    tifffile.imwrite(path, grid.transpose(2, 1, 0), photometric="minisblack", resolution=(72, 72),
                     resolutionunit="INCH")  # fmt: skip
    assert renderer.read_volume(path).spacing == (1.0, 1.0, 1.0)


def test_tiff_stack(tmp_path, grid):
    tifffile = pytest.importorskip("tifffile")
    path = tmp_path / "grid.tif"
    # pages are z, rows y, columns x; ImageJ's resolution (pixels per unit) and z spacing
    tifffile.imwrite(path, grid.transpose(2, 1, 0), imagej=True,
                     resolution=(1 / SPACING[0], 1 / SPACING[1]),
                     metadata={"spacing": SPACING[2], "unit": "um"})  # fmt: skip
    assert_volume(renderer.read_volume(path), grid, SPACING, (0, 0, 0))


def test_nifti_with_a_turned_affine(tmp_path, grid):
    nibabel = pytest.importorskip("nibabel")
    turn = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    affine = np.eye(4)
    affine[:3, :3] = turn * SPACING
    affine[:3, 3] = ORIGIN
    for name in ("grid.nii", "grid.nii.gz"):
        path = tmp_path / name
        nibabel.save(nibabel.Nifti1Image(grid, affine), path)
        assert_volume(renderer.read_volume(path), grid, direction=turn)


def test_nrrd(tmp_path, grid):
    nrrd = pytest.importorskip("nrrd")
    path = tmp_path / "grid.nrrd"
    header = {"space": "left-posterior-superior", "space directions": np.diag(SPACING),
              "space origin": np.array(ORIGIN)}  # fmt: skip
    nrrd.write(str(path), grid, header)  # index order "F": the array is [x, y, z]
    assert_volume(renderer.read_volume(path), grid)
    plain = tmp_path / "plain.nrrd"
    nrrd.write(str(plain), grid, {"spacings": list(SPACING)})
    assert_volume(renderer.read_volume(plain), grid, SPACING, (0, 0, 0))


@pytest.mark.parametrize("mode", ["ascii", "binary", "appended", "compressed"])
def test_vti(tmp_path, grid, mode):
    pytest.importorskip("vtkmodules.vtkIOXML")
    from vtkmodules.util.numpy_support import numpy_to_vtk
    from vtkmodules.vtkCommonDataModel import vtkImageData
    from vtkmodules.vtkIOXML import vtkXMLImageDataWriter

    image = vtkImageData()
    image.SetExtent(2, 5, 0, 4, 0, 5)  # the extent starts at x = 2: the origin moves
    image.SetSpacing(*SPACING)
    image.SetOrigin(*ORIGIN)
    image.GetPointData().SetScalars(numpy_to_vtk(np.ravel(grid, order="F"), deep=True))
    path = tmp_path / "grid.vti"
    writer = vtkXMLImageDataWriter()
    writer.SetFileName(str(path))
    writer.SetInputData(image)
    modes = {"ascii": writer.SetDataModeToAscii, "appended": writer.SetDataModeToAppended}
    modes.get(mode, writer.SetDataModeToBinary)()
    if mode == "compressed":
        writer.SetCompressorTypeToZLib()
    else:
        writer.SetCompressorTypeToNone()
    assert writer.Write() == 1
    origin = (ORIGIN[0] + 2 * SPACING[0], ORIGIN[1], ORIGIN[2])
    assert_volume(renderer.read_volume(path), grid, SPACING, origin)


def write_dicom_series(folder, grid, slope=2.0, intercept=-1024.0):
    pydicom = pytest.importorskip("pydicom")
    from pydicom.dataset import Dataset, FileMetaDataset
    from pydicom.uid import CTImageStorage, ExplicitVRLittleEndian, generate_uid

    folder.mkdir()
    series = generate_uid()
    for k in reversed(range(grid.shape[2])):  # written out of order: the reader sorts
        meta = FileMetaDataset()
        meta.MediaStorageSOPClassUID = CTImageStorage
        meta.MediaStorageSOPInstanceUID = generate_uid()
        meta.TransferSyntaxUID = ExplicitVRLittleEndian
        ds = Dataset()
        ds.file_meta = meta
        ds.SOPClassUID, ds.SOPInstanceUID = CTImageStorage, meta.MediaStorageSOPInstanceUID
        ds.SeriesInstanceUID, ds.Modality = series, "CT"
        ds.Rows, ds.Columns = grid.shape[1], grid.shape[0]
        ds.PixelSpacing = [SPACING[1], SPACING[0]]  # between rows (y), between columns (x)
        ds.ImageOrientationPatient = [1, 0, 0, 0, 1, 0]
        ds.ImagePositionPatient = [ORIGIN[0], ORIGIN[1], ORIGIN[2] + k * SPACING[2]]
        ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, "MONOCHROME2"
        ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 16, 15, 1
        ds.RescaleSlope, ds.RescaleIntercept = slope, intercept
        ds.PixelData = np.ascontiguousarray(grid[:, :, k].T).astype("<i2").tobytes()
        pydicom.dcmwrite(folder / f"slice{k:03d}.dcm", ds, enforce_file_format=True)
    (folder / "README.txt").write_text("not a DICOM file: skipped")


def test_dicom_series(tmp_path, grid):
    write_dicom_series(tmp_path / "series", grid)
    vol = renderer.read_volume(tmp_path / "series")
    assert_volume(vol, grid * 2.0 - 1024.0)


def test_volume_isosurface_in_the_files_space(tmp_path):
    nibabel = pytest.importorskip("nibabel")
    t = np.linspace(-1, 1, 12)
    x, y, z = np.meshgrid(t, t, t, indexing="ij")
    ball = (0.5 - (x * x + y * y + z * z)).astype(np.float32)
    affine = np.diag([*SPACING, 1.0])
    affine[:3, 3] = ORIGIN
    nibabel.save(nibabel.Nifti1Image(ball, affine), tmp_path / "ball.nii")
    vol = renderer.read_volume(tmp_path / "ball.nii")
    m = Machine(pes=8, backend="numpy")
    mesh = vol.isosurface(0.0, machine=m)
    want = renderer.isosurface(ball, 0.0, spacing=SPACING, origin=ORIGIN, machine=m)
    np.testing.assert_array_equal(mesh.vertices, want.vertices)
    assert mesh.name == "ball.nii"


@pytest.mark.parametrize(
    ("name", "package"),
    [
        ("bad.nii", "nibabel"),
        ("bad.nii.gz", "nibabel"),
        ("bad.nrrd", "nrrd"),
        ("bad.tif", "tifffile"),
        ("bad.npy", None),
        ("bad.vti", "vtkmodules"),
    ],
)
def test_broken_files_refused_in_one_line(tmp_path, name, package):
    if package:
        pytest.importorskip(package)
    path = tmp_path / name
    path.write_bytes(b"\x00garbage\x01" * 20)
    with pytest.raises(ValueError, match=f"^{path}: ") as err:
        renderer.read_volume(path)
    assert "\n" not in str(err.value)


def test_a_vti_without_point_data(tmp_path):
    pytest.importorskip("vtkmodules.vtkIOXML")
    path = tmp_path / "empty.vti"
    path.write_text('<?xml version="1.0"?>\n<VTKFile type="ImageData" version="1.0">'
                    '<ImageData WholeExtent="0 1 0 1 0 1"></ImageData></VTKFile>')  # fmt: skip
    with pytest.raises(ValueError, match="no point data"):
        renderer.read_volume(path)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: np.save(p / "flat.npy", np.zeros((3, 4))), "holds a 2-D array"),
        (lambda p: (p / "x.xyz").write_text(""), "unknown volume format '.xyz'"),
    ],
)
def test_refusals(tmp_path, make, message):
    make(tmp_path)
    path = next(tmp_path.iterdir())
    with pytest.raises(ValueError, match=message):
        renderer.read_volume(path)


def test_a_folder_without_dicom_slices(tmp_path):
    pytest.importorskip("pydicom")
    (tmp_path / "notes.txt").write_text("not a slice")
    with pytest.raises(ValueError, match="needs 2 or more slices with a position; found 0"):
        renderer.read_volume(tmp_path)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="file not found"):
        renderer.read_volume(tmp_path / "none.nii")


def test_unevenly_spaced_dicom_refused(tmp_path, grid):
    write_dicom_series(tmp_path / "series", grid)
    (tmp_path / "series" / "slice002.dcm").unlink()
    with pytest.raises(ValueError, match="not evenly spaced"):
        renderer.read_volume(tmp_path / "series")


@pytest.mark.parametrize(
    ("name", "module"),
    [("a.nii", "nibabel"), ("a.nrrd", "nrrd"), ("a.tif", "tifffile"), ("a.vti", "vtkmodules")],
)
def test_missing_reader_names_the_extra(tmp_path, monkeypatch, name, module):
    path = tmp_path / name
    path.write_bytes(b"x")
    monkeypatch.setitem(sys.modules, module, None)  # its import fails as if not installed
    with pytest.raises(MissingPackageError, match=r"pip install 'simd-emu\[volumes\]'$"):
        renderer.read_volume(path)
