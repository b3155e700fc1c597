"""``Scene``: a mesh prepared once on a machine's device, for many frames.

A frame of :func:`renderer.render` from a bare mesh validates it, computes its normals and
bounding sphere on the host and uploads vertices, faces and vertex colours to the device,
every time. A :class:`Scene` does the mesh's part once: the validated mesh, its vertices
and faces on the machine's device, its unit vertex normals and bounding sphere (the default
camera's inputs), and the vertex colours of the lights it has been rendered with. Render it
as often as you like; a frame then uploads only its 4x4 matrix.

The name follows the usual split of graphics APIs between scene data that stays resident
and per-frame state (camera, light); the image and every statistic are exactly those of
rendering the mesh itself.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from renderer.scene.camera import Camera, bounding_sphere, default_camera, sphere_of
from renderer.scene.mesh import (
    DeviceMesh,
    Mesh,
    as_mesh,
    corner_normals,
    face_normals,
    vertex_normals,
)
from renderer.stages.shading import BASE_COLOUR, SHADINGS, lambert
from simd.device_memory import require_device_memory

__all__ = ["FRAME_WAY_OUT", "Scene", "mesh_device_bytes", "vertex_colours"]

#: What to do when a mesh or a frame does not fit the GPU's memory.
FRAME_WAY_OUT = (
    "render a share of the triangles per MPI rank (mpiexec -n N), a smaller image, or on "
    "the CPU (--backend numpy)"
)


def mesh_device_bytes(mesh: Mesh) -> int:
    """The device bytes a frame's mesh takes: float64 vertices and their colours, int64
    faces (the frame's own arrays come on top)."""
    return 48 * mesh.n_vertices + 24 * mesh.n_faces


def vertex_colours(
    mesh: Mesh,
    light: np.ndarray,
    shading: str,
    normals: Any = None,
    *,
    base: np.ndarray | None = None,
    crease_angle: float | None = None,
) -> np.ndarray:
    """Host colours of the vertices the clipper gets: one per vertex (gouraud) or per corner
    (flat, the face's colour on its three corners; gouraud with a crease angle, the
    corners' normals of :func:`~renderer.scene.mesh.corner_normals`), lit from unit direction
    ``light``.

    ``normals``: precomputed unit normals (vertex normals for gouraud, face normals for
    flat, corner normals with a crease angle) to skip computing them. ``base``: the unlit
    colour, one RGB or one per vertex (:func:`~renderer.stages.shading.surface_colours`); the
    default ``BASE_COLOUR`` when None.
    """
    per_vertex = base is not None and base.ndim == 2
    colour = BASE_COLOUR if base is None else base
    if shading == "gouraud" and crease_angle is None:
        return lambert(vertex_normals(mesh) if normals is None else normals, light, colour=colour)
    corner_colour = base[mesh.faces.reshape(-1)] if per_vertex else colour
    if shading == "gouraud":
        if normals is None:
            normals = corner_normals(mesh, crease_angle)
        return lambert(normals, light, colour=corner_colour)
    if normals is None:
        normals = unit_face_normals(mesh)
    if per_vertex:  # the face's light on each corner's own colour
        return lambert(np.repeat(normals, 3, axis=0), light, colour=corner_colour)
    return np.repeat(lambert(normals, light, colour=colour), 3, axis=0)


def unit_face_normals(mesh: Mesh) -> np.ndarray:
    """Unit face normals (zero for degenerate faces), as flat shading lights them."""
    fn = face_normals(mesh.vertices, mesh.faces)
    ln = np.linalg.norm(fn, axis=1)
    return fn / np.where(ln > 0, ln, 1.0)[:, None]


class Scene:
    """A triangle mesh resident on a machine's device, rendered by :func:`renderer.render`.

    Parameters
    ----------
    mesh : Mesh, object with ``vertices`` (N, 3) and ``faces`` (M, 3), or such a pair
        Validated once, as :func:`renderer.render` validates a mesh. A
        :class:`~renderer.scene.mesh.DeviceMesh` on ``machine`` (an isosurface extracted
        on a GPU) is prepared from its device arrays and never read back for the usual
        frames (Gouraud shading without a crease angle, one surface colour); the frames
        that need its host arrays read them back once.
    machine : simd.Machine, optional
        The machine whose device holds the scene; a default ``Machine()`` when omitted
        (for a DeviceMesh: its machine). Every frame of the scene renders on it.

    Attributes
    ----------
    mesh : Mesh
        The validated mesh (host arrays; a DeviceMesh reads them back when they are read).
    machine : simd.Machine
    vertices, faces : device arrays
        float64 (N, 3) and int64 (M, 3), on ``machine.xp``.
    normals : (N, 3) array
        Unit vertex normals: computed on the host so every backend shades alike, or a
        DeviceMesh's own on the device.

    Examples
    --------
    >>> import numpy as np, renderer
    >>> from simd import Machine
    >>> quad = (np.array([[0., 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]]),
    ...         np.array([[0, 1, 2], [0, 2, 3]]))
    >>> scene = renderer.Scene(quad, machine=Machine(backend="numpy"))
    >>> a = renderer.render(scene, view=(0, 0), size=32, loop="expand")
    >>> b = renderer.render(quad, view=(0, 0), size=32, loop="expand")
    >>> bool((a.image == b.image).all()), scene.n_faces
    (True, 2)
    """

    def __init__(self, mesh: Any, machine: Any = None) -> None:
        if machine is None and isinstance(mesh, DeviceMesh):
            machine = mesh.machine
        if machine is None:
            from simd import Machine

            machine = Machine()
        elif not (hasattr(machine, "xp") and hasattr(machine, "scan")):
            raise TypeError(f"machine must be a simd.Machine, got {type(machine).__name__}")
        self.machine = machine
        device = mesh.on(machine) if isinstance(mesh, DeviceMesh) else None
        if device is not None:  # drawn from the device's copy, never read back for it
            self.mesh = mesh
            vertices, faces, self.normals = device
            self.vertices = vertices.astype(np.float64)
            self.faces = faces.astype(np.int64)
            self._sphere = sphere_of(self.vertices, fetch=machine.fetch)
        else:
            self.mesh = as_mesh(mesh)
            what = f"the mesh ({self.mesh.n_faces:,} triangles)"
            require_device_memory(machine, mesh_device_bytes(self.mesh), what, FRAME_WAY_OUT)
            self.vertices = machine.asarray(self.mesh.vertices, dtype=np.float64)
            self.faces = machine.asarray(self.mesh.faces, dtype=np.int64)
            self.normals = vertex_normals(self.mesh)
            self._sphere = None  # made when a default camera first needs it
        self._face_normals: np.ndarray | None = None
        self._corner_normals: dict[float, np.ndarray] = {}
        self._colours: dict[tuple, Any] = {}
        self._camera: tuple[tuple, Camera] | None = None  # the last default camera made
        #: Its frames captured as CUDA graphs on a GPU (renderer.replays), made when needed.
        self.replays: Any = None

    def __repr__(self) -> str:
        return (
            f"Scene({self.mesh.name!r}, {self.n_faces} triangles, "
            f"{self.mesh.n_vertices} vertices, machine={self.machine!r})"
        )

    @property
    def n_faces(self) -> int:
        """Number of triangles."""
        return self.mesh.n_faces

    def bounding_sphere(self) -> tuple[np.ndarray, float]:
        """Centre and radius that frame the default camera (see ``renderer.default_camera``)."""
        if self._sphere is None:
            self._sphere = bounding_sphere(self.mesh)
        return self._sphere

    def default_camera(
        self,
        view: tuple[float, float] = (45.0, 45.0),
        magnification: float = 1.0,
        *,
        aspect: float = 1.0,
        **options: Any,
    ) -> Camera:
        """:func:`renderer.default_camera` of this scene, kept for the last view asked: a
        later frame of the same view (and options) gets the same camera, whose matrices
        are then not made again.

        Examples
        --------
        >>> import numpy as np, renderer
        >>> from simd import Machine
        >>> tri = (np.array([[0.0, 0, 0], [2, 0, 0], [0, 2, 0]]), np.array([[0, 1, 2]]))
        >>> scene = renderer.Scene(tri, machine=Machine(backend="numpy"))
        >>> cam = scene.default_camera((0, 0))
        >>> cam == renderer.default_camera(tri, (0, 0)), scene.default_camera((0, 0)) is cam
        (True, True)
        """
        key = _plain_key(view, magnification, aspect, *sorted(options.items()))
        if key is not None and self._camera is not None and self._camera[0] == key:
            return self._camera[1]
        camera = default_camera(self, view, magnification, aspect=aspect, **options)
        if key is not None:
            self._camera = (key, camera)
        return camera

    def colours(
        self,
        light: np.ndarray,
        shading: str = "gouraud",
        *,
        base: np.ndarray | None = None,
        crease_angle: float | None = None,
    ) -> Any:
        """Device vertex colours lit from ``light`` (kept per light, surface colour and
        crease angle: a second frame under the same light uploads nothing); see
        :func:`vertex_colours`."""
        if shading not in SHADINGS:
            raise ValueError(f"shading must be one of {', '.join(SHADINGS)}; got {shading!r}")
        light = np.asarray(light, dtype=np.float64)
        if shading == "flat":
            crease_angle = None  # flat faces have no edges to smooth
        base_key = None
        if base is not None:
            base = np.ascontiguousarray(base, dtype=np.float64)
            base_key = (base.shape, hashlib.blake2b(base.tobytes(), digest_size=16).digest())
        key = (shading, light.tobytes(), base_key, crease_angle)
        colours = self._colours.get(key)
        if colours is None:
            if shading == "flat":
                if self._face_normals is None:
                    self._face_normals = unit_face_normals(self.mesh)
                normals = self._face_normals
            elif crease_angle is not None:
                normals = self._corner_normals.get(crease_angle)
                if normals is None:
                    normals = corner_normals(self.mesh, crease_angle)
                    self._corner_normals = {crease_angle: normals}
            else:
                normals = self.normals
            host = vertex_colours(
                self.mesh, light, shading, normals, base=base, crease_angle=crease_angle
            )
            colours = self.machine.asarray(host)
            if len(self._colours) >= 8:  # an orbit changes the light every frame
                self._colours.pop(next(iter(self._colours)))
            self._colours[key] = colours
        return colours


def _plain_key(*values: Any) -> tuple | None:
    """``values`` as a key when they are plain numbers, strings and tuples of them (whose
    equality means the same camera), else None: a bool, a NumPy scalar or an array is not
    kept, so that what :func:`renderer.default_camera` refuses or converts is never
    matched by a kept value that merely compares equal (``True == 1``)."""

    def plain(v: Any) -> bool:
        if type(v) is tuple:
            return all(plain(c) for c in v)
        return type(v) in (int, float, str) or v is None

    return tuple(values) if all(plain(v) for v in values) else None
