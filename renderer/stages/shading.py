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

import math
from typing import Any

import numpy as np

from renderer.stages.fast_paths import fast_path
from renderer.stages.scan import TriangleSetup, edge_functions
from renderer.stages.transform import SUBPIXEL
from simd.transfers import array_module, to_host

__all__ = [
    "AMBIENT",
    "DIFFUSE",
    "BASE_COLOUR",
    "SCALARS",
    "SHADINGS",
    "lambert",
    "parse_colour",
    "shade_pixels",
    "shade_pixels_arrays",
    "surface_colours",
    "vertex_scalars",
]

AMBIENT = 0.15
DIFFUSE = 0.85
BASE_COLOUR = (0.92, 0.86, 0.72)
#: How a surface is shaded: its vertices' colours interpolated, or one colour a face.
SHADINGS = ("gouraud", "flat")


def lambert(
    normals: np.ndarray,
    light: np.ndarray,
    *,
    colour=BASE_COLOUR,
    ambient: float = AMBIENT,
    diffuse: float = DIFFUSE,
) -> np.ndarray:
    """RGB in [0, 1] of surfaces with unit ``normals`` (K, 3) lit from unit direction ``light``
    (two-sided Lambert plus ambient); ``colour`` is one RGB or one per normal (K, 3).

    ``normals`` may be a NumPy or a CuPy array: the dot product is three products and two
    sums in a fixed order (no matrix product, whose order a BLAS chooses), so both give the
    same bits.

    Examples
    --------
    >>> import numpy as np
    >>> rgb = lambert(np.array([[0, 0, 1.0], [1.0, 0, 0]]), np.array([0, 0, 1.0]))
    >>> np.round(rgb, 3).tolist()     # facing the light: full colour; edge-on: ambient only
    [[0.92, 0.86, 0.72], [0.138, 0.129, 0.108]]
    """
    xp = array_module(normals)
    normals = xp.asarray(normals, dtype=np.float64)
    lx, ly, lz = (float(c) for c in np.asarray(light, dtype=np.float64))
    n_dot_l = xp.abs(normals[:, 0] * lx + normals[:, 1] * ly + normals[:, 2] * lz)
    colour = xp.asarray(colour)
    if colour.ndim == 1:
        colour = colour[None, :]
    return colour * (ambient + diffuse * n_dot_l)[:, None]


#: Scalar fields :func:`vertex_scalars` computes for a colormap.
SCALARS = ("height", "distance")


def parse_colour(value: Any, name: str = "colour") -> tuple[float, float, float]:
    """One RGB colour with components in [0, 1] from three numbers in [0, 1], a hex string
    (``"#ff8800"``) or a colour name matplotlib knows (``"tab:blue"``, ``"white"``).

    Examples
    --------
    >>> parse_colour((1, 0.5, 0)), parse_colour("#0000ff"), parse_colour("0.5,0.5,0.5")
    ((1.0, 0.5, 0.0), (0.0, 0.0, 1.0), (0.5, 0.5, 0.5))
    """
    if isinstance(value, str):
        text = value.strip()
        if "," in text:
            value = text.split(",")
        else:
            try:
                from matplotlib.colors import to_rgb
            except ImportError:  # hex colours need no matplotlib
                to_rgb = _hex_rgb
            try:
                return tuple(float(c) for c in to_rgb(text))
            except ValueError as err:
                raise ValueError(
                    f"{name}: not a colour: {value!r} (give R,G,B in 0..1, #rrggbb or a name)"
                ) from err
    try:
        rgb = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be three numbers in [0, 1], got {value!r}") from err
    if rgb.shape != (3,) or not (np.isfinite(rgb).all() and (rgb >= 0).all() and (rgb <= 1).all()):
        raise ValueError(f"{name} must be three numbers in [0, 1], got {value!r}")
    return tuple(float(c) for c in rgb)


def _hex_rgb(text: str) -> tuple[float, float, float]:
    if len(text) == 7 and text[0] == "#":
        try:
            return tuple(int(text[k : k + 2], 16) / 255.0 for k in (1, 3, 5))
        except ValueError:
            pass
    raise ValueError(text)


