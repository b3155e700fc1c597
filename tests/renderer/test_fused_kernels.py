"""The fused kernels (renderer.stages.setup_kernels, clip_kernels, span_kernels, shading_kernels,
zbuffer_kernels) against the array code, bit for bit, on the CPU and on the counting
stand-in for CuPy.

The oracles are :func:`renderer.stages.scan.setup_triangles_arrays`,
:func:`renderer.stages.clip.classify_arrays`, :func:`renderer.stages.scan.spans_arrays`,
:func:`renderer.stages.scan.compact_spans_arrays`,
:func:`renderer.stages.shading.shade_pixels_arrays` and
:func:`renderer.stages.zbuffer.fragments_arrays`,
the chains of array expressions the fused
kernels replace. Floats are compared by their
bits (a last-bit difference from a contracted multiply-add, or a -0.0, would fail).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import renderer
from kernels import counting
from renderer import pipeline
from renderer import steps as stages
from renderer.stages import clip as clip_module
from renderer.stages.clip import classify_arrays
from renderer.stages.clip_kernels import classify_cpu
from renderer.stages.scan import (
    Spans,
    compact_spans,
    compact_spans_arrays,
    setup_triangles,
    setup_triangles_arrays,
    spans,
    spans_arrays,
)
from renderer.stages.setup_kernels import OUTPUTS, setup_cpu
from renderer.stages.shading import shade_pixels, shade_pixels_arrays
from renderer.stages.shading_kernels import shade_cpu
from renderer.stages.span_kernels import SPAN_INT, kept_spans_cpu
from renderer.stages.zbuffer import (
    EMPTY,
    FLOAT32_TINY,
    ZBufferBody,
    decode_keys,
    decode_keys_arrays,
    fragments,
    fragments_arrays,
)
from simd import Machine

FIELDS = [name for name, _, _ in OUTPUTS] + ["n_degenerate"]


def assert_same_setup(got, want) -> None:
    for name in FIELDS:
        g, w = np.asarray(getattr(got, name)), np.asarray(getattr(want, name))
        assert g.dtype == w.dtype and g.shape == w.shape, name
        if g.dtype.kind == "f":
            bits = f"i{g.itemsize}"
            g, w = np.ascontiguousarray(g).view(bits), np.ascontiguousarray(w).view(bits)
        np.testing.assert_array_equal(g, w, err_msg=name)


def vertex_table(*per_corner: np.ndarray, seed: int = 0) -> tuple[np.ndarray, ...]:
    """Triangles' per-corner data (T, 3, C) as shuffled vertex tables (3 T, C), one per
    array, and the corner indices (T, 3) into them, as the clipper hands them on."""
    t = per_corner[0].shape[0]
    perm = np.random.default_rng(seed).permutation(3 * t)
    tables = []
    for tri in per_corner:
        table = np.empty((3 * t, tri.shape[2]), dtype=tri.dtype)
        table[perm] = tri.reshape(3 * t, tri.shape[2])
        tables.append(table)
    return (*tables, perm.reshape(t, 3))


def random_triangles(n: int, seed: int = 0) -> np.ndarray:
    """Clip coordinates with every special case of setup: degenerate triangles (repeated
    and collinear vertices), both orientations, vertices on pixel centres and half-way
    between sub-pixel steps (round half to even), horizontal edges, ones beyond the
    viewport, tiny and huge ones."""
    rng = np.random.default_rng(seed)
    clip = rng.normal(scale=0.8, size=(n, 3, 4))
    clip[..., 3] = rng.uniform(0.05, 4.0, size=(n, 3))
    k = n // 8
    clip[:k, 1] = clip[:k, 0]  # a repeated vertex
    clip[k : 2 * k, 2] = 0.5 * (clip[k : 2 * k, 0] + clip[k : 2 * k, 1])  # collinear
    clip[2 * k : 3 * k, 1, 1] = clip[2 * k : 3 * k, 0, 1]  # a horizontal edge (w = 1 below)
    clip[2 * k : 3 * k, :2, 3] = 1.0
    clip[3 * k : 4 * k, :, :2] *= 1e-4  # sub-pixel triangles
    clip[4 * k : 5 * k, :, :2] *= 40.0  # far beyond the viewport (inside the guard band)
    # window x = 0.5 + j / 512 exactly (a tie of the 1/256 snapping) on a 64-wide viewport
    j = rng.integers(-2000, 2000, size=(k, 3))
    clip[5 * k : 6 * k, :, 3] = 1.0
    clip[5 * k : 6 * k, :, 0] = (0.5 + j / 512.0) / 32.0 - 1.0
    return clip


@pytest.mark.parametrize(("width", "height"), [(64, 48), (17, 1), (1, 1)])
def test_cpu_kernel_matches_array_code(width, height):
    clip = random_triangles(4000)
    got = renderer.stages.scan.TriangleSetup(**setup_cpu(*vertex_table(clip), width, height))
    want = setup_triangles_arrays(np, clip, width, height)
    assert int(want.n_degenerate) >= 800  # the degenerate cases above are really there
    assert_same_setup(got, want)


def test_empty_and_non_contiguous_input():
    for clip in (np.zeros((0, 3, 4)), random_triangles(64)[:, :, :4][::2]):
        want = setup_triangles_arrays(np, clip, 32, 32)
        assert_same_setup(setup_triangles(np, clip, 32, 32), want)


def test_float32_input_takes_the_array_code():
    clip = random_triangles(64).astype(np.float32)
    assert_same_setup(setup_triangles(np, clip, 32, 32), setup_triangles_arrays(np, clip, 32, 32))


def clip_space_vertices(n: int, seed: int = 0) -> np.ndarray:
    """Vertices on and around every plane of the view volume and of the guard band: exact
    ties (x == w, z == -w, x == gx w), NaN-free, both signs of w's neighbourhood."""
    rng = np.random.default_rng(seed)
    v = rng.normal(scale=1.5, size=(n, 4))
    v[:, 3] = rng.uniform(0.01, 2.0, size=n)
    k = n // 6
    v[:k, 0] = v[:k, 3]  # on x = w
    v[k : 2 * k, 2] = -v[k : 2 * k, 3]  # on the near plane
    v[2 * k : 3 * k, :2] *= 600.0  # around the guard band
    g = 1.0 + 2.0 * 8192 / 64
    v[3 * k : 4 * k, 0] = g * v[3 * k : 4 * k, 3]  # on the guard band's plane, as rounded
    v[4 * k : 5 * k, 2] = rng.choice([-1.0, 1.0], size=k) * v[4 * k : 5 * k, 3] * 1.5
    return v


