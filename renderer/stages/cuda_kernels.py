"""The renderer's fused kernels on the GPU: Numba CUDA kernels over CuPy arrays.

- ``setup``: :func:`renderer.stages.setup_kernels.setup_one`, one thread per triangle
  (:func:`setup_device`); it also counts the degenerate triangles with an atomic add.
- ``classify``: :func:`renderer.stages.clip_kernels.classify_one`, one thread per face
  (:func:`classify_device`); it counts the crossing and rejected faces likewise.
- ``shade``: :func:`renderer.stages.shading_kernels.shade_one`, one thread per pixel
  (:func:`shade_device`).
- ``spans``: :func:`renderer.stages.span_kernels.span_one`, one thread per scan-conversion task
  (:func:`spans_device`).
- ``compact``: :func:`renderer.stages.span_kernels.compact_one`, one thread per kept span
  (:func:`compact_device`).
- ``fragments``: :func:`renderer.stages.zbuffer_kernels.fragment_one`, one thread per z-buffer
  task (:func:`fragments_device`).
- ``decode``: :func:`renderer.stages.zbuffer_kernels.decode_one`, one thread per pixel
  (:func:`decode_device`).
- ``transform``: :func:`renderer.stages.transform_kernels.clip_one`, one thread per vertex
  (:func:`transform_device`).

Each is one launch over a grid-stride loop (plus the zeroing of its counts); the counts
stay on the device until the caller reads them. On the counting stand-in for CuPy
(:mod:`kernels.counting`) a launch counts one and its emulation runs the array code:
:func:`renderer.stages.scan.setup_triangles_arrays`, :func:`renderer.stages.clip.classify_arrays`,
:func:`renderer.stages.shading.shade_pixels_arrays`, :func:`renderer.stages.scan.spans_arrays`,
:func:`renderer.stages.scan.compact_spans_arrays`, :func:`renderer.stages.zbuffer.fragments_arrays`,
:func:`renderer.stages.zbuffer.decode_keys_arrays`,
:func:`renderer.stages.transform.to_clip_arrays`.

This module is imported on the CuPy code path only and imports ``numba.cuda`` at the
first real launch (:func:`build_kernels`), so the counting stand-in needs no CUDA at all.
The tests run the same kernels in Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, where
``libdevice`` does not exist and Python's float products are rounded one at a time anyway)
and compile them to PTX for sm_90.
"""

from __future__ import annotations

import functools
import types
from typing import Any

import numpy as np

from kernels import fastpaths
from kernels.numba_cuda import cuda_module
from kernels.rebind import bind
from renderer.stages.clip import classify_arrays
from renderer.stages.clip_kernels import classify_one
from renderer.stages.edges import edge_function, fill_bias
from renderer.stages.scan import Spans, compact_spans_arrays, setup_triangles_arrays, spans_arrays
from renderer.stages.setup_kernels import OUTPUTS, setup_one
from renderer.stages.shading import shade_pixels_arrays
from renderer.stages.shading_kernels import shade_one
from renderer.stages.span_kernels import (
    SPAN_INT,
    compact_args,
    compact_one,
    span_depth,
    span_of,
    span_one,
)
from renderer.stages.transform import to_clip_arrays
from renderer.stages.transform_kernels import clip_one, matrix_args
from renderer.stages.zbuffer import decode_keys_arrays, fragments_arrays
from renderer.stages.zbuffer_kernels import decode_one, fragment_one, spans_args

__all__ = [
    "KERNEL_NAMES",
    "build_kernels",
    "classify_device",
    "classify_kernel",
    "compact_device",
    "compact_kernel",
    "decode_device",
    "decode_kernel",
    "fragments_device",
    "fragments_kernel",
    "kernel_functions",
    "setup_device",
    "setup_kernel",
    "shade_device",
    "shade_kernel",
    "spans_device",
    "spans_kernel",
    "transform_device",
    "transform_kernel",
]

#: The kernels' names on the counting stand-in.
KERNEL_NAMES = {
    "setup": "renderer.setup_triangles",
    "classify": "renderer.clip_classify",
    "shade": "renderer.shade_pixels",
    "spans": "renderer.spans",
    "fragments": "renderer.zbuffer_fragments",
    "compact": "renderer.compact_spans",
    "decode": "renderer.decode_keys",
    "transform": "renderer.to_clip",
}

# Threads per block: one triangle each; 128 keeps the many live registers of the setup body
# (three vertices' coordinates) from limiting occupancy much.
_THREADS = 128
_MAX_GRID = 2**31 - 1

