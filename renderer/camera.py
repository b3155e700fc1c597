"""Camera, views and the model-view-projection matrix (OpenGL conventions).

Views are given as in Table 1 of Ahrens & Hansen (seed 000): azimuth and elevation in
degrees, ``(0, 0)`` or ``(45, 45)``, and a magnification factor ``M`` that narrows the field
of view (``M(45, 45)`` in the paper). Matrices follow OpenGL: column vectors
(``clip = mvp @ [x, y, z, 1]``), a right-handed eye space looking down -z, and the clip
volume ``-w <= x, y, z <= w`` (``gluLookAt`` and ``gluPerspective``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from renderer.mesh import Mesh

__all__ = [
    "Camera",
    "bounding_sphere",
    "default_camera",
    "look_at",
    "perspective",
    "viewport_matrix",
]

#: Vertical field of view at magnification 1, degrees.
DEFAULT_FOVY = 30.0


@dataclass(frozen=True)
class Camera:
    """A perspective camera.

    Parameters
    ----------
    eye, target, up : (3,) array-likes
        Eye position, the point looked at and the up direction (world space).
    fovy : float
        Vertical field of view in degrees.
    near, far : float
        Distances of the near and far clipping planes (``0 < near < far``).
    """

    eye: tuple[float, float, float]
    target: tuple[float, float, float]
    up: tuple[float, float, float] = (0.0, 1.0, 0.0)
    fovy: float = DEFAULT_FOVY
    near: float = 0.1
    far: float = 100.0

    def view_matrix(self) -> np.ndarray:
        """4x4 world-to-eye matrix (``gluLookAt``)."""
        return look_at(self.eye, self.target, self.up)

    def projection_matrix(self, aspect: float) -> np.ndarray:
        """4x4 perspective projection (``gluPerspective``) for width/height ``aspect``."""
        return perspective(self.fovy, aspect, self.near, self.far)

    def mvp(self, aspect: float) -> np.ndarray:
        """Model-view-projection matrix (the model matrix is the identity)."""
        return self.projection_matrix(aspect) @ self.view_matrix()

    def light_direction(
        self, eye_space: tuple[float, float, float] = (0.3, 0.5, 1.0)
    ) -> np.ndarray:
        """A directional light fixed to the camera, as a unit world-space vector towards it."""
        view = self.view_matrix()
        d = np.asarray(eye_space, dtype=np.float64)
        d = d / np.linalg.norm(d)
        return view[:3, :3].T @ d


def look_at(eye, target, up) -> np.ndarray:
    """``gluLookAt``: the world-to-eye matrix for a camera at ``eye`` looking at ``target``.

    Raises
    ------
    ValueError
        ``eye == target`` or ``up`` parallel to the viewing direction.

    Examples
    --------
    >>> import numpy as np
    >>> (look_at((0, 0, 5), (0, 0, 0), (0, 1, 0)) @ [0, 0, 0, 1]).tolist()  # 5 ahead
    [0.0, 0.0, -5.0, 1.0]
    """
    eye = np.asarray(eye, dtype=np.float64)
    f = np.asarray(target, dtype=np.float64) - eye
    if not np.linalg.norm(f) > 0:
        raise ValueError("camera eye and target coincide")
    f = f / np.linalg.norm(f)
    s = np.cross(f, np.asarray(up, dtype=np.float64))
    if not np.linalg.norm(s) > 1e-12:
        raise ValueError("camera up vector is parallel to the viewing direction")
    s = s / np.linalg.norm(s)
    u = np.cross(s, f)
    m = np.eye(4)
    m[0, :3], m[1, :3], m[2, :3] = s, u, -f
    m[:3, 3] = -m[:3, :3] @ eye
    return m


def perspective(fovy: float, aspect: float, near: float, far: float) -> np.ndarray:
    """``gluPerspective``: maps eye-space depth ``-near..-far`` to NDC ``-1..1``.

    Examples
    --------
    >>> c = perspective(90.0, 1.0, 1.0, 3.0) @ [0, 0, -3, 1]   # a point on the far plane
    >>> float(c[2] / c[3])
    1.0
    """
    if not (0 < near < far) or not (0 < fovy < 180) or not aspect > 0:
        raise ValueError(
            f"bad perspective: fovy={fovy}, aspect={aspect}, near={near}, far={far} "
            "(need 0 < fovy < 180, aspect > 0, 0 < near < far)"
        )
    f = 1.0 / math.tan(math.radians(fovy) / 2.0)
    m = np.zeros((4, 4))
    m[0, 0] = f / aspect
    m[1, 1] = f
    m[2, 2] = (far + near) / (near - far)
    m[2, 3] = 2.0 * far * near / (near - far)
    m[3, 2] = -1.0
    return m


def viewport_matrix(width: int, height: int) -> np.ndarray:
    """``glViewport(0, 0, width, height)`` with ``glDepthRange(0, 1)`` as a 4x4 matrix
    from NDC to window coordinates (y up, pixel centres at half integers)."""
    m = np.eye(4)
    m[0, 0], m[0, 3] = width / 2.0, width / 2.0
    m[1, 1], m[1, 3] = height / 2.0, height / 2.0
    m[2, 2], m[2, 3] = 0.5, 0.5
    return m


def bounding_sphere(mesh: Mesh) -> tuple[np.ndarray, float]:
    """Centre of the bounding box and radius of the sphere around it through the farthest
    vertex (1 for a single point), as :func:`default_camera` frames the mesh.

    Examples
    --------
    >>> from renderer.mesh import as_mesh
    >>> tri = as_mesh((np.array([[0.0, 0, 0], [2, 0, 0], [0, 2, 0]]), np.array([[0, 1, 2]])))
    >>> centre, radius = bounding_sphere(tri)
    >>> centre.tolist(), round(radius, 6)
    ([1.0, 1.0, 0.0], 1.414214)
    """
    lo, hi = mesh.bounds()
    centre = (lo + hi) / 2.0
    radius = float(np.sqrt(((mesh.vertices - centre) ** 2).sum(axis=1).max()))
    if radius == 0.0:
        radius = 1.0  # a single point: any distance will do
    return centre, radius


def default_camera(
    mesh: Mesh,
    view: tuple[float, float] = (45.0, 45.0),
    magnification: float = 1.0,
    *,
    aspect: float = 1.0,
    fovy: float = DEFAULT_FOVY,
) -> Camera:
    """The paper's views: look at the centre of the bounding box from azimuth/elevation.

    The camera sits on the sphere of directions ``(cos el sin az, sin el, cos el cos az)``
    around the bounding-box centre, at the distance where the bounding sphere (centred on
    the box centre, through the farthest vertex) just fits the field of view in the
    narrower image direction; ``(0, 0)`` looks down -z with y up. Magnification ``M``
    narrows the field of view by ``M`` (``tan(fovy'/2) = tan(fovy/2) / M``), keeping the
    camera where it is, so magnified views clip polygons in x and y as in the paper. Near
    and far planes enclose the bounding sphere, so no polygon is clipped in depth.

    Parameters
    ----------
    mesh : Mesh or Scene
        A :class:`~renderer.Scene` gives its bounding sphere, computed once.
    view : (azimuth, elevation) in degrees
    magnification : float, > 0
    aspect : float
        Image width / height.
    fovy : float
        Field of view at magnification 1, degrees.

    Examples
    --------
    >>> import numpy as np
    >>> from renderer.mesh import as_mesh
    >>> tri = as_mesh((np.array([[0.0, 0, 0], [2, 0, 0], [0, 2, 0]]), np.array([[0, 1, 2]])))
    >>> cam = default_camera(tri, (0, 0))           # on the +z axis through the box centre
    >>> np.round(cam.eye, 3).tolist(), [float(t) for t in cam.target]
    ([1.0, 1.0, 5.464], [1.0, 1.0, 0.0])
    """
    try:
        az, el = (float(v) for v in view)
    except (TypeError, ValueError) as err:
        raise ValueError(f"view must be (azimuth, elevation) in degrees, got {view!r}") from err
    if not (math.isfinite(az) and math.isfinite(el)):
        raise ValueError(f"view angles must be finite, got {view!r}")
    if isinstance(magnification, bool) or not isinstance(magnification, int | float | np.number):
        raise TypeError(f"magnification must be a number, got {magnification!r}")
    if not (magnification > 0 and math.isfinite(magnification)):
        raise ValueError(f"magnification must be a positive number, got {magnification!r}")
    if hasattr(mesh, "bounding_sphere"):  # a renderer.Scene keeps it
        centre, radius = mesh.bounding_sphere()
    else:
        centre, radius = bounding_sphere(mesh)
    half = math.radians(fovy) / 2.0
    # fit the sphere in the narrower direction: horizontal half-angle is atan(aspect tan half)
    fit = min(half, math.atan(aspect * math.tan(half)))
    distance = radius / math.sin(fit)
    a, e = math.radians(az), math.radians(el)
    direction = np.array([math.cos(e) * math.sin(a), math.sin(e), math.cos(e) * math.cos(a)])
    up = (0.0, 1.0, 0.0)
    if abs(direction[1]) > 1.0 - 1e-9:  # looking straight down or up: y cannot be up
        up = (0.0, 0.0, -1.0 if direction[1] > 0 else 1.0)
    fovy_m = math.degrees(2.0 * math.atan(math.tan(half) / magnification))
    return Camera(
        eye=tuple(centre + distance * direction),
        target=tuple(centre),
        up=up,
        fovy=fovy_m,
        near=max(distance - 1.05 * radius, 1e-3 * radius),
        far=distance + 1.05 * radius,
    )