@pytest.mark.parametrize(("width", "height"), [(64, 48), (3, 1000)])
def test_cpu_clip_tests_match_array_code(width, height):
    clip = clip_space_vertices(3000)
    faces = np.random.default_rng(1).integers(0, len(clip), size=(9000, 3))
    gx = 1.0 + 2.0 * 8192 / width
    gy = 1.0 + 2.0 * 8192 / height
    rej, cross, counts = classify_cpu(clip, faces, gx, gy)
    n_c, n_r = counts.tolist()
    want_rej, want_cross = classify_arrays(np, clip, faces, gx, gy)
    np.testing.assert_array_equal(rej, want_rej)
    np.testing.assert_array_equal(cross, want_cross)
    assert (n_c, n_r) == (int(want_cross.sum()), int(want_rej.sum()))
    assert 0 < n_c < len(faces) and 0 < n_r < len(faces)  # all kinds are there
    rej, cross, counts = classify_cpu(clip, faces[:0], gx, gy)
    n_c, n_r = counts.tolist()
    assert rej.shape == cross.shape == (0,) and n_c == n_r == 0


def test_counting_backend_clip_tests_one_launch():
    m = Machine(backend="counting")
    clip = clip_space_vertices(600)
    faces = np.random.default_rng(2).integers(0, len(clip), size=(1000, 3))
    dclip, dfaces = m.asarray(clip), m.asarray(faces)
    with counting.measure() as c:
        rej, cross, counts = clip_module._classify(m.xp, dclip, dfaces, 3.5, 4.5)
        n_c, n_r = m.asnumpy(counts).tolist()
    # the fused kernel, the zeroing of its counts and their read back (one sync)
    assert c.total.ops["kernel:renderer.clip_classify"] == 1
    assert c.total.launches == 2 and c.total.syncs == 1
    want_rej, want_cross = classify_arrays(np, clip, faces, 3.5, 4.5)
    np.testing.assert_array_equal(m.asnumpy(rej), want_rej)
    np.testing.assert_array_equal(m.asnumpy(cross), want_cross)
    assert (n_c, n_r) == (int(want_cross.sum()), int(want_rej.sum()))


