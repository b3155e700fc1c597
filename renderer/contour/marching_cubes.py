"""Isosurfaces by data-parallel marching cubes on the emulated machine.

One virtual processor per grid point. A point owns the three edges that leave it along
the volume's axes and the cell whose first corner it is, so that both outputs are
numbered by a scan over the points: the crossed edges give the vertices (one per edge,
shared by the up to four cells around it, so the mesh is welded), the cells the triangles
(Lorensen & Cline, "Marching cubes", SIGGRAPH 1987, with VTK's case table:
:mod:`renderer.contour.tables`). The program runs in three phases:

1. ``classify``: every point against the level (``value >= level`` is inside, as
   ``vtkMarchingCubes`` decides), a cell's case index from its eight corners' bits, and
   the checks (NaN and infinite values, which side of the level the values lie); then the
   count of crossed edges along each axis and of the triangles of every cell (the case
   table's count, less the triangles whose corners sit on one grid point);
2. ``scan``: an exclusive add-scan over the edges in their global order (row, axis,
   point) numbers the vertices, one over the cells the triangles; the totals, read back
   once, size the outputs;
3. ``emit``: every crossed edge writes its vertex (linear interpolation between its two
   end values, always from the lower end, so that whoever computes an edge gets the same
   bits) and normal (the volume's gradient by central differences, one-sided at the
   border, interpolated and normalised, as ``vtkMarchingCubes`` computes it), every cell
   its triangles.

Vertex ids follow the global edge order, so the mesh does not depend on how the work is
cut: the volume cut into slabs along its first axis gives each slab a contiguous range of
vertex and triangle ids. On a machine across MPI ranks each rank extracts the planes of its
block of axis 0 (the machine's layout) from its slab of the volume and the planes beside it
that the gradient and the cells read (:class:`Planes`), the machine's scans across the
ranks numbering its vertices and triangles from the ranks' before it; its share
(:class:`IsosurfaceShare`) is its range of the one-rank mesh, bit for bit, with the
vertices of the next rank's first plane that its triangles use, computed alike. The host
runs each phase as one fused kernel over the volume's
rows (the bodies of :mod:`renderer.contour.row_kernels`, compiled by
:mod:`renderer.contour.cpu_kernels` on the CPU and :mod:`renderer.contour.cuda_kernels` on
the GPU; the array code of :mod:`renderer.contour.arrays` elsewhere), the scans and the check
as the machine's own instructions over per-row totals, and charges the model clock what
the emulated machine executes on its one processor per point (the scans over all points
and edges, through :meth:`simd.Machine.vp_set`). Classifying and counting are one machine
phase, ``classify``: on the CPU one pass does both, counting a plane of rows while the
next one, just classified, is in the cache.

On a GPU the extraction reads the device twice: the output sizes with the count of NaN
and infinite values (one transfer) and the mesh; where there is no surface, a third read
of the values inside says why, before the error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np

from renderer.contour.arrays import classify_arrays, emit_arrays
from renderer.contour.fast_paths import fast_path
from renderer.contour.tables import MAX_TRIANGLES
from renderer.scene.mesh import DeviceMesh, Mesh
from simd.device_memory import require_device_memory

__all__ = [
    "IsosurfaceShare",
    "Planes",
    "checked_dtype",
    "gather_isosurface",
    "isosurface",
    "slab_isosurface",
]

# Elementwise operations per virtual processor charged to the model clock (hand-counted).
#: Per point: the comparison with the level, the three checks and the case index's bits.
CLASSIFY_OPS = 8
#: Per point: the triangles of its cell's case (a table look-up) and its three edge tests.
COUNT_OPS = 4
#: Per point: the negative gradient (three differences and halvings).
GRADIENT_OPS = 9
#: Per edge: t, the position, and the normal's interpolation, scaling and normalisation.
VERTEX_OPS = 30


def isosurface(
    volume: Any,
    level: float,
    *,
    spacing: float | tuple[float, float, float] = (1.0, 1.0, 1.0),
    origin: tuple[float, float, float] = (0.0, 0.0, 0.0),
    machine: Any = None,
    dtype: Any = np.float32,
) -> Mesh:
    """The isosurface of ``volume`` at ``level``, by marching cubes on the emulated machine.

    Parameters
    ----------
    volume : (n0, n1, n2) array
        Samples on a grid (NumPy or CuPy; real numbers, at least 2 along each axis). Grid
        point ``(i, j, k)`` lies at ``origin + spacing * (i, j, k)``: axis 0 is x. Booleans
        and integers of 8 or 16 bits are read as float32, larger ones as float64. On a
        machine across MPI ranks, the whole volume on every rank, of which each reads its
        slab only (a memory map, ``numpy.load(mmap_mode="r")``, reads no more).
    level : float
        The isovalue. A point whose value is at or above it is inside (as in
        ``vtkMarchingCubes``).
    spacing : float or (3,) floats
        The grid step along each axis (one number: the same along all).
    origin : (3,) floats
        The position of grid point ``(0, 0, 0)``.
    machine : simd.Machine, optional
        The machine to run on (a default ``Machine()`` when omitted); one across MPI
        ranks (``comm=``) extracts in slabs, each rank its own.
    dtype : {numpy.float32, numpy.float64}
        The vertices' and normals' type: computed in float64, stored as float32 (what VTK
        stores, half the bytes) unless float64 is asked for. The faces are int32 while the
        vertices' ids fit (fewer than 2**31 vertices), else int64.

    Returns
    -------
    Mesh
        On a GPU (a CuPy machine), a :class:`~renderer.scene.mesh.DeviceMesh`: its arrays
        stay on the device, read back (in one transfer, into page-locked memory) the first
        time they are read, and :func:`renderer.render` draws it there without a copy.
        One vertex per crossed grid edge, with unit normals pointing down the gradient
        (towards lower values; zero where the gradient vanishes), and the triangles of
        ``vtkMarchingCubes``: the same triangles with the same winding, vertex positions
        within float32 rounding of VTK's (which stores float32). Triangles with two
        vertices on one grid point (values exactly at the level) are left out, as VTK
        leaves them out. Where values lie within float32 rounding of the level but not on
        it, VTK merges vertices that coincide in float32 and drops the triangles that
        become degenerate; these are kept here. On a machine across MPI ranks, this rank's
        :class:`IsosurfaceShare` (:func:`gather_isosurface` gathers the whole mesh); the
        model clock reads the one-rank clock on every rank.

    Raises
    ------
    ValueError
        Not a 3-D volume of real numbers with 2 or more samples along each axis; NaN or
        infinite values; a level that is not a finite number or that every value lies
        on one side of; a surface of no area (it touches the grid at points only); a
        spacing or an origin that is not 3 finite numbers (the spacing positive).

    Notes
    -----
    The ids of the vertices follow the grid's edges in order (the rows ``(i, j)`` of
    points along axis 2 in C order; within a row the edges along axis 0, then 1, then 2),
    the triangles follow the cells in C order, so a volume cut into slabs along axis 0
    gives each slab a contiguous range of both.

    References
    ----------
    W. E. Lorensen and H. E. Cline, "Marching cubes: A high resolution 3D surface
    construction algorithm", SIGGRAPH 1987. W. Schroeder, R. Maynard and B. Geveci,
    "Flying edges: A high-performance scalable isocontouring algorithm", LDAV 2015.

    Examples
    --------
    >>> import numpy as np
    >>> from simd import Machine
    >>> x, y, z = np.mgrid[-1:1:16j, -1:1:16j, -1:1:16j]
    >>> ball = isosurface(x * x + y * y + z * z, 0.5, machine=Machine(backend="numpy"))
    >>> ball.n_faces, ball.vertices.shape[0], ball.normals.shape
    (1052, 528, (528, 3))
    """
    from simd import Machine

    m = machine if machine is not None else Machine()
    volume, kind = _checked_volume(volume)
    level = _checked_level(level)
    geometry = _checked_geometry(spacing, origin)
    out = checked_dtype(dtype)
    if m.ranks is not None:
        return _isosurface_on_ranks(m, volume, kind, level, geometry, out)
    _check_room(m, volume, kind)
    volume = _kernel_array(volume, kind, m.xp)
    n0 = volume.shape[0]
    whole = Planes(0, 0, n0, n0)
    verts, normals, faces, _ = _extract(m, volume, level, geometry, whole, out, checked=True)
    name = f"isosurface at {level:g}"
    if m.backend == "cupy":
        return DeviceMesh(m, verts, faces, normals, name)
    return Mesh(verts, faces, normals, name)


def checked_dtype(dtype: Any) -> np.dtype:
    """The vertices' type an extraction is asked for, float32 or float64, or one
    ValueError."""
    try:
        out = np.dtype(dtype)
    except TypeError:
        out = None
    if out not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64 (the vertices' type); got {dtype!r}")
    return out


@dataclass(frozen=True)
class IsosurfaceShare(Mesh):
    """One rank's share of an isosurface extracted in slabs (:func:`isosurface` on a
    machine across MPI ranks, :func:`slab_isosurface`): the triangles of the cells of its
    planes, a contiguous range of the whole surface's, and the vertices they use.

    ``vertices[:owned_vertices]`` are the vertices of the slab's own edges, whole-surface
    ids ``first_vertex`` on; those after them are the vertices of the next slab's first
    plane (computed here too, bit for bit as there), so that ``faces`` index this share's
    own vertices and ``faces + first_vertex`` are the whole surface's ids. The triangles
    are those of the whole surface from id ``first_face`` on (:func:`gather_isosurface`).
    """

    first_vertex: int = 0
    owned_vertices: int = 0
    first_face: int = 0


@dataclass(frozen=True)
class Planes:
    """Which planes along axis 0 an extraction holds and emits: the array holds the planes
    ``first`` on of a volume of ``n0``; the edges and cells of planes ``lo`` to ``hi - 1``
    are its own."""

    first: int
    lo: int
    hi: int
    n0: int

    @staticmethod
    def held(lo: int, hi: int, n0: int) -> tuple[int, int]:
        """The planes ``[first, last)`` a slab emitting planes ``[lo, hi)`` must hold: one
        below (for the central differences of the gradient at ``lo``) and three above
        (the cells of ``hi - 1`` reach ``hi``, whose vertices need the gradient at
        ``hi + 1``, which needs ``hi + 2``); none where it emits none.

        >>> Planes.held(4, 8, 20), Planes.held(0, 8, 9), Planes.held(3, 3, 9)
        ((3, 11), (0, 9), (3, 3))
        """
        if hi <= lo:
            return lo, lo
        return max(lo - 1, 0), min(hi + 3, n0)


def slab_isosurface(
    volume: Any,
    level: float,
    planes: Planes,
    *,
    spacing: float | tuple[float, float, float] = (1.0, 1.0, 1.0),
    origin: tuple[float, float, float] = (0.0, 0.0, 0.0),
    machine: Any = None,
    dtype: Any = np.float32,
) -> IsosurfaceShare:
    """The share of planes ``planes.lo`` to ``planes.hi - 1`` of the isosurface of a volume
    of ``planes.n0`` planes, from the slab ``volume`` holding its planes
    ``planes.first`` on (at least :meth:`Planes.held`), on one process: the triangles and
    vertices of the whole volume's :func:`isosurface` that those planes own, bit for bit,
    with the vertex and triangle ids counted from the slab's first (``first_vertex`` and
    ``first_face`` 0). The values are not checked (NaN, the level's side) and the share
    may be empty. The slabs of a volume in order give its whole surface. ``dtype``: the
    vertices' type, as :func:`isosurface` takes it; the share's arrays are on the host.

    Examples
    --------
    >>> from simd import Machine
    >>> x, y, z = np.mgrid[-1:1:16j, -1:1:16j, -1:1:16j]
    >>> ball, m = x * x + y * y + z * z, Machine(backend="numpy")
    >>> first, last = Planes.held(0, 8, 16)
    >>> low = slab_isosurface(ball[first:last], 0.5, Planes(first, 0, 8, 16), machine=m)
    >>> first, last = Planes.held(8, 16, 16)
    >>> high = slab_isosurface(ball[first:last], 0.5, Planes(first, 8, 16, 16), machine=m)
    >>> low.n_faces + high.n_faces, low.owned_vertices + high.owned_vertices
    (1052, 528)
    """
    from simd import Machine

    m = machine if machine is not None else Machine()
    volume, kind = _checked_volume(volume, slab=True)
    geometry = _checked_geometry(spacing, origin) + (planes.first,)
    volume = _kernel_array(volume, kind, m.xp)
    out = checked_dtype(dtype)
    return _share(m, *_extract(m, volume, float(level), geometry, planes, out), level)


def gather_isosurface(share: IsosurfaceShare, machine: Any) -> Mesh | None:
    """The whole isosurface on rank 0 from the ranks' shares (:func:`isosurface` on a
    machine across MPI ranks), the one-rank mesh bit for bit; None on the other ranks.
    Collective."""
    own = slice(0, share.owned_vertices)
    vertices = machine.gather(share.vertices[own])
    normals = machine.gather(share.normals[own])
    faces = machine.gather(share.faces.astype(np.int64) + share.first_vertex)
    if vertices is None:
        return None
    return Mesh(vertices, faces.astype(_face_dtype(len(vertices))), normals, share.name)


def _isosurface_on_ranks(m: Any, volume: Any, kind: Any, level: float, geometry: tuple,
                         out: np.dtype) -> IsosurfaceShare:  # fmt: skip
    """This rank's share of the isosurface: the planes of its block (the machine's
    canonical layout along axis 0), from the slab of ``volume`` it holds (read from a
    memory map, only those planes are read)."""
    n0 = volume.shape[0]
    lo, hi = (int(v) for v in m.ranks.bounds(n0)[m.rank : m.rank + 2])
    first, last = Planes.held(lo, hi, n0)
    slab = _kernel_array(volume[first:last], kind, m.xp)

    def totals(counts: np.ndarray) -> np.ndarray:
        return m.ranks.allreduce(np.asarray(counts, dtype=np.int64), "add")

    planes = Planes(first, lo, hi, n0)
    found = _extract(m, slab, level, geometry + (first,), planes, out, checked=True,
                     totals=totals)  # fmt: skip
    return _share(m, *found, level)


def _share(m: Any, verts: Any, normals: Any, faces: Any, counts: tuple,
           level: float) -> IsosurfaceShare:  # fmt: skip
    """A slab's extraction as its share, read back to the host (one transfer)."""
    first_vertex, first_face, own_v, own_t = counts
    verts, normals, faces = m.fetch(verts, normals, faces)
    return IsosurfaceShare(verts, faces[:own_t], normals, f"isosurface at {level:g}",
                           first_vertex, own_v, first_face)  # fmt: skip