#: Bound to ``numba.cuda`` (or its simulator) in the kernels' copies: kernel_functions.
cuda: Any = None
#: Bound to ``numba.cuda.libdevice`` in the GPU's copy of _gpu_f32_bits.
libdevice: Any = None


def body(*args: Any) -> int:  # bound to the target's compiled per-item body
    raise NotImplementedError


def setup_kernel(points, corners, width, height, sx, sy, xs, ys, row0, workload, col0, col1,
                 z0, dzdx, dzdy, x0, y0, order, count):  # fmt: skip
    """Triangles ``t = grid position + k * grid size``; ``count[0]`` += degenerate ones."""
    t = cuda.grid(1)
    stride = cuda.gridsize(1)
    while t < corners.shape[0]:
        if body(points, corners, t, width, height, sx, sy, xs, ys, row0, workload, col0,
                col1, z0, dzdx, dzdy, x0, y0, order):  # fmt: skip
            cuda.atomic.add(count, 0, 1)
        t += stride


def classify_kernel(clip, faces, gx, gy, rejected, crossing, counts):
    """Faces ``f = grid position + k * grid size``; ``counts`` += (crossing, rejected)."""
    f = cuda.grid(1)
    stride = cuda.gridsize(1)
    while f < faces.shape[0]:
        code = body(clip, faces, f, gx, gy, rejected, crossing)
        if code == 1:
            cuda.atomic.add(counts, 0, 1)
        elif code == 2:
            cuda.atomic.add(counts, 1, 1)
        f += stride


def shade_kernel(tri, pix, width, xs, ys, order, points, colours, corners, out):
    """Pixels ``p = grid position + k * grid size``."""
    p = cuda.grid(1)
    stride = cuda.gridsize(1)
    while p < tri.shape[0]:
        body(tri, pix, p, width, xs, ys, order, points, colours, corners, out)
        p += stride


def spans_kernel(items, tasks, row0, col0, col1, xs, ys, row, lo, length):
    """Tasks ``p = grid position + k * grid size``."""
    p = cuda.grid(1)
    stride = cuda.gridsize(1)
    while p < items.shape[0]:
        body(items, tasks, p, row0, col0, col1, xs, ys, row, lo, length)
        p += stride


def compact_kernel(sel, items, row, lo, length, z0, dzdy, y0, tri_out, row_out, col_out,
                   len_out, zrow_out):  # fmt: skip
    """Kept spans ``p = grid position + k * grid size``."""
    p = cuda.grid(1)
    stride = cuda.gridsize(1)
    while p < sel.shape[0]:
        body(sel, items, row, lo, length, z0, dzdy, y0, p, tri_out, row_out, col_out, len_out,
             zrow_out)  # fmt: skip
        p += stride


def fragments_kernel(items, tasks, tri, row, col, zrow, dzdx, x0, width, bits, first, keys,
                     dest):  # fmt: skip
    """Tasks ``p = grid position + k * grid size``."""
    p = cuda.grid(1)
    stride = cuda.gridsize(1)
    while p < items.shape[0]:
        body(items, tasks, p, tri, row, col, zrow, dzdx, x0, width, bits, first, keys, dest)
        p += stride


def decode_kernel(keys, bits, covered, tri, depth, count):
    """Pixels ``p = grid position + k * grid size``; ``count[0]`` += the covered ones when
    ``count`` has an element (summed per block in shared memory: one atomic per block,
    not one per pixel on the same address)."""
    block_count = cuda.shared.array(1, np.int64)
    if cuda.threadIdx.x == 0:
        block_count[0] = 0
    cuda.syncthreads()
    p = cuda.grid(1)
    stride = cuda.gridsize(1)
    n = 0
    while p < keys.shape[0]:
        body(keys, p, bits, covered, tri, depth)
        if covered[p]:
            n += 1
        p += stride
    if n:
        cuda.atomic.add(block_count, 0, n)
    cuda.syncthreads()
    if cuda.threadIdx.x == 0 and count.shape[0] > 0 and block_count[0] > 0:
        cuda.atomic.add(count, 0, block_count[0])


def transform_kernel(vertices, m, out):
    """Vertices ``v = grid position + k * grid size``."""
    v = cuda.grid(1)
    stride = cuda.gridsize(1)
    while v < vertices.shape[0]:
        body(vertices, v, m, out)
        v += stride