def _recording_setups(monkeypatch) -> list:
    """Wrap the pipeline's setup and clipping tests: every call compares the fused result
    with the array code."""
    seen = []
    classify = clip_module._classify

    def checked_classify(xp, clip, faces, gx, gy):
        got = classify(xp, clip, faces, gx, gy)
        host = [np.asarray(xp.asnumpy(a)) if xp is not np else a for a in (clip, faces)]
        want = classify_arrays(np, *host, gx, gy)
        for g, w in zip(got[:2], want, strict=True):
            np.testing.assert_array_equal(np.asarray(xp.asnumpy(g)) if xp is not np else g, w)
        tally = np.asarray(xp.asnumpy(got[2])) if xp is not np else got[2]
        assert tally.tolist() == [int(want[1].sum()), int(want[0].sum())]
        return got

    monkeypatch.setattr(clip_module, "_classify", checked_classify)

    def checked_shade(xp, tri, pix, width, setup, points, colours, corners):
        got = shade_pixels(xp, tri, pix, width, setup, points, colours, corners)
        if xp is np:
            want = shade_pixels_arrays(
                np, tri, pix, width, setup, points[corners], colours[corners]
            )
        else:
            host = [np.asarray(xp.asnumpy(x)) for x in (tri, pix, points, colours, corners)]
            s = type(setup)(**{f: _host_xp(xp, getattr(setup, f)) for f in FIELDS})
            corner = host[4]
            with np.errstate(all="ignore"):
                want = shade_pixels_arrays(
                    np, host[0], host[1], width, s, host[2][corner], host[3][corner]
                )
            got = xp.asnumpy(got)
        np.testing.assert_array_equal(np.asarray(got), want)
        return got if xp is np else xp.asarray(got)

    monkeypatch.setattr(stages, "shade_pixels", checked_shade)

    def checked(xp, clip, width, height, *, corners, machine=None, count=None):
        got = setup_triangles(
            xp, clip, width, height, corners=corners, machine=machine, count=count
        )
        host = _host(machine, clip)[_host(machine, corners)]
        assert_same_setup(
            type(got)(**{f: _host(machine, getattr(got, f)) for f in FIELDS}),
            setup_triangles_arrays(np, host, width, height),
        )
        seen.append(int(corners.shape[0]))
        return got

    monkeypatch.setattr(stages, "setup_triangles", checked)
    return seen


def _host_xp(xp, a):
    return np.asarray(xp.asnumpy(a))


def _host(machine, a):
    return np.asarray(machine.asnumpy(a)) if machine is not None else a


def near_clip_camera(mesh):
    cam = renderer.default_camera(mesh, (45.0, 45.0))
    distance = math.dist(cam.eye, cam.target)
    return renderer.Camera(
        eye=cam.eye, target=cam.target, up=cam.up, fovy=cam.fovy, near=distance, far=cam.far
    )


@pytest.mark.parametrize("backend", ["numpy", "counting"])
def test_frames_set_up_as_the_array_code(monkeypatch, backend):
    seen = _recording_setups(monkeypatch)
    mesh = renderer.load_dataset("balanced", 16, cache=False)
    for kw in ({}, {"camera": near_clip_camera(mesh)}):
        m = Machine(backend=backend)
        frame = renderer.render(mesh, size=64, loop="expand", machine=m, **kw)
        if kw:
            assert frame.stats.counts.clipped > 0
    assert len(seen) == 2


def test_250k_frame_set_up_as_the_array_code(monkeypatch):
    seen = _recording_setups(monkeypatch)
    mesh = renderer.load_dataset("balanced", "250k")
    renderer.render(mesh, size=512, loop="expand", machine=Machine(backend="numpy"))
    assert seen == [241_498]


