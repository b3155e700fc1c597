"""A naive serial rasteriser: the oracle the data-parallel renderer is tested against.

Plain Python loops over triangles and pixels (tinyrenderer / PyTorch3D style), written
independently of ``renderer/`` but with the same rules, so its results must match the
renderer's bit for bit:

- clip space ``mvp @ [x, y, z, 1]`` as ``((m0 x + m1 y) + m2 z) + m3``;
- trivial rejection by outcodes; Sutherland-Hodgman clipping against near, far and the
  guard band with intersections computed from the inside vertex; fan triangulation;
- window coordinates ``x (1/w) (W/2) + W/2``; snapping to 1/256 pixel of ``x - 0.5``,
  round half to even;
- coverage: every edge function >= 0 on left and bottom edges, > 0 elsewhere (GL window
  coordinates, y up), triangles of zero snapped area skipped;
- depth ``(z0 + dzdy (j - y0)) + dzdx (i - x0)`` through the unsnapped vertices, clamped,
  rounded to float32; the nearest fragment wins, ties to the triangle drawn first.
"""

from __future__ import annotations

import numpy as np

GUARD_BAND = 8192


def _clip_coords(mvp, p):
    return [p[0] * mvp[r][0] + p[1] * mvp[r][1] + p[2] * mvp[r][2] + mvp[r][3] for r in range(4)]


def _planes(gx, gy):
    return [
        lambda v: v[2] + v[3],
        lambda v: v[3] - v[2],
        lambda v: gx * v[3] - v[0],
        lambda v: gx * v[3] + v[0],
        lambda v: gy * v[3] - v[1],
        lambda v: gy * v[3] + v[1],
    ]


def _outside_volume(v):
    x, y, z, w = v
    return [x < -w, x > w, y < -w, y > w, z < -w, z > w]


def _clip_polygon(poly, planes):
    for dist in planes:
        out = []
        n = len(poly)
        for s in range(n):
            a, b = poly[s], poly[(s + 1) % n]
            da, db = dist(a), dist(b)
            if da >= 0:
                out.append(a)
            if (da >= 0) != (db >= 0):
                pin, pout, din, dout = (a, b, da, db) if da >= 0 else (b, a, db, da)
                t = din / (din - dout)
                out.append([pin[c] + t * (pout[c] - pin[c]) for c in range(4)])
        poly = out
        if not poly:
            break
    return poly


def reference_render(vertices, faces, mvp, size):
    """Rasterise ``faces`` of ``vertices`` with ``mvp`` into ``size = (W, H)``.

    Returns
    -------
    face : (H, W) int64, -1 where empty; depth : (H, W) float32, 1.0 where empty;
    writes : (H, W) int64 fragments per pixel. Row 0 at the top.
    """
    width, height = size
    mvp = [[float(mvp[r][c]) for c in range(4)] for r in range(4)]
    gx = 1.0 + 2.0 * GUARD_BAND / width
    gy = 1.0 + 2.0 * GUARD_BAND / height
    planes = _planes(gx, gy)
    clip = [_clip_coords(mvp, [float(c) for c in p]) for p in vertices]

    triangles = []  # (face index, [clip coords of 3 vertices])
    for f, (i0, i1, i2) in enumerate(faces):
        tri = [clip[i0], clip[i1], clip[i2]]
        outs = [_outside_volume(v) for v in tri]
        if any(outs[0][k] and outs[1][k] and outs[2][k] for k in range(6)):
            continue
        if all(d(v) >= 0 for v in tri for d in planes):
            triangles.append((f, tri))
            continue
        poly = _clip_polygon(tri, planes)
        for k in range(1, len(poly) - 1):
            triangles.append((f, [poly[0], poly[k], poly[k + 1]]))

    best = {}  # pixel -> (float32 depth, triangle id, face)
    writes = np.zeros((height, width), dtype=np.int64)
    for tid, (f, tri) in enumerate(triangles):
        xs, ys, zs, xf, yf = [], [], [], [], []
        for x, y, z, w in tri:
            inv_w = 1.0 / w
            xw = x * inv_w * (width / 2.0) + width / 2.0
            yw = y * inv_w * (height / 2.0) + height / 2.0
            zw = z * inv_w * 0.5 + 0.5
            xs.append(int(round((xw - 0.5) * 256)))
            ys.append(int(round((yw - 0.5) * 256)))
            zs.append(zw)
            xf.append(xw - 0.5)
            yf.append(yw - 0.5)
        area = (xs[1] - xs[0]) * (ys[2] - ys[0]) - (xs[2] - xs[0]) * (ys[1] - ys[0])
        if area == 0:
            continue
        if area < 0:
            xs[1], xs[2] = xs[2], xs[1]
            ys[1], ys[2] = ys[2], ys[1]
            zs[1], zs[2] = zs[2], zs[1]
            xf[1], xf[2] = xf[2], xf[1]
            yf[1], yf[2] = yf[2], yf[1]
        edges = []
        for k in range(3):
            a = ys[k] - ys[(k + 1) % 3]
            b = xs[(k + 1) % 3] - xs[k]
            c = -(a * xs[k] + b * ys[k])
            include = a > 0 or (a == 0 and b > 0)
            edges.append((a, b, c, include))
        x0, y0 = xf[0], yf[0]
        dx1, dy1 = xf[1] - x0, yf[1] - y0
        dx2, dy2 = xf[2] - x0, yf[2] - y0
        dz1, dz2 = zs[1] - zs[0], zs[2] - zs[0]
        det = dx1 * dy2 - dx2 * dy1
        if det == 0:
            dzdx = dzdy = 0.0
        else:
            dzdx = (dz1 * dy2 - dz2 * dy1) / det
            dzdy = (dz2 * dx1 - dz1 * dx2) / det
        for j in range(max(0, -(-min(ys) // 256)), min(height - 1, max(ys) // 256) + 1):
            for i in range(max(0, -(-min(xs) // 256)), min(width - 1, max(xs) // 256) + 1):
                inside = True
                for a, b, c, include in edges:
                    e = a * i * 256 + b * j * 256 + c
                    if e < 0 or (e == 0 and not include):
                        inside = False
                        break
                if not inside:
                    continue
                writes[height - 1 - j, i] += 1
                z = (zs[0] + dzdy * (j - y0)) + dzdx * (i - x0)
                z = min(max(z, 0.0), 1.0)
                key = (np.float32(z), tid, f)
                if (j, i) not in best or key[:2] < best[(j, i)][:2]:
                    best[(j, i)] = key
    face = np.full((height, width), -1, dtype=np.int64)
    depth = np.ones((height, width), dtype=np.float32)
    for (j, i), (z, _, f) in best.items():
        face[height - 1 - j, i] = f
        depth[height - 1 - j, i] = z
    return face, depth, writes