@functools.cache
def kernel_functions() -> dict[str, Any]:
    """The kernels' Python functions with the device primitives bound, by name (imports
    ``numba.cuda``).

    On the GPU ``fmul`` is libdevice's ``dmul_rn`` (never contracted into an ``fma``) and
    ``rint`` libdevice's; in the simulator, the Python functions run as they are.
    """
    from numba import config

    cuda = cuda_module()

    if config.ENABLE_CUDASIM:  # the bodies as written, with the primitives' Python code
        setup_body, classify_body, spans_body = setup_one, classify_one, span_one
        # NumPy scalars, not Python floats: x / 0 is inf or NaN (no ZeroDivisionError)
        shade_body = bind(shade_one, float=np.float64)
        fragments_body, compact_body, decode_body = fragment_one, compact_one, decode_one
        transform_body = clip_one
    else:
        from numba.cuda import libdevice

        device = cuda.jit(device=True)
        edges = {
            "fill_bias": device(bind(fill_bias)),
            "edge_function": device(bind(edge_function)),
        }
        setup_body = device(
            bind(setup_one, fmul=libdevice.dmul_rn, rint=libdevice.rint, to_i64=np.int64)
        )
        classify_body = device(bind(classify_one, fmul=libdevice.dmul_rn))
        spans_body = device(bind(span_one, span_of=device(bind(span_of, **edges))))
        shade_body = device(
            bind(
                shade_one,
                fmul=libdevice.dmul_rn,
                floor=libdevice.floor,
                to_u8=np.uint8,
                edge_function=edges["edge_function"],
            )  # fmt: skip
        )
        f32_bits = device(bind(_gpu_f32_bits, libdevice=libdevice))
        fragments_body = device(bind(fragment_one, fmul=libdevice.dmul_rn, f32_bits=f32_bits))
        depth = device(bind(span_depth, fmul=libdevice.dmul_rn))
        compact_body = device(bind(compact_one, span_depth=depth))
        f32_of_bits = device(bind(_gpu_f32_of_bits, libdevice=libdevice))
        decode_body = device(bind(decode_one, f32_of_bits=f32_of_bits))
        transform_body = device(bind(clip_one, fmul=libdevice.dmul_rn))
    return {
        "setup": bind(setup_kernel, cuda=cuda, body=setup_body),
        "classify": bind(classify_kernel, cuda=cuda, body=classify_body),
        "shade": bind(shade_kernel, cuda=cuda, body=shade_body),
        "spans": bind(spans_kernel, cuda=cuda, body=spans_body),
        "fragments": bind(fragments_kernel, cuda=cuda, body=fragments_body),
        "compact": bind(compact_kernel, cuda=cuda, body=compact_body),
        "decode": bind(decode_kernel, cuda=cuda, body=decode_body),
        "transform": bind(transform_kernel, cuda=cuda, body=transform_body),
    }


def _gpu_f32_bits(z):
    # float64 to float32 rounding to nearest (cvt.rn.f32.f64), then its bits
    return np.int64(libdevice.float_as_int(libdevice.double2float_rn(z)))


def _gpu_f32_of_bits(b):
    # the float32 of these bits (a move, no conversion)
    return libdevice.int_as_float(np.int32(b))


@functools.cache
def build_kernels() -> dict[str, Any]:
    """The ``cuda.jit`` dispatchers of the kernels, built once per process (each compiles
    on its first launch, one specialisation per argument signature)."""
    cuda = cuda_module()
    return {name: cuda.jit(fn) for name, fn in kernel_functions().items()}


def setup_device(
    xp: Any, points: Any, corners: Any, width: int, height: int, count: Any = None
) -> dict[str, Any]:
    """The fused setup on ``xp``'s device of the triangles ``corners`` (rows of ``points``):
    the fields of :class:`renderer.stages.scan.TriangleSetup`.

    One launch (and the zeroing of the degenerate count, unless the caller gives
    ``count``: a 1-element int64 array of zeros, counted into); nothing is read back.
    """
    t = int(corners.shape[0])
    out = {
        name: xp.empty((t, 3) if per_vertex else t, dtype=dtype)
        for name, dtype, per_vertex in OUTPUTS
    }
    if count is None:
        count = xp.zeros(1, dtype=xp.int64)
    if t:
        _launch(xp, "setup", t, (points, corners, width, height, width / 2.0, height / 2.0,
                                 *out.values(), count))  # fmt: skip
    out["n_degenerate"] = count.reshape(())
    return out


