"""Muniz & Zaluska's application: a height-field ray tracer whose sub-surfaces are the tasks.

Muniz & Zaluska (section 6) ray-trace a surface given as an array of heights
(``z`` of each grid point) on a 150x150 pixel screen divided into 64 sub-surfaces, one
process each. This module is such a ray tracer, written data-parallel for our SIMD machine:
one virtual processor per pixel marches its primary ray through the height field (fixed
steps, bilinear heights, bisection on a crossing), shades the hit point (Lambert with the
finite-difference normal) and marches a shadow ray towards the light. The number of march
steps of each pixel is the work it really did; the cost of a sub-surface is the sum over its
pixels (router send with ``combine="add"`` into one slot per sub-surface), so task costs are
*measured by tracing*, and vary as in the paper: sky and grazing rays march far, rays that
hit near terrain stop early, shadowed valleys cost a second march.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["height_field", "TraceResult", "trace", "raytrace_costs"]

#: work of a pixel besides marching (ray set-up, shading, writing the result), in steps
PIXEL_OVERHEAD = 8


def height_field(n: int = 150, *, seed: int = 1) -> np.ndarray:
    """Deterministic terrain: Gaussian hills, a ridge and ripples on an ``n x n`` grid.

    Heights lie in [0, 0.35] over the unit square (row = y, column = x).
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 4:
        raise ValueError(f"height field size must be an integer >= 4, got {n!r}")
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0 : 1 : complex(0, n), 0 : 1 : complex(0, n)]
    h = 0.02 * np.sin(14 * x + 3 * y) * np.cos(11 * y)
    for _ in range(9):
        cx, cy = rng.uniform(0.05, 0.95, 2)
        s = rng.uniform(0.05, 0.16)
        a = rng.uniform(0.06, 0.22)
        h += a * np.exp(-((x - cx) ** 2 + (y - cy) ** 2) / (2 * s * s))
    h += 0.12 * np.exp(-((x - 0.75 * y - 0.1) ** 2) / 0.004)  # a ridge
    h -= h.min()
    return 0.35 * h / h.max()


@dataclass
class TraceResult:
    """Image, per-pixel march steps, and per-sub-surface costs of one trace."""

    image: np.ndarray  # (pixels, pixels) grey levels in [0, 1]
    steps: np.ndarray  # (pixels, pixels) march steps per pixel (primary + shadow)
    tile_steps: (
        np.ndarray
    )  # (tiles,) work per sub-surface (steps + pixel overhead), tile id = row * side + col
    tile_of_pixel: np.ndarray  # (pixels, pixels) sub-surface of each pixel


def _tiles(pixels: int, tiles: int) -> tuple[int, np.ndarray]:
    side = int(round(np.sqrt(tiles)))
    if side * side != tiles or side < 1:
        raise ValueError(
            f"tiles must be a perfect square (8x8 = 64 in Muniz & Zaluska), got {tiles!r}"
        )
    if side > pixels:
        raise ValueError(f"{tiles} sub-surfaces do not fit in {pixels}x{pixels} pixels")
    edge = (np.arange(pixels) * side) // pixels  # block index of each pixel row/column
    return side, edge


