"""The oracle of the built-in data sets: each made as before they were made by the machine's
marching cubes, by scikit-image's (Lewiner) on the same blocks of the same samples.

Lewiner's method resolves the ambiguous cells by their topology (Lewiner, Lopes, Vieira &
Tavares, 2003), sometimes with a vertex inside the cell, where VTK's case table (ours)
does not; elsewhere both cut the same grid edges, so the two meshes have the same vertices
on the grid's edges and their triangle counts differ only in ambiguous cells.
"""

from __future__ import annotations

import numpy as np

from renderer.contour.tables import CORNERS
from renderer.datasets import builtin as datasets
from renderer.datasets import oilwell

__all__ = ["ambiguous_cells", "skimage_dataset"]


def _marching_cubes(volume: np.ndarray, spacing, origin) -> tuple[np.ndarray, np.ndarray]:
    """scikit-image's Lewiner marching cubes: (vertices, faces) in the block's space."""
    from skimage.measure import marching_cubes

    steps = tuple(float(x) for x in spacing) if np.ndim(spacing) else (float(spacing),) * 3
    verts, faces, _, _ = marching_cubes(
        volume, level=datasets.LEVEL, spacing=steps, allow_degenerate=False, method="lewiner"
    )
    return verts.astype(np.float64) + np.asarray(origin, dtype=np.float64), faces


def skimage_dataset(kind: str, n: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The data set ``kind`` at resolution ``n`` by scikit-image: (vertices in the data
    set's space, faces, ambiguous cells of its blocks)."""
    whole = (oilwell.oilwell_field if kind in datasets.OILWELL else datasets.marschner_lobb)(n)
    vertices, faces, ambiguous, start = [], [], 0, 0
    for xs, ys, zs, spacing, origin in datasets._parts(kind, n):
        block = whole[np.ix_(xs, ys, zs)]
        if not block.min() < datasets.LEVEL <= block.max():
            continue
        v, f = _marching_cubes(block, spacing, origin)
        vertices.append(v)
        faces.append(f + start)
        start += len(v)
        ambiguous += ambiguous_cells(block, datasets.LEVEL)
    return datasets._z_up(np.concatenate(vertices)), np.concatenate(faces), ambiguous


def ambiguous_cells(volume: np.ndarray, level: float) -> int:
    """The cells whose corners leave a face or the cell ambiguous: a face with its two
    inside corners on one diagonal and its two outside corners on the other, or the cell
    with inside corners only at opposite ends of a main diagonal."""
    inside = volume >= level
    n0, n1, n2 = volume.shape
    corner = [inside[i : i + n0 - 1, j : j + n1 - 1, k : k + n2 - 1] for i, j, k in CORNERS]
    found = np.zeros((n0 - 1, n1 - 1, n2 - 1), dtype=bool)
    faces = [(0, 1, 2, 3), (4, 5, 6, 7), (0, 1, 5, 4), (3, 2, 6, 7), (0, 3, 7, 4), (1, 2, 6, 5)]
    for a, b, c, d in faces:  # corners in order around the face
        found |= (corner[a] == corner[c]) & (corner[b] == corner[d]) & (corner[a] != corner[b])
    for a, b in ((0, 6), (1, 7), (2, 4), (3, 5)):  # main diagonals
        others = [corner[c] for c in range(8) if c not in (a, b)]
        alone = corner[a] & corner[b] & ~np.any(others, axis=0)
        found |= alone | (~corner[a] & ~corner[b] & np.all(others, axis=0))
    return int(found.sum())
