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

from typing import Any

import numpy as np

from renderer.camera import bounding_sphere
from renderer.mesh import Mesh, as_mesh, face_normals, vertex_normals
from renderer.shading import lambert

__all__ = ["Scene", "vertex_colours"]

SHADINGS = ("gouraud", "flat")


def vertex_colours(mesh: Mesh, light: np.ndarray, shading: str, normals: Any = None) -> np.ndarray:
    """Host colours of the vertices the clipper gets: one per vertex (gouraud) or per corner
    (flat, the face's colour on its three corners), lit from unit direction ``light``.

    ``normals``: precomputed unit normals (vertex normals for gouraud, face normals for
    flat) to skip computing them.
    """
    if shading == "gouraud":
        return lambert(vertex_normals(mesh) if normals is None else normals, light)
    if normals is None:
        normals = unit_face_normals(mesh)
    return np.repeat(lambert(normals, light), 3, axis=0)


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
        Validated once, as :func:`renderer.render` validates a mesh.
    machine : simd.Machine, optional
        The machine whose device holds the scene; a default ``Machine()`` when omitted.
        Every frame of the scene renders on it.

    Attributes
    ----------
    mesh : Mesh
        The validated mesh (host arrays).
    machine : simd.Machine
    vertices, faces : device arrays
        float64 (N, 3) and int64 (M, 3), on ``machine.xp``.
    normals : (N, 3) float64 host array
        Unit vertex normals (computed on the host so every backend shades alike).

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
        if machine is None:
            from simd import Machine

            machine = Machine()
        elif not (hasattr(machine, "xp") and hasattr(machine, "scan")):
            raise TypeError(f"machine must be a simd.Machine, got {type(machine).__name__}")
        self.mesh = as_mesh(mesh)
        self.machine = machine
        self.vertices = machine.asarray(self.mesh.vertices, dtype=np.float64)
        self.faces = machine.asarray(self.mesh.faces, dtype=np.int64)
        self.normals = vertex_normals(self.mesh)
        self._sphere = bounding_sphere(self.mesh)
        self._face_normals: np.ndarray | None = None
        self._colours: dict[tuple[str, bytes], Any] = {}

    def __repr__(self) -> str:
        return (
            f"Scene({self.mesh.name!r}, {self.n_faces} triangles, "
            f"{len(self.mesh.vertices)} vertices, machine={self.machine!r})"
        )

    @property
    def n_faces(self) -> int:
        """Number of triangles."""
        return self.mesh.n_faces

    def bounding_sphere(self) -> tuple[np.ndarray, float]:
        """Centre and radius that frame the default camera (see ``renderer.default_camera``)."""
        return self._sphere

    def colours(self, light: np.ndarray, shading: str = "gouraud") -> Any:
        """Device vertex colours lit from ``light`` (kept per light: a second frame under
        the same light uploads nothing)."""
        if shading not in SHADINGS:
            raise ValueError(f"shading must be one of {', '.join(SHADINGS)}; got {shading!r}")
        light = np.asarray(light, dtype=np.float64)
        key = (shading, light.tobytes())
        colours = self._colours.get(key)
        if colours is None:
            if shading == "gouraud":
                normals = self.normals
            else:
                if self._face_normals is None:
                    self._face_normals = unit_face_normals(self.mesh)
                normals = self._face_normals
            colours = self.machine.asarray(vertex_colours(self.mesh, light, shading, normals))
            if len(self._colours) >= 8:  # an orbit changes the light every frame
                self._colours.pop(next(iter(self._colours)))
            self._colours[key] = colours
        return colours
