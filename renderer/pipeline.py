"""``render``: the data-parallel polygon renderer on the SIMD machine.

The pipeline of Ortega, Hansen & Ahrens (SC'93) with the load-balanced loops of Ahrens &
Hansen (1995): transform (one VP per vertex), clip (one VP per polygon), scan conversion
(loop over polygons, one task per scan line), z-buffer (loop over spans, one task per pixel),
shading (one VP per pixel). Both loops run through :func:`simd.balance.run_loop` in one of
three forms: ``"original"`` (Figure 1), ``"cost-effective"`` (Figure 2) or ``"expand"``
(all tasks at once); the image is the same whichever form and backend.

:func:`render` checks its options once (:class:`~renderer.settings.FrameSettings`), sets up
the view, and runs the stages (:mod:`renderer.steps`) over one frame state; a frame spread
over MPI ranks is driven by :func:`renderer.ranks.sortlast.render_sort_last` instead.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from typing import Any

import numpy as np

from renderer.driver import frame_view, read_back, run_stages
from renderer.frame import Frame, FrameCounts, FrameStats, LoopWorkloads
from renderer.replays import FrameReplays, replays_on
from renderer.scene.camera import Camera
from renderer.scene.mesh import DeviceMesh, as_mesh
from renderer.scene.prepared import FRAME_WAY_OUT, Scene, mesh_device_bytes
from renderer.settings import LOOP_FORMS, MAX_SIZE, FrameSettings, check_camera_options
from renderer.stages.shading import surface_colours
from renderer.steps import STAGES as STAGE_STEPS
from renderer.steps import FrameState, resolve_samples
from simd.device_memory import out_of_memory, require_device_memory
from simd.errors import SimdError

__all__ = [
    "Frame",
    "FrameCounts",
    "FrameStats",
    "LoopWorkloads",
    "render",
    "loop_workloads",
    "LOOP_FORMS",
    "MAX_SIZE",
    "STAGES",
]

#: The stages of a frame on one process, in order (then ``resolve`` where supersampled).
STAGES = tuple(name for name, _ in STAGE_STEPS)


def render(  # noqa: PLR0913 (the public signature: every picture option by keyword)
    mesh: Any,
    view: tuple[float, float] = (45.0, 45.0),
    magnification: float = 1.0,
    size: int | tuple[int, int] = (512, 512),
    loop: str = "cost-effective",
    machine: Any = None,
    *,
    shading: str = "gouraud",
    camera: Camera | None = None,
    mvp: np.ndarray | None = None,
    progress: Any = None,
    overestimate: Any = None,
    clock: str = "model",
    count_writes: bool = False,
    keep_workloads: bool = False,
    fov: float | None = None,
    distance: float | None = None,
    up: Any = None,
    framing: str = "sphere",
    colour: Any = None,
    values: Any = None,
    colormap: str | None = None,
    value_range: tuple[float, float] | None = None,
    background: Any = None,
    light: Any = None,
    crease_angle: float | None = None,
    supersample: int = 1,
    rank_balance: bool = True,
) -> Frame | None:
    """Render a triangle mesh on the SIMD machine.

    Parameters
    ----------
    mesh : Scene, Mesh, object with ``vertices`` (N, 3) and ``faces`` (M, 3), or such a pair
        A :class:`~renderer.Scene` is already on its machine's device (vertices, faces,
        normals, bounding sphere, the colours of the lights it was lit with): the frame
        uploads none of it again, and renders on the scene's machine. A mesh is validated
        and uploaded for this frame only. The frame is the same either way.
    view : (azimuth, elevation)
        Viewing direction in degrees, as in Table 1 of Ahrens & Hansen (1995): ``(0, 0)``, ``(45,
        45)``.
    magnification : float
        Zoom factor ``M`` (narrows the field of view).
    size : int or (width, height)
        Image size in pixels, at most 4096 each way.
    loop : {"original", "cost-effective", "expand"}
        Form of the scan conversion and z-buffer loops (``run_loop``'s ``form``).
    machine : simd.Machine, optional
        The machine to run on; a default ``Machine()`` when omitted (for a Scene: the
        scene's machine, and no other).
    shading : {"gouraud", "flat"}
    camera : Camera, optional
        Overrides ``view`` and ``magnification`` (for example to put the near plane through
        the mesh).
    mvp : (4, 4) array, optional
        Use this model-view-projection matrix (OpenGL conventions) instead of a camera;
        the light then comes from the fixed world direction (0.3, 0.5, 1).
    progress : tqdm-like, bool or None
        ``True`` shows a tqdm bar over the pipeline stages; an object with ``update`` and
        ``set_postfix_str`` is used as the bar.
    overestimate : optional
        Passed to ``run_loop`` (the balancer's cost overestimate, in iterations).
    clock : {"model", "wall"}
        The clock the cost-effective balancer decides with.
    count_writes : bool
        Also count the fragments sent to every pixel (``Frame.writes``), for testing the
        fill rule.
    keep_workloads : bool
        Also return the workload arrays of both loops in ``frame.stats.workloads``
        (copied to the host; see :func:`loop_workloads`).
    fov, distance, up, framing
        The default camera's vertical field of view in degrees (default 30), the eye's
        distance from the centre of the bounding box, the world direction that is up in the
        image (the view angles turn with it), and ``framing="fit"`` to centre the drawn
        object and fill the frame up to a margin (``"sphere"``, the default, is the
        paper's framing): see :func:`~renderer.scene.camera.default_camera`. Not with ``camera``
        or ``mvp``.
    colour : colour or (N, 3) array, optional
        The surface colour (default ``BASE_COLOUR``): three numbers in [0, 1], ``"#rrggbb"``,
        a matplotlib colour name, or one colour per vertex.
    values, colormap, value_range : optional
        A scalar per vertex (N,) coloured through a matplotlib colormap (default
        ``"viridis"``) over ``value_range`` (default: the values' range); not with
        ``colour``. :func:`~renderer.stages.shading.vertex_scalars` makes height or distance fields.
    background : colour, optional
        Of the pixels nothing is drawn to (default black).
    light : (3,) array-like, optional
        Direction towards the light in eye space (x right, y up, z towards the viewer),
        fixed to the camera; default (0.3, 0.5, 1). With ``mvp``, a world direction.
    crease_angle : float, optional
        Gouraud shading smooths normals only across edges whose faces' normals differ by at
        most this many degrees (see :func:`~renderer.scene.mesh.corner_normals`); sharp edges of
        cubes and nuts stay sharp. Default: smooth everywhere.
    supersample : int
        Anti-aliasing: render ``supersample`` times as wide and high and average each
        block of samples into a pixel. 1 (the default) is the OpenGL-exact image. The
        statistics are those of the supersampled frame; ``depth`` and ``face`` are the
        nearest sample's.
    rank_balance : bool
        On a machine spread over MPI ranks only: balance the clipped triangles across the
        ranks before the loops when the cost model says it pays (default); False never
        moves them. The image is the same either way.

    Returns
    -------
    Frame
        On a machine spread over MPI ranks (``Machine(..., comm=comm)``): the frame on
        rank 0 and None on the other ranks.

    Notes
    -----
    On a machine spread over MPI ranks, ``mesh`` is this rank's share of the triangles
    (possibly none) and the frame is rendered sort-last (:mod:`renderer.ranks.sortlast`): every
    rank renders its share on a one-process machine of its own with the ``loop`` form,
    the triangles balanced across ranks first (:mod:`renderer.ranks.balance`), and the
    ranks composite their depth keys by binary swap (:mod:`renderer.ranks.composite`). Rank 0's
    frame is bit for bit the one-rank frame of the concatenation of the shares in rank
    order (vertices concatenated, faces offset). A share without normals gets vertex
    normals from its own faces, as the concatenation does; give shares their normals
    (``Mesh.normals``) to shade as the unsplit mesh. Not with a Scene, ``framing="fit"``
    or ``keep_workloads``. Errors are raised on every rank alike.

    Raises
    ------
    ValueError
        Bad mesh (empty, wrong shapes, NaN/inf vertices, indices out of range), bad size,
        view, magnification, loop form, shading or clock.
    TypeError
        ``mesh``, ``camera``, ``machine`` or ``magnification`` of the wrong kind.

    Examples
    --------
    >>> import numpy as np, renderer
    >>> quad = (np.array([[0., 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]]),
    ...         np.array([[0, 1, 2], [0, 2, 3]]))
    >>> frame = renderer.render(quad, view=(0, 0), size=64, loop="expand")
    >>> frame.image.shape, bool(frame.coverage.any())
    ((64, 64, 3), True)
    """
    ranks = getattr(machine, "ranks", None) if machine is not None else None
    # On several ranks a bad input on any rank raises on all (no rank waits for the others).
    with ranks.collective_errors() if ranks is not None else nullcontext():
        if ranks is not None:
            _check_ranks(mesh, framing, keep_workloads)
        scene = mesh if isinstance(mesh, Scene) else None
        if scene is None and ranks is None and _on_its_device(mesh, machine):
            scene = Scene(mesh, machine)  # drawn from the device's copy: no read back or upload
        mesh = scene.mesh if scene is not None else as_mesh(mesh, allow_empty=ranks is not None)
        opt = FrameSettings.check(
            size, supersample=supersample, loop=loop, shading=shading, clock=clock,
            overestimate=overestimate, count_writes=count_writes, keep_workloads=keep_workloads,
            background=background, crease_angle=crease_angle, rank_balance=rank_balance,
        )  # fmt: skip
        camera_options = _camera_options(fov, distance, up, framing)
        check_camera_options(camera, mvp, camera_options)
        if machine is not None and not (hasattr(machine, "xp") and hasattr(machine, "scan")):
            raise TypeError(f"machine must be a simd.Machine, got {type(machine).__name__}")
        base = None
        if ranks is None:
            base = surface_colours(mesh.n_vertices, colour, values, colormap, value_range)
        if scene is not None:
            if machine is not None and machine is not scene.machine:
                raise ValueError("a Scene renders on the machine it was prepared on")
            machine = scene.machine
    view = dict(view=view, magnification=magnification, camera=camera, mvp=mvp, light=light,
                camera_options=camera_options)  # fmt: skip
    if ranks is not None:
        from renderer.ranks.sortlast import render_sort_last

        picture = dict(colour=colour, values=values, colormap=colormap, value_range=value_range)
        return render_sort_last(mesh, opt, machine, view, picture, progress)
    m = machine if machine is not None else _default_machine()
    if scene is None:
        require_device_memory(m, mesh_device_bytes(mesh), _mesh_what(mesh), FRAME_WAY_OUT)
    cam, mvp, light = frame_view(scene or mesh, opt, **view)
    state = FrameState(opt, m, mesh, scene, mvp, light, base=base, on_device=m.backend == "cupy")
    stages = STAGE_STEPS + ((("resolve", resolve_samples),) if opt.supersample > 1 else ())
    t_start = time.perf_counter()
    try:
        if replays_on(state, progress):
            if scene.replays is None:
                scene.replays = FrameReplays()
            return scene.replays.render(state, stages, cam)
        run_stages(state, stages, progress)
        return read_back(state, cam, t_start)
    except MemoryError as err:
        if m.backend != "cupy" or isinstance(err, SimdError):
            raise
        # the frame's arrays go with its state; a Scene keeps what it held
        raise out_of_memory(m, err, f"the {opt.width}x{opt.height} frame", FRAME_WAY_OUT) from None


def loop_workloads(
    mesh: Any,
    view: tuple[float, float] = (45.0, 45.0),
    magnification: float = 1.0,
    size: int | tuple[int, int] = (512, 512),
    *,
    machine: Any = None,
) -> LoopWorkloads:
    """The real per-polygon scan-line and per-span pixel workloads of a frame.

    Runs the renderer's own stages (:func:`render` with the ``"expand"`` loops, which
    take no balancing decisions) and returns the workload arrays its scan-conversion and
    z-buffer loops received: the task sets that Ahrens & Hansen (1995) balances, usable by any other
    balancer (for example the MIMD policies of ``simd-emu bench mimd``).

    Parameters
    ----------
    mesh, view, magnification, size, machine
        As for :func:`render`.

    Returns
    -------
    LoopWorkloads

    Examples
    --------
    >>> import numpy as np
    >>> quad = (np.array([[0., 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]]),
    ...         np.array([[0, 1, 2], [0, 2, 3]]))
    >>> w = loop_workloads(quad, view=(0, 0), size=32)
    >>> w.scan.shape, bool(w.zbuffer.size <= w.scan.sum()), bool((w.zbuffer > 0).all())
    ((2,), True, True)
    """
    frame = render(
        mesh,
        view=view,
        magnification=magnification,
        size=size,
        loop="expand",
        machine=machine,
        keep_workloads=True,
    )
    return frame.stats.workloads


def _mesh_what(mesh: Any) -> str:
    return f"the mesh ({mesh.n_faces:,} triangles)"


def _on_its_device(mesh: Any, machine: Any) -> bool:
    """Whether ``mesh`` is a DeviceMesh to render on the device holding it."""
    return isinstance(mesh, DeviceMesh) and (machine is None or mesh.on(machine) is not None)


def _default_machine() -> Any:
    from simd import Machine

    return Machine()


def _camera_options(fov: Any, distance: Any, up: Any, framing: str) -> dict[str, Any]:
    """The default camera's options that were given."""
    options = {
        name: value
        for name, value in (("fovy", fov), ("distance", distance), ("up", up))
        if value is not None
    }
    if framing != "sphere":
        options["framing"] = framing
    return options


def _check_ranks(mesh: Any, framing: str, keep_workloads: bool) -> None:
    """What a frame spread over MPI ranks does not take (one-line errors)."""
    if isinstance(mesh, Scene):
        raise ValueError(
            "a Scene lives on one process; on several MPI ranks give each rank its mesh share"
        )
    if framing == "fit":
        raise ValueError("framing='fit' is not supported on several MPI ranks; use 'sphere'")
    if keep_workloads:
        raise ValueError("keep_workloads is not supported on several MPI ranks")