def trace(
    pixels: int = 150,
    tiles: int = 64,
    *,
    machine=None,
    heights: np.ndarray | None = None,
    seed: int = 1,
) -> TraceResult:
    """Ray-trace the height field on a ``pixels x pixels`` screen, one VP per pixel.

    Parameters
    ----------
    pixels : int
        Screen side (150 in Muniz & Zaluska).
    tiles : int
        Number of sub-surfaces, a perfect square (64 in Muniz & Zaluska); sub-surface
        ``r * side + c`` holds pixel block ``(r, c)``.
    machine : simd.Machine, optional
        The SIMD machine (default a NumPy machine of 512 PEs).
    heights : ndarray, optional
        Height field (default :func:`height_field` of ``pixels`` samples).

    Returns
    -------
    TraceResult
    """
    if isinstance(pixels, bool) or not isinstance(pixels, (int, np.integer)) or pixels < 4:
        raise ValueError(f"pixels must be an integer >= 4, got {pixels!r}")
    side, edge = _tiles(int(pixels), tiles)
    if machine is None:
        from simd import Machine

        machine = Machine(pes=512, backend="numpy")
    m = machine
    xp = m.xp
    H = height_field(pixels, seed=seed) if heights is None else np.asarray(heights, float)
    if H.ndim != 2 or H.shape[0] != H.shape[1] or H.shape[0] < 2:
        raise ValueError(f"heights must be a square 2-D array, got shape {H.shape}")
    field = _Field(m, H)
    G = field.G
    eye, dx, dy, dz, sv, half = _camera_rays(m, pixels)
    ox = xp.full(dx.shape, eye[0])
    oy = xp.full(dx.shape, eye[1])
    oz = xp.full(dx.shape, eye[2])
    all_rays = xp.ones(dx.shape, dtype=bool)
    steps, hit, t0, t1 = field.march(ox, oy, oz, dx, dy, dz, all_rays)
    # bisection between the last point above and the first below the surface
    for _ in range(6):
        tm = 0.5 * (t0 + t1)
        below = oz + tm * dz <= field.height(ox + tm * dx, oy + tm * dy)
        t1 = xp.where(below, tm, t1)
        t0 = xp.where(below, t0, tm)
    steps = steps + 6 * hit
    px, py = ox + t1 * dx, oy + t1 * dy
    pz = field.height(px, py)
    e = 1.0 / (G - 1)
    gx = (field.height(px + e, py) - field.height(px - e, py)) / (2 * e)
    gy = (field.height(px, py + e) - field.height(px, py - e)) / (2 * e)
    nl = xp.sqrt(gx * gx + gy * gy + 1.0)
    light = np.array([-0.45, 0.55, 0.70])
    light /= np.linalg.norm(light)
    lam = xp.clip((-gx * light[0] - gy * light[1] + light[2]) / nl, 0.0, 1.0)
    s_steps, shadow, _, _ = field.march(
        px,
        py,
        pz + 2e-3,
        xp.full(px.shape, light[0]),
        xp.full(px.shape, light[1]),
        xp.full(px.shape, light[2]),
        hit,
    )
    steps = steps + s_steps
    shade = 0.15 + 0.85 * lam * xp.where(shadow, 0.25, 1.0)
    sky = 0.55 + 0.4 * xp.clip(sv / half, -1, 1)
    image = xp.where(hit, shade, sky).reshape(pixels, pixels)
    tile = m.asarray((edge[:, None] * side + edge[None, :]).astype(np.int64))
    # every pixel also pays a fixed set-up and shading cost, in march-step units
    work = steps + PIXEL_OVERHEAD
    tile_steps = m.send(work, tile.ravel(), size=side * side, combine="add")
    return TraceResult(
        image=m.asnumpy(image),
        steps=m.asnumpy(steps).reshape(pixels, pixels),
        tile_steps=m.asnumpy(tile_steps),
        tile_of_pixel=m.asnumpy(tile),
    )


def _camera_rays(m, pixels: int):
    """The eye and the primary rays' unit directions, one VP per pixel (row-major), with
    each pixel's vertical screen coordinate ``sv`` and the half field of view's tangent."""
    xp = m.xp
    # camera: above the near edge, looking across the terrain
    eye = np.array([0.5, -0.35, 0.85])
    look = np.array([0.5, 0.6, 0.0])
    fwd = look - eye
    fwd /= np.linalg.norm(fwd)
    right = np.cross(fwd, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, fwd)
    half = np.tan(np.radians(26.0))
    v, u = np.mgrid[0:pixels, 0:pixels]
    su = m.asarray(((u + 0.5) / pixels * 2 - 1) * half)
    sv = m.asarray((1 - (v + 0.5) / pixels * 2) * half)
    dx = fwd[0] + su * right[0] + sv * up[0]
    dy = fwd[1] + su * right[1] + sv * up[1]
    dz = fwd[2] + su * right[2] + sv * up[2]
    norm = xp.sqrt(dx * dx + dy * dy + dz * dz)
    # rays as 1-D parallel variables (one VP per pixel, row-major)
    dx, dy, dz = (dx / norm).ravel(), (dy / norm).ravel(), (dz / norm).ravel()
    return eye, dx, dy, dz, sv.ravel(), half