def classify_device(xp: Any, clip: Any, faces: Any, gx: float, gy: float) -> tuple:
    """The fused clipping tests on ``xp``'s device: ``rejected, crossing`` (bool, one per
    face) and the numbers of crossing and rejected faces (counted on the device by atomic
    adds, two int64 there: the caller reads them back together)."""
    m = int(faces.shape[0])
    rejected = xp.empty(m, dtype=xp.bool_)
    crossing = xp.empty(m, dtype=xp.bool_)
    counts = xp.zeros(2, dtype=xp.int64)
    if m:
        _launch(xp, "classify", m, (clip, faces, float(gx), float(gy), rejected, crossing,
                                    counts))  # fmt: skip
    return rejected, crossing, counts


def shade_device(
    xp: Any, tri: Any, pix: Any, width: int, setup: Any, points: Any, colours: Any, corners: Any
) -> Any:
    """The fused shading on ``xp``'s device: ``(K, 3)`` uint8 colours of pixels ``pix``."""
    k = int(tri.shape[0])
    out = xp.empty((k, 3), dtype=xp.uint8)
    if k:
        s = setup
        _launch(xp, "shade", k, (tri, pix, int(width), s.xs, s.ys, s.order, points, colours,
                                 corners, out))  # fmt: skip
    return out


def spans_device(xp: Any, setup: Any, items: Any, tasks: Any) -> tuple:
    """The fused span computation on ``xp``'s device: ``row, lo, length`` (int64)."""
    n = int(items.shape[0])
    row, lo, length = (xp.empty(n, dtype=xp.int64) for _ in range(3))
    if n:
        s = setup
        _launch(xp, "spans", n, (items, tasks, s.row0, s.col0, s.col1, s.xs, s.ys, row, lo,
                                 length))  # fmt: skip
    return row, lo, length


def compact_device(
    xp: Any, setup: Any, sel: Any, items: Any, row: Any, lo: Any, length: Any
) -> tuple:
    """The fused compaction on ``xp``'s device: ``tri, row, col, length`` (int32) and
    ``zrow`` (float64) of the kept spans ``sel``."""
    n = int(sel.shape[0])
    tri, row_out, col, len_out = (xp.empty(n, dtype=SPAN_INT) for _ in range(4))
    zrow = xp.empty(n, dtype=xp.float64)
    if n:
        _launch(xp, "compact", n, (sel, items, row, lo, length, *compact_args(setup), tri,
                                   row_out, col, len_out, zrow))  # fmt: skip
    return tri, row_out, col, len_out, zrow


def fragments_device(
    xp: Any, spans: Any, items: Any, tasks: Any, width: int, bits: int, first: int
) -> tuple:
    """The fused fragment work on ``xp``'s device: ``keys, dest`` (int64, one per task)."""
    n = int(items.shape[0])
    keys = xp.empty(n, dtype=xp.int64)
    dest = xp.empty(n, dtype=xp.int64)
    if n:
        _launch(xp, "fragments", n, (items, tasks, *spans_args(spans), int(width), int(bits),
                                     int(first), keys, dest))  # fmt: skip
    return keys, dest


def decode_device(xp: Any, keys: Any, bits: int, count: Any = None) -> tuple:
    """The fused decoding of 1-D int64 depth keys on ``xp``'s device: ``covered`` (bool),
    ``tri`` (int64) and ``depth`` (float32); the number of covered pixels is added to
    ``count[0]`` (a 1-element int64 array) when given, on the device."""
    n = int(keys.shape[0])
    covered = xp.empty(n, dtype=xp.bool_)
    tri = xp.empty(n, dtype=xp.int64)
    depth = xp.empty(n, dtype=xp.float32)
    if count is None:
        count = xp.empty(0, dtype=xp.int64)  # nothing counted (no launch)
    if n:
        _launch(xp, "decode", n, (keys, int(bits), covered, tri, depth, count))
    return covered, tri, depth


def transform_device(xp: Any, vertices: Any, mvp: Any) -> Any:
    """The fused transform on ``xp``'s device: ``(N, 4)`` float64 clip coordinates of the
    ``(N, 3)`` float64 ``vertices``; the matrix goes in the launch's arguments."""
    n = int(vertices.shape[0])
    out = xp.empty((n, 4), dtype=xp.float64)
    if n:
        _launch(xp, "transform", n, (vertices, matrix_args(mvp), out))
    return out


