"""``render``: the data-parallel polygon renderer on the SIMD machine.

The pipeline of Ortega, Hansen & Ahrens (SC'93) with the load-balanced loops of Ahrens &
Hansen (1995): transform (one VP per vertex), clip (one VP per polygon), scan conversion
(loop over polygons, one task per scan line), z-buffer (loop over spans, one task per pixel),
shading (one VP per pixel). Both loops run through :func:`simd.balance.run_loop` in one of
three forms: ``"original"`` (Figure 1), ``"cost-effective"`` (Figure 2) or ``"expand"``
(all tasks at once); the image is the same whichever form and backend.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from typing import Any

import numpy as np

from renderer.camera import Camera, default_camera, unit_vector
from renderer.clip import clip_triangles
from renderer.frame import Frame, FrameCounts, FrameStats, LoopWorkloads
from renderer.mesh import as_mesh
from renderer.picture import background_rgb, check_supersample, fill_background, resolve
from renderer.scan import ScanConverter, setup_triangles
from renderer.scene import Scene, vertex_colours
from renderer.shading import shade_pixels, surface_colours
from renderer.transform import to_clip
from renderer.zbuffer import EMPTY, ZBufferBody, decode_keys, id_bits
from simd.balance import run_loop
from simd.stats import PhaseRecord

__all__ = [
    "Frame",
    "FrameCounts",
    "FrameStats",
    "LoopWorkloads",
    "render",
    "loop_workloads",
    "LOOP_FORMS",
    "MAX_SIZE",
]

LOOP_FORMS = ("original", "cost-effective", "expand")
SHADINGS = ("gouraud", "flat")
MAX_SIZE = 4096
LOOPS = ("scan-conversion", "z-buffer")
#: The pipeline's stages, in order; each is a machine phase of the same name.
STAGES = ("transform", "clip", "setup", "scan-conversion", "z-buffer", "shading")

# Elementwise operations per VP charged to the model clock by the stages outside the
# balanced loops (hand-counted; the golden test pins their effect).
#: Per vertex: the 4x4 transform (28: 16 multiplies, 12 adds).
TRANSFORM_OPS = 28
#: Per pixel: decoding the depth key, the attribute interpolation and the colour.
SHADING_OPS = 40


def _parse_size(size: Any) -> tuple[int, int]:
    """``N`` or ``(width, height)`` of whole numbers of pixels -> (width, height).

    >>> _parse_size(64), _parse_size((640, 480))
    ((64, 64), (640, 480))
    """

    def whole(v: Any) -> bool:
        return isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_)

    if whole(size):
        size = (size, size)
    try:
        w, h = size
    except (TypeError, ValueError) as err:
        raise ValueError(f"size must be an int or (width, height), got {size!r}") from err
    if not (whole(w) and whole(h)):
        raise ValueError(f"size must be whole numbers of pixels, got {size!r}")
    w, h = int(w), int(h)
    if not (1 <= w <= MAX_SIZE and 1 <= h <= MAX_SIZE):
        raise ValueError(f"image size must be 1..{MAX_SIZE} in each direction, got {w}x{h}")
    return w, h


def _default_machine() -> Any:
    from simd import Machine

    return Machine()


def render(
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
        paper's framing): see :func:`~renderer.camera.default_camera`. Not with ``camera``
        or ``mvp``.
    colour : colour or (N, 3) array, optional
        The surface colour (default ``BASE_COLOUR``): three numbers in [0, 1], ``"#rrggbb"``,
        a matplotlib colour name, or one colour per vertex.
    values, colormap, value_range : optional
        A scalar per vertex (N,) coloured through a matplotlib colormap (default
        ``"viridis"``) over ``value_range`` (default: the values' range); not with
        ``colour``. :func:`~renderer.shading.vertex_scalars` makes height or distance fields.
    background : colour, optional
        Of the pixels nothing is drawn to (default black).
    light : (3,) array-like, optional
        Direction towards the light in eye space (x right, y up, z towards the viewer),
        fixed to the camera; default (0.3, 0.5, 1). With ``mvp``, a world direction.
    crease_angle : float, optional
        Gouraud shading smooths normals only across edges whose faces' normals differ by at
        most this many degrees (see :func:`~renderer.mesh.corner_normals`); sharp edges of
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
    (possibly none) and the frame is rendered sort-last (:mod:`renderer.sortlast`): every
    rank renders its share on a one-process machine of its own with the ``loop`` form,
    the triangles balanced across ranks first (:mod:`renderer.rank_balance`), and the
    ranks composite their depth keys by binary swap (:mod:`renderer.composite`). Rank 0's
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
        mesh = scene.mesh if scene is not None else as_mesh(mesh, allow_empty=ranks is not None)
        width, height = _parse_size(size)
        if loop not in LOOP_FORMS:
            raise ValueError(f"loop must be one of {', '.join(LOOP_FORMS)}; got {loop!r}")
        if shading not in SHADINGS:
            raise ValueError(f"shading must be one of {', '.join(SHADINGS)}; got {shading!r}")
        if clock not in ("model", "wall"):
            raise ValueError(f"clock must be 'model' or 'wall', got {clock!r}")
        if camera is not None and not isinstance(camera, Camera):
            raise TypeError(f"camera must be a renderer.Camera, got {type(camera).__name__}")
        if machine is not None and not (hasattr(machine, "xp") and hasattr(machine, "scan")):
            raise TypeError(f"machine must be a simd.Machine, got {type(machine).__name__}")
        out_w, out_h = width, height
        k_ss = check_supersample(supersample, width, height, MAX_SIZE)
        if k_ss > 1:
            if count_writes:
                raise ValueError("count_writes counts fragments per pixel; not with supersample")
            width, height = width * k_ss, height * k_ss
        camera_options: dict[str, Any] = {
            name: value
            for name, value in (("fovy", fov), ("distance", distance), ("up", up))
            if value is not None
        }
        if framing != "sphere":
            camera_options["framing"] = framing
        if camera_options and (camera is not None or mvp is not None):
            raise ValueError(
                "fov, distance, up and framing set up the default camera; not with camera= or mvp="
            )
        if crease_angle is not None and not (
            isinstance(crease_angle, int | float | np.number) and 0 <= crease_angle <= 180
        ):
            raise ValueError(f"crease_angle must be in [0, 180] degrees, got {crease_angle!r}")
        if ranks is None:
            base = surface_colours(len(mesh.vertices), colour, values, colormap, value_range)
        if background is not None:
            background_rgb(background)  # checked before any work
        if scene is not None:
            if machine is not None and machine is not scene.machine:
                raise ValueError("a Scene renders on the machine it was prepared on")
            machine = scene.machine
    sortlast = framed = None
    if ranks is not None:
        from renderer.sortlast import SortLast

        sortlast = SortLast(machine)
        sortlast.check_faces(mesh.n_faces)
        if values is not None and value_range is None:
            value_range = sortlast.value_range(values)  # the whole mesh's, as on one rank
        with ranks.collective_errors():
            base = surface_colours(len(mesh.vertices), colour, values, colormap, value_range)
        framed = sortlast.sphere(mesh.vertices)
        dm, machine = machine, sortlast.local  # the stages run on the rank's own machine
    m = machine if machine is not None else _default_machine()
    xp = m.xp
    on_device = m.backend == "cupy" and sortlast is None  # the counters of setup (below)
    aspect = width / height
    if mvp is not None:
        mvp = np.asarray(mvp, dtype=np.float64)
        if mvp.shape != (4, 4) or not np.isfinite(mvp).all():
            raise ValueError(f"mvp must be a finite 4x4 matrix, got shape {mvp.shape}")
        cam = camera
        if light is None:
            light = np.array([0.3, 0.5, 1.0]) / np.linalg.norm([0.3, 0.5, 1.0])
        else:
            light = unit_vector(light, "light")
    else:
        if camera is not None:
            cam = camera
        elif scene is not None:  # the scene keeps the camera of its last view
            cam = scene.default_camera(view, magnification, aspect=aspect, **camera_options)
        else:
            cam = default_camera(
                framed or mesh, view, magnification, aspect=aspect, **camera_options
            )
        mvp = cam.mvp(aspect)
        light = (
            cam.light_direction()
            if light is None
            else cam.light_direction(tuple(unit_vector(light, "light")))
        )
    corners = shading == "flat" or crease_angle is not None

    bar = None
    own_bar = False
    if progress is True:
        from tqdm.auto import tqdm

        bar, own_bar = tqdm(total=len(STAGES), desc="render", unit="stage", leave=False), True
    elif progress not in (None, False) and hasattr(progress, "update"):
        bar = progress
    stages: dict[str, PhaseRecord] = {}

    def stage(name: str) -> Any:
        """The bar names the stage; the stage's work runs in the machine phase returned."""
        if bar is not None:
            bar.set_postfix_str(name)
        return m.phase(name)

    def balanced_loop(name: str, workload: Any, body: Any, k: int, stats: Any = None) -> Any:
        """One of the two balanced loops (the ``k``-th overestimate), as ``loop`` says;
        ``stats``: the workload's (sum, max, min) when known on the host already."""
        return run_loop(
            workload,
            body,
            machine=m,
            form=loop,
            name=name,
            task_cost=body.TASK_COST,
            overestimate=_pick(overestimate, k),
            clock=clock,
            workload_stats=stats,
        )

    def loop_stage(name: str) -> None:
        """A loop stage: run_loop opens its machine phase, and its record is the stage's."""
        if bar is not None:
            bar.set_postfix_str(name)

    def done(name: str, record: PhaseRecord) -> None:
        stages[name] = record
        if bar is not None:
            bar.update(1)

    t_start = time.perf_counter()
    try:
        with stage("transform") as record:
            if scene is not None:
                vertices, faces = scene.vertices, scene.faces
            else:
                vertices = m.asarray(mesh.vertices, dtype=np.float64)
                faces = m.asarray(mesh.faces, dtype=np.int64)
            clip = to_clip(xp, vertices, mvp)
            # flat: a face's colour on all three of its corners (attributes per corner)
            # with a crease angle too: the corners' own normals
            if base is None and crease_angle is None:
                vcol = (
                    scene.colours(light, shading)
                    if scene is not None
                    else vertex_colours(mesh, light, shading)
                )
            elif scene is not None:
                vcol = scene.colours(light, shading, base=base, crease_angle=crease_angle)
            else:
                vcol = vertex_colours(mesh, light, shading, base=base, crease_angle=crease_angle)
            m.charge("elementwise", len(mesh.vertices), ops=TRANSFORM_OPS)
        done("transform", record)
        with stage("clip") as record:
            if not corners:
                tris = clip_triangles(xp, clip, faces, m.asarray(vcol), width, height, machine=m)
            else:
                # give every corner its own vertex so the face colour rides along
                corner = xp.arange(3 * len(mesh.faces), dtype=xp.int64).reshape(-1, 3)
                ccol = m.asarray(vcol)
                tris = clip_triangles(
                    xp, clip[faces.reshape(-1)], corner, ccol, width, height, machine=m
                )
        done("clip", record)
        if sortlast is not None:
            with dm.phase("rank-balance") as record:
                tris = sortlast.balance(tris, len(mesh.faces), width, height, rank_balance)
            done("rank-balance", record)
        with stage("setup") as record:
            # On a GPU the frame's two counters, degenerate triangles and covered pixels,
            # are counted by the setup and decoding kernels into one zeroed pair (setup's
            # own zeroing otherwise) and read back with the image: no count on the host.
            counters = xp.zeros(2, dtype=xp.int64) if on_device else None
            setup = setup_triangles(
                xp, tris.points, width, height, corners=tris.corners, machine=m,
                count=None if counters is None else counters[0:1],
            )  # fmt: skip
        done("setup", record)
        n_tri = int(tris.face.shape[0])
        loop_stage("scan-conversion")
        scanner = ScanConverter(xp, setup, machine=m)
        res_scan = balanced_loop("scan-conversion", setup.workload, scanner, 0)
        spans = scanner.spans()
        span_stats = scanner.workload_stats
        scan_workload = setup.workload if keep_workloads else None
        del scanner
        setup.keep_for_shading()  # what only scan conversion read goes before the z-buffer
        done("scan-conversion", res_scan.record)
        # on several ranks: the one-rank frame's index bits and drawing indices
        bits = id_bits(max(n_tri, 1)) if sortlast is None else sortlast.bits
        first = 0 if sortlast is None else sortlast.first
        zbuffer = xp.full(width * height, EMPTY, dtype=xp.int64)
        writes = xp.zeros(width * height, dtype=xp.int64) if count_writes else None
        loop_stage("z-buffer")
        body = ZBufferBody(xp, spans, zbuffer, width, bits, machine=m, writes=writes, first=first)
        # the span lengths' sum, max and min: read by the scan converter with its counts
        res_z = balanced_loop("z-buffer", spans.length, body, 1, span_stats)
        n_spans = int(spans.length.shape[0])
        span_lengths = spans.length if keep_workloads else None
        del spans, body  # shading reads the z-buffer, not the spans
        done("z-buffer", res_z.record)
        with stage("shading") as record:
            colours = (tris.points, tris.values, tris.corners)
            pixel_count = None if counters is None else counters[1:2]
            covered, tri_px, depth = decode_keys(
                xp, zbuffer, bits, count=pixel_count if k_ss == 1 else None
            )
            if k_ss == 1 and sortlast is None:
                del zbuffer  # decoded: the image-sized keys go before the shading's arrays
            if first:
                tri_px = tri_px - first  # the rank's own triangles (uncovered pixels: masked)
            if m.backend == "cupy" and n_tri:
                # Every pixel is shaded and the uncovered ones masked afterwards: packing
                # the covered ones first would wait for their number (a host sync).
                tri_all = xp.where(covered, tri_px, 0)
                with np.errstate(all="ignore"):  # the uncovered pixels' values are dropped
                    rgb = shade_pixels(
                        xp, tri_all, xp.arange(width * height), width, setup, *colours
                    )
                image = xp.where(covered[:, None], rgb, xp.uint8(0))
                face = xp.where(covered, tris.face[tri_all], -1)
                del tri_all, rgb
            else:
                pix = xp.nonzero(covered)[0]
                tri_hit = tri_px[pix]
                rgb = shade_pixels(xp, tri_hit, pix, width, setup, *colours)
                image = xp.zeros((width * height, 3), dtype=xp.uint8)
                image[pix] = rgb
                face = xp.full(width * height, -1, dtype=xp.int64)
                face[pix] = tris.face[tri_hit]
                del pix, tri_hit, rgb  # per covered pixel: gone before the read back
            if background is not None and sortlast is None:
                image = fill_background(xp, m, image, covered, background)
            if k_ss > 1 and sortlast is None:
                image, keys = resolve(xp, image, zbuffer, out_w, out_h, k_ss)
                covered, tri_px, depth = decode_keys(xp, keys, bits, count=pixel_count)
                if n_tri:
                    face = xp.where(covered, tris.face[xp.where(covered, tri_px, 0)], -1)
                else:
                    face = xp.full(out_w * out_h, -1, dtype=xp.int64)
            m.charge("elementwise", width * height, ops=SHADING_OPS)
            del covered, tri_px  # read by nothing after shading
        done("shading", record)
        if sortlast is not None:
            rank_counts = sortlast.sum_counts(
                [mesh.n_faces, tris.n_clipped, tris.n_rejected, n_tri]
                + [int(setup.n_degenerate), n_spans, res_z.total_tasks]
            )
            with dm.phase("composite") as record:
                merged = sortlast.composite(
                    m.asnumpy(zbuffer), m.asnumpy(image), m.asnumpy(face), _host(m, writes)
                )
            done("composite", record)
            if merged is None:
                return None  # rank 0 holds the frame
            zbuffer, image, face, writes = (None if a is None else m.asarray(a) for a in merged)
            covered, _, depth = decode_keys(xp, zbuffer, bits)
            if background is not None:
                image = fill_background(xp, m, image, covered, background)
            if k_ss > 1:
                face = _nearest(xp, zbuffer, face, out_w, out_h, k_ss)
                image, keys = resolve(xp, image, zbuffer, out_w, out_h, k_ss)
                covered, _, depth = decode_keys(xp, keys, bits)
    finally:
        if own_bar:
            bar.close()

    # GL window rows go up from the bottom; images go down from the top. The rows are
    # reversed by the read back's own copy on the device (views here, Machine.fetch).
    def top_down(a: Any, w: int, h: int, *shape: int) -> Any:
        return a.reshape(h, w, *shape)[::-1]

    # One read back for the frame's results (one host sync on a GPU), which also reports
    # the machine's deferred address checks (Machine.fetch).
    image, depth = top_down(image, out_w, out_h, 3), top_down(depth, out_w, out_h)
    face = top_down(face, out_w, out_h)
    if m.backend != "cupy":
        # On the host the read back is the flip's copy: made here one array at a time, each
        # original going as its copy is made (not all three held twice at the peak).
        image = np.ascontiguousarray(image)
        depth = np.ascontiguousarray(depth)
        face = np.ascontiguousarray(face)
    results = [image, depth, face, setup.n_degenerate if counters is None else counters]
    if writes is not None:
        results.append(top_down(writes, width, height))
    if keep_workloads:
        results += [scan_workload, span_lengths]
    host = m.fetch(*results)
    image, depth, face = host[:3]
    if counters is None:
        n_degenerate = int(host[3])
        # face is -1 or a face index; counting the -1s is the cheaper test on the host
        pixels = face.size - int(np.count_nonzero(face == -1))
    else:
        n_degenerate, pixels = host[3].tolist()

    counts = FrameCounts(
        triangles=mesh.n_faces,
        clipped=tris.n_clipped,
        rejected=tris.n_rejected,
        drawn=n_tri - n_degenerate,
        degenerate=n_degenerate,
        spans=n_spans,
        fragments=res_z.total_tasks,  # the sum of the span lengths, read by run_loop
        pixels=pixels,
    )
    if sortlast is not None:  # the whole frame's, summed over the ranks
        faces_all, clipped, rejected, tris_all, degenerate, n_spans, fragments = rank_counts
        counts = FrameCounts(
            triangles=faces_all,
            clipped=clipped,
            rejected=rejected,
            drawn=tris_all - degenerate,
            degenerate=degenerate,
            spans=n_spans,
            fragments=fragments,
            pixels=counts.pixels,
        )
    workloads = None
    if keep_workloads:
        workloads = LoopWorkloads(scan=host[-2].astype(np.int64), zbuffer=host[-1].astype(np.int64))
    writes = host[4] if writes is not None else None
    stats = FrameStats(
        stages=stages,
        loops={"scan-conversion": res_scan, "z-buffer": res_z},
        counts=counts,
        machine=m.stats,
        wall=time.perf_counter() - t_start,
        workloads=workloads,
        ranks=None if sortlast is None else sortlast.counts.to_dict(),
    )
    return Frame(
        image=image,
        depth=depth,
        face=face,
        mvp=mvp,
        camera=cam,
        loop=loop,
        stats=stats,
        writes=writes,
    )


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


def _host(m: Any, a: Any) -> np.ndarray | None:
    return None if a is None else m.asnumpy(a)


def _nearest(xp: Any, keys: Any, face: Any, width: int, height: int, k: int) -> Any:
    """The face of the nearest sample (smallest key) of each ``k`` x ``k`` block, as
    :func:`~renderer.picture.resolve` picks its key (keys of distinct triangles differ)."""
    blocks = keys.reshape(height, k, width, k).transpose(0, 2, 1, 3).reshape(-1, k * k)
    faces = face.reshape(height, k, width, k).transpose(0, 2, 1, 3).reshape(-1, k * k)
    pick = xp.argmin(blocks, axis=1)
    return xp.take_along_axis(faces, pick[:, None], axis=1)[:, 0]


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


def _pick(overestimate: Any, k: int) -> Any:
    """``overestimate`` may be one value for both loops or a pair (scan, z-buffer)."""
    if isinstance(overestimate, tuple | list):
        return overestimate[k]
    return overestimate
