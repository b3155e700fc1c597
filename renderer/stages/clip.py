"""Clip stage: trivial rejection, near/far (and guard-band) clipping, fan triangulation.

One virtual processor per polygon. Polygons wholly outside one plane of the view volume
``-w <= x, y, z <= w`` are dropped (Cohen-Sutherland outcodes). Polygons crossing the near
or far plane are clipped in clip space (Sutherland-Hodgman, vectorised over polygons);
a clipped triangle becomes a convex polygon of up to 9 vertices and is triangulated as a
fan, as OpenGL implementations do. x and y are *not* clipped to the view volume here:
scan conversion clips spans to the viewport (our choice; Ahrens & Hansen 1995, section 3,
say only that clipping "eliminates polygons that are not in view"). Only vertices
beyond a wide guard band (``GUARD_BAND`` pixels outside the viewport) are clipped in x
and y, so that the fixed-point edge
functions of scan conversion stay far inside int64.

The intersection on an edge is always computed from its inside vertex towards its
outside vertex, so the two triangles sharing an edge get bit-identical new vertices and
the clipped mesh stays watertight.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from renderer.stages.fast_paths import fast_path
from simd.transfers import to_host

__all__ = ["ClippedTriangles", "clip_triangles", "classify_arrays", "GUARD_BAND"]

#: Guard band in pixels beyond each side of the viewport.
GUARD_BAND = 8192
#: Most vertices a triangle can have after clipping by the six planes.
MAX_VERTS = 9

# Elementwise operations per VP charged to the model clock (hand-counted; the golden test
# pins their effect).
#: Per vertex: the outcodes against the six clip planes and the guard band.
OUTCODE_OPS = 24
#: Per triangle: gathering the three outcodes, the reject and crossing tests.
TRIANGLE_TEST_OPS = 8
#: Per crossing triangle: six planes of Sutherland-Hodgman, each over up to MAX_VERTS
#: vertices with 12 operations per edge (inside tests, the intersection, the append).
SUTHERLAND_HODGMAN_OPS = 6 * MAX_VERTS * 12


@dataclass
class ClippedTriangles:
    """Triangles after clipping, in drawing order (by original face, then fan position).

    Each triangle is three rows of a vertex table: the mesh's own vertices, and after them
    three rows per fan triangle of each clipped face, so that an unclipped triangle costs
    its three indices (no copy of its coordinates and colours, which were the frame's
    largest arrays).

    Attributes
    ----------
    points : (V, 4) float64 xp array
        Clip coordinates of the vertices.
    values : (V, A) float64 xp array
        Per-vertex attributes, interpolated linearly in clip space where clipped.
    corners : (T, 3) int64 xp array
        Each triangle's vertices, rows of ``points`` and ``values``.
    face : (T,) int64 xp array
        Index of the original face each triangle comes from.
    n_clipped : int
        Number of original faces that needed clipping.
    n_rejected : int
        Number of original faces dropped as wholly outside.
    """

    points: Any
    values: Any
    corners: Any
    face: Any
    n_clipped: int
    n_rejected: int

    @property
    def clip(self) -> Any:
        """(T, 3, 4): the clip coordinates of each triangle's vertices (a copy)."""
        return self.points[self.corners]

    @property
    def attrs(self) -> Any:
        """(T, 3, A): the attributes of each triangle's vertices (a copy)."""
        return self.values[self.corners]

    @classmethod
    def from_triangles(
        cls, xp: Any, clip: Any, attrs: Any, face: Any, n_clipped: int, n_rejected: int
    ) -> ClippedTriangles:
        """Triangles given by their vertices' clip coordinates (T, 3, 4) and attributes
        (T, 3, A), each vertex its own row."""
        t = int(clip.shape[0])
        return cls(
            clip.reshape(3 * t, clip.shape[2]),
            attrs.reshape(3 * t, attrs.shape[2]),
            xp.arange(3 * t, dtype=xp.int64).reshape(t, 3),
            face,
            n_clipped,
            n_rejected,
        )