def _launch(xp: Any, name: str, n: int, args: tuple) -> None:
    """Launch kernel ``name`` over ``n`` items on ``xp``'s current stream, or its emulation
    on the counting stand-in (:func:`kernels.fastpaths.launch`)."""
    grid = max(1, min(_MAX_GRID, -(-n // _THREADS)))
    fastpaths.launch(xp, KERNEL_NAMES[name], lambda: build_kernels()[name], grid, _THREADS, args)


# --------------------------------------------------------------------------- emulations
# What each kernel computes, as the array code computes it, on the launch's arguments: run
# for each launch on the counting stand-in for CuPy (kernels.fastpaths.emulates).


@fastpaths.emulates(KERNEL_NAMES["setup"])
def _setup(variant: Any, args: tuple) -> None:
    points, corners = np.asarray(args[0]), np.asarray(args[1])
    width, height = int(args[2]), int(args[3])
    outs, count = args[6:-1], args[-1]
    ref = setup_triangles_arrays(np, points[corners], width, height)
    for (name, _, _), dest in zip(OUTPUTS, outs, strict=True):
        dest[...] = getattr(ref, name)
    count[0] += int(ref.n_degenerate)


@fastpaths.emulates(KERNEL_NAMES["shade"])
def _shade(variant: Any, args: tuple) -> None:
    tri, pix, width, xs, ys, order, points, colours, corners, out = args
    fields = {"xs": xs, "ys": ys, "order": order}
    setup = types.SimpleNamespace(**{k: np.asarray(v) for k, v in fields.items()})
    corners = np.asarray(corners)
    with np.errstate(all="ignore"):
        out[...] = shade_pixels_arrays(
            np, np.asarray(tri), np.asarray(pix), int(width), setup,
            np.asarray(points)[corners], np.asarray(colours)[corners],
        )  # fmt: skip


@fastpaths.emulates(KERNEL_NAMES["spans"])
def _spans(variant: Any, args: tuple) -> None:
    items, tasks, row0, col0, col1, xs, ys, row, lo, length = args
    fields = {"row0": row0, "col0": col0, "col1": col1, "xs": xs, "ys": ys}
    setup = types.SimpleNamespace(**{k: np.asarray(v) for k, v in fields.items()})
    got = spans_arrays(np, setup, np.asarray(items), np.asarray(tasks))
    for dest, value in zip((row, lo, length), got, strict=True):
        dest[...] = value


@fastpaths.emulates(KERNEL_NAMES["fragments"])
def _fragments(variant: Any, args: tuple) -> None:
    items, tasks, tri, row, col, zrow, dzdx, x0, width, bits, first, keys, dest = args
    fields = (tri, row, col, np.zeros(0, dtype=np.int64), zrow, dzdx, x0)
    spans = Spans(*(np.asarray(f) for f in fields))
    got = fragments_arrays(np, spans, np.asarray(items), np.asarray(tasks), width, bits,
                           first)  # fmt: skip
    keys[...], dest[...] = got


@fastpaths.emulates(KERNEL_NAMES["compact"])
def _compact(variant: Any, args: tuple) -> None:
    sel, items, row, lo, length, z0, dzdy, y0, *outs = args
    setup = types.SimpleNamespace(z0=np.asarray(z0), dzdy=np.asarray(dzdy), y0=np.asarray(y0))
    host = (np.asarray(a) for a in (sel, items, row, lo, length))
    got = compact_spans_arrays(np, setup, *host)
    for dest, value in zip(outs, got, strict=True):
        dest[...] = value


@fastpaths.emulates(KERNEL_NAMES["decode"])
def _decode(variant: Any, args: tuple) -> None:
    keys, bits, *outs, count = args
    got = decode_keys_arrays(np, np.asarray(keys), int(bits))
    for dest, value in zip(outs, got, strict=True):
        dest[...] = value
    if count.shape[0]:
        count[0] += int(np.count_nonzero(got[0]))


@fastpaths.emulates(KERNEL_NAMES["transform"])
def _transform(variant: Any, args: tuple) -> None:
    vertices, m, out = args
    mvp = np.array(m, dtype=np.float64).reshape(4, 4)
    out[...] = to_clip_arrays(np, np.asarray(vertices), mvp)


@fastpaths.emulates(KERNEL_NAMES["classify"])
def _classify(variant: Any, args: tuple) -> None:
    clip, faces, gx, gy, rejected, crossing, counts = args
    rej, cross = classify_arrays(np, np.asarray(clip), np.asarray(faces), gx, gy)
    rejected[...] = rej
    crossing[...] = cross
    counts[0] += int(cross.sum())
    counts[1] += int(rej.sum())