def _extract(m: Any, volume: Any, level: float, geometry: tuple, planes: Planes,
             out: np.dtype, *, checked: bool = False, totals: Any = None) -> tuple:  # fmt: skip
    """The three phases on ``volume`` (the planes ``planes`` says it holds), vertices and
    normals of type ``out``; ``checked``: refuse NaN, a level on one side and an empty
    surface (over the whole volume: the counts summed by ``totals`` over the ranks).
    Returns the vertices, normals and faces on the machine's device, and the first vertex
    and triangle ids and the own vertices' and triangles' numbers."""
    _, n1, n2 = volume.shape
    points = planes.n0 * n1 * n2
    with m.phase("classify"):
        volume = m.asarray(volume)
        rows, edges, tris, spans = _classify(m.xp, volume, level)
        m.charge("elementwise", points, ops=CLASSIFY_OPS)
        # each point gathers the bits of its cell's other corners: along axes 2, 1 and 0
        for _ in range(3):
            m.charge("shift", points, label="shift")
        m.charge("elementwise", points, ops=COUNT_OPS)
    a, b = (planes.lo - planes.first) * n1, (planes.hi - planes.first) * n1
    with m.phase("scan"):
        own_edges, own_tris = edges[a:b], tris[a:b]
        with m.vp_set(3 * points):
            starts = m.scan(own_edges.reshape(-1), "add", exclusive=True).reshape(-1, 3)
        with m.vp_set(points):
            tri_starts = m.scan(own_tris, "add", exclusive=True)
            nonfinite = m.reduce(rows[a:b, 6], "add")  # NaN and infinite values
        if planes.first == planes.lo == 0 and planes.hi == planes.n0:  # the whole volume
            ends = m.xp.stack([starts[-1, 2] + edges[-1, 2], tri_starts[-1] + tris[-1]])
            sizes, nonfinite = m.fetch(ends, nonfinite)
            counts = np.array([0, 0, *sizes, 0, 0])
            offsets = (starts, tri_starts, spans)
        else:
            offsets, counts = _slab_offsets(
                m.xp,
                (edges, tris, spans),
                (starts, tri_starts),
                (a, b, b + n1 if planes.hi < planes.n0 else b),
            )
            counts, nonfinite = m.fetch(counts, nonfinite)  # fmt: skip
    first_vertex, first_face, own_v, own_t, ghost_v, ghost_t = (int(c) for c in counts)
    n_vertices, n_triangles = (int(c) for c in (totals or np.asarray)([own_v, own_t]))
    if checked:
        _check_found(m, rows[a:b, 7], int(nonfinite), points, n_triangles, level)
    sizes = (own_v + ghost_v, own_t + ghost_t)
    dtypes = (out, _face_dtype(sizes[0]))
    mesh_bytes = 6 * sizes[0] * dtypes[0].itemsize + 3 * sizes[1] * dtypes[1].itemsize
    require_device_memory(m, mesh_bytes, f"the surface ({sizes[1]:,} triangles)", WAY_OUT)
    with m.phase("emit"):
        verts, normals, faces = _emit(m.xp, volume, level, geometry, rows, offsets, sizes, dtypes)
        _charge_emit(m, points, n_vertices, n_triangles)
    return verts, normals, faces, (first_vertex, first_face, own_v, own_t)


