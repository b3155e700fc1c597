"""The dense path: every point every iteration (the reference of the mesh path).

:func:`anisotropic_diffusion` is a drop-in for medpy's function of that name, with the
fixed point of Biagioni & Prins (1991) added (``epsilon``). It checks its arguments once
(:class:`diffusion.settings.PMParameters`) and runs :func:`pm_diffuse` on the image, or
across MPI ranks on this rank's block of rows (:mod:`diffusion.blocks`): the array code
of :mod:`diffusion.update` on NumPy, one fused kernel per iteration on a GPU
(:mod:`diffusion.fused`). It accepts NumPy or CuPy arrays and gives back the same kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from diffusion.blocks import image_layout
from diffusion.layout import Layout
from diffusion.settings import DiffusionStabilityWarning, PMParameters
from diffusion.update import Workspace, dilate, pm_update, pm_update_inplace
from kernels.registry import force_reference

__all__ = [
    "DiffusionInfo",
    "DiffusionStabilityWarning",
    "Layout",
    "PMParameters",
    "anisotropic_diffusion",
    "pm_diffuse",
]


@dataclass
class DiffusionInfo:
    """What a diffusion run did.

    Attributes
    ----------
    iterations : int
        Iterations run (fewer than asked when every point reached its fixed point).
    active_fraction : list of float
        Fraction of the points that had to be computed in each iteration.
    updated_fraction : list of float
        Fraction of the points whose value changed in each iteration.
    converged : bool
        True when the run stopped because no point was active any more.
    """

    iterations: int = 0
    active_fraction: list[float] = field(default_factory=list)
    updated_fraction: list[float] = field(default_factory=list)
    converged: bool = False


def pm_diffuse(
    xp: Any, out: Any, layout: Layout, p: PMParameters, return_info: bool
) -> tuple[Any, DiffusionInfo]:
    """The iteration loop of :func:`anisotropic_diffusion` with the parameters ``p`` on the
    validated float32 block ``out`` of ``layout`` (the whole image on one process): returns
    the block's result and the (global) :class:`DiffusionInfo`.

    Examples
    --------
    >>> img = np.zeros((5, 5), np.float32); img[2, 2] = 100
    >>> p = PMParameters.check(2, niter=50, epsilon=0.5)
    >>> out, info = pm_diffuse(np, img, Layout(img.shape), p, True)
    >>> info.converged, info.iterations < 50
    (True, True)
    """
    info = DiffusionInfo()
    if xp is not np and not force_reference():
        return _fused(xp, out, layout, p, info, return_info), info
    fixed_point = _FixedPoint(xp, layout, p, out.shape) if p.epsilon > 0 else None
    ext, own = layout.buffer(xp, out)
    out = ext[own]  # a view: the block's updates land in the buffer
    ws = None
    for _ in range(p.niter):
        layout.fill(ext, own)
        upd, ws = _block_update(xp, ext, own, layout, p, ws)
        info.iterations += 1
        if fixed_point is None:
            out += upd
            info.active_fraction.append(1.0)
            info.updated_fraction.append(1.0)
        elif fixed_point.step(out, upd, own, info):
            info.converged = True
            break
    return out, info


def _block_update(
    xp: Any, ext: Any, own: slice, layout: Layout, p: PMParameters, ws: Workspace | None
) -> tuple[Any, Workspace | None]:
    """The update of the block's rows ``ext[own]`` (the ghost rows around them only read),
    and the NumPy workspace it was computed in (made on the first call)."""
    if layout.local == 0:
        return xp.zeros_like(ext[own]), ws
    if xp is not np:
        return pm_update(xp, ext, p)[own], ws
    if ws is None or ws.d.shape != ext.shape:
        ws = Workspace(ext.shape)
    return pm_update_inplace(ext, p, ws)[own], ws


class _FixedPoint:
    """Biagioni & Prins's fixed point on the array-code path: a point whose update is below
    ``p.epsilon`` keeps its value; the points active next are the changed ones and their
    neighbours (with ``p.freeze``, the ones never below ``epsilon``)."""

    def __init__(self, xp: Any, layout: Layout, p: PMParameters, shape: tuple[int, ...]) -> None:
        self.xp, self.layout, self.epsilon = xp, layout, p.epsilon
        self.frozen = xp.zeros(shape, dtype=bool) if p.freeze else None
        self.wide = None  # the changed points with ghost rows, for the dilation
        self.active_count: int | None = None

    def step(self, out: Any, upd: Any, own: slice, info: DiffusionInfo) -> bool:
        """Add ``upd`` to the block ``out`` where it reaches ``epsilon`` and record the
        iteration in ``info``; True when no point of the image is active any more."""
        xp, n = self.xp, self.layout.size
        info.active_fraction.append(1.0 if self.active_count is None else self.active_count / n)
        changed = xp.abs(upd) >= self.epsilon
        if self.frozen is not None:
            changed &= ~self.frozen
        xp.copyto(out, out + upd, where=changed)
        active = self._active(changed, own)
        mine = np.array([int(active.sum()), int(changed.sum())], dtype=np.int64)
        self.active_count, changed_count = (int(c) for c in self.layout.total(mine))
        info.updated_fraction.append(changed_count / n)
        return self.active_count == 0

    def _active(self, changed: Any, own: slice) -> Any:
        """The block's points active in the next iteration."""
        if self.frozen is not None:
            self.frozen |= ~changed
            return ~self.frozen
        if self.wide is None:
            self.wide, _ = self.layout.buffer(self.xp, changed)
        else:
            self.wide[own] = changed
        self.layout.fill(self.wide, own)
        return dilate(self.xp, self.wide)[own]


