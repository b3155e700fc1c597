"""The oil-well data sets: a perforated rock formation, polygonised two ways.

Ahrens & Hansen (1995, section 4) render "a balanced and unbalanced version of the same
scientific output, a hydro-dynamics simulation of an oil well perforator", made by two
isosurface algorithms. This module builds a scalar field of that shape and the grids its
two surfaces are made on (:mod:`renderer.datasets.builtin` runs marching cubes on them):

* the **field** (:func:`oilwell_field`): a formation slab between two bedding planes
  rippled by the strata (``|z - ripple| <= THICKNESS``, ``z`` up), drilled through by
  vertical well bores (:data:`BORES`), each with perforation tunnels shot radially into
  the rock at several depths, 60 degrees apart in azimuth as a perforating gun fires
  (:data:`TUNNEL_DEPTHS`), and cut by a vertical fracture (:data:`FRACTURE`). The value
  is ``1/2 + d/2`` clipped to [0, 1], ``d`` the signed distance-like minimum of the slab,
  bore, tunnel and fracture terms (positive in the rock); the isosurface at 1/2 is the
  rock's surface.
* ``oilwell``: marching cubes on the uniform grid but for a column of cells :data:`WIDE`
  times wider along x around the middle bore (``|x| <= COLUMN``, :func:`column`), as
  simulation grids are graded: every triangle is about one cell, most one voxel wide,
  those of the column three.
* ``oilwell-unbalanced``: marching cubes on a rectilinear grid that is fine near the
  bedding planes and a single cell tall in between (``|z| <= COARSE_Z``; there also as
  long as the fracture around its walls), as simulation codes stretch cells where
  nothing happens, with the same wide column. In that layer the field is the bores' and
  the fracture's (the tunnels fall between its two sample planes), so marching cubes
  returns each bore wall as a ring of tall slivers, one voxel wide and ``2 COARSE_Z``
  (1.5 units) tall, standing across the surface's height: the tall polygons of the paper's
  unbalanced set (up to 231 scan lines side on; the paper does not say how many).

Why this shape gives Ahrens & Hansen's Table 1: the paper's unbalanced scan-conversion maxima,
231 and 512 scan lines in the side views (0,0) and M(0,0) against averages of 6 and 8,
need polygons about half the image tall (the paper does not say how many) among small
ones, and its z-buffer maxima
of 9 to 30 pixels per span (unmagnified) need them to stay a few pixels wide: thin vertical
slivers as tall as most of the surface. The framing fits the bounding sphere (radius about
1.7 here) to the image, so 1.5-unit slivers cover about 240 of the 512 scan lines, a
little more for the bores nearer the camera, and the whole image magnified; seen from
(45, 45) they shrink by cos 45 degrees (the paper: 169 and 468). The paper's averages of
5 to 8 scan lines and 1 to 3 pixels per span need the bulk of the polygons tall and thin
too, hence cells ``STRETCH`` times taller than wide, and steep strata: the bedding planes
are rough (:data:`RIPPLE`, slopes up to about 14), so seen side on their polygons are
several scan lines tall too, and there are about 250,000 of them (the paper says only
that its data sets "typically exceed 250,000 polygons"). The
z-buffer maxima of the balanced set and of the side views, 7 to 9 pixels per span (14 to
21 magnified), need some polygons about three times wider than the bulk (a one-voxel
polygon spans 2.4 pixels, 3 to 4 along a diagonal) where the magnified views still see
them, about the image centre: the wide column, whose cells (3 voxels, 0.047 units) are
also about one wavelength of the ripple, so that there the bedding planes are sampled
smooth and their polygons are whole wide cells.

At the default size ("250k": a 128 x 128 x 43 grid; 246,616 and 218,888 triangles),
ours against the paper's Table 1 (``python -m bench.table1``; ratio ours/paper)::

    data set            view      scan max        scan avg      z max          z avg
    oilwell             (0,0)     9/8 (1.12)      4.4/5 (0.88)  9/7 (1.29)     1.4/1 (1.39)
    oilwell             (45,45)   12/10 (1.20)    3.4/5 (0.68)  7/8 (0.88)     1.3/1 (1.34)
    oilwell             M(0,0)    16/13 (1.23)    8.1/5 (1.63)  16/17 (0.94)   2.0/2 (1.00)
    oilwell             M(45,45)  22/21 (1.05)    7.3/1 (7.26)  15/21 (0.71)   2.0/3 (0.68)
    oilwell-unbalanced  (0,0)     244/231 (1.06)  4.8/6 (0.81)  9/9 (1.00)     1.4/1 (1.39)
    oilwell-unbalanced  (45,45)   161/169 (0.95)  3.7/6 (0.62)  33/30 (1.10)   1.4/1 (1.36)
    oilwell-unbalanced  M(0,0)    488/512 (0.95)  9.6/8 (1.19)  16/14 (1.14)   2.0/1 (2.01)
    oilwell-unbalanced  M(45,45)  322/468 (0.69)  8.3/4 (2.08)  65/119 (0.55)  2.1/2 (1.05)

Every maximum comes within a factor 1.3 of the paper's but the M(45,45) ones: the
unbalanced set's (scan conversion 0.69, z-buffer 0.55) and the balanced z-buffer's (0.71),
every average within about 2 but the balanced
M(45,45) scan conversion's (the paper's 1). The unbalanced z-buffer maxima from (45,45),
33 pixels per span against 9 side on, come from polygons lying horizontal in that view
and edge on side on: walls perpendicular to x (the depth axis of view (0,0) is y), as long
along y as the horizontal spans they make (0.3 units, about 30 pixels times sqrt 2 seen
at 45 degrees). The vertical fracture (:data:`FRACTURE`) has such walls, and the
unbalanced grid's middle layer has, around them, one tall cell as long as the fracture
(five boxes sharing their faces, fine in y elsewhere): its walls there are four triangles
1.5 units tall and 0.3 long.

What no data can give under our magnification (the paper gives no factor; 2 is ours):
``M`` narrows the field of view by 2 with
the camera kept where it is (:func:`renderer.scene.camera.default_camera`), an exact zoom of the
image by 2 about its centre, and every polygon in the magnified view is in the unmagnified
one. So no polygon's scan lines or span grow more than 2 times (plus a pixel of sampling),
and a magnified maximum is at most twice the unmagnified one plus one: 2 x 161 + 1 = 323
scan lines and 2 x 33 + 1 = 67 pixels from (45,45), where we nearly are (322 and 65). The paper's
own magnified maxima exceed twice its unmagnified ones in five cells: unbalanced
M(45,45) 468 against 169 (2.8 times) and 119 against 30 (4.0 times), unbalanced M(0,0)
512 against 231 (2.2 times), balanced z-buffer 17 against 7 and 21 against 8 (2.4 and 2.6
times); so its magnification was at least 4
there, or not a zoom (a camera moved nearer grows the near polygons more than the
centre). Reaching 119 with our zoom would take an unmagnified maximum of 59, twice the
paper's 30. A zoom of 4 does not fit the paper either: it gives 130 and 512 there, but
the balanced set's magnified maxima 1.3 to 2.2 times the paper's (28 to 43 against 13 to
21) and averages up to 3 times and more, so the views keep the factor 2 of
:data:`renderer.datasets.builtin.VIEWS` (``python -m bench.table1 --magnification 4`` prints
that table).

The averages are over the polygons the clipping keeps (the loop's data); the paper's
balanced M(45,45) average of 1 scan line per polygon (5 unmagnified) would need most
polygons counted as zeros: over all 246,616 polygons, clipped ones as zero, ours is 4.4.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "BORES",
    "COARSE_Z",
    "COLUMN",
    "FRACTURE",
    "THICKNESS",
    "TUNNEL_DEPTHS",
    "WIDE",
    "column",
    "oilwell_field",
    "parts",
    "sample",
    "z_samples",
]

#: Half thickness of the formation slab (its bedding planes at z = +-THICKNESS + ripple).
THICKNESS = 0.87
#: Amplitude and wave numbers (per unit) of the bedding ripple: rough, steep strata (slopes
#: up to about 14), so that the bedding planes seen side on are made of polygons several
#: scan lines tall, and as many as the paper's 250,000 on the 128-point grid.
RIPPLE = (0.1, 22.0, 23.0)
#: Well bores: (x, y) of the axis and radius; y < 0 is nearer the camera of view (0, 0).
BORES = (
    (0.0, 0.0, 0.12),
    (-0.55, -0.5, 0.09),
    (0.55, -0.45, 0.09),
    (-0.45, 0.55, 0.09),
    (0.5, 0.5, 0.09),
)
#: Depths of the perforation tunnels (z), their radius and length from the bore wall.
TUNNEL_DEPTHS = (-0.55, -0.3, -0.05, 0.2, 0.45)
TUNNEL_RADIUS = 0.035
TUNNEL_LENGTH = 0.3
#: Cells are this many times taller (along the well axis, z) than wide, as the paper's
#: polygons are: 5 to 8 scan lines tall, 1 to 3 pixels per span on average.
STRETCH = 3
#: The unbalanced grid's single tall cell spans |z| <= COARSE_Z (inside the slab, clear of
#: the tunnels).
COARSE_Z = 0.75
#: A vertical fracture: a slot through the formation, clear of the bores: (x of its
#: mid-plane, half length along y about y = 0); one grid cell wide either side of the
#: mid-plane, so that every grid sees it.
FRACTURE = (0.25, 0.15)
#: A column of cells WIDE times wider along x than elsewhere around the middle bore
#: (``|x| <= COLUMN``), in both grids: its polygons span WIDE times the pixels of the others
#: in the z-buffer loop, the paper's maxima of 7 to 9 pixels per span (17 to 21 magnified)
#: where one-voxel polygons give 3 to 4. About the image centre, so the magnified views
#: keep it.
COLUMN = 0.2
WIDE = 3


def z_samples(n: int) -> int:
    """Samples along z of the resolution-``n`` grid (its cells ``STRETCH`` times taller
    than wide)."""
    return (n - 1) // STRETCH + 1


def oilwell_field(n: int) -> np.ndarray:
    """The oil-well field sampled over [-1, 1]^3 on ``n`` x ``n`` x :func:`z_samples`
    points (float32, [0, 1]).

    Examples
    --------
    >>> vol = oilwell_field(16)
    >>> vol.shape, vol.dtype, bool(vol.min() < 0.5 < vol.max())
    ((16, 16, 6), dtype('float32'), True)
    """
    if n < 4:
        raise ValueError(f"grid resolution must be at least 4, got {n}")
    whole = np.arange(n)
    return sample(n, whole, whole, np.arange(z_samples(n)))


def sample(n: int, xs: np.ndarray, ys: np.ndarray, zs: np.ndarray) -> np.ndarray:
    """``oilwell_field(n)[np.ix_(xs, ys, zs)]`` bit for bit, computing only those samples
    (every sample from its own coordinates, so any block of the grid gives the same
    values as the whole)."""
    t = np.linspace(-1.0, 1.0, n, dtype=np.float32)
    x, y = np.meshgrid(t[xs], t[ys], indexing="ij")
    z = np.linspace(-1.0, 1.0, z_samples(n), dtype=np.float32)[zs][None, None, :]
    amp, kx, ky = RIPPLE
    ripple = (amp * np.sin(2 * np.pi * kx * x) * np.cos(2 * np.pi * ky * y)).astype(np.float32)
    rock = THICKNESS - np.abs(z - ripple[:, :, None])
    for bx, by, radius in BORES:
        rock = np.minimum(rock, (np.hypot(x - bx, y - by) - radius)[:, :, None])
        for k, depth in enumerate(TUNNEL_DEPTHS):
            rock = np.minimum(rock, _tunnel(x, y, z, bx, by, radius, depth, k))
    fx, half_length = FRACTURE
    slot = np.maximum(np.abs(x - fx) - np.float32(2.0 / (n - 1)), np.abs(y) - half_length)
    rock = np.minimum(rock, slot[:, :, None])
    return np.clip(0.5 + 0.5 * rock, 0.0, 1.0).astype(np.float32)


def _tunnel(x, y, z, bx, by, radius, depth, k) -> np.ndarray:
    """Signed distance to the k-th perforation tunnel of a bore (a capsule from the bore's
    axis out to ``TUNNEL_LENGTH`` past its wall), phased 60 degrees from the one above."""
    angle = np.float32(np.pi / 3 * k + 0.3 * bx + 0.7 * by)
    ux, uy = np.cos(angle), np.sin(angle)
    dx, dy = x - bx, y - by
    s = np.clip(dx * ux + dy * uy, 0.0, radius + TUNNEL_LENGTH)
    ex, ey = dx - s * ux, dy - s * uy
    dz = z - np.float32(depth)
    return (np.sqrt((ex * ex + ey * ey)[:, :, None] + dz * dz) - TUNNEL_RADIUS).astype(np.float32)


def column(n: int) -> tuple[int, int] | None:
    """The x sample indices ``(a, b)`` bounding the wide-cell column of the resolution-``n``
    grid (``b - a`` a multiple of :data:`WIDE`, about ``|x| <= COLUMN``), or None where the
    grid is too coarse for one wide cell clear of the fracture.

    Examples
    --------
    >>> column(128), column(8)
    ((51, 75), None)
    """
    h = 2.0 / (n - 1)
    a = int(round((1.0 - COLUMN) / h))
    b = a + WIDE * int(round(2.0 * COLUMN / h / WIDE))
    fracture_start = int(np.floor((FRACTURE[0] + 1.0) / h)) - 2  # see parts()
    if b - a < WIDE or a < 1 or b >= fracture_start:
        return None
    return a, b


def _split_x(lo: int, hi: int, n: int) -> list[tuple[np.ndarray, float, float]]:
    """The x sample indices ``lo..hi`` as blocks sharing their end planes: (indices,
    spacing, origin) of each; fine cells but for the wide-cell column (:func:`column`)."""
    h = 2.0 / (n - 1)
    col = column(n)
    if col is None or not lo <= col[0] < col[1] <= hi:
        return [(np.arange(lo, hi + 1), h, -1.0 + lo * h)]
    a, b = col
    out = [(np.arange(lo, a + 1), h, -1.0 + lo * h)] if a > lo else []
    out.append((np.arange(a, b + 1, WIDE), WIDE * h, -1.0 + a * h))
    if hi > b:
        out.append((np.arange(b, hi + 1), h, -1.0 + b * h))
    return out


def parts(kind: str, n: int) -> list[tuple]:
    """The blocks of the grid the ``kind`` surface is made of: (x, y, z sample indices,
    spacing, origin) each, sharing their boundary planes. ``oilwell``: the uniform grid
    but for the wide-cell column (:func:`column`), three blocks along x;
    ``oilwell-unbalanced``: the fine blocks below and above the middle layer and the boxes
    of that layer (sharing the planes z = -+COARSE_Z and their faces), the column split
    off each block that spans it."""
    h = 2.0 / (n - 1)
    nz = z_samples(n)
    hz = 2.0 / (nz - 1)
    whole = np.arange(n)

    def along_x(lo, hi, ys, zs, dy, dz, y0, z0) -> list[tuple]:
        return [(xs, ys, zs, (dx, dy, dz), (x0, y0, z0)) for xs, dx, x0 in _split_x(lo, hi, n)]

    if kind == "oilwell":
        return along_x(0, n - 1, whole, np.arange(nz), h, hz, -1.0, -1.0)
    last = nz - 1
    lo = int(round((1.0 - COARSE_Z) / 2.0 * last))
    hi = last - lo
    z0, tall = -1.0 + lo * hz, (hi - lo) * hz
    zs = np.array([lo, hi])
    # The middle layer in boxes sharing their faces: around the fracture's walls a box
    # whose cells are also as long as the fracture (its two y planes inside the slot),
    # fine in y elsewhere.
    fx, half_length = FRACTURE
    ia = int(np.floor((fx + 1.0) / h)) - 2
    ib = int(np.ceil((fx + 1.0) / h)) + 2
    ja = int(np.ceil((1.0 - half_length) / h + 1e-6))
    jb = int(np.floor((1.0 + half_length) / h - 1e-6))
    mid = np.arange(ia, ib + 1)
    x_a, y_a = -1.0 + ia * h, -1.0 + ja * h
    return [
        *along_x(0, n - 1, whole, np.arange(lo + 1), h, hz, -1.0, -1.0),
        *along_x(0, ia, whole, zs, h, tall, -1.0, z0),
        (np.arange(ib, n), whole, zs, (h, h, tall), (-1.0 + ib * h, -1.0, z0)),
        (mid, np.arange(ja + 1), zs, (h, h, tall), (x_a, -1.0, z0)),
        (mid, np.arange(jb, n), zs, (h, h, tall), (x_a, -1.0 + jb * h, z0)),
        (mid, np.array([ja, jb]), zs, (h, (jb - ja) * h, tall), (x_a, y_a, z0)),
        *along_x(0, n - 1, whole, np.arange(hi, nz), h, hz, -1.0, -1.0 + hi * hz),
    ]