def _plane_distance(v: Any, plane: int, gx: float, gy: float) -> Any:
    """Signed distance (inside >= 0) of clip-space points ``v[..., :4]`` to clipping plane
    ``plane``: 0 near, 1 far, 2-5 the guard band (x <= gx w, x >= -gx w, y <= gy w,
    y >= -gy w)."""
    x, y, z, w = v[..., 0], v[..., 1], v[..., 2], v[..., 3]
    if plane == 0:
        return z + w  # near: z >= -w
    if plane == 1:
        return w - z  # far: z <= w
    if plane == 2:
        return gx * w - x
    if plane == 3:
        return gx * w + x
    if plane == 4:
        return gy * w - y
    return gy * w + y


def _guard(xp: Any, gx: float, gy: float) -> Any:
    """The device array ``[gx, gy]``, made on the device (no host array is uploaded)."""
    g = xp.full(2, gx, dtype=xp.float64)
    g[1] = gy
    return g


def clip_triangles(
    xp: Any, clip: Any, faces: Any, attrs: Any, width: int, height: int, *, machine: Any = None
) -> ClippedTriangles:
    """Clip the triangles ``faces`` of vertices ``clip`` (clip space) against the view volume.

    Parameters
    ----------
    xp : module
    clip : (N, 4) float64 xp array
    faces : (M, 3) int64 xp array
    attrs : (N, A) float64 xp array
        Per-vertex attributes (for example colours) carried through clipping.
    width, height : int
        Viewport size, which sets the guard band in clip space.
    machine : Machine, optional
        Charged for the elementwise work and used for the scan that places the output.

    Returns
    -------
    ClippedTriangles

    Notes
    -----
    The host reads back two scalars at most, whatever the number of clipped triangles:
    the numbers of crossing and of rejected faces (one transfer, which sizes the clipping
    arrays), and, only when some face was clipped, the number of output triangles (which
    sizes the output). Everything else has shapes fixed by those sizes: the crossing faces
    are gathered with a scan and a scatter, clipped in fixed-shape ``(K, MAX_VERTS)``
    arrays under masks, and their fan triangles scattered to offsets from one scan. The
    number of kernel launches does not depend on the data (only on whether any face is
    clipped or dropped).

    The triangles are indices into a vertex table (:class:`ClippedTriangles`): where no
    face is clipped or dropped they are ``faces`` itself and the table is ``clip`` and
    ``attrs``, so the stage allocates nothing per triangle.

    Examples
    --------
    Two triangles sharing an edge; the second has a vertex behind the near plane (z < -w),
    so it is clipped to a quadrilateral and drawn as a fan of two triangles:

    >>> import numpy as np
    >>> clip = np.array([[-0.5, -0.5, 0, 1], [0.5, -0.5, 0, 1], [0, 0.5, 0, 1], [0, 0, -2, 1]])
    >>> out = clip_triangles(np, clip, np.array([[0, 1, 2], [0, 1, 3]]), np.zeros((4, 1)), 16, 16)
    >>> out.face.tolist(), out.n_clipped, out.n_rejected
    ([0, 1, 1], 1, 0)
    >>> out.corners.tolist()  # the clipped face's fan: rows 4.. of the vertex table
    [[0, 1, 2], [4, 5, 6], [7, 8, 9]]
    """
    m = len(faces)
    gx = 1.0 + 2.0 * GUARD_BAND / width
    gy = 1.0 + 2.0 * GUARD_BAND / height
    # host read 1 (one transfer): how many faces cross a plane, how many are dropped
    rejected, crossing, tally = _classify(xp, clip, faces, gx, gy)
    n_clipped, n_rejected = (int(v) for v in _read(machine, tally))
    if machine is not None:
        machine.charge("elementwise", clip.shape[0], ops=OUTCODE_OPS)
        machine.charge("elementwise", m, ops=TRIANGLE_TEST_OPS)
    if not n_clipped and not n_rejected:
        # Every face is drawn as it is: the mesh's own indices, nothing copied. The model
        # clock is charged the scan that places the output, as below (here the identity).
        if machine is not None:
            machine.charge("scan", m, label="scan", nbytes=2 * 8 * m)
        return ClippedTriangles(clip, attrs, faces, xp.arange(m, dtype=xp.int64), 0, 0)

    counts = xp.where(rejected, 0, 1).astype(xp.int64, copy=False)  # triangles per face
    face_ids = xp.arange(m, dtype=xp.int64)
    points, values = clip, attrs
    if n_clipped:
        # the crossing faces in order (a compaction by scan and scatter: no size read);
        # the inclusive ranks are 1-based, slot 0 of idx is never written
        rank = xp.cumsum(crossing, dtype=xp.int64)
        idx = xp.empty(n_clipped + 2, dtype=xp.int64)
        idx[xp.where(crossing, rank, n_clipped + 1)] = face_ids  # the rest to a spare slot
        idx = idx[1 : n_clipped + 1]
        table = xp.concatenate([clip, attrs], axis=1)  # (N, 4 + A)
        poly, poly_n = _sutherland_hodgman(xp, table[faces[idx]], gx, gy, machine=machine)
        counts[idx] = xp.maximum(poly_n - 2, 0)

    # place the output: faces in order, each face's fan triangles consecutively
    if machine is not None:
        offsets = machine.scan(counts, "add", exclusive=True, initial=0)
    else:
        offsets = xp.cumsum(counts) - counts
    # host read 2, only when something was clipped: the number of output triangles
    total = int(_read(machine, offsets[-1:] + counts[-1:])[0]) if n_clipped else m - n_rejected
    # Every output row gets its face (row `total` is a spare that takes the writes of
    # dropped faces and unused fan slots); unclipped faces give their triangle as it is.
    face = xp.zeros(total + 1, dtype=xp.int64)
    face[xp.where(rejected | crossing, total, offsets)] = face_ids
    if n_clipped:
        # fan (p0, p_j+1, p_j+2) for j = 0 .. n-3, in fan order
        j = xp.arange(MAX_VERTS - 2, dtype=xp.int64)
        fan_row = xp.where(j < (poly_n - 2)[:, None], offsets[idx][:, None] + j, total)
        face[fan_row] = xp.broadcast_to(idx[:, None], fan_row.shape)
    corners = faces[face]
    if n_clipped:
        # Every fan slot's three vertices become rows of the vertex table after the mesh's
        # (a slot that makes no triangle too: its rows are never read), in slot order.
        first = xp.broadcast_to(poly[:, :1], (poly.shape[0], MAX_VERTS - 2, poly.shape[2]))
        fans = xp.stack([first, poly[:, 1:-1], poly[:, 2:]], axis=2)  # (K, 7, 3, C)
        n = table.shape[0]
        table = xp.concatenate([table, fans.reshape(-1, table.shape[1])])
        points, values = table[:, :4], table[:, 4:]
        corners[fan_row] = xp.arange(n, n + fans.shape[0] * fans.shape[1] * 3).reshape(
            fan_row.shape + (3,)
        )
    return ClippedTriangles(points, values, corners[:total], face[:total], n_clipped, n_rejected)


