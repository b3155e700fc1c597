"""The Perona-Malik update in array code, the reference of the fused kernels.

:func:`pm_update` is medpy's loop body written once against ``xp``;
:func:`pm_update_inplace` is the same float32 operations in the same order for NumPy,
written into preallocated buffers (:class:`Workspace`); :func:`dilate` wakes the
neighbours of the points that changed (Biagioni & Prins's fixed point).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from diffusion.conduction import flux
from diffusion.settings import PMParameters

__all__ = ["Workspace", "dilate", "pm_update", "pm_update_inplace"]


def pm_update(xp: Any, out: Any, p: PMParameters) -> Any:
    """``p.gamma`` times the sum over axes of forward flux minus backward flux (float32).

    The same operations as medpy's loop body; zero flux through the border faces.

    Examples
    --------
    >>> img = np.zeros((3, 3), np.float32); img[1, 1] = 100
    >>> upd = pm_update(np, img, PMParameters.check(2))
    >>> round(float(upd[1, 1]), 3), round(float(upd[1, 2]), 3)
    (-0.733, 0.183)
    """
    total = None
    for axis in range(out.ndim):
        # Forward difference, 0 at the last point of the axis (no flux out of the image).
        d = xp.zeros_like(out)
        hi = [slice(None)] * out.ndim
        lo = [slice(None)] * out.ndim
        hi[axis] = slice(1, None)
        lo[axis] = slice(None, -1)
        d[tuple(lo)] = out[tuple(hi)] - out[tuple(lo)]
        m = flux(xp, d, p.kappa, p.spacing[axis], p.option)
        # Forward flux minus the backward one (the previous point's forward flux).
        u = m.copy()
        u[tuple(hi)] = m[tuple(hi)] - m[tuple(lo)]
        total = u if total is None else total + u
    return p.gamma * total


class Workspace:
    """Preallocated float32 buffers for :func:`pm_update_inplace` (NumPy)."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.d = np.zeros(shape, np.float32)
        self.t = np.empty(shape, np.float32)
        self.m = np.empty(shape, np.float32)
        self.u = np.empty(shape, np.float32)
        self.total = np.empty(shape, np.float32)


def _flux_inplace(ws: Workspace, kappa: float, spacing: float, option: int) -> None:
    """``ws.m = flux(ws.d)`` with the operations of :func:`diffusion.conduction.flux`, in
    the same order (so the same float32 results), without temporaries."""
    d, t = ws.d, ws.t
    if option == 1:
        np.divide(d, kappa, out=t)
        np.multiply(t, t, out=t)  # ** 2.0 is a square in NumPy
        np.negative(t, out=t)
        np.exp(t, out=t)
        np.divide(t, float(spacing), out=t)
    elif option == 2:
        np.divide(d, kappa, out=t)
        np.multiply(t, t, out=t)
        np.add(1.0, t, out=t)
        np.divide(1.0, t, out=t)
        np.divide(t, float(spacing), out=t)
    else:
        kappa_s = kappa * (2**0.5)
        np.divide(d, kappa_s, out=t)
        np.multiply(t, t, out=t)
        np.subtract(1.0, t, out=t)
        np.multiply(t, t, out=t)
        np.multiply(0.5, t, out=t)
        np.divide(t, float(spacing), out=t)
        t[~(np.abs(d) <= kappa_s)] = 0
    np.multiply(t, d, out=ws.m)


def pm_update_inplace(out: np.ndarray, p: PMParameters, ws: Workspace) -> np.ndarray:
    """:func:`pm_update` for NumPy in preallocated buffers (returns ``ws.total``).

    Bit for bit the same values: the same float32 operations in the same order, only
    written into buffers instead of new arrays.

    Examples
    --------
    >>> img = (np.arange(20, dtype=np.float32) ** 2).reshape(4, 5)
    >>> p = PMParameters.check(2, kappa=20, option=3)
    >>> new = pm_update_inplace(img, p, Workspace(img.shape))
    >>> new.tobytes() == pm_update(np, img, p).tobytes()
    True
    """
    k = out.ndim
    for axis in range(k):
        hi = tuple(slice(1, None) if a == axis else slice(None) for a in range(k))
        lo = tuple(slice(None, -1) if a == axis else slice(None) for a in range(k))
        last = tuple(slice(-1, None) if a == axis else slice(None) for a in range(k))
        np.subtract(out[hi], out[lo], out=ws.d[lo])
        ws.d[last] = 0
        _flux_inplace(ws, p.kappa, p.spacing[axis], p.option)
        target = ws.total if axis == 0 else ws.u
        target[...] = ws.m
        np.subtract(ws.m[hi], ws.m[lo], out=target[hi])
        if axis > 0:
            np.add(ws.total, ws.u, out=ws.total)
    np.multiply(p.gamma, ws.total, out=ws.total)
    return ws.total


def dilate(xp: Any, mask: Any) -> Any:
    """``mask`` or any of its 2k orthogonal neighbours (no wrap at the border).

    Examples
    --------
    >>> dilate(np, np.array([False, False, True, False])).tolist()
    [False, True, True, True]
    """
    out = mask.copy()
    for axis in range(mask.ndim):
        hi = [slice(None)] * mask.ndim
        lo = [slice(None)] * mask.ndim
        hi[axis] = slice(1, None)
        lo[axis] = slice(None, -1)
        out[tuple(hi)] |= mask[tuple(lo)]
        out[tuple(lo)] |= mask[tuple(hi)]
    return out
