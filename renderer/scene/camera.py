"""Camera, views and the model-view-projection matrix (OpenGL conventions).

Views are named as in Table 1 of Ahrens & Hansen (1995), ``(0, 0)``, ``(45, 45)`` and
``M(...)`` when magnified; the paper defines neither the angles nor the factor. Here they
are azimuth and elevation in degrees and a factor ``M`` (2 in the built-in views) that
narrows the field of view. Matrices follow OpenGL: column vectors
(``clip = mvp @ [x, y, z, 1]``), a right-handed eye space looking down -z, and the clip
volume ``-w <= x, y, z <= w`` (``gluLookAt`` and ``gluPerspective``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from renderer.scene.mesh import Mesh, as_mesh

__all__ = [
    "FIT_MARGIN",
    "FRAMINGS",
    "Camera",
    "bounding_sphere",
    "default_camera",
    "look_at",
    "perspective",
    "sphere_of",
    "viewport_matrix",
]

#: Vertical field of view at magnification 1, degrees.
DEFAULT_FOVY = 30.0
#: The default light's direction in eye space (towards the light; x right, y up, z back).
EYE_LIGHT = (0.3, 0.5, 1.0)


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
        return self._view.copy()

    @functools.cached_property
    def _view(self) -> np.ndarray:
        # Made once per camera (a frame asks for it twice: mvp and light); callers of
        # view_matrix get a copy, so this one is never written to.
        return look_at(self.eye, self.target, self.up)

    def projection_matrix(self, aspect: float) -> np.ndarray:
        """4x4 perspective projection (``gluPerspective``) for width/height ``aspect``."""
        return perspective(self.fovy, aspect, self.near, self.far)

    def mvp(self, aspect: float) -> np.ndarray:
        """Model-view-projection matrix (the model matrix is the identity)."""
        # Kept per aspect (a Scene's frames of one view reuse the camera); a copy each
        # call, since callers own the matrix they get.
        cached = self._mvp.get(aspect)
        if cached is None:
            cached = self._mvp[aspect] = self.projection_matrix(aspect) @ self._view
        return cached.copy()

    def light_direction(self, eye_space: tuple[float, float, float] = EYE_LIGHT) -> np.ndarray:
        """A directional light fixed to the camera, as a unit world-space vector towards it."""
        if eye_space is EYE_LIGHT:  # the default light: made once per camera
            return self._default_light.copy()
        return self._light(eye_space)

    @functools.cached_property
    def _default_light(self) -> np.ndarray:
        return self._light(EYE_LIGHT)

    def _light(self, eye_space: tuple[float, float, float]) -> np.ndarray:
        d = np.asarray(eye_space, dtype=np.float64)
        return self._view[:3, :3].T @ (d / _norm(d))

    @functools.cached_property
    def _mvp(self) -> dict[float, np.ndarray]:
        return {}


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
    length = _norm(f)
    if not length > 0:
        raise ValueError("camera eye and target coincide")
    f = f / length
    s = _cross(f, np.asarray(up, dtype=np.float64))
    length = _norm(s)
    if not length > 1e-12:
        raise ValueError("camera up vector is parallel to the viewing direction")
    s = s / length
    u = _cross(s, f)
    m = np.eye(4)
    m[0, :3], m[1, :3], m[2, :3] = s, u, -f
    m[:3, 3] = -m[:3, :3] @ eye
    return m


def _norm(v: np.ndarray) -> float:
    """``numpy.linalg.norm`` of a float64 vector, as it computes it (the square root of
    ``v.dot(v)``, so the same bits) without its general-case checks (every frame).

    Examples
    --------
    >>> v = np.array([0.3, 0.5, 1.0])
    >>> bool(_norm(v) == np.linalg.norm(v))
    True
    """
    return math.sqrt(v.dot(v))


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``numpy.cross`` of two 3-vectors, with its operations (each product rounded, then
    the difference), without its general-shape machinery (once per frame, every frame).

    Examples
    --------
    >>> a, b = np.array([1.0, 2.0, 3.0]), np.array([-0.5, 4.0, 0.25])
    >>> bool((_cross(a, b) == np.cross(a, b)).all())
    True
    """
    a0, a1, a2 = a.tolist()
    b0, b1, b2 = b.tolist()
    return np.array([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0])


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
    >>> from renderer.scene.mesh import as_mesh
    >>> tri = as_mesh((np.array([[0.0, 0, 0], [2, 0, 0], [0, 2, 0]]), np.array([[0, 1, 2]])))
    >>> centre, radius = bounding_sphere(tri)
    >>> centre.tolist(), round(radius, 6)
    ([1.0, 1.0, 0.0], 1.414214)
    """
    return sphere_of(mesh.vertices, fetch=lambda *a: tuple(np.asarray(x) for x in a))


def sphere_of(vertices: Any, fetch: Any) -> tuple[np.ndarray, float]:
    """:func:`bounding_sphere` of ``vertices`` (N, 3) float64, NumPy or device arrays alike
    (the same bits: minima and maxima, and three squares summed in a fixed order);
    ``fetch`` brings the centre and the squared radius to the host (``Machine.fetch``)."""
    lo, hi = vertices.min(axis=0), vertices.max(axis=0)
    centre = (lo + hi) / 2.0
    d = vertices - centre
    r2 = (d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2]).max()
    centre, r2 = fetch(centre, r2)
    radius = float(np.sqrt(r2))
    if radius == 0.0:
        radius = 1.0  # a single point: any distance will do
    return np.asarray(centre, dtype=np.float64), radius


#: Ways :func:`default_camera` frames the mesh.
FRAMINGS = ("sphere", "fit")
#: Margin of ``framing="fit"``: a fraction of the image's smaller side left on each side.
FIT_MARGIN = 0.05


def default_camera(  # noqa: PLR0913 (the public signature)
    mesh: Mesh,
    view: tuple[float, float] = (45.0, 45.0),
    magnification: float = 1.0,
    *,
    aspect: float = 1.0,
    fovy: float = DEFAULT_FOVY,
    distance: float | None = None,
    up: tuple[float, float, float] | None = None,
    framing: str = "sphere",
    margin: float = FIT_MARGIN,
) -> Camera:
    """The paper's views: look at the centre of the bounding box from azimuth/elevation.

    The camera sits on the sphere of directions ``(cos el sin az, sin el, cos el cos az)``
    around the bounding-box centre, at the distance where the bounding sphere (centred on
    the box centre, through the farthest vertex) just fits the field of view in the
    narrower image direction; ``(0, 0)`` looks down -z with y up. Magnification ``M``
    narrows the field of view by ``M`` (``tan(fovy'/2) = tan(fovy/2) / M``), keeping the
    camera where it is, so magnified views clip polygons in x and y as in the paper. Near
    and far planes enclose the bounding sphere, so no polygon is clipped in depth.

    This framing (``framing="sphere"``, the default) is the one of the paper's tables and
    the golden figures, and does not change. ``framing="fit"`` instead places the camera
    (same viewing direction and field of view) so that the projected vertices are centred
    in the image and their extent fills it up to ``margin`` in the tighter direction:
    the drawn object's bounding box is centred, with ``margin`` times the smaller image
    side left free at the two closest sides. The sphere framing leaves a sphere touching
    all four sides, and other objects off-centre (their bounding sphere is centred, not
    what is seen).

    Parameters
    ----------
    mesh : Mesh, Scene, or anything :func:`~renderer.scene.mesh.as_mesh` takes
        A :class:`~renderer.Scene` gives its bounding sphere, computed once.
    view : (azimuth, elevation) in degrees
        Measured about the ``up`` vector: elevation 90 looks down along ``-up``.
    magnification : float, > 0
    aspect : float
        Image width / height.
    fovy : float
        Vertical field of view at magnification 1, degrees (0 < fovy < 180).
    distance : float, optional
        Distance of the eye from the bounding-box centre (``framing="sphere"`` only);
        default: where the bounding sphere just fits the field of view.
    up : (3,) array-like, optional
        World direction that points up in the image; default y. The view directions are
        turned with it (the rotation taking y to ``up``), so ``view`` keeps its meaning
        for a z-up mesh with ``up=(0, 0, 1)``.
    framing : {"sphere", "fit"}
    margin : float
        ``framing="fit"``: the free border on each side, as a fraction of the smaller
        image side (0 <= margin < 0.5).

    Examples
    --------
    >>> import numpy as np
    >>> from renderer.scene.mesh import as_mesh
    >>> tri = as_mesh((np.array([[0.0, 0, 0], [2, 0, 0], [0, 2, 0]]), np.array([[0, 1, 2]])))
    >>> cam = default_camera(tri, (0, 0))           # on the +z axis through the box centre
    >>> np.round(cam.eye, 3).tolist(), [float(t) for t in cam.target]
    ([1.0, 1.0, 5.464], [1.0, 1.0, 0.0])
    >>> cam = default_camera(tri, (0, 0), framing="fit")   # the triangle's box is centred
    >>> np.round(cam.eye, 3).tolist()
    [1.0, 1.0, 4.147]
    """
    az, el = _check_view_options(view, magnification, fovy, distance, framing, margin)
    if callable(getattr(mesh, "bounding_sphere", None)):  # a renderer.Scene keeps it
        centre, radius = mesh.bounding_sphere()
    else:
        mesh = mesh if isinstance(mesh, Mesh) else as_mesh(mesh)  # a trimesh, a pair, ...
        centre, radius = bounding_sphere(mesh)
    half = math.radians(fovy) / 2.0
    # fit the sphere in the narrower direction: horizontal half-angle is atan(aspect tan half)
    fit = min(half, math.atan(aspect * math.tan(half)))
    if distance is None:
        distance = radius / math.sin(fit)
    direction, view_up = _view_direction(az, el, up)
    fovy_m = math.degrees(2.0 * math.atan(math.tan(half) / magnification))
    if not (fovy_m > 0 and math.isfinite(1.0 / math.tan(math.radians(fovy_m) / 2.0))):
        raise ValueError(
            f"magnification {magnification!r} is too large: it leaves a field of view of "
            f"{fovy_m:g} degrees, beyond floating point"
        )
    if framing == "fit":
        vertices = mesh.mesh.vertices if hasattr(mesh, "mesh") else mesh.vertices
        eye, target, near, far = _fit(vertices, direction, view_up, half, aspect, margin, radius)
        return Camera(eye=eye, target=target, up=view_up, fovy=fovy_m, near=near, far=far)
    near, far = max(distance - 1.05 * radius, 1e-3 * radius), distance + 1.05 * radius
    if not near < far:  # the object is lost in the rounding of the distance
        raise ValueError(
            f"the camera is {distance:g} away from an object {2 * radius:g} across (a field "
            "of view too narrow or a distance too large): its near and far planes coincide"
        )
    return Camera(
        eye=tuple(centre + distance * direction),
        target=tuple(centre),
        up=view_up,
        fovy=fovy_m,
        near=near,
        far=far,
    )


def _check_view_options(view, magnification, fovy, distance, framing, margin):
    """The view's (azimuth, elevation) in degrees after checking the camera's options (a
    one-line error for each bad one)."""
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
    if not (_number(fovy) and 0 < fovy < 180):
        raise ValueError(f"field of view must be a number of degrees in (0, 180), got {fovy!r}")
    if framing not in FRAMINGS:
        raise ValueError(f"framing must be one of {', '.join(FRAMINGS)}; got {framing!r}")
    if distance is not None:
        if not (_number(distance) and distance > 0 and math.isfinite(distance)):
            raise ValueError(f"distance must be a positive number, got {distance!r}")
        if framing == "fit":
            raise ValueError(
                "framing='fit' chooses the distance itself; give the field of view instead"
            )
    if not (_number(margin) and 0 <= margin < 0.5):
        raise ValueError(f"margin must be a fraction in [0, 0.5), got {margin!r}")
    return az, el


def _view_direction(az: float, el: float, up) -> tuple[np.ndarray, tuple]:
    """The unit direction from the target to the eye for azimuth ``az`` and elevation ``el``
    (degrees), and the up vector of the view, both turned so that y goes to ``up``."""
    a, e = math.radians(az), math.radians(el)
    direction = np.array([math.cos(e) * math.sin(a), math.sin(e), math.cos(e) * math.cos(a)])
    view_up = (0.0, 1.0, 0.0)
    if abs(direction[1]) > 1.0 - 1e-9:  # looking straight down or up: y cannot be up
        view_up = (0.0, 0.0, -1.0 if direction[1] > 0 else 1.0)
    if up is not None:  # turn the whole frame of directions so that y goes to `up`
        turn = _rotation_from_y(unit_vector(up, "up"))
        direction = turn @ direction
        view_up = tuple(float(c) for c in turn @ np.asarray(view_up))
    return direction, view_up


def _number(v) -> bool:
    return isinstance(v, int | float | np.number) and not isinstance(v, bool | np.bool_)


def unit_vector(v, name: str) -> np.ndarray:
    """``v`` as a unit 3-vector, or a ValueError naming ``name``."""
    try:
        a = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be 3 numbers, got {v!r}") from err
    if a.shape != (3,) or not np.isfinite(a).all():
        raise ValueError(f"{name} must be 3 finite numbers, got {v!r}")
    with np.errstate(over="ignore", under="ignore"):
        n = float(np.linalg.norm(a))
    if not math.isfinite(n) or (n == 0 and a.any()):
        # the squares overflow (1e308) or underflow (1e-320): the same direction, rescaled
        # (ordinary vectors keep the plain division, bit for bit)
        a = a / np.abs(a).max()
        n = float(np.linalg.norm(a))
    if not n > 0:
        raise ValueError(f"{name} must not be the zero vector")
    return a / n


def _rotation_from_y(up: np.ndarray) -> np.ndarray:
    """The rotation taking +y to the unit vector ``up`` about their common normal (Rodrigues);
    about x for ``up = -y``."""
    y = np.array([0.0, 1.0, 0.0])
    c = float(y @ up)
    if c < -1.0 + 1e-12:
        return np.diag([1.0, -1.0, -1.0])
    v = np.cross(y, up)
    k = np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])
    return np.eye(3) + k + k @ k / (1.0 + c)


def _fit(vertices, direction, up, half, aspect, margin, radius):
    """Eye, target, near and far of ``framing="fit"``: the camera looking along
    ``-direction`` whose frustum, narrowed by the margin, touches the vertices in the
    tighter image direction and has them centred in both.

    With the orientation fixed (right ``s``, up ``u``, forward ``f``), a point is inside the
    frustum's right and left planes ``x/depth = +-t`` when ``(s - t f).p <= (s - t f).eye``
    and ``(s + t f).p >= (s + t f).eye``: touching both fixes ``s.eye`` and ``f.eye``
    directly. The farther of the two directions' eye depths wins; the other direction is
    then centred by bisection (the centre of the projected extent moves monotonically).
    """
    f = -np.asarray(direction, dtype=np.float64)
    f = f / np.linalg.norm(f)
    s = np.cross(f, np.asarray(up, dtype=np.float64))
    s = s / np.linalg.norm(s)
    u = np.cross(s, f)
    p = np.asarray(vertices, dtype=np.float64)
    ps, pu, pf = p @ s, p @ u, p @ f
    tan_y = math.tan(half)
    tan_x = aspect * tan_y
    # the margin, a fraction of the smaller side, in each direction's half-extent
    tx = tan_x * (1.0 - 2.0 * margin * min(1.0, 1.0 / aspect))
    ty = tan_y * (1.0 - 2.0 * margin * min(1.0, aspect))

    def touching(q: np.ndarray, t: float) -> float:
        """f.eye at which the planes of half-angle tangent ``t`` touch coordinates ``q``."""
        right, left = float((q - t * pf).max()), float((q + t * pf).min())
        return (left - right) / (2.0 * t)

    fe = min(touching(ps, tx), touching(pu, ty))
    if not float(pf.min()) - fe > 1e-9 * radius:  # a point or a segment along the view
        fe = float(pf.min()) - radius / math.sin(min(half, math.atan(tan_x)))
    depth = pf - fe

    def centred(q: np.ndarray) -> float:
        """The eye coordinate along ``q``'s axis that centres ``q / depth`` (bisection)."""
        lo, hi = float(q.min()), float(q.max())
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            t = (q - mid) / depth
            if float(t.max() + t.min()) > 0.0:
                lo = mid
            else:
                hi = mid
            if hi - lo <= 1e-15 * max(abs(lo), abs(hi), radius):
                break
        return 0.5 * (lo + hi)

    eye = centred(ps) * s + centred(pu) * u + fe * f
    ahead = float(depth.max())
    target = eye + ahead * f
    near = max(float(depth.min()) - 0.05 * radius, 1e-3 * radius)
    far = ahead + 0.05 * radius
    return tuple(float(c) for c in eye), tuple(float(c) for c in target), near, far
