"""Isosurfaces by data-parallel marching cubes on the emulated machine.

One virtual processor per grid point. A point owns the three edges that leave it along
the volume's axes and the cell whose first corner it is, so that both outputs are
numbered by a scan over the points: the crossed edges give the vertices (one per edge,
shared by the up to four cells around it, so the mesh is welded), the cells the triangles
(Lorensen & Cline, "Marching cubes", SIGGRAPH 1987, with VTK's case table:
:mod:`renderer.contour_tables`). The program runs in three phases:

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
vertex and triangle ids. The host runs each phase as one fused kernel over the volume's
rows (:mod:`renderer.contour_kernels` on the CPU, :mod:`renderer.contour_cuda_kernels` on the
GPU; the array code of :mod:`renderer.contour_arrays` elsewhere), the scans and the check
as the machine's own instructions over per-row totals, and charges the model clock what
the emulated machine executes on its one processor per point (the scans over all points
and edges, through :meth:`simd.Machine.vp_set`). Classifying and counting are one machine
phase, ``classify``: on the CPU one pass does both, counting a plane of rows while the
next one, just classified, is in the cache.

On a GPU the extraction reads the device twice: the output sizes with the checks' counts
(one transfer) and the mesh.
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Any

import numpy as np

from renderer.contour_arrays import classify_arrays, emit_arrays
from renderer.contour_tables import MAX_TRIANGLES
from renderer.fast_paths import fast_path
from renderer.mesh import Mesh

__all__ = ["isosurface"]

_ARRAYS = {"classify": classify_arrays, "emit": emit_arrays}

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
) -> Mesh:
    """The isosurface of ``volume`` at ``level``, by marching cubes on the emulated machine.

    Parameters
    ----------
    volume : (n0, n1, n2) array
        Samples on a grid (NumPy or CuPy; real numbers, at least 2 along each axis). Grid
        point ``(i, j, k)`` lies at ``origin + spacing * (i, j, k)``: axis 0 is x. Booleans
        and integers of 8 or 16 bits are read as float32, larger ones as float64.
    level : float
        The isovalue. A point whose value is at or above it is inside (as in
        ``vtkMarchingCubes``).
    spacing : float or (3,) floats
        The grid step along each axis (one number: the same along all).
    origin : (3,) floats
        The position of grid point ``(0, 0, 0)``.
    machine : simd.Machine, optional
        The machine to run on (a default ``Machine()`` when omitted).

    Returns
    -------
    Mesh
        One vertex per crossed grid edge, with unit normals pointing down the gradient
        (towards lower values; zero where the gradient vanishes), and the triangles of
        ``vtkMarchingCubes``: the same triangles with the same winding, vertex positions
        within float32 rounding of VTK's (which stores float32). Triangles with two
        vertices on one grid point (values exactly at the level) are left out, as VTK
        leaves them out.

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
    volume = _checked_volume(volume, m.xp)
    level = _checked_level(level)
    geometry = _checked_geometry(spacing, origin)
    n0, n1, n2 = volume.shape
    points = n0 * n1 * n2
    with m.phase("classify"):
        volume = m.asarray(volume)
        rows, edges, tris, spans = _run("classify", m.xp, volume, level)
        m.charge("elementwise", points, ops=CLASSIFY_OPS)
        # each point gathers the bits of its cell's other corners: along axes 2, 1 and 0
        for _ in range(3):
            m.charge("shift", points, label="shift")
        m.charge("elementwise", points, ops=COUNT_OPS)
    with m.phase("scan"):
        with m.vp_set(3 * points):
            starts = m.scan(edges.reshape(-1), "add", exclusive=True).reshape(edges.shape)
        with m.vp_set(points):
            tri_starts = m.scan(tris, "add", exclusive=True)
            found = m.reduce(rows[:, 6:8], "add", axis=0)  # non-finite and inside values
        ends = m.xp.stack([starts[-1, 2] + edges[-1, 2], tri_starts[-1] + tris[-1]])
        sizes, found = m.fetch(ends, found)
    n_vertices, n_triangles = (int(v) for v in sizes)
    _check_found(int(found[0]), int(found[1]), points, n_triangles, level)
    with m.phase("emit"):
        offsets = (starts, tri_starts, spans)
        out = _run("emit", m.xp, volume, level, geometry, rows, offsets,
                   (n_vertices, n_triangles))  # fmt: skip
        _charge_emit(m, points, n_vertices, n_triangles)
    verts, normals, faces = m.fetch(*out)
    return Mesh(verts, faces, normals, f"isosurface at {level:g}")


def _run(name: str, xp: Any, *args: Any) -> Any:
    """Phase ``name`` as its fused kernel, or as array code where none applies."""
    fused = fast_path(f"contour.{name}", xp)
    if fused is not None:
        return fused(*args)
    return _ARRAYS[name](xp, *args)


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


def _checked_volume(volume: Any, xp: Any) -> Any:
    """``volume`` as a C-contiguous float32 or float64 array, or one ValueError saying
    what is wrong with it."""
    if not hasattr(volume, "shape") or not hasattr(volume, "dtype"):
        volume = np.asarray(volume)
    if volume.ndim != 3:
        raise ValueError(
            f"isosurface needs a 3-D volume; got a {volume.ndim}-D array of shape "
            f"{tuple(volume.shape)}"
        )
    if min(volume.shape) < 2:
        raise ValueError(
            f"a volume needs at least 2 samples along each axis; got shape {tuple(volume.shape)}"
        )
    dtype = np.dtype(volume.dtype)
    if dtype.kind not in "biuf":
        raise ValueError(f"volume values must be real numbers; got dtype {dtype}")
    # the kernels are compiled for float32 and float64: smaller integers fit float32
    # exactly, larger ones float64 (to 2**53)
    wanted = np.float32 if dtype.itemsize <= 2 or dtype == np.float32 else np.float64
    if dtype != wanted:
        volume = volume.astype(wanted)
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


def _check_found(nonfinite: int, inside: int, points: int, n_triangles: int, level: float):
    """Refuse, in one line, a volume with NaN or infinite values, a level every value
    lies on one side of, and a surface without area."""
    if nonfinite:
        raise ValueError(
            f"the volume has {nonfinite} NaN or infinite values: replace them (numpy.nan_to_num) "
            "before extracting a surface"
        )
    if inside == 0:
        raise ValueError(f"no surface at level {level:g}: every value of the volume is below it")
    if inside == points:
        raise ValueError(
            f"no surface at level {level:g}: every value of the volume is at or above it"
        )
    if n_triangles == 0:
        raise ValueError(
            f"the surface at level {level:g} is empty: it touches the grid at points only "
            "(values exactly at the level), so every triangle has no area"
        )