class _Field:
    """A height field on the machine ``m``: bilinear heights and ray marching."""

    def __init__(self, m, H: np.ndarray) -> None:
        self.m = m
        self.G = H.shape[0]
        self.zmax = float(H.max()) + 1e-6
        self.Hd = m.asarray(H)
        self.ds = 0.5 / self.G  # half a grid cell per march step

    def height(self, x, y):
        """Bilinear interpolation of the grid (clamped at the border)."""
        xp, G, Hd = self.m.xp, self.G, self.Hd
        fx = xp.clip(x, 0.0, 1.0) * (G - 1)
        fy = xp.clip(y, 0.0, 1.0) * (G - 1)
        i0 = xp.minimum(fx.astype(np.int64), G - 2)
        j0 = xp.minimum(fy.astype(np.int64), G - 2)
        ax, ay = fx - i0, fy - j0
        h00 = Hd[j0, i0]
        h01 = Hd[j0, i0 + 1]
        h10 = Hd[j0 + 1, i0]
        h11 = Hd[j0 + 1, i0 + 1]
        return (h00 * (1 - ax) + h01 * ax) * (1 - ay) + (h10 * (1 - ax) + h11 * ax) * ay

    def march(self, ox, oy, oz, dx, dy, dz, active):
        """March rays until they go under the surface or leave the box; count steps."""
        m = self.m
        xp, ds = m.xp, self.ds
        steps = xp.zeros(ox.shape, dtype=np.int64)
        hit = xp.zeros(ox.shape, dtype=bool)
        # enter the bounding box [0,1]^2 x [0, zmax] (slab method): free, no steps
        t_in = xp.zeros(ox.shape)
        t_out = xp.full(ox.shape, np.inf)
        for o, d, lo, hi in ((ox, dx, 0.0, 1.0), (oy, dy, 0.0, 1.0), (oz, dz, 0.0, self.zmax)):
            with np.errstate(divide="ignore", invalid="ignore"):
                a = (lo - o) / d
                b = (hi - o) / d
            par = xp.abs(d) < 1e-12
            inside = (o >= lo) & (o <= hi)
            a = xp.where(par, xp.where(inside, -np.inf, np.inf), a)
            b = xp.where(par, xp.where(inside, np.inf, -np.inf), b)
            t_in = xp.maximum(t_in, xp.minimum(a, b))
            t_out = xp.minimum(t_out, xp.maximum(a, b))
        live = active & (t_in <= t_out)
        tt = xp.where(live, t_in, 0.0)
        prev = tt.copy()
        while True:
            n_live = m.count(live)
            if n_live == 0:
                break
            m.charge("elementwise", n_live, ops=12)
            idx = xp.flatnonzero(live)
            t = tt[idx] + ds
            x, y, z = ox[idx] + t * dx[idx], oy[idx] + t * dy[idx], oz[idx] + t * dz[idx]
            steps[idx] += 1
            below = z <= self.height(x, y)
            out = t > t_out[idx]
            prev[idx] = tt[idx]
            tt[idx] = t
            hit[idx[below & ~out]] = True
            live[idx[below | out]] = False
        return steps, hit, prev, tt


def raytrace_costs(
    pixels: int = 150, tiles: int = 64, *, total: float | None = 328.0, machine=None, seed: int = 1
) -> np.ndarray:
    """Per-sub-surface task costs (seconds) of Muniz & Zaluska's ray-tracing workload.

    The costs are the measured march steps of each sub-surface, scaled so the whole
    surface takes ``total`` seconds on one processor (328 s: the control run of Muniz & Zaluska
    Table 1); ``total=None`` returns the raw step counts. Tasks are in spawn order (the
    sub-surfaces in row-major order, as the descriptor array is split).
    """
    res = trace(pixels, tiles, machine=machine, seed=seed)
    steps = res.tile_steps.astype(np.float64)
    if total is None:
        return steps
    if not (total > 0 and np.isfinite(total)):
        raise ValueError(f"total must be a positive number of seconds, got {total!r}")
    return steps * (total / steps.sum())