def surface_colours(
    n_vertices: int,
    colour: Any = None,
    values: Any = None,
    colormap: str | None = None,
    value_range: tuple[float, float] | None = None,
) -> np.ndarray | None:
    """The unlit surface colour: None for the default (``BASE_COLOUR``), else one RGB (3,)
    or one per vertex (N, 3), float64 in [0, 1].

    Parameters
    ----------
    colour : one colour (see :func:`parse_colour`) or (N, 3) array, optional
        Floats in [0, 1]; a uint8 array is read as 0..255.
    values : (N,) array, optional
        A scalar per vertex, coloured through ``colormap`` (default ``"viridis"``), from
        the low end of ``value_range`` (default: the values' minimum and maximum) to the
        high end; values beyond the range take its end colours.
    colormap : str, optional
        A matplotlib colormap name.

    Examples
    --------
    >>> surface_colours(3) is None, surface_colours(3, "white").tolist()
    (True, [1.0, 1.0, 1.0])
    >>> rgb = surface_colours(3, values=[0.0, 1.0, 2.0], colormap="gray")
    >>> np.round(rgb[:, 0], 2).tolist()
    [0.0, 0.5, 1.0]
    """
    if colour is not None and values is not None:
        raise ValueError("give either colour= or values= (with a colormap), not both")
    if colormap is not None and values is None:
        raise ValueError("colormap= colours values=: give a scalar per vertex")
    if values is not None:
        v = to_host(values)
        if v.shape != (n_vertices,) or not np.issubdtype(v.dtype, np.number):
            raise ValueError(
                f"values must be one number per vertex, shape ({n_vertices},), got {v.shape}"
            )
        v = v.astype(np.float64)
        if not np.isfinite(v).all():
            raise ValueError("values must be finite")
        lo, hi = (float(v.min()), float(v.max())) if value_range is None else value_range
        if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
            raise ValueError(f"value_range must be (low, high), low <= high, got {value_range!r}")
        t = np.clip((v - lo) / (hi - lo), 0.0, 1.0) if hi > lo else np.full_like(v, 0.5)
        import matplotlib

        name = colormap or "viridis"
        try:
            cmap = matplotlib.colormaps[name]
        except KeyError as err:
            raise ValueError(
                f"unknown colormap {name!r} (try viridis, plasma, inferno, magma, cividis, "
                "coolwarm, gray)"
            ) from err
        return np.asarray(cmap(t)[:, :3], dtype=np.float64)
    if colour is None:
        return None
    if isinstance(colour, str) or np.ndim(colour) == 1:
        return np.asarray(parse_colour(colour))
    c = to_host(colour)
    if c.shape != (n_vertices, 3):
        raise ValueError(
            f"colour must be one colour or one per vertex, shape ({n_vertices}, 3); got {c.shape}"
        )
    if c.dtype == np.uint8:
        c = c / 255.0
    c = c.astype(np.float64)
    if not (np.isfinite(c).all() and (c >= 0).all() and (c <= 1).all()):
        raise ValueError("per-vertex colours must lie in [0, 1] (or be uint8)")
    return c


def vertex_scalars(vertices: Any, by: str = "height", *, up: Any = None) -> np.ndarray:
    """A scalar per vertex to colour by: ``"height"`` along ``up`` (default y) or
    ``"distance"`` from the centre of the bounding box.

    Examples
    --------
    >>> v = np.array([[0.0, 0, 0], [0, 2, 0], [2, 0, 0]])
    >>> vertex_scalars(v).tolist(), vertex_scalars(v, up=(1, 0, 0)).tolist()
    ([0.0, 2.0, 0.0], [0.0, 0.0, 2.0])
    >>> vertex_scalars(v, "distance").tolist()
    [1.4142135623730951, 1.4142135623730951, 1.4142135623730951]
    """
    v = np.asarray(vertices, dtype=np.float64)
    if by == "height":
        axis = np.asarray((0.0, 1.0, 0.0) if up is None else up, dtype=np.float64)
        if axis.shape != (3,) or not np.linalg.norm(axis) > 0:
            raise ValueError(f"up must be a non-zero 3-vector, got {up!r}")
        return v @ (axis / np.linalg.norm(axis))
    if by == "distance":
        centre = (v.min(axis=0) + v.max(axis=0)) / 2.0
        return np.sqrt(((v - centre) ** 2).sum(axis=1))
    raise ValueError(f"scalar must be one of {', '.join(SCALARS)}; got {by!r}")