def _classify(xp: Any, volume: Any, level: float) -> tuple:
    """The classify phase's per-row table and counts (empty for a slab of no planes)."""
    if volume.shape[0] == 0:
        n = 0
        return (xp.zeros((n, 8), dtype=xp.int64), xp.zeros((n, 3), dtype=xp.int64),
                xp.zeros(n, dtype=xp.int64), xp.zeros((n, 2), dtype=xp.int64))  # fmt: skip
    fused = fast_path("classify", xp)
    return fused(volume, level) if fused is not None else classify_arrays(xp, volume, level)


def _emit(xp: Any, volume: Any, level: float, geometry: tuple, rows: Any, offsets: tuple,
          sizes: tuple[int, int], dtypes: tuple) -> tuple:  # fmt: skip
    """The emit phase's vertices, normals and triangles of ``dtypes`` (the vertices' and
    normals', the faces'; empty for a slab of no planes)."""
    if volume.shape[0] == 0:
        empty = xp.zeros((0, 3), dtype=dtypes[0])
        return empty, empty.copy(), xp.zeros((0, 3), dtype=dtypes[1])
    fused = fast_path("emit", xp)
    if fused is not None:
        return fused(volume, level, geometry, rows, offsets, sizes, dtypes)
    verts, normals, faces = emit_arrays(xp, volume, level, geometry, rows, offsets, sizes)
    return verts.astype(dtypes[0]), normals.astype(dtypes[0]), faces.astype(dtypes[1])


