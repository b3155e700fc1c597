"""Shading: Lambert diffuse plus ambient from a directional light.

Gouraud shading (the default) lights every vertex with its normal and interpolates the
colours over the triangle; flat shading lights each face with its face normal. Lighting is
two-sided (``|n . l|``): isosurfaces are open and both sides are seen.

Shading is deferred: after the z-buffer loop every covered pixel knows its triangle, and
one elementwise pass over the pixels (one virtual processor per pixel) interpolates the
vertex colours with perspective-correct barycentric coordinates, as OpenGL interpolates
varyings. Barycentrics come from the exact int64 edge functions at the pixel centre.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from renderer.scan import TriangleSetup
from renderer.transform import SUBPIXEL

__all__ = ["AMBIENT", "DIFFUSE", "BASE_COLOUR", "lambert", "shade_pixels"]

AMBIENT = 0.15
DIFFUSE = 0.85
BASE_COLOUR = (0.92, 0.86, 0.72)


def lambert(
    normals: np.ndarray,
    light: np.ndarray,
    *,
    colour=BASE_COLOUR,
    ambient: float = AMBIENT,
    diffuse: float = DIFFUSE,
) -> np.ndarray:
    """RGB in [0, 1] of surfaces with unit ``normals`` (K, 3) lit from unit direction ``light``
    (two-sided Lambert plus ambient).

    Examples
    --------
    >>> import numpy as np
    >>> rgb = lambert(np.array([[0, 0, 1.0], [1.0, 0, 0]]), np.array([0, 0, 1.0]))
    >>> np.round(rgb, 3).tolist()     # facing the light: full colour; edge-on: ambient only
    [[0.92, 0.86, 0.72], [0.138, 0.129, 0.108]]
    """
    normals = np.asarray(normals, dtype=np.float64)
    n_dot_l = np.abs(normals @ np.asarray(light, dtype=np.float64))
    return np.asarray(colour)[None, :] * (ambient + diffuse * n_dot_l)[:, None]


def shade_pixels(
    xp: Any, tri: Any, pix: Any, width: int, setup: TriangleSetup, colours: Any
) -> Any:
    """Colours of the covered pixels ``pix`` (flat indices, GL rows) drawn by triangles ``tri``.

    Parameters
    ----------
    colours : (T, 3, 3) float64 xp array
        Vertex colours of each triangle, in its original vertex order.

    Returns
    -------
    (K, 3) uint8 xp array
    """
    if tri.size == 0:
        return xp.zeros((0, 3), dtype=xp.uint8)
    j = pix // width
    i = pix - j * width
    px, py = i * SUBPIXEL, j * SUBPIXEL
    # undo the fill-rule bias: the barycentric weights are the raw edge functions
    lam = []
    for k in range(3):
        a, b = setup.a[tri, k], setup.b[tri, k]
        c = -(a * setup.xs[tri, k] + b * setup.ys[tri, k])
        lam.append((a * px + b * py + c).astype(xp.float64))
    # edge k is opposite vertex k+2: weight of vertex v is the edge function of edge v+1
    weights = [lam[1], lam[2], lam[0]]
    area = setup.area2[tri].astype(xp.float64)
    persp = [weights[v] / area * setup.inv_w[tri, v] for v in range(3)]
    total = persp[0] + persp[1] + persp[2]
    order = setup.order[tri]
    rgb = xp.zeros((tri.size, 3), dtype=xp.float64)
    for v in range(3):
        rgb += (persp[v] / total)[:, None] * colours[tri, order[:, v]]
    rgb = xp.clip(rgb, 0.0, 1.0)
    return xp.floor(rgb * 255.0 + 0.5).astype(xp.uint8)