def shade_pixels(
    xp: Any,
    tri: Any,
    pix: Any,
    width: int,
    setup: TriangleSetup,
    clip: Any,
    colours: Any,
    corners: Any = None,
) -> Any:
    """Colours of the covered pixels ``pix`` (flat indices, GL rows) drawn by triangles ``tri``.

    One fused kernel where one is compiled (:mod:`renderer.stages.shading_kernels`): Numba on
    the CPU, Numba CUDA on the GPU. Its colours are bit for bit those of the array code,
    :func:`shade_pixels_arrays`, which serves float32 colours and ``SIMD_FORCE_REFERENCE=1``.

    Parameters
    ----------
    setup : TriangleSetup
        Of the triangles (:func:`~renderer.stages.scan.setup_triangles`).
    clip, colours : (T, 3, 4) and (T, 3, 3) or, with ``corners``, (V, 4) and (V, 3)
        float64 xp arrays
        Clip coordinates (for the perspective ``1 / w``) and colours of each triangle's
        vertices, in its original vertex order; or of the vertices the triangles
        ``corners`` index (the clipper's output).
    corners : (T, 3) int64 xp array, optional
        Each triangle's vertices as rows of ``clip`` and ``colours``.

    Returns
    -------
    (K, 3) uint8 xp array
    """
    if tri.size == 0:
        return xp.zeros((0, 3), dtype=xp.uint8)
    if corners is None:  # the triangles' own vertices: rows 3 t, 3 t + 1, 3 t + 2
        t = int(colours.shape[0])
        corners = xp.arange(3 * t, dtype=xp.int64).reshape(t, 3)
        clip = clip.reshape(3 * t, clip.shape[2])
        colours = colours.reshape(3 * t, colours.shape[2])
    fused = fast_path("shade", xp)
    if (
        fused is not None
        and colours.dtype == np.float64
        and clip.dtype == np.float64
        and colours.shape[1] == 3
        and corners.dtype == np.int64
    ):
        return fused(tri, pix, width, setup, clip, colours, corners)
    return shade_pixels_arrays(xp, tri, pix, width, setup, clip[corners], colours[corners])


def shade_pixels_arrays(
    xp: Any, tri: Any, pix: Any, width: int, setup: TriangleSetup, clip: Any, colours: Any
) -> Any:
    """:func:`shade_pixels` as array expressions (the fused kernels' oracle), of the
    triangles' vertices ``clip`` (T, 3, 4) and ``colours`` (T, 3, A)."""
    if tri.size == 0:
        return xp.zeros((0, 3), dtype=xp.uint8)
    j = pix // width
    i = pix - j * width
    px, py = i * SUBPIXEL, j * SUBPIXEL
    xs, ys = setup.xs[tri].astype(xp.int64), setup.ys[tri].astype(xp.int64)
    # the barycentric weights are the raw edge functions (without the fill-rule bias)
    a, b, c = edge_functions(xp, xs, ys)
    lam = [(a[:, k] * px + b[:, k] * py + c[:, k]).astype(xp.float64) for k in range(3)]
    # edge k is opposite vertex k+2: weight of vertex v is the edge function of edge v+1
    weights = [lam[1], lam[2], lam[0]]
    area = (xs[:, 1] - xs[:, 0]) * (ys[:, 2] - ys[:, 0]) - (xs[:, 2] - xs[:, 0]) * (
        ys[:, 1] - ys[:, 0]
    )  # twice the area, positive: counter-clockwise
    area = area.astype(xp.float64)
    order = setup.order[tri]
    inv_w = [1.0 / clip[tri, order[:, v], 3] for v in range(3)]  # as setup computes it
    persp = [weights[v] / area * inv_w[v] for v in range(3)]
    total = persp[0] + persp[1] + persp[2]
    rgb = xp.zeros((tri.size, 3), dtype=xp.float64)
    for v in range(3):
        rgb += (persp[v] / total)[:, None] * colours[tri, order[:, v]]
    rgb = xp.clip(rgb, 0.0, 1.0)
    return xp.floor(rgb * 255.0 + 0.5).astype(xp.uint8)