#: What to do when a volume or its surface does not fit the GPU's memory.
WAY_OUT = "extract it in slabs on MPI ranks (mpiexec -n N) or on the CPU (--backend numpy)"
#: Device bytes per row of the volume the classification and the scans hold: the rows'
#: table (8 int64), their edges, triangles and spans (6), and the scans' offsets (4).
_ROW_BYTES = 8 * (8 + 6 + 4)


def _check_room(m: Any, volume: Any, kind: np.dtype) -> None:
    """Refuse, in one line and before any work, a volume whose extraction cannot fit the
    GPU's memory: the volume itself (unless it is there already, of the kernels' type)
    and the per-row tables."""
    n0, n1, n2 = volume.shape
    on_device = type(volume).__module__.split(".")[0] != "numpy" and hasattr(volume, "device")
    upload = 0 if on_device and volume.dtype == kind else n0 * n1 * n2 * kind.itemsize
    shape = "x".join(str(n) for n in volume.shape)
    require_device_memory(m, upload + n0 * n1 * _ROW_BYTES, f"the volume ({shape})", WAY_OUT)


def _face_dtype(n_vertices: int) -> np.dtype:
    """int32 for the faces of ``n_vertices`` vertices while their ids fit, else int64."""
    return np.dtype(np.int32) if n_vertices <= np.iinfo(np.int32).max else np.dtype(np.int64)