def _classify(xp: Any, clip: Any, faces: Any, gx: float, gy: float) -> tuple[Any, Any, Any]:
    """Each face's flags (rejected, crossing) and their counts (crossing, rejected: two
    int64 on the arrays' side, to read back in one transfer).

    One fused kernel where one is compiled (:mod:`renderer.stages.clip_kernels`): Numba on the
    CPU, Numba CUDA on the GPU (the counts by atomic adds); :func:`classify_arrays`
    otherwise (float32 input, ``SIMD_FORCE_REFERENCE=1``), with the same flags.
    """
    fused = fast_path("classify", xp)
    if fused is not None and clip.dtype == np.float64:
        return fused(clip, faces, gx, gy)
    rejected, crossing = classify_arrays(xp, clip, faces, gx, gy)
    return rejected, crossing, xp.stack([crossing, rejected]).sum(axis=1).astype(xp.int64)


def _read(machine: Any, a: Any) -> np.ndarray:
    """``a`` on the host: through the machine (a counted read back, which a CUDA graph
    capture ends), or copied (no machine: a call of the stage's functions alone)."""
    return machine.asnumpy(a) if machine is not None else to_host(a)


def classify_arrays(xp: Any, clip: Any, faces: Any, gx: float, gy: float) -> tuple[Any, Any]:
    """The faces wholly outside one plane of the view volume (rejected) and, of the others,
    those with a vertex outside a clipping plane (crossing): the fused kernels' oracle.

    Examples
    --------
    >>> import numpy as np
    >>> clip = np.array([[-0.5, -0.5, 0, 1], [0.5, -0.5, 0, 1], [0, 0.5, 0, 1], [0, 0, -2, 1]])
    >>> rej, cross = classify_arrays(np, clip, np.array([[0, 1, 2], [0, 1, 3]]), 3.0, 3.0)
    >>> rej.tolist(), cross.tolist()
    ([False, False], [False, True])
    """
    # Cohen-Sutherland outcodes, as flags per vertex and coordinate: outside the view
    # volume (x < -w, x > w, ... z > w) and outside a clipping plane (near, far, guard band)
    xyz, w = clip[:, :3], clip[:, 3:4]
    low, high = xyz < -w, xyz > w  # (N, 3) each
    gw = w * _guard(xp, gx, gy)  # (N, 2): gx w, gy w
    xy, z = clip[:, :2], clip[:, 2:3]
    beyond = (
        ((z + w < 0) | (w - z < 0))[:, 0]  # near, far
        | (gw - xy < 0).any(axis=1)  # x > gx w, y > gy w
        | (gw + xy < 0).any(axis=1)  # x < -gx w, y < -gy w
    )
    # a triangle wholly outside one plane of the view volume is dropped; one with a
    # vertex outside a clipping plane (and not dropped) is clipped
    rejected = low[faces].all(axis=1).any(axis=1) | high[faces].all(axis=1).any(axis=1)
    crossing = beyond[faces].any(axis=1) & ~rejected
    return rejected, crossing


