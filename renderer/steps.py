"""The stages of a frame, each a small step over one :class:`FrameState` and its machine.

``transform`` (one VP per vertex) -> ``clip`` (one VP per polygon) -> ``setup`` ->
``scan-conversion`` (a balanced loop over polygons, one task per scan line) -> ``z-buffer``
(a balanced loop over spans, one task per pixel) -> ``shading`` (one VP per pixel), then
``resolve`` where the frame is supersampled. Each stage reads what the earlier ones left in
the state, leaves what the later ones read, and drops what nothing reads any more (so that
a frame's peak memory stays low); each runs in the machine phase of its name (the loops:
the phase their ``run_loop`` opens) and returns that phase's record. The driver
(:func:`renderer.render`) runs them in order; a frame spread over MPI ranks adds its own
(:mod:`renderer.ranks.sortlast`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from renderer.scene.prepared import vertex_colours
from renderer.settings import FrameSettings
from renderer.stages.clip import clip_triangles
from renderer.stages.picture import fill_background, resolve
from renderer.stages.scan import ScanConverter, setup_triangles
from renderer.stages.shading import shade_pixels
from renderer.stages.transform import to_clip
from renderer.stages.zbuffer import EMPTY, ZBufferBody, decode_keys, id_bits
from simd.balance import run_loop
from simd.stats import PhaseRecord

__all__ = [
    "FrameState",
    "STAGES",
    "SHADING_OPS",
    "TRANSFORM_OPS",
    "clip",
    "resolve_samples",
    "scan_conversion",
    "setup",
    "shading",
    "transform",
    "zbuffer",
]

# Elementwise operations per VP charged to the model clock by the stages outside the
# balanced loops (hand-counted; the golden test pins their effect).
#: Per vertex: the 4x4 transform (28: 16 multiplies, 12 adds).
TRANSFORM_OPS = 28
#: Per pixel: decoding the depth key, the attribute interpolation and the colour.
SHADING_OPS = 40


@dataclass
class FrameState:
    """One frame in the making: its settings, the machine the stages run on, and the arrays
    the stages hand on (None once nothing reads them).

    ``bits`` and ``first`` number the triangles in the depth keys: the index bits and the
    drawing index of the first (a rank's share of a frame over MPI ranks draws from
    ``first``). ``counters`` (on a GPU): the degenerate triangles and the covered pixels,
    counted by the kernels and read back with the image.
    """

    settings: FrameSettings
    machine: Any
    mesh: Any
    scene: Any
    mvp: np.ndarray
    light: np.ndarray
    base: Any = None  # the surface colours, or None for the default
    bits: int = 0
    first: int = 0
    on_device: bool = False
    sort_last: bool = False  # spread over MPI ranks: the ranks' driver composites the keys
    stages: dict[str, PhaseRecord] = field(default_factory=dict)
    vertices: Any = None
    faces: Any = None
    clip: Any = None
    vcol: Any = None
    tris: Any = None
    counters: Any = None
    setup: Any = None
    scan: Any = None  # the scan-conversion loop's LoopResult
    spans: Any = None
    span_stats: tuple[int, int, int] | None = None
    scan_workload: Any = None
    zbuf: Any = None  # the z-buffer loop's LoopResult
    n_spans: int = 0
    span_lengths: Any = None
    zbuffer: Any = None  # the depth keys, one per rendered pixel
    writes: Any = None
    image: Any = None
    face: Any = None
    depth: Any = None

    @property
    def xp(self) -> Any:
        return self.machine.xp

    @property
    def n_tri(self) -> int:
        """The clipped triangles' number."""
        return int(self.tris.face.shape[0])