def test_counting_backend_one_launch():
    m = Machine(backend="counting")
    clip = random_triangles(500)
    dclip, dcorners = (m.asarray(a) for a in vertex_table(clip))
    with counting.measure() as c:
        got = setup_triangles(m.xp, dclip, 64, 48, corners=dcorners, machine=m)
    # the fused kernel and the zeroing of its degenerate count; nothing read back
    assert c.total.ops["kernel:renderer.setup_triangles"] == 1
    assert c.total.launches == 2 and c.total.syncs == 0
    want = setup_triangles_arrays(np, clip, 64, 48)
    assert_same_setup(type(got)(**{f: _host(m, getattr(got, f)) for f in FIELDS}), want)


def shading_case(n_tri: int, n_pix: int, width: int, seed: int = 0):
    """Triangles set up from random clip coordinates and random pixels drawn by them,
    degenerate triangles included (the GPU path shades every pixel, uncovered ones with
    triangle 0, and drops those colours: NaN and infinities must not differ either)."""
    rng = np.random.default_rng(seed)
    clip = random_triangles(n_tri, seed)
    setup = setup_triangles(np, clip, width, width)
    tri = rng.integers(0, n_tri, size=n_pix)
    pix = rng.integers(0, width * width, size=n_pix)
    colours = rng.uniform(-0.1, 1.1, size=(n_tri, 3, 5))[:, :, 1:4]  # a strided view
    return tri, pix, setup, clip, colours


def test_cpu_shading_matches_array_code():
    tri, pix, setup, clip, colours = shading_case(500, 20_000, 64)
    with np.errstate(all="ignore"):
        want = shade_pixels_arrays(np, tri, pix, 64, setup, clip, colours)
        got = shade_cpu(tri, pix, 64, setup, *vertex_table(clip, colours))
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.uint8 and got.shape == (20_000, 3)
    assert 0 < (got == 0).mean() < 1 and (got == 255).any()  # clamped both ways


def test_counting_backend_shading_one_launch():
    m = Machine(backend="counting")
    tri, pix, setup, clip, colours = shading_case(300, 5000, 32, seed=3)
    dev = [m.asarray(x) for x in (tri, pix, *vertex_table(clip, colours))]
    dsetup = type(setup)(**{f: m.asarray(np.asarray(getattr(setup, f))) for f in FIELDS})
    with counting.measure() as c, np.errstate(all="ignore"):
        got = shade_pixels(m.xp, dev[0], dev[1], 32, dsetup, *dev[2:])
    assert c.total.ops["kernel:renderer.shade_pixels"] == 1
    assert c.total.launches == 1 and c.total.syncs == 0
    with np.errstate(all="ignore"):
        want = shade_pixels_arrays(np, tri, pix, 32, setup, clip, colours)
    np.testing.assert_array_equal(m.asnumpy(got), want)


@pytest.mark.parametrize("backend", ["numpy", "counting"])
def test_frames_equal_the_array_code_frames(monkeypatch, backend):
    """Whole frames (near-plane clipping, both shadings) with the fused kernels and with
    the array code (``SIMD_FORCE_REFERENCE=1``): the same pixels, depths, faces and model
    cycles; on the counting device, the fused frame launches fewer kernels."""
    mesh = renderer.load_dataset("balanced", 16, cache=False)
    for kw in ({"shading": "flat"}, {"camera": near_clip_camera(mesh)}):
        frames, launches = [], []
        for force in ("", "1"):
            monkeypatch.setenv("SIMD_FORCE_REFERENCE", force)
            with counting.measure() as c:
                m = Machine(backend=backend)
                frames.append(renderer.render(mesh, size=48, loop="expand", machine=m, **kw))
            launches.append(c.total.launches)
        fused, arrays = frames
        np.testing.assert_array_equal(fused.image, arrays.image)
        np.testing.assert_array_equal(fused.depth, arrays.depth)
        np.testing.assert_array_equal(fused.face, arrays.face)
        assert fused.stats.machine.total.cycles == arrays.stats.machine.total.cycles
        if backend == "counting":
            assert launches[0] < launches[1]


def spans_case(n_tri: int, n_tasks: int, width: int, seed: int = 0):
    """Tasks of random triangles (every edge direction, horizontal edges, degenerate ones)
    on scan lines inside and beyond their row range (empty spans, both bounds binding)."""
    rng = np.random.default_rng(seed)
    setup = setup_triangles(np, random_triangles(n_tri, seed), width, width)
    items = rng.integers(0, n_tri, size=n_tasks)
    inside = rng.integers(0, np.maximum(setup.workload, 1))[items]
    tasks = inside + rng.integers(-2, 3, size=n_tasks)
    return setup, items, tasks