def _sutherland_hodgman(
    xp: Any, tri: Any, gx: float, gy: float, *, machine: Any = None
) -> tuple[Any, Any]:
    """Clip triangles ``tri`` (K, 3, C) by the six planes, all polygons at once.

    Sutherland-Hodgman: each plane maps a polygon's vertex list to a new one; an edge from
    a to b emits a (if inside) and the crossing point (if exactly one end is inside). All
    MAX_VERTS vertex slots of all polygons are processed at once under masks (slot s is an
    edge when s < n); the place of each emitted vertex is a scan along the slots, and the
    emitted vertices are scattered there (the others to a spare slot). The shapes and the
    number of operations are fixed: nothing is read back to the host.

    Returns
    -------
    poly : (K, 9, C) array, poly_n : (K,) int64 number of vertices (0 when fully clipped)
    """
    k, c = tri.shape[0], tri.shape[2]
    poly = xp.zeros((k, MAX_VERTS, c), dtype=tri.dtype)
    poly[:, :3] = tri
    n = xp.full(k, 3, dtype=xp.int64)
    rows = xp.arange(k, dtype=xp.int64)[:, None]
    slot = xp.arange(MAX_VERTS, dtype=xp.int64)
    after = slot + 1
    for plane in range(6):
        d = _plane_distance(poly, plane, gx, gy)  # (K, 9)
        valid = slot < n[:, None]
        nxt = xp.where(after < n[:, None], after, 0)  # the edge's end: (s + 1) mod n
        b = xp.take_along_axis(poly, nxt[:, :, None], axis=1)
        db = xp.take_along_axis(d, nxt, axis=1)
        a_in, b_in = d >= 0, db >= 0
        emit_a = valid & a_in
        cross = valid & (a_in != b_in)
        # from the inside end to the outside end, whatever the edge direction
        pin = xp.where(a_in[..., None], poly, b)
        pout = xp.where(a_in[..., None], b, poly)
        din = xp.where(a_in, d, db)
        dout = xp.where(a_in, db, d)
        tt = din / xp.where(cross, din - dout, 1.0)
        point = pin + tt[..., None] * (pout - pin)
        # slot s emits a, then the crossing point: places by a scan along the slots
        emitted = xp.add(emit_a, cross, dtype=xp.int64)
        end = xp.cumsum(emitted, axis=1)
        at_a = end - emitted
        at_point = at_a + emit_a
        new = xp.zeros((k, MAX_VERTS + 1, c), dtype=poly.dtype)  # slot 9: the spare
        new[rows, xp.minimum(xp.where(emit_a, at_a, MAX_VERTS), MAX_VERTS)] = poly
        new[rows, xp.minimum(xp.where(cross, at_point, MAX_VERTS), MAX_VERTS)] = point
        # A convex polygon gains at most one vertex per plane, so n <= 9 holds; the
        # minimum only keeps a vertex beyond the ninth (rounding in a degenerate case,
        # where the old code failed with an IndexError) from writing out of bounds.
        poly, n = new[:, :MAX_VERTS], xp.minimum(end[:, -1], MAX_VERTS)
    if machine is not None:
        machine.charge("elementwise", k, ops=SUTHERLAND_HODGMAN_OPS)
    return poly, n
