"""Meshes and matrices shared by the renderer tests."""

from __future__ import annotations

import numpy as np


def window_mvp(width: int, height: int) -> np.ndarray:
    """An mvp that maps model (x, y) straight to window coordinates (orthographic, z kept
    in [-1, 1]), for placing vertices on exact pixel positions."""
    return np.array(
        [
            [2.0 / width, 0, 0, -1.0],
            [0, 2.0 / height, 0, -1.0],
            [0, 0, 1.0, 0],
            [0, 0, 0, 1.0],
        ]
    )


def grid_mesh(
    nx: int,
    ny: int,
    x0: float,
    y0: float,
    x1: float,
    y1: float,
    *,
    z: float = 0.0,
    jitter: float = 0.0,
    seed: int = 0,
    flip_random: bool = True,
):
    """A finely triangulated rectangle: (nx+1) x (ny+1) vertices, 2 nx ny triangles with
    randomly chosen diagonals; interior vertices jittered by up to ``jitter`` cells."""
    rng = np.random.default_rng(seed)
    xs = np.linspace(x0, x1, nx + 1)
    ys = np.linspace(y0, y1, ny + 1)
    gx, gy = np.meshgrid(xs, ys, indexing="xy")
    if jitter:
        dx, dy = (x1 - x0) / nx, (y1 - y0) / ny
        jx = rng.uniform(-jitter, jitter, gx.shape) * dx
        jy = rng.uniform(-jitter, jitter, gy.shape) * dy
        jx[:, [0, -1]] = 0
        jx[[0, -1], :] = 0
        jy[:, [0, -1]] = 0
        jy[[0, -1], :] = 0
        gx, gy = gx + jx, gy + jy
    verts = np.stack([gx.ravel(), gy.ravel(), np.full(gx.size, z)], axis=1)
    faces = []
    for j in range(ny):
        for i in range(nx):
            a = j * (nx + 1) + i
            b, c, d = a + 1, a + nx + 1, a + nx + 2
            if flip_random and rng.random() < 0.5:
                faces += [[a, b, d], [a, d, c]]
            else:
                faces += [[a, b, c], [b, d, c]]
    return verts, np.array(faces, dtype=np.int64)