def transform(s: FrameState) -> PhaseRecord:
    """Vertices to clip space, and their colours (lit, as the shading asks)."""
    m, xp, mesh, scene, opt = s.machine, s.xp, s.mesh, s.scene, s.settings
    with m.phase("transform") as record:
        if scene is not None:
            s.vertices, s.faces = scene.vertices, scene.faces
        else:
            s.vertices = m.asarray(mesh.vertices, dtype=np.float64)
            s.faces = m.asarray(mesh.faces, dtype=np.int64)
        s.clip = to_clip(xp, s.vertices, s.mvp)
        # flat: a face's colour on all three of its corners (attributes per corner); with
        # a crease angle too: the corners' own normals
        options = {"base": s.base, "crease_angle": opt.crease_angle}
        s.vcol = (
            scene.colours(s.light, opt.shading, **options)
            if scene is not None
            else vertex_colours(mesh, s.light, opt.shading, **options)
        )
        m.charge("elementwise", mesh.n_vertices, ops=TRANSFORM_OPS)
    return record


def clip(s: FrameState) -> PhaseRecord:
    """The triangles against the near and far planes and the guard band."""
    m, xp = s.machine, s.xp
    width, height = s.settings.render_size
    with m.phase("clip") as record:
        if not s.settings.corners:
            s.tris = clip_triangles(xp, s.clip, s.faces, m.asarray(s.vcol), width, height,
                                    machine=m)  # fmt: skip
        else:
            # give every corner its own vertex so the face colour rides along
            corner = xp.arange(3 * s.mesh.n_faces, dtype=xp.int64).reshape(-1, 3)
            s.tris = clip_triangles(xp, s.clip[s.faces.reshape(-1)], corner, m.asarray(s.vcol),
                                    width, height, machine=m)  # fmt: skip
        s.clip = s.vcol = None
    return record


def setup(s: FrameState) -> PhaseRecord:
    """Each triangle snapped to the sub-pixel grid, with its scan lines and depth plane."""
    m, xp = s.machine, s.xp
    width, height = s.settings.render_size
    with m.phase("setup") as record:
        # On a GPU the frame's two counters, degenerate triangles and covered pixels, are
        # counted by the setup and decoding kernels into one zeroed pair (setup's own
        # zeroing otherwise) and read back with the image: no count on the host.
        s.counters = xp.zeros(2, dtype=xp.int64) if s.on_device else None
        s.setup = setup_triangles(
            xp, s.tris.points, width, height, corners=s.tris.corners, machine=m,
            count=None if s.counters is None else s.counters[0:1],
        )  # fmt: skip
    if not s.bits:  # on MPI ranks: the one-rank frame's index bits (sortlast)
        s.bits = id_bits(max(s.n_tri, 1))
    return record


def _balanced_loop(s: FrameState, name: str, workload: Any, body: Any, k: int,
                   stats: Any = None) -> Any:  # fmt: skip
    """One of the two balanced loops (the ``k``-th overestimate), in the frame's form;
    ``stats``: the workload's (sum, max, min) when known on the host already."""
    opt = s.settings
    return run_loop(
        workload,
        body,
        machine=s.machine,
        form=opt.loop,
        name=name,
        task_cost=body.TASK_COST,
        overestimate=opt.overestimate_of(k),
        clock=opt.clock,
        workload_stats=stats,
    )


def scan_conversion(s: FrameState) -> PhaseRecord:
    """The spans of every triangle on its scan lines: a balanced loop over triangles."""
    scanner = ScanConverter(s.xp, s.setup, machine=s.machine)
    s.scan = _balanced_loop(s, "scan-conversion", s.setup.workload, scanner, 0)
    s.spans, s.span_stats = scanner.spans(), scanner.workload_stats
    if s.settings.keep_workloads:
        s.scan_workload = s.setup.workload
    del scanner
    s.setup.keep_for_shading()  # what only scan conversion read goes before the z-buffer
    return s.scan.record


def zbuffer(s: FrameState) -> PhaseRecord:
    """The nearest fragment of every pixel: a balanced loop over spans, each task a pixel's
    depth key sent with the ``min`` combiner."""
    xp, m = s.xp, s.machine
    width, height = s.settings.render_size
    s.zbuffer = xp.full(width * height, EMPTY, dtype=xp.int64)
    s.writes = xp.zeros(width * height, dtype=xp.int64) if s.settings.count_writes else None
    body = ZBufferBody(xp, s.spans, s.zbuffer, width, s.bits, machine=m, writes=s.writes,
                       first=s.first)  # fmt: skip
    # the span lengths' sum, max and min: read by the scan converter with its counts
    s.zbuf = _balanced_loop(s, "z-buffer", s.spans.length, body, 1, s.span_stats)
    s.n_spans = int(s.spans.length.shape[0])
    if s.settings.keep_workloads:
        s.span_lengths = s.spans.length
    s.spans = None  # shading reads the z-buffer, not the spans
    del body
    return s.zbuf.record