def anisotropic_diffusion(  # noqa: PLR0913 (medpy's signature)
    image: Any,
    niter: int = 1,
    kappa: float = 50,
    gamma: float = 0.1,
    voxelspacing: Any = None,
    option: int = 1,
    *,
    epsilon: float = 0.0,
    freeze: bool = False,
    return_info: bool = False,
    machine: Any = None,
) -> Any:
    """Edge-directed (Perona-Malik) anisotropic diffusion, medpy-compatible.

    Parameters
    ----------
    image : array_like (NumPy or CuPy), 2-D or 3-D
        Input image; computed in float32.
    niter : int
        Number of iterations (the most, with ``epsilon``).
    kappa : float
        Conduction coefficient: gradients much larger than ``kappa`` block diffusion.
    gamma : float
        Speed of diffusion; at most 0.25 in 2-D (1/6 in 3-D) for stability.
    voxelspacing : sequence of float, optional
        Distance between neighbours along every axis.
    option : {1, 2, 3}
        Conduction function: 1 exponential, 2 rational, 3 Tukey's biweight.
    epsilon : float
        Fixed-point threshold (Biagioni & Prins 1991): a point whose update is smaller than
        ``epsilon`` in magnitude keeps its value, and is not computed again until a value
        in its neighbourhood changes. 0 (the default) updates every point every
        iteration, exactly as medpy.
    freeze : bool
        With ``epsilon``, a point that once falls below it stays frozen for good.
    return_info : bool
        Also return a :class:`DiffusionInfo`.
    machine : simd.Machine, optional
        A machine spread over MPI ranks (``Machine(comm=...)``): ``image`` is then this
        rank's block of rows (along axis 0, any layout, e.g. from ``machine.scatter``),
        each iteration exchanges one face row with the neighbour ranks, and the result is
        this rank's rows of the one-rank result, bit for bit; the info is global
        (:mod:`diffusion.blocks`). Collective. Ignored on a one-process machine.

    Returns
    -------
    out : array (float32, same kind as ``image``)
    info : DiffusionInfo
        Only with ``return_info=True``.

    Raises
    ------
    ValueError
        A bad argument, named; among them a ``gamma`` past the explicit scheme's
        stability bound for the image's dimensions, spacing and option
        (:func:`diffusion.conduction.stable_gamma`: 1/4 for a 2-D image at unit spacing).

    Notes
    -----
    On CuPy arrays every iteration is one fused CUDA kernel (:mod:`diffusion.cuda_kernels`),
    with ``epsilon`` too (the activity test on the device; the counts are read back every
    :data:`diffusion.fused.CHECK_EVERY` iterations), and so on MPI ranks (the kernel on the
    rank's block with a ghost row from each neighbour); results agree with the NumPy path to
    float32 rounding. ``SIMD_FORCE_REFERENCE=1`` forces the array-code path
    (:func:`kernels.registry.force_reference`).
    Skipping a point whose neighbourhood did not change is exact: its update would be
    the same number again, still below ``epsilon``. So the result equals the one of
    updating every point whose update reaches ``epsilon``, which is what this dense path
    computes; it tracks the active points only to report them and to stop.

    Examples
    --------
    >>> import numpy as np
    >>> img = np.zeros((5, 5), np.float32); img[2, 2] = 100
    >>> out = anisotropic_diffusion(img, niter=1, kappa=50, gamma=0.1)
    >>> round(float(out[2, 2]), 3), round(float(out[2, 3]), 3)
    (99.267, 0.183)
    >>> out, info = anisotropic_diffusion(img, niter=50, epsilon=0.5, return_info=True)
    >>> info.converged, info.iterations < 50
    (True, True)
    """
    xp, out, layout, p = image_layout(
        image,
        machine,
        lambda ndim: PMParameters.check(
            ndim, niter, kappa, gamma, voxelspacing, option, epsilon=epsilon, freeze=freeze
        ),
    )
    out, info = pm_diffuse(xp, out, layout, p, return_info)
    return (out, info) if return_info else out


def _fused(
    xp: Any, out: Any, layout: Layout, p: PMParameters, info: DiffusionInfo, dilated: bool
) -> Any:
    """The device path: one fused kernel per iteration (:mod:`diffusion.fused`) on the
    block of ``layout``; fills ``info`` as the array-code loop does (the active counts only
    with ``dilated``)."""
    from diffusion.fused import pm_iterate, pm_iterate_epsilon

    if p.epsilon == 0:
        info.iterations = p.niter
        info.active_fraction = [1.0] * p.niter
        info.updated_fraction = [1.0] * p.niter
        return pm_iterate(xp, out, p, layout)
    out, changed, active = pm_iterate_epsilon(xp, out, p, dilated, layout)
    n = layout.size
    # Active after an iteration: the changed points and their neighbours, or with freeze
    # the points not frozen, which are the changed ones.
    after = changed if p.freeze else active
    info.iterations = len(changed)
    info.updated_fraction = [int(c) / n for c in changed]
    if after is not None:
        info.active_fraction = [1.0] + [int(a) / n for a in after[:-1]]
    info.converged = len(changed) > 0 and int(changed[-1]) == 0
    return out