def test_cpu_spans_match_array_code():
    setup, items, tasks = spans_case(2000, 30_000, 64)
    got = spans(np, setup, items, tasks)
    want = spans_arrays(np, setup, items, tasks)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype == np.int64
        np.testing.assert_array_equal(g, w)
    length = got[2]
    assert (length > 0).any() and (length <= 0).any()
    # a strided view of the tasks (as the loops may pass) and no task at all
    got = spans(np, setup, items[::3], tasks[::3])
    for g, w in zip(got, spans_arrays(np, setup, items[::3], tasks[::3]), strict=True):
        np.testing.assert_array_equal(g, w)
    assert all(x.shape == (0,) for x in spans(np, setup, items[:0], tasks[:0]))


def test_counting_backend_spans_one_launch():
    m = Machine(backend="counting")
    setup, items, tasks = spans_case(300, 4000, 32, seed=5)
    dsetup = type(setup)(**{f: m.asarray(np.asarray(getattr(setup, f))) for f in FIELDS})
    ditems, dtasks = m.asarray(items), m.asarray(tasks)
    with counting.measure() as c:
        got = spans(m.xp, dsetup, ditems, dtasks)
    assert c.total.ops["kernel:renderer.spans"] == 1
    assert c.total.launches == 1 and c.total.syncs == 0
    for g, w in zip(got, spans_arrays(np, setup, items, tasks), strict=True):
        np.testing.assert_array_equal(m.asnumpy(g), w)


def fragments_case(n_spans: int, n_tasks: int, width: int, seed: int = 0):
    """Tasks of random spans whose depths run below 0, above 1, through -0.0, NaN and
    float32's subnormal range (the clamping's edges), on every pixel of each span: spans of
    1000 triangles, whose depth slopes and reference x the spans index (as scan conversion
    makes them)."""
    rng = np.random.default_rng(seed)
    n_tri = 1000
    length = rng.integers(1, width + 1, size=n_spans)
    col = rng.integers(0, width - length + 1)
    zrow = rng.uniform(-0.2, 1.2, size=n_spans)
    zrow[::7] = -0.0
    zrow[3::11] = np.nan
    zrow[5::13] = 1.0
    tri = rng.integers(0, n_tri, size=n_spans)
    dzdx = rng.normal(0.0, 0.01, size=n_tri)
    dzdx[::5] = 0.0
    # constant depths at float32's smallest normal number and below it: CuPy's -ftz would
    # flush a subnormal float32 depth, so every path keys them as 0 (renderer.stages.zbuffer)
    edge = np.arange(10, n_spans, 25)
    zrow[edge] = np.resize([1e-40, FLOAT32_TINY * (1 - 1e-9), FLOAT32_TINY, 5e-45], edge.size)
    tri[edge] = 0  # a triangle of slope 0
    x0 = rng.uniform(-2.0, width + 2.0, size=n_tri)
    row = rng.integers(0, width, size=n_spans)
    ints = (a.astype(SPAN_INT) for a in (tri, row, col))  # as scan conversion makes them
    spans = Spans(*ints, length, zrow, dzdx, x0)
    items = rng.integers(0, n_spans, size=n_tasks)
    tasks = rng.integers(0, length[items])
    return spans, items, tasks


@pytest.mark.parametrize("first", [0, 4096])
def test_cpu_fragments_match_array_code(first):
    spans, items, tasks = fragments_case(3000, 40_000, 64)
    got = fragments(np, spans, items, tasks, 64, 13, first)
    want = fragments_arrays(np, spans, items, tasks, 64, 13, first)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype == np.int64
        np.testing.assert_array_equal(g, w)
    depth = (got[0] >> 13).astype(np.int32).view(np.float32)
    assert (depth == 0).any() and (depth == 1).any() and ((depth > 0) & (depth < 1)).any()
    # no subnormal depth reaches a key; the smallest normal one does
    assert not ((depth > 0) & (depth < FLOAT32_TINY)).any() and (depth == FLOAT32_TINY).any()
    # a strided view of the tasks (as the loops may pass) and no task at all
    got = fragments(np, spans, items[::3], tasks[::3], 64, 13, first)
    want = fragments_arrays(np, spans, items[::3], tasks[::3], 64, 13, first)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    assert all(x.shape == (0,) for x in fragments(np, spans, items[:0], tasks[:0], 64, 13))