def shading(s: FrameState) -> PhaseRecord:
    """The colour of every covered pixel, from the triangle its depth key names. The keys
    go once decoded, unless a later stage reads them (``resolve``, or the ranks'
    compositing, which also paints the background after)."""
    xp, m, opt = s.xp, s.machine, s.settings
    width, height = opt.render_size
    keep_keys = opt.supersample > 1 or s.sort_last
    with m.phase("shading") as record:
        colours = (s.tris.points, s.tris.values, s.tris.corners)
        # the covered pixels are counted where the image's pixels are decoded (resolve's)
        count = s.counters[1:2] if s.counters is not None and opt.supersample == 1 else None
        covered, tri_px, s.depth = decode_keys(xp, s.zbuffer, s.bits, count=count)
        if not keep_keys:
            s.zbuffer = None  # decoded: the keys go before the shading's arrays
        if s.first:
            tri_px = tri_px - s.first  # the rank's own triangles (uncovered pixels: masked)
        if m.backend == "cupy" and s.n_tri:
            # Every pixel is shaded and the uncovered ones masked afterwards: packing the
            # covered ones first would wait for their number (a host sync).
            tri_all = xp.where(covered, tri_px, 0)
            with np.errstate(all="ignore"):  # the uncovered pixels' values are dropped
                rgb = shade_pixels(xp, tri_all, xp.arange(width * height), width, s.setup,
                                   *colours)  # fmt: skip
            s.image = xp.where(covered[:, None], rgb, xp.uint8(0))
            s.face = xp.where(covered, s.tris.face[tri_all], -1)
            del tri_all, rgb
        else:
            pix = xp.nonzero(covered)[0]
            tri_hit = tri_px[pix]
            rgb = shade_pixels(xp, tri_hit, pix, width, s.setup, *colours)
            s.image = xp.zeros((width * height, 3), dtype=xp.uint8)
            s.image[pix] = rgb
            s.face = xp.full(width * height, -1, dtype=xp.int64)
            s.face[pix] = s.tris.face[tri_hit]
            del pix, tri_hit, rgb  # per covered pixel: gone before the read back
        if opt.background is not None and not s.sort_last:
            s.image = fill_background(xp, m, s.image, covered, opt.background)
        m.charge("elementwise", width * height, ops=SHADING_OPS)
        del covered, tri_px  # read by nothing after shading
    return record


def resolve_samples(s: FrameState) -> PhaseRecord:
    """A supersampled frame's blocks of samples averaged into pixels; the depth and face of
    each pixel are its nearest sample's."""
    xp, m, opt = s.xp, s.machine, s.settings
    with m.phase("resolve") as record:
        s.image, keys = resolve(xp, s.image, s.zbuffer, opt.width, opt.height, opt.supersample)
        s.zbuffer = None
        pixel_count = None if s.counters is None else s.counters[1:2]
        covered, tri_px, s.depth = decode_keys(xp, keys, s.bits, count=pixel_count)
        if s.n_tri:
            s.face = xp.where(covered, s.tris.face[xp.where(covered, tri_px, 0)], -1)
        else:
            s.face = xp.full(opt.width * opt.height, -1, dtype=xp.int64)
    return record


#: The stages of a frame on one process, in order, by the name of their phase (then
#: ``resolve``, :func:`resolve_samples`, where the frame is supersampled).
STAGES = (
    ("transform", transform),
    ("clip", clip),
    ("setup", setup),
    ("scan-conversion", scan_conversion),
    ("z-buffer", zbuffer),
    ("shading", shading),
)
