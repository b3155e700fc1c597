"""Triangle meshes: validation, vertex normals and loading from files.

The renderer accepts anything with ``vertices`` (N, 3) and ``faces`` (M, 3) arrays (a
:class:`Mesh`, a ``trimesh.Trimesh``, ...) or a ``(vertices, faces)`` pair; :func:`as_mesh`
turns all of them into a validated :class:`Mesh` with float64 vertices and int64 faces.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from os import PathLike
from typing import Any

import numpy as np

from simd.errors import one_line, require
from simd.transfers import to_host

__all__ = [
    "MAX_COORDINATE",
    "DeviceMesh",
    "Mesh",
    "as_mesh",
    "corner_normals",
    "face_normals",
    "load_mesh",
    "mesh_share",
    "vertex_normals",
]

#: Largest vertex coordinate accepted: the camera and the transform square coordinates,
#: which must not overflow float64 (about 1.8e308).
MAX_COORDINATE = 1e100


@dataclass(frozen=True)
class Mesh:
    """A triangle mesh.

    Parameters
    ----------
    vertices : (N, 3) float array
        Vertex positions (model space): float64, or float32 from an isosurface.
    faces : (M, 3) integer array
        Vertex indices of each triangle, counter-clockwise seen from the outside.
    normals : (N, 3) float array, optional
        Unit per-vertex normals; computed from the faces when absent.
    name : str
        A label for tables and file names.
    """

    vertices: np.ndarray
    faces: np.ndarray
    normals: np.ndarray | None = None
    name: str = "mesh"

    @property
    def n_faces(self) -> int:
        """Number of triangles."""
        return int(self.faces.shape[0])

    @property
    def n_vertices(self) -> int:
        """Number of vertices."""
        return int(self.vertices.shape[0])

    def bounds(self) -> np.ndarray:
        """(2, 3) array of the minimum and maximum corner of the bounding box."""
        return np.stack([self.vertices.min(axis=0), self.vertices.max(axis=0)])


class DeviceMesh(Mesh):
    """A mesh whose arrays live on a machine's device: what :func:`renderer.isosurface`
    gives on a GPU.

    Its ``vertices``, ``faces`` and ``normals`` are host arrays like any Mesh's: the first
    time one is read, all three come to the host in one transfer (``machine.fetch``), and
    stay. Rendered on its own machine (:func:`renderer.render`, :class:`renderer.Scene`),
    it is drawn from the device's copy and never read back. It holds its device memory
    as long as it lives.

    Parameters
    ----------
    machine : simd.Machine
        The machine whose device holds the arrays.
    vertices, faces, normals : device arrays
        (N, 3), (M, 3) and (N, 3), on ``machine.xp``.
    name : str

    Examples
    --------
    >>> import numpy as np
    >>> from simd import Machine
    >>> m = Machine(backend="counting")
    >>> tri = DeviceMesh(m, m.asarray(np.eye(3)), m.asarray([[0, 1, 2]]), m.asarray(np.eye(3)))
    >>> tri.on(m) is not None, tri.n_faces, tri.vertices.sum()    # read back when read
    (True, 1, np.float64(3.0))
    """

    def __init__(self, machine: Any, vertices: Any, faces: Any, normals: Any,
                 name: str = "mesh") -> None:  # fmt: skip
        object.__setattr__(self, "machine", machine)
        object.__setattr__(self, "device", (vertices, faces, normals))
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "_host", None)

    def __repr__(self) -> str:
        return (
            f"DeviceMesh({self.name!r}, {self.n_faces} triangles, {self.n_vertices} vertices, "
            f"on {self.machine!r})"
        )

    vertices = property(lambda self: self._fetched()[0], doc="(N, 3) host array.")
    faces = property(lambda self: self._fetched()[1], doc="(M, 3) host array.")
    normals = property(lambda self: self._fetched()[2], doc="(N, 3) host array.")

    @property
    def n_faces(self) -> int:
        """Number of triangles (read on the host without a transfer)."""
        return int(self.device[1].shape[0])

    @property
    def n_vertices(self) -> int:
        """Number of vertices (read on the host without a transfer)."""
        return int(self.device[0].shape[0])

    def on(self, machine: Any) -> tuple | None:
        """The device arrays ``(vertices, faces, normals)`` when ``machine`` computes on
        the device holding them (the same array library, on one process), else None."""
        if machine is self.machine or (machine.xp is self.machine.xp and machine.ranks is None):
            return self.device
        return None

    def _fetched(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        host = self._host
        if host is None:
            host = self.machine.fetch(*self.device)
            object.__setattr__(self, "_host", host)
        return host


def as_mesh(mesh: Any, *, name: str | None = None, allow_empty: bool = False) -> Mesh:
    """Validate ``mesh`` and return it as a :class:`Mesh`.

    Parameters
    ----------
    mesh : Mesh, object with ``vertices`` and ``faces``, or ``(vertices, faces)`` pair
    allow_empty : bool
        Accept a mesh without faces (a rank's share of a mesh spread over MPI ranks).

    Returns
    -------
    Mesh

    Raises
    ------
    ValueError
        Empty mesh, wrong shapes, NaN or infinite vertices, coordinates beyond
        ``MAX_COORDINATE``, face indices out of range.
    TypeError
        ``mesh`` is none of the accepted kinds.

    Examples
    --------
    >>> import numpy as np
    >>> mesh = as_mesh((np.array([[0, 0, 0], [2, 0, 0], [0, 2, 0]]), [[0, 1, 2]]))
    >>> mesh.n_faces, mesh.vertices.dtype, mesh.bounds().tolist()
    (1, dtype('float64'), [[0.0, 0.0, 0.0], [2.0, 2.0, 0.0]])
    >>> as_mesh((mesh.vertices, [[0, 1, 3]]))
    Traceback (most recent call last):
        ...
    ValueError: mesh face indices out of range: found 0..3, valid 0..2
    """
    vertices, faces, normals = _parts(mesh)
    if isinstance(mesh, Mesh):
        name = name or mesh.name
    vertices = to_host(vertices)
    faces = to_host(faces)
    if vertices.ndim != 2 or vertices.shape[1] != 3:
        raise ValueError(f"mesh vertices must have shape (N, 3), got {vertices.shape}")
    if faces.ndim != 2 or faces.shape[1] != 3:
        raise ValueError(f"mesh faces must have shape (M, 3) (triangles), got {faces.shape}")
    if (vertices.shape[0] == 0 or faces.shape[0] == 0) and not (
        allow_empty and faces.shape[0] == 0
    ):
        raise ValueError(
            f"mesh is empty ({vertices.shape[0]} vertices, {faces.shape[0]} faces): "
            "nothing to render"
        )
    if not np.issubdtype(vertices.dtype, np.number) or np.iscomplexobj(vertices):
        raise ValueError(f"mesh vertices must be real numbers, got dtype {vertices.dtype}")
    if not np.issubdtype(faces.dtype, np.integer):
        if np.issubdtype(faces.dtype, np.floating) and np.all(np.mod(faces, 1) == 0):
            faces = faces.astype(np.int64)
        else:
            raise ValueError(f"mesh faces must be integer indices, got dtype {faces.dtype}")
    vertices = vertices.astype(np.float64)
    faces = faces.astype(np.int64)
    with np.errstate(invalid="ignore"):  # one pass: a NaN or an infinity fails the bound too
        largest = float(np.abs(vertices).max()) if vertices.size else 0.0
    if not largest <= MAX_COORDINATE:
        bad = ~np.isfinite(vertices).all(axis=1)
        if bad.any():
            raise ValueError(
                f"mesh has {int(bad.sum())} vertices with NaN or infinite coordinates "
                f"(first at index {int(np.argmax(bad))})"
            )
        raise ValueError(
            f"mesh coordinates too large ({largest:.3g}): the renderer squares them in float64, "
            f"so they must stay within +-{MAX_COORDINATE:g}; scale the mesh down"
        )
    if faces.size and (faces.min() < 0 or faces.max() >= vertices.shape[0]):
        raise ValueError(
            f"mesh face indices out of range: found {int(faces.min())}..{int(faces.max())}, "
            f"valid 0..{vertices.shape[0] - 1}"
        )
    if normals is not None:
        normals = np.asarray(to_host(normals), dtype=np.float64)
        if normals.shape != vertices.shape or not np.isfinite(normals).all():
            normals = None
    return Mesh(vertices, faces, normals, name or "mesh")


def _parts(mesh: Any) -> tuple[Any, Any, Any]:
    """The vertices, faces and normals (or None) of any kind of mesh :func:`as_mesh` takes."""
    if isinstance(mesh, Mesh):
        return mesh.vertices, mesh.faces, mesh.normals
    if hasattr(mesh, "vertices") and hasattr(mesh, "faces"):
        return mesh.vertices, mesh.faces, None
    if isinstance(mesh, tuple | list) and len(mesh) == 2:
        return mesh[0], mesh[1], None
    raise TypeError(
        "mesh must have 'vertices' and 'faces' attributes or be a (vertices, faces) pair, "
        f"got {type(mesh).__name__}"
    )


def face_normals(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Area-weighted face normals (cross product of two edges), not normalised."""
    v0, v1, v2 = (vertices[faces[:, k]] for k in range(3))
    return np.cross(v1 - v0, v2 - v0)


def vertex_normals(mesh: Mesh) -> np.ndarray:
    """Unit per-vertex normals: the sum of the area-weighted normals of the adjacent faces.

    Computed on the host in float64 with a fixed summation order so every backend shades
    with bit-identical normals. Vertices of degenerate neighbourhoods get (0, 0, 1).

    Examples
    --------
    >>> import numpy as np
    >>> tri = as_mesh((np.array([[0.0, 0, 0], [2, 0, 0], [0, 2, 0]]), np.array([[0, 1, 2]])))
    >>> face_normals(tri.vertices, tri.faces).tolist(), vertex_normals(tri)[0].tolist()
    ([[0.0, 0.0, 4.0]], [0.0, 0.0, 1.0])
    """
    if mesh.normals is not None:
        return mesh.normals
    fn = face_normals(mesh.vertices, mesh.faces)
    acc = np.zeros_like(mesh.vertices)
    for k in range(3):
        np.add.at(acc, mesh.faces[:, k], fn)
    length = np.linalg.norm(acc, axis=1)
    ok = length > 0
    acc[ok] /= length[ok, None]
    acc[~ok] = (0.0, 0.0, 1.0)
    return acc


def corner_normals(mesh: Mesh, crease_angle: float) -> np.ndarray:
    """Unit normals of the face corners (3M, 3) with sharp edges kept sharp (a crease angle).

    The normal of corner (face ``f``, vertex ``v``) is the sum of the area-weighted normals
    of the faces around ``v`` whose normal is within ``crease_angle`` degrees of ``f``'s:
    faces across a sharper edge do not smooth it. This is what trimesh
    (``smooth_shaded`` / ``graph.smooth_shade`` with an angle) and VTK
    (``vtkPolyDataNormals`` with a feature angle and splitting) do by splitting the vertices
    along sharp edges; here the split vertices are the faces' corners, as flat shading uses
    them. An angle of 180 gives the smooth vertex normals; 0 gives flat faces (coplanar
    neighbours still smooth together). Corners of degenerate faces take the vertex's smooth
    normal.

    Examples
    --------
    >>> import trimesh
    >>> box = as_mesh(trimesh.creation.box())          # 8 shared vertices, 12 triangles
    >>> n = corner_normals(box, 30.0).reshape(-1, 3, 3)
    >>> fn = face_normals(box.vertices, box.faces)
    >>> bool(np.allclose(n, (fn / np.linalg.norm(fn, axis=1)[:, None])[:, None, :]))
    True
    >>> smooth = corner_normals(box, 180.0)            # every corner: its vertex's normal
    >>> bool(np.allclose(smooth, vertex_normals(box)[box.faces.reshape(-1)]))
    True
    """
    angle = float(crease_angle)
    if not (0.0 <= angle <= 180.0):
        raise ValueError(f"crease angle must be in [0, 180] degrees, got {crease_angle!r}")
    faces = mesh.faces
    fn = face_normals(mesh.vertices, faces)
    length = np.linalg.norm(fn, axis=1)
    unit = fn / np.where(length > 0, length, 1.0)[:, None]
    corner_face = np.repeat(np.arange(len(faces)), 3)
    corner_vertex = faces.reshape(-1)
    # the corners grouped by vertex; every pair of corners of one vertex is a candidate
    order = np.argsort(corner_vertex, kind="stable")
    counts = np.bincount(corner_vertex, minlength=len(mesh.vertices))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    size = counts[corner_vertex[order]]  # group size of each sorted corner
    first = starts[corner_vertex[order]]
    a = np.repeat(np.arange(len(order)), size)  # sorted position of the corner
    b = np.repeat(first - np.cumsum(size) + size, size) + np.arange(int(size.sum()))
    fa, fb = corner_face[order[a]], corner_face[order[b]]
    cos_limit = math.cos(math.radians(angle))
    keep = (unit[fa] * unit[fb]).sum(axis=1) >= cos_limit - 1e-12
    target = order[a[keep]]
    out = np.zeros((len(corner_face), 3))
    for k in range(3):
        out[:, k] = np.bincount(target, weights=fn[fb[keep], k], minlength=len(corner_face))
    ln = np.linalg.norm(out, axis=1)
    ok = ln > 0
    out[ok] /= ln[ok, None]
    if not ok.all():
        out[~ok] = vertex_normals(Mesh(mesh.vertices, faces))[corner_vertex[~ok]]
    return out


def mesh_share(mesh: Mesh, rank: int, nranks: int) -> Mesh:
    """Rank ``rank``'s share of ``mesh`` on ``nranks`` MPI ranks: a contiguous range of the
    faces (the first ``n_faces % nranks`` ranks one face more), with the vertices they use.

    The shares carry the whole mesh's vertex normals (its own, or computed from all its
    faces), so rendered sort-last over the ranks they shade as the whole mesh does; the
    shares in rank order are the whole mesh's faces in order.

    Examples
    --------
    >>> quad = as_mesh((np.array([[0., 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]]),
    ...                 np.array([[0, 1, 2], [0, 2, 3]])))
    >>> [mesh_share(quad, r, 3).faces.tolist() for r in range(3)]
    [[[0, 1, 2]], [[0, 1, 2]], []]
    """
    base, extra = divmod(mesh.n_faces, nranks)
    lo = rank * base + min(rank, extra)
    hi = lo + base + (rank < extra)
    normals = vertex_normals(mesh)
    used, faces = np.unique(mesh.faces[lo:hi], return_inverse=True)
    faces = faces.reshape(-1, 3).astype(np.int64)
    return Mesh(mesh.vertices[used], faces, normals[used], f"{mesh.name}[{rank}/{nranks}]")


def _check_binary_stl(path: str | PathLike[str]) -> None:
    """Refuse a binary STL whose length does not match its triangle count (84 bytes of
    header and count, then 50 a triangle): a reader would take it for text and find
    nothing, or fail on a package it needs for that."""
    if _is_text(path):
        return  # ASCII STL
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(84)
    count = int.from_bytes(head[80:84], "little") if len(head) == 84 else None
    if count is None or size != 84 + 50 * count:
        raise ValueError(f"{path}: cannot read the mesh: the file is broken or truncated")


def _is_text(path: str | PathLike[str]) -> bool:
    """Whether the file's first kilobyte is plain ASCII text."""
    with open(path, "rb") as f:
        head = f.read(1024)
    try:
        head.decode("ascii")
    except UnicodeDecodeError:
        return False
    return True


def load_mesh(path: str | PathLike[str]) -> Mesh:
    """Load a triangle mesh file (PLY, OBJ, STL, OFF, GLB/GLTF, ... anything trimesh reads).

    Scenes are flattened into one mesh; polygons are triangulated by trimesh. Faces keep
    the file's order. A triangle soup (every face with its own three vertices, as STL
    stores them) has its coincident vertices merged, so that Gouraud shading sees the
    shared vertices and smooths across edges.

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    ValueError
        Not a file, a format trimesh cannot read, a broken file, or a file with no
        triangles (and the errors of :func:`as_mesh`: NaN vertices, bad indices, ...).

    Examples
    --------
    >>> import os, tempfile, trimesh
    >>> path = os.path.join(tempfile.mkdtemp(), "box.stl")
    >>> trimesh.creation.box().export(path)                   # doctest: +ELLIPSIS
    b'...'
    >>> mesh = load_mesh(path)
    >>> mesh.name, mesh.n_faces, len(mesh.vertices)           # 36 STL corners merged to 8
    ('box.stl', 12, 8)
    """
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: file not found")
    if os.path.isdir(path):
        raise ValueError(f"{path}: is a directory, not a mesh file")
    trimesh = require("trimesh", "data", "reading a mesh file")
    if os.fspath(path).lower().endswith(".stl"):
        _check_binary_stl(path)
    try:
        loaded = trimesh.load(path, force="mesh", process=False)
    except NotImplementedError as err:  # trimesh's "file_type ... not supported"
        raise ValueError(
            f"{path}: not a mesh format trimesh can read (PLY, OBJ, STL, OFF, GLB, ...): {err}"
        ) from err
    except ImportError as err:
        # trimesh reads a binary STL whose length does not match its triangle count as
        # ASCII, whose encoding it detects with an optional package: a broken binary file
        # would read as "install X"
        if not _is_text(path):
            raise ValueError(
                f"{path}: cannot read the mesh: the file is broken or truncated"
            ) from None
        raise ValueError(
            f"{path}: cannot read the mesh: its reader needs the package {err.name!r}, "
            "which is not installed"
        ) from err
    except Exception as err:  # noqa: BLE001 - the readers raise anything on broken files
        raise ValueError(
            f"{path}: cannot read the mesh ({type(err).__name__}: {one_line(err)})"
        ) from err
    name = os.path.basename(os.fspath(path))
    if not hasattr(loaded, "faces") or len(loaded.faces) == 0:
        raise ValueError(f"{path}: no triangles found in the file")
    vertices, faces = np.asarray(loaded.vertices), np.asarray(loaded.faces)
    bad = (faces < 0) | (faces >= len(vertices))
    if bad.any():
        face = int(np.argwhere(bad.any(axis=1))[0, 0])
        raise ValueError(
            f"{path}: face {face} refers to vertex {int(faces[bad][0])}, but the file has "
            f"{len(vertices)} vertices"
        )
    soup = len(vertices) == 3 * len(faces)
    # Merging rounds the coordinates to a grid of integers: only where they fit one.
    if soup and np.isfinite(vertices).all() and np.abs(vertices).max(initial=0) < 1e12:
        loaded.merge_vertices()  # keeps the faces and their order, only renumbers vertices
        vertices, faces = np.asarray(loaded.vertices), np.asarray(loaded.faces)
    try:
        return as_mesh((vertices, faces), name=name)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from err
