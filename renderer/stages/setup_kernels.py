"""Triangle setup fused into one kernel: a scalar per-triangle body written once.

:func:`setup_one` is the whole of :func:`renderer.stages.scan.setup_triangles_arrays` (the
window transform, snapping, orientation, bounding box and depth plane) for one triangle,
in the same operation order, so its results are bit for bit the array code's. The edge
functions are not stored: scan conversion and shading derive them exactly from the snapped
vertices where they need them (:mod:`renderer.stages.edges`). It is compiled twice from the same
code object:

- for the CPU with ``numba.njit`` (:func:`setup_cpu`, one loop over triangles,
  the NumPy backend's path);
- for the GPU with ``numba.cuda.jit`` (:mod:`renderer.stages.cuda_kernels`, one thread per
  triangle, the CuPy backend's path; also run in Numba's CUDA simulator by the tests).

The body calls three primitives that each target binds (:mod:`kernels.rebind`): ``fmul`` (a float64
product), ``rint`` (round half to even) and ``to_i64`` (float to int64). The GPU binds
``fmul`` to libdevice's ``dmul_rn``, a product NVVM never contracts with a following sum
into a fused multiply-add: by default NVVM contracts ``a * b + c`` into one ``fma``, which
rounds once instead of twice and would change the last bit of the window coordinates and
the depth slopes. LLVM on the CPU contracts nothing unless fast math is asked for.

Importing this module does not import Numba; the first call does, and compiles the loop
(or loads it from Numba's on-disk cache).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from kernels.rebind import bind, cpu_body, cpu_loop, fmul, rint, to_i64
from renderer.stages.transform import SUBPIXEL

__all__ = ["setup_one", "setup_cpu", "OUTPUTS"]

#: The body's outputs, in argument order: (name, dtype, per-vertex).
OUTPUTS = (
    # snapped coordinates fit 32 bits (the guard band keeps them within 2**22); the bodies
    # that read them compute in int64 (Numba widens int32 arithmetic)
    ("xs", np.int32, True),
    ("ys", np.int32, True),
    # scan lines, their number and columns are below the viewport's size (at most 4096
    # times the supersampling): 16 bytes a triangle less than int64 at scan conversion's
    # peak; the loops take the int32 workload as it is
    ("row0", np.int32, False),
    ("workload", np.int32, False),
    ("col0", np.int32, False),
    ("col1", np.int32, False),
    ("z0", np.float64, False),
    ("dzdx", np.float64, False),
    ("dzdy", np.float64, False),
    ("x0", np.float64, False),
    ("y0", np.float64, False),
    ("order", np.int8, True),
)

_SUB = float(SUBPIXEL)  # snapping multiplies by the float 256.0, as the array code does


def setup_one(points, corners, t, width, height, sx, sy, xs, ys, row0, workload, col0, col1,
              z0, dzdx, dzdy, x0, y0, order):  # fmt: skip
    """Set up triangle ``t``, whose vertex ``k`` is row ``corners[t, k]`` of the clip
    coordinates ``points`` (V, 4); write its row of every output array.

    The steps and their operation order are those of
    :func:`renderer.stages.scan.setup_triangles_arrays` (read it for the why of each step).

    Returns
    -------
    int
        1 when the triangle has zero area after snapping, else 0.
    """
    # to_window: x * (1 / w) * (W / 2) + W / 2 (renderer.stages.transform.to_window)
    # unsigned indices: no test for one counted from the array's end on every read
    v0 = np.uint64(corners[t, 0])
    v1 = np.uint64(corners[t, 1])
    v2 = np.uint64(corners[t, 2])
    w0 = 1.0 / points[v0, 3]
    w1 = 1.0 / points[v1, 3]
    w2 = 1.0 / points[v2, 3]
    xw0 = fmul(fmul(points[v0, 0], w0), sx) + sx
    xw1 = fmul(fmul(points[v1, 0], w1), sx) + sx
    xw2 = fmul(fmul(points[v2, 0], w2), sx) + sx
    yw0 = fmul(fmul(points[v0, 1], w0), sy) + sy
    yw1 = fmul(fmul(points[v1, 1], w1), sy) + sy
    yw2 = fmul(fmul(points[v2, 1], w2), sy) + sy
    zw0 = fmul(fmul(points[v0, 2], w0), 0.5) + 0.5
    zw1 = fmul(fmul(points[v1, 2], w1), 0.5) + 0.5
    zw2 = fmul(fmul(points[v2, 2], w2), 0.5) + 0.5
    # snap (renderer.stages.scan.snap)
    px0 = to_i64(rint(fmul(xw0 - 0.5, _SUB)))
    px1 = to_i64(rint(fmul(xw1 - 0.5, _SUB)))
    px2 = to_i64(rint(fmul(xw2 - 0.5, _SUB)))
    py0 = to_i64(rint(fmul(yw0 - 0.5, _SUB)))
    py1 = to_i64(rint(fmul(yw1 - 0.5, _SUB)))
    py2 = to_i64(rint(fmul(yw2 - 0.5, _SUB)))
    ar = (px1 - px0) * (py2 - py0) - (px2 - px0) * (py1 - py0)
    o1 = 1
    o2 = 2
    if ar < 0:  # clockwise: swap vertices 1 and 2
        o1, o2 = 2, 1
        px1, px2 = px2, px1
        py1, py2 = py2, py1
        zw1, zw2 = zw2, zw1
        xw1, xw2 = xw2, xw1
        yw1, yw2 = yw2, yw1
        ar = -ar
    degenerate = ar == 0
    # the snapped vertices, counter-clockwise: the edge functions follow from them
    # (edge_function), where scan conversion and shading need them
    xs[t, 0] = px0
    xs[t, 1] = px1
    xs[t, 2] = px2
    ys[t, 0] = py0
    ys[t, 1] = py1
    ys[t, 2] = py2
    # the first and last pixel centres inside the box, clipped to the viewport
    ymin = min(min(py0, py1), py2)
    ymax = max(max(py0, py1), py2)
    xmin = min(min(px0, px1), px2)
    xmax = max(max(px0, px1), px2)
    r0 = max(-((-ymin) // SUBPIXEL), 0)
    r1 = min(ymax // SUBPIXEL, height - 1)
    k0 = max(-((-xmin) // SUBPIXEL), 0)
    k1 = min(xmax // SUBPIXEL, width - 1)
    row0[t] = r0
    col0[t] = k0
    col1[t] = k1
    if degenerate or k1 < k0:
        workload[t] = 0
    else:
        workload[t] = max(r1 - r0 + 1, 0)
    # the depth plane through the unsnapped vertices, in pixels from pixel centres
    xf0 = xw0 - 0.5
    xf1 = xw1 - 0.5
    xf2 = xw2 - 0.5
    yf0 = yw0 - 0.5
    yf1 = yw1 - 0.5
    yf2 = yw2 - 0.5
    dx1 = xf1 - xf0
    dy1 = yf1 - yf0
    dx2 = xf2 - xf0
    dy2 = yf2 - yf0
    dz1 = zw1 - zw0
    dz2 = zw2 - zw0
    det = fmul(dx1, dy2) - fmul(dx2, dy1)
    if degenerate or det == 0:
        dzdx[t] = 0.0
        dzdy[t] = 0.0
    else:
        dzdx[t] = (fmul(dz1, dy2) - fmul(dz2, dy1)) / det
        dzdy[t] = (fmul(dz2, dx1) - fmul(dz1, dx2)) / det
    z0[t] = zw0
    x0[t] = xf0
    y0[t] = yf0
    order[t, 0] = 0
    order[t, 1] = o1
    order[t, 2] = o2
    if degenerate:
        return 1
    return 0


def _setup_rows(points, corners, width, height, sx, sy, xs, ys, row0, workload, col0, col1,
                z0, dzdx, dzdy, x0, y0, order):  # fmt: skip
    """Every triangle (the CPU's loop); returns the number of degenerate ones."""
    n = 0
    for t in range(corners.shape[0]):
        n += body(points, corners, t, width, height, sx, sy, xs, ys, row0, workload, col0,
                  col1, z0, dzdx, dzdy, x0, y0, order)  # fmt: skip
    return n


def body(*args: Any) -> int:  # rebound to the compiled body by _cpu_kernel
    raise NotImplementedError


@functools.cache
def _cpu_kernel() -> Any:
    body = cpu_body(setup_one, "fmul", "rint", "to_i64")
    return cpu_loop(bind(_setup_rows, body=body))


def setup_cpu(
    points: np.ndarray, corners: np.ndarray, width: int, height: int, count: Any = None
) -> dict[str, Any]:
    """The fused setup on the CPU of the triangles ``corners`` (T, 3) (rows of the clip
    coordinates ``points`` (V, 4)): the fields of :class:`renderer.stages.scan.TriangleSetup`.
    The degenerate triangles are added to ``count`` (a 1-element int64 array) when given,
    whose 0-d view ``n_degenerate`` then is, as the GPU's kernel counts them.

    Examples
    --------
    >>> points = np.array([[-0.5, -0.5, 0, 1], [0.5, -0.5, 0, 1], [0, 0.5, 0, 1]])
    >>> f = setup_cpu(points, np.array([[0, 1, 2]]), 16, 16)
    >>> int(f["row0"][0]), int(f["workload"][0]), f["order"].tolist(), int(f["n_degenerate"])
    (4, 8, [[0, 1, 2]], 0)
    """
    t = corners.shape[0]
    out = {
        name: np.empty((t, 3) if per_vertex else t, dtype=dtype)
        for name, dtype, per_vertex in OUTPUTS
    }
    n = _cpu_kernel()(points, corners, width, height, width / 2.0, height / 2.0, *out.values())
    if count is None:
        out["n_degenerate"] = np.int64(n)
    else:
        count += n
        out["n_degenerate"] = count.reshape(())
    return out