def _slab_offsets(xp: Any, counted: tuple, scanned: tuple, bounds: tuple) -> tuple:
    """A slab's vertex and triangle offsets per row, counted from its first own row, and
    the spans of the rows it emits: its own rows ``[a, b)`` and, for their vertices, the
    rows ``[b, g)`` of the next plane (whose triangles are dropped). Returns ``(offsets,
    counts)``: the offsets as :func:`renderer.contour.cpu_kernels.emit_cpu` takes them, and
    the first vertex and triangle ids (global, from the machine's scans ``scanned``), the
    own and the next plane's vertices and triangles."""
    edges, tris, spans = counted
    starts, tri_starts = scanned
    a, b, g = bounds
    rows = edges.shape[0]
    local = xp.zeros((rows, 3), dtype=xp.int64)
    local_tris = xp.zeros(rows, dtype=xp.int64)
    emitted = xp.zeros((rows, 2), dtype=xp.int64)
    if b == a:
        return (local, local_tris, emitted), xp.zeros(6, dtype=xp.int64)
    first = xp.stack([starts[0, 0], tri_starts[0]])
    local[a:b] = starts - first[0]
    local_tris[a:b] = tri_starts - first[1]
    own = xp.stack([local[b - 1, 2] + edges[b - 1, 2], local_tris[b - 1] + tris[b - 1]])
    if b < rows:  # the rows after: numbered on (only the next plane's are written)
        rest = edges[b:].reshape(-1)
        local[b:] = (own[0] + xp.cumsum(rest) - rest).reshape(-1, 3)
        local_tris[b:] = own[1] + xp.cumsum(tris[b:]) - tris[b:]
    emitted[a:g] = spans[a:g]
    ghost = xp.stack([edges[b:g].sum(), tris[b:g].sum()])
    return (local, local_tris, emitted), xp.concatenate([first, own, ghost])


