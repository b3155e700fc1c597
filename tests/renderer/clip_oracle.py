"""The clip stage as plain array code with host round trips: an oracle.

This is ``renderer/stages/clip.py``'s ``clip_triangles`` and Sutherland-Hodgman helper as of
commit 19e777a, kept verbatim (renamed) so that tests can demand that the rewritten stage
gives the same triangles, vertices, attributes, faces, counts and model-clock charges, bit
for bit. It loops over planes and vertex slots with ``bool(x.any())`` and ``nonzero``
(host syncs that grow with the number of clipped triangles): do not use it in the renderer.
"""

from __future__ import annotations

from typing import Any

from renderer.stages.clip import (
    GUARD_BAND,
    MAX_VERTS,
    OUTCODE_OPS,
    SUTHERLAND_HODGMAN_OPS,
    TRIANGLE_TEST_OPS,
    ClippedTriangles,
)


def _plane_distances(xp: Any, v: Any, gx: float, gy: float) -> list[Any]:
    """Signed distances (inside >= 0) of clip-space points ``v[..., :4]`` to the planes
    near, far, and the four guard-band planes."""
    x, y, z, w = v[..., 0], v[..., 1], v[..., 2], v[..., 3]
    return [
        z + w,  # near: z >= -w
        w - z,  # far: z <= w
        gx * w - x,
        gx * w + x,
        gy * w - y,
        gy * w + y,
    ]


def legacy_clip_triangles(
    xp: Any, clip: Any, faces: Any, attrs: Any, width: int, height: int, *, machine: Any = None
) -> ClippedTriangles:
    """:func:`renderer.stages.clip.clip_triangles` as it was written before its fused
    kernels, plane by plane in array code: the oracle its kernels are checked against."""
    m = len(faces)
    gx = 1.0 + 2.0 * GUARD_BAND / width
    gy = 1.0 + 2.0 * GUARD_BAND / height
    # per-vertex outcodes: bits 0-5 outside the view volume (x < -w, x > w, y < -w,
    # y > w, z < -w, z > w), bits 8-13 outside a clipping plane (near, far, guard band)
    x, y, z, w = clip[:, 0], clip[:, 1], clip[:, 2], clip[:, 3]
    code = xp.zeros(clip.shape[0], dtype=xp.int32)
    for bit, o in enumerate([x < -w, x > w, y < -w, y > w, z < -w, z > w]):
        code |= o.astype(xp.int32) << bit
    for bit, d in enumerate(_plane_distances(xp, clip, gx, gy)):
        code |= (d < 0).astype(xp.int32) << (8 + bit)
    c0, c1, c2 = code[faces[:, 0]], code[faces[:, 1]], code[faces[:, 2]]
    # a triangle wholly outside one plane is dropped (Cohen-Sutherland)
    rejected = (c0 & c1 & c2 & 0xFF) != 0
    crossing = (((c0 | c1 | c2) >> 8) != 0) & ~rejected
    table = xp.concatenate([clip, attrs], axis=1)  # (N, 4 + A), gathered per corner below
    if machine is not None:
        machine.charge("elementwise", clip.shape[0], ops=OUTCODE_OPS)
        machine.charge("elementwise", m, ops=TRIANGLE_TEST_OPS)

    idx = xp.nonzero(crossing)[0]
    n_clipped = int(idx.size)
    counts = xp.where(rejected, 0, 1).astype(xp.int64)  # triangles per original face
    poly = poly_n = None
    if n_clipped:
        poly, poly_n = _sutherland_hodgman(xp, table[faces[idx]], gx, gy, machine=machine)
        counts[idx] = xp.maximum(poly_n - 2, 0)

    # place the output: faces in order, each face's fan triangles consecutively
    if machine is not None:
        offsets = machine.scan(counts, "add", exclusive=True, initial=0)
    else:
        offsets = xp.cumsum(counts) - counts
    total = int(counts.sum()) if m else 0
    simple = xp.nonzero((counts == 1) & ~crossing)[0]
    if n_clipped == 0:
        # nothing clipped: the output is the kept faces in order (offsets[simple] is 0..T-1)
        out = table[faces[simple]]
        face = simple
    else:
        out = xp.empty((total, 3, table.shape[1]), dtype=table.dtype)
        face = xp.empty(total, dtype=xp.int64)
        out[offsets[simple]] = table[faces[simple]]
        face[offsets[simple]] = simple
    if n_clipped:
        # fan (p0, p_k, p_k+1) for k = 1 .. n-2, in fan order
        for k in range(1, MAX_VERTS - 1):
            live = poly_n > k + 1
            if not bool(live.any()):
                break
            src = xp.nonzero(live)[0]
            dst = offsets[idx[src]] + (k - 1)
            out[dst, 0] = poly[src, 0]
            out[dst, 1] = poly[src, k]
            out[dst, 2] = poly[src, k + 1]
            face[dst] = idx[src]
    n_rejected = int(rejected.sum())
    return ClippedTriangles.from_triangles(
        xp, out[..., :4], out[..., 4:], face, n_clipped, n_rejected
    )


def _sutherland_hodgman(
    xp: Any, tri: Any, gx: float, gy: float, *, machine: Any = None
) -> tuple[Any, Any]:
    """Clip triangles ``tri`` (K, 3, C) by the six planes, all polygons at once.

    Sutherland-Hodgman: each plane maps a polygon's vertex list to a new one; an edge from
    a to b emits a (if inside) and the crossing point (if exactly one end is inside). The
    loop runs over vertex slots (at most 9), each step vectorised over all polygons.

    Returns
    -------
    poly : (K, 9, C) array, poly_n : (K,) int64 number of vertices (0 when fully clipped)
    """
    k, c = tri.shape[0], tri.shape[2]
    poly = xp.zeros((k, MAX_VERTS, c), dtype=tri.dtype)
    poly[:, :3] = tri
    n = xp.full(k, 3, dtype=xp.int64)
    rows = xp.arange(k)
    for plane in range(6):
        d = _plane_distances(xp, poly, gx, gy)[plane]  # (K, 9)
        new = xp.zeros_like(poly)
        new_n = xp.zeros(k, dtype=xp.int64)
        for s in range(MAX_VERTS):
            valid = s < n
            if not bool(valid.any()):
                break
            t = xp.where(n > 0, (s + 1) % xp.maximum(n, 1), 0)
            a, b = poly[:, s], poly[rows, t]
            da, db = d[:, s], d[rows, t]
            a_in, b_in = da >= 0, db >= 0
            emit_a = valid & a_in
            sel = xp.nonzero(emit_a)[0]
            new[sel, new_n[sel]] = a[sel]
            new_n += emit_a
            cross = valid & (a_in != b_in)
            sel = xp.nonzero(cross)[0]
            if sel.size:
                # from the inside end to the outside end, whatever the edge direction
                pin = xp.where(a_in[sel, None], a[sel], b[sel])
                pout = xp.where(a_in[sel, None], b[sel], a[sel])
                din = xp.where(a_in[sel], da[sel], db[sel])
                dout = xp.where(a_in[sel], db[sel], da[sel])
                tt = din / (din - dout)
                new[sel, new_n[sel]] = pin + tt[:, None] * (pout - pin)
                new_n[sel] += 1
        poly, n = new, new_n
    if machine is not None:
        machine.charge("elementwise", k, ops=SUTHERLAND_HODGMAN_OPS)
    return poly, n
