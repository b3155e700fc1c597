"""The oracles of the isosurface tests: VTK's ``vtkMarchingCubes`` and scikit-image's
marching cubes, and comparisons of meshes as sets of triangles.

VTK takes the volume in Fortran order (its x fastest) with the volume's axis 0 as x, so
its points and ours are in the same coordinates. VTK merges coincident points and stores
them as float32; a mesh is compared with it by the positions of its triangles' corners
rounded to float32 (:func:`triangle_set`), each triangle rotated to start at its smallest
corner (the winding kept).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "match_vertices",
    "triangle_set",
    "vtk_case_table",
    "vtk_marching_cubes",
]


def vtk_marching_cubes(
    volume: np.ndarray, level: float, spacing=(1.0, 1.0, 1.0), origin=(0.0, 0.0, 0.0)
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``vtkMarchingCubes`` of ``volume``: points (float32), triangles, normals."""
    from vtkmodules.util.numpy_support import numpy_to_vtk, vtk_to_numpy
    from vtkmodules.vtkCommonDataModel import vtkImageData
    from vtkmodules.vtkFiltersCore import vtkMarchingCubes

    image = vtkImageData()
    image.SetDimensions(*volume.shape)
    image.SetSpacing(*spacing)
    image.SetOrigin(*origin)
    image.GetPointData().SetScalars(numpy_to_vtk(np.ravel(volume, order="F"), deep=True))
    mc = vtkMarchingCubes()
    mc.SetInputData(image)
    mc.SetValue(0, float(level))
    mc.ComputeNormalsOn()
    mc.Update()
    out = mc.GetOutput()
    if out.GetNumberOfPoints() == 0:
        return np.zeros((0, 3), np.float32), np.zeros((0, 3), np.int64), np.zeros((0, 3))
    points = vtk_to_numpy(out.GetPoints().GetData())
    faces = vtk_to_numpy(out.GetPolys().GetConnectivityArray()).reshape(-1, 3)
    normals = vtk_to_numpy(out.GetPointData().GetNormals())
    return points, faces.astype(np.int64), normals


def vtk_case_table() -> list[tuple[int, ...]]:
    """The case table read off ``vtkMarchingCubes``: for each of the 256 cases a 2x2x2
    volume with the case's corners at 1 and the others at 0, contoured at 0.5; each
    output point is the middle of one cell edge, which names it."""
    from renderer.contour.tables import CORNERS, EDGES

    middle = {tuple(np.add(CORNERS[a], CORNERS[b])): e for e, (a, b) in enumerate(EDGES)}
    table = []
    for case in range(256):
        volume = np.zeros((2, 2, 2))
        for c, corner in enumerate(CORNERS):
            volume[corner] = (case >> c) & 1
        points, faces, _ = vtk_marching_cubes(volume, 0.5)
        twice = np.rint(2 * points).astype(int)
        table.append(tuple(middle[tuple(twice[p])] for tri in faces for p in tri))
    return table


def triangle_set(vertices: np.ndarray, faces: np.ndarray) -> set:
    """The triangles as a set of float32 corner triples, each rotated to start at its
    smallest corner (winding kept)."""
    corners = np.asarray(vertices, dtype=np.float32)[faces]
    out = set()
    for tri in corners.tolist():
        keys = [tuple(p) for p in tri]
        first = min(range(3), key=keys.__getitem__)
        out.add(tuple(keys[first:] + keys[:first]))
    return out


def match_vertices(ours: np.ndarray, theirs: np.ndarray, tol: float) -> np.ndarray:
    """For each of ``ours``, the index of the nearest of ``theirs``; asserts it lies
    within ``tol``."""
    from scipy.spatial import cKDTree

    distance, index = cKDTree(theirs).query(ours)
    assert distance.max(initial=0.0) <= tol, f"a vertex is {distance.max():.3g} from VTK's"
    return index