def test_fragment_addresses_and_keys_widen_the_int32_fields():
    """int32 scan lines times a width past 2**31 / row and indices plus a first index past
    2**31: the addresses and keys are those of int64 arithmetic on every path."""
    spans, items, tasks = fragments_case(50, 400, 64, seed=3)
    spans.row[:] = np.iinfo(np.int32).max - np.arange(50, dtype=SPAN_INT)
    width, first = 70_000, 2**31 + 5
    want_dest = spans.row[items].astype(np.int64) * width + spans.col[items] + tasks
    want_index = spans.tri[items].astype(np.int64) + first
    for got in (fragments(np, spans, items, tasks, width, 33, first),
                fragments_arrays(np, spans, items, tasks, width, 33, first)):  # fmt: skip
        np.testing.assert_array_equal(got[1], want_dest)
        np.testing.assert_array_equal(got[0] & ((1 << 33) - 1), want_index)


def _depth_test(monkeypatch, pieces: bool, items, tasks, spans, width: int = 64):
    """The z-buffer and the machine's statistics after one body call (in a VP set, as the
    loops call it), piece by piece (pieces of 1000 tasks) or with one send."""
    if pieces:
        monkeypatch.setattr(ZBufferBody, "PIECE", 1000)
    else:
        monkeypatch.setattr(ZBufferBody, "_in_pieces", lambda self, items, tasks: False)
    m = Machine(backend="numpy")
    zbuffer = np.full(width * width, EMPTY, dtype=np.int64)
    with m.phase("z-buffer"), m.vp_set(items.size):
        ZBufferBody(np, spans, zbuffer, width, 13, machine=m)(items, tasks)
    stats = m.stats["z-buffer"]
    return zbuffer, (stats.cycles, dict(stats.calls), stats.bytes)


def test_depth_test_in_pieces_equals_one_send(monkeypatch):
    """The NumPy backend's piecewise depth test writes the z-buffer and charges the model
    clock (cycles, calls, bytes) exactly as the machine's one send of every fragment."""
    spans, items, tasks = fragments_case(3000, 40_000, 64)
    with monkeypatch.context() as patch:
        want = _depth_test(patch, False, items, tasks, spans)
    got = _depth_test(monkeypatch, True, items, tasks, spans)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1] == want[1] and got[1][1] == {"send": 1}


def test_depth_test_in_pieces_checks_addresses(monkeypatch):
    spans, items, tasks = fragments_case(30, 400, 64, seed=3)
    spans.row[:] = 64  # one row below the 64 x 64 z-buffer
    with pytest.raises(IndexError, match="send destination .* out of range for 4096"):
        _depth_test(monkeypatch, True, items, tasks, spans)