def _charge_emit(m: Any, points: int, n_vertices: int, n_triangles: int) -> None:
    """Charge the emission as the machine executes it: each point fetches its six
    neighbours' values for the gradient, each edge its far end's value and gradient,
    interpolates and sends its vertex to its slot; each cell fetches the vertex ids of the
    edges of its other corners and sends its triangles, one table slot per step."""
    for _ in range(6):
        m.charge("shift", points, label="shift")
    m.charge("elementwise", points, ops=GRADIENT_OPS)
    for _ in range(3):
        m.charge("shift", points, label="shift")
    m.charge("elementwise", 3 * points, ops=VERTEX_OPS)
    m.charge("router", 3 * points, label="send", nbytes=48 * n_vertices)
    for _ in range(6):
        m.charge("shift", points, label="shift")
    for _ in range(MAX_TRIANGLES):
        m.charge("router", points, label="send", nbytes=24 * n_triangles // MAX_TRIANGLES)


def _checked_volume(volume: Any, *, slab: bool = False) -> tuple[Any, np.dtype]:
    """``volume`` (an array) and the dtype the kernels read it as (float32 or float64), or
    one ValueError saying what is wrong with it; reads no values (a memory map stays
    one). ``slab``: any number of planes."""
    if not hasattr(volume, "shape") or not hasattr(volume, "dtype"):
        volume = np.asarray(volume)
    if volume.ndim != 3:
        raise ValueError(
            f"isosurface needs a 3-D volume; got a {volume.ndim}-D array of shape "
            f"{tuple(volume.shape)}"
        )
    if min(volume.shape[1:] if slab else volume.shape) < 2:
        raise ValueError(
            f"a volume needs at least 2 samples along each axis; got shape {tuple(volume.shape)}"
        )
    dtype = np.dtype(volume.dtype)
    if dtype.kind not in "biuf":
        raise ValueError(f"volume values must be real numbers; got dtype {dtype}")
    # the kernels are compiled for float32 and float64: smaller integers fit float32
    # exactly, larger ones float64 (to 2**53)
    wanted = np.float32 if dtype.itemsize <= 2 or dtype == np.float32 else np.float64
    return volume, np.dtype(wanted)


def _kernel_array(volume: Any, dtype: np.dtype, xp: Any) -> Any:
    """``volume`` as a C-contiguous array of ``dtype`` on ``xp``'s side."""
    if volume.dtype != dtype:
        volume = volume.astype(dtype)
    if xp is np:
        if not isinstance(volume, np.ndarray) and hasattr(volume, "get"):
            volume = volume.get()  # a device array, for a machine on the host
        return np.ascontiguousarray(volume)
    return xp.ascontiguousarray(xp.asarray(volume))


def _checked_level(level: Any) -> float:
    if isinstance(level, bool) or not isinstance(level, Real | np.number):
        raise ValueError(f"level must be a number; got {level!r}")
    level = float(level)
    if not math.isfinite(level):
        raise ValueError(f"level must be a finite number; got {level}")
    return level


def _checked_geometry(spacing: Any, origin: Any) -> tuple[float, ...]:
    """The spacing and the origin as 6 floats: the spacing along axes 0-2, then the
    origin."""
    try:
        steps = np.broadcast_to(np.asarray(spacing, dtype=np.float64), (3,))
        where = np.asarray(origin, dtype=np.float64)
    except (TypeError, ValueError):
        steps = where = np.zeros(0)
    if steps.shape != (3,) or not (np.isfinite(steps).all() and (steps > 0).all()):
        raise ValueError(f"spacing must be 3 positive finite numbers (or one); got {spacing!r}")
    if where.shape != (3,) or not np.isfinite(where).all():
        raise ValueError(f"origin must be 3 finite numbers; got {origin!r}")
    return tuple(float(s) for s in steps) + tuple(float(o) for o in where)


def _check_found(m: Any, inside: Any, nonfinite: int, points: int, n_triangles: int,
                 level: float) -> None:  # fmt: skip
    """Refuse, in one line, a volume with NaN or infinite values, a level every value
    lies on one side of, and a surface without area. ``inside``: the rows' counts of
    values inside, summed only where there is no surface (a rare read back)."""
    if nonfinite:
        raise ValueError(
            f"the volume has {nonfinite} NaN or infinite values: replace them (numpy.nan_to_num) "
            "before extracting a surface"
        )
    if n_triangles:
        return
    with m.vp_set(points):
        inside = int(m.fetch(m.reduce(inside, "add"))[0])
    if inside == 0:
        raise ValueError(f"no surface at level {level:g}: every value of the volume is below it")
    if inside == points:
        raise ValueError(
            f"no surface at level {level:g}: every value of the volume is at or above it"
        )
    raise ValueError(
        f"the surface at level {level:g} is empty: it touches the grid at points only "
        "(values exactly at the level), so every triangle has no area"
    )
