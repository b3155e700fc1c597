"""Transform stage: model space to clip space, clip space to window space.

One virtual processor per vertex (ours; Ahrens & Hansen 1995, section 3, list transforming
"for a new view position and magnification" as the renderer's first step). Written
against the machine's array module ``xp``; every product and sum is a separate elementwise
float64 operation in a fixed order, so NumPy and CuPy give bit-identical results (no fused
multiply-adds, no BLAS reductions).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from renderer.stages.fast_paths import fast_path

__all__ = ["to_clip", "to_clip_arrays", "to_window", "SUBPIXEL_BITS", "SUBPIXEL"]

#: Sub-pixel precision of window coordinates, as in OpenGL implementations (Mesa's llvmpipe
#: and most GPUs report GL_SUBPIXEL_BITS = 8).
SUBPIXEL_BITS = 8
SUBPIXEL = 1 << SUBPIXEL_BITS


def to_clip(xp: Any, vertices: Any, mvp: np.ndarray) -> Any:
    """Clip coordinates ``mvp @ [x, y, z, 1]`` of every vertex: one fused kernel for
    float64 vertices (:mod:`renderer.stages.transform_kernels`), else :func:`to_clip_arrays`, with
    the same results.

    Parameters
    ----------
    xp : module
        numpy or cupy.
    vertices : (N, 3) float64 xp array
    mvp : (4, 4) array
        OpenGL model-view-projection matrix (column vectors).

    Returns
    -------
    (N, 4) float64 xp array

    Examples
    --------
    >>> import numpy as np
    >>> to_clip(np, np.array([[1.0, 2.0, 3.0]]), np.eye(4)).tolist()
    [[1.0, 2.0, 3.0, 1.0]]
    """
    fused = fast_path("transform", xp)
    if fused is not None and vertices.dtype == np.float64 and vertices.ndim == 2:
        return fused(vertices, mvp)
    return to_clip_arrays(xp, vertices, mvp)


def to_clip_arrays(xp: Any, vertices: Any, mvp: np.ndarray) -> Any:
    """:func:`to_clip` as array expressions (the fused kernels' oracle).

    Examples
    --------
    >>> import numpy as np
    >>> to_clip_arrays(np, np.array([[1.0, 2.0, 3.0]]), 2 * np.eye(4)).tolist()
    [[2.0, 4.0, 6.0, 2.0]]
    """
    mvp = np.asarray(mvp, dtype=np.float64)
    x, y, z = vertices[:, 0], vertices[:, 1], vertices[:, 2]
    rows = []
    for r in range(4):
        # ((m0 x + m1 y) + m2 z) + m3, one rounding per operation on every backend
        rows.append(
            x * float(mvp[r, 0]) + y * float(mvp[r, 1]) + z * float(mvp[r, 2]) + float(mvp[r, 3])
        )
    return xp.stack(rows, axis=1)


def to_window(xp: Any, clip: Any, width: int, height: int) -> tuple[Any, Any, Any, Any]:
    """Perspective division and the viewport transform (``glViewport(0, 0, W, H)``,
    ``glDepthRange(0, 1)``), in the order Mesa's draw module uses:
    ``x_w = x * (1 / w) * (W / 2) + W / 2``.

    Parameters
    ----------
    clip : (..., 4) float64 xp array
        Clip coordinates with ``w > 0`` (after clipping).

    Returns
    -------
    xw, yw, zw, inv_w : float64 xp arrays shaped like ``clip[..., 0]``
        Window x and y (y up, pixel centres at half integers), depth in [0, 1], and 1/w.

    Examples
    --------
    >>> import numpy as np
    >>> xw, yw, zw, inv_w = to_window(np, np.array([[0.5, -1.0, 0.0, 1.0]]), 64, 32)
    >>> xw.tolist(), yw.tolist(), zw.tolist()    # x: 3/4 across, y: the bottom edge
    ([48.0], [0.0], [0.5])
    """
    inv_w = 1.0 / clip[..., 3]
    sx, sy = width / 2.0, height / 2.0
    xw = clip[..., 0] * inv_w * sx + sx
    yw = clip[..., 1] * inv_w * sy + sy
    zw = clip[..., 2] * inv_w * 0.5 + 0.5
    return xw, yw, zw, inv_w