@pytest.mark.parametrize("loop", pipeline.LOOP_FORMS)
def test_frames_with_depth_test_in_pieces(monkeypatch, loop):
    """Whole frames of every loop form: pieces of 100 tasks, or one send per body call."""
    mesh = renderer.load_dataset("balanced", 16, cache=False)
    frames = []
    for piece in (100, None):
        with monkeypatch.context() as patch:
            if piece:
                patch.setattr(ZBufferBody, "PIECE", piece)
            else:
                patch.setattr(ZBufferBody, "_in_pieces", lambda self, items, tasks: False)
            frames.append(renderer.render(mesh, size=48, loop=loop, machine=Machine()))
    a, b = frames
    for field in ("image", "depth", "face"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    assert [(k, v.cycles, v.calls, v.bytes) for k, v in a.stats.machine.phases.items()] == [
        (k, v.cycles, v.calls, v.bytes) for k, v in b.stats.machine.phases.items()
    ]


def test_float32_depths_take_the_array_code():
    spans, items, tasks = fragments_case(50, 300, 16, seed=2)
    spans.zrow = spans.zrow.astype(np.float32)
    got = fragments(np, spans, items, tasks, 16, 10)
    for g, w in zip(got, fragments_arrays(np, spans, items, tasks, 16, 10), strict=True):
        np.testing.assert_array_equal(g, w)


def test_counting_backend_fragments_one_launch():
    m = Machine(backend="counting")
    spans, items, tasks = fragments_case(300, 4000, 32, seed=5)
    dspans = Spans(*(m.asarray(getattr(spans, f)) for f in Spans.__dataclass_fields__))
    ditems, dtasks = m.asarray(items), m.asarray(tasks)
    with counting.measure() as c:
        got = fragments(m.xp, dspans, ditems, dtasks, 32, 9, 7)
    assert c.total.ops["kernel:renderer.zbuffer_fragments"] == 1
    assert c.total.launches == 1 and c.total.syncs == 0
    want = fragments_arrays(np, spans, items, tasks, 32, 9, 7)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(m.asnumpy(g), w)


def compact_case(n_tri: int, n_tasks: int, width: int, seed: int = 0):
    """The spans of :func:`spans_case` and the positions of the non-empty ones."""
    setup, items, tasks = spans_case(n_tri, n_tasks, width, seed)
    row, lo, length = spans_arrays(np, setup, items, tasks)
    return setup, np.nonzero(length > 0)[0], items, row, lo, length


def assert_same_arrays(got, want) -> None:
    for g, w in zip(got, want, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        if g.dtype.kind == "f":  # by their bits
            bits = np.dtype(f"i{g.itemsize}")
            g, w = g.view(bits), w.view(bits)
        np.testing.assert_array_equal(g, w)


def test_cpu_compaction_matches_array_code():
    setup, sel, items, row, lo, length = compact_case(2000, 30_000, 64)
    assert 0 < sel.size < items.size
    got = compact_spans(np, setup, sel, items, row, lo, length)
    assert_same_arrays(got, compact_spans_arrays(np, setup, sel, items, row, lo, length))
    # strided views and nothing kept
    args = (sel[::2], items[::3], row[::3], lo[::3], length[::3])
    args = (args[0][args[0] < args[1].size], *args[1:])
    got = compact_spans(np, setup, *args)
    assert_same_arrays(got, compact_spans_arrays(np, setup, *args))
    none = compact_spans(np, setup, sel[:0], items, row, lo, length)
    assert all(x.shape == (0,) for x in none)


def test_cpu_kept_spans_match_array_code():
    """The CPU's one-loop spans and compaction: the array code's kept spans, in task order,
    with their number and their lengths' sum and maximum."""
    setup, items, tasks = spans_case(2000, 30_000, 64, seed=7)
    row, lo, length = spans_arrays(np, setup, items, tasks)
    sel = np.nonzero(length > 0)[0]
    assert 0 < sel.size < items.size
    got, figures = kept_spans_cpu(setup, items, tasks)
    assert_same_arrays(got, compact_spans_arrays(np, setup, sel, items, row, lo, length))
    assert figures == (sel.size, int(length[sel].sum()), int(length[sel].max()))
    none, figures = kept_spans_cpu(setup, items[:0], tasks[:0])
    assert figures == (0, 0, 0) and all(x.shape == (0,) for x in none)


def test_counting_backend_compaction_one_launch():
    m = Machine(backend="counting")
    setup, sel, items, row, lo, length = compact_case(300, 4000, 32, seed=5)
    dsetup = type(setup)(**{f: m.asarray(np.asarray(getattr(setup, f))) for f in FIELDS})
    dargs = [m.asarray(a) for a in (sel, items, row, lo, length)]
    with counting.measure() as c:
        got = compact_spans(m.xp, dsetup, *dargs)
    assert c.total.ops["kernel:renderer.compact_spans"] == 1
    assert c.total.launches == 1 and c.total.syncs == 0
    want = compact_spans_arrays(np, setup, sel, items, row, lo, length)
    assert_same_arrays([m.asnumpy(g) for g in got], want)


def decode_case(n: int, bits: int, seed: int = 0):
    """Depth keys of random depths in [0, 1] (0, 1 and -0.0's bits among them), empty
    pixels, and a few keys no z-buffer holds (depth bits beyond 32: the array code keeps
    their low 32)."""
    rng = np.random.default_rng(seed)
    z = rng.uniform(0.0, 1.0, size=n).astype(np.float32)
    z[::9], z[1::9] = 0.0, 1.0
    depth_bits = z.view(np.int32).astype(np.int64)
    keys = (depth_bits << bits) | rng.integers(0, 1 << bits, size=n)
    keys[::5] = EMPTY
    keys[3::17] = rng.integers(0, np.iinfo(np.int64).max, size=keys[3::17].size)
    return keys


def test_cpu_decoding_matches_array_code():
    for bits in (1, 13, 31):
        keys = decode_case(5000, bits, seed=bits)
        assert_same_arrays(decode_keys(np, keys, bits), decode_keys_arrays(np, keys, bits))
    # a strided view, no pixel, and a 2-D array (the array code)
    assert_same_arrays(decode_keys(np, keys[::3], 31), decode_keys_arrays(np, keys[::3], 31))
    assert all(x.shape == (0,) for x in decode_keys(np, keys[:0], 31))
    square = keys[:4900].reshape(70, 70)
    assert_same_arrays(decode_keys(np, square, 31), decode_keys_arrays(np, square, 31))


def test_counting_backend_decoding_one_launch():
    m = Machine(backend="counting")
    keys = decode_case(3000, 12, seed=4)
    dkeys = m.asarray(keys)
    with counting.measure() as c:
        got = decode_keys(m.xp, dkeys, 12)
    assert c.total.ops["kernel:renderer.decode_keys"] == 1
    assert c.total.launches == 1 and c.total.syncs == 0
    want = decode_keys_arrays(np, keys, 12)
    assert_same_arrays([m.asnumpy(g) for g in got], want)
    # counting the covered pixels into a given counter: in the same launch
    count = m.asarray(np.array([7], dtype=np.int64))
    with counting.measure() as c:
        decode_keys(m.xp, dkeys, 12, count=count)
    assert c.total.launches == 1 and c.total.syncs == 0
    assert int(m.asnumpy(count)[0]) == 7 + int(np.count_nonzero(want[0]))


def test_decoding_counts_the_covered_pixels_on_every_path(monkeypatch):
    keys = decode_case(2000, 10, seed=5)
    covered = int(np.count_nonzero(decode_keys_arrays(np, keys, 10)[0]))
    for force in ("0", "1"):  # the fused CPU kernel, then the array code
        monkeypatch.setenv("SIMD_FORCE_REFERENCE", force)
        count = np.array([3], dtype=np.int64)
        decode_keys(np, keys, 10, count=count)
        assert int(count[0]) == 3 + covered


def transform_case(n: int, seed: int = 0):
    """Vertices over many magnitudes (and a few zeros) and a perspective view's matrix."""
    from renderer.scene.camera import Camera

    rng = np.random.default_rng(seed)
    vertices = rng.normal(size=(n, 3)) * 10.0 ** rng.uniform(-3, 3, size=(n, 1))
    vertices[::7] = 0.0
    mvp = Camera(eye=(3.0, 2.0, 5.0), target=(0.1, -0.2, 0.3), near=0.5, far=40.0).mvp(1.25)
    return vertices, mvp


def test_cpu_transform_matches_array_code():
    from renderer.stages.transform import to_clip, to_clip_arrays

    vertices, mvp = transform_case(5000)
    got = to_clip(np, vertices, mvp)
    assert_same_arrays([got], [to_clip_arrays(np, vertices, mvp)])
    # a strided view of the vertices, no vertex
    assert_same_arrays([to_clip(np, vertices[::3], mvp)], [to_clip_arrays(np, vertices[::3], mvp)])
    assert to_clip(np, vertices[:0], mvp).shape == (0, 4)


def test_counting_backend_transform_one_launch_no_upload():
    from renderer.stages.transform import to_clip, to_clip_arrays

    m = Machine(backend="counting")
    vertices, mvp = transform_case(3000, seed=2)
    dvertices = m.asarray(vertices)
    with counting.measure() as c:
        got = to_clip(m.xp, dvertices, mvp)
    assert c.total.ops["kernel:renderer.to_clip"] == 1
    assert c.total.launches == 1 and c.total.syncs == 0 and c.total.h2d_bytes == 0
    assert_same_arrays([m.asnumpy(got)], [to_clip_arrays(np, vertices, mvp)])
