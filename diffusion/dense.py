"""The dense path: every point every iteration (the reference of the mesh path).

:func:`anisotropic_diffusion` is a drop-in for medpy's function of that name, with the
fixed point of Biagioni & Prins (1991) added (``epsilon``); :func:`gradient_anisotropic_diffusion`
is ITK's ``GradientAnisotropicDiffusionImageFilter`` formulation. Both accept NumPy or CuPy
arrays and give back the same kind.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from diffusion.conduction import flux, stable_gamma
from kernels.registry import force_reference

__all__ = [
    "DiffusionInfo",
    "Layout",
    "PMParameters",
    "DiffusionStabilityWarning",
    "ITKParameters",
    "anisotropic_diffusion",
    "gradient_anisotropic_diffusion",
]


class DiffusionStabilityWarning(UserWarning):
    """The time step is past the stability limit of the explicit scheme."""


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


# ------------------------------------------------------------------------- validation


def array_module(image: Any) -> Any:
    """numpy, or cupy when ``image`` is a CuPy array (CuPy is imported only then), or the
    counting stand-in for CuPy for its arrays (:mod:`kernels.counting`)."""
    module = type(image).__module__
    if module.split(".")[0] == "cupy":
        import cupy

        return cupy
    if module == "kernels.counting":
        from kernels.counting import cupy as counting

        return counting
    return np


def check_image(
    image: Any, *, ndims: tuple[int, ...] = (2, 3), allow_empty: bool = False
) -> tuple[Any, Any]:
    """Validate ``image`` and return ``(xp, float32 copy)`` (``allow_empty``: a rank's
    block may be empty; the whole image is checked by the caller)."""
    xp = array_module(image)
    if xp is np:
        image = np.asarray(image)
    if image.dtype.kind not in "biuf":
        raise TypeError(f"image must hold real numbers, got dtype {image.dtype}")
    if image.ndim not in ndims:
        want = " or ".join(f"{d}-D" for d in ndims)
        raise ValueError(f"image must be {want}, got {image.ndim}-D with shape {image.shape}")
    if image.size == 0 and not allow_empty:
        raise ValueError(f"image is empty (shape {image.shape})")
    out = xp.array(image, dtype=np.float32, copy=True)
    if not bool(xp.isfinite(out).all()):
        raise ValueError("image contains NaN or infinite values")
    return xp, out


def check_machine(machine: Any) -> None:
    """TypeError unless ``machine`` is None or a :class:`simd.Machine` (a wrong object
    would otherwise be ignored, or fail deep inside as an AttributeError)."""
    from simd import Machine

    if machine is not None and not isinstance(machine, Machine):
        raise TypeError(f"machine must be a simd.Machine or None, got {type(machine).__name__}")


def check_spacing(spacing: Any, ndim: int, name: str) -> tuple[float, ...]:
    """``spacing`` as a tuple of ``ndim`` positive floats (ones when None)."""
    if spacing is None:
        return (1.0,) * ndim
    spacing = tuple(float(s) for s in np.ravel(np.asarray(spacing, dtype=np.float64)))
    if len(spacing) != ndim:
        raise ValueError(f"{name} needs {ndim} values (one per axis), got {len(spacing)}")
    if not all(math.isfinite(s) and s > 0 for s in spacing):
        raise ValueError(f"{name} must be positive and finite, got {spacing}")
    return spacing


def check_positive(value: Any, name: str) -> float:
    """``value`` as a float when it is a positive finite number, else ValueError naming it."""
    if not (isinstance(value, int | float | np.number) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def check_count(value: Any, name: str, *, least: int = 0) -> int:
    """``value`` as an int when it is an integer (not a bool) of at least ``least`` (0 or
    1), else ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < least:
        kind = "non-negative" if least == 0 else "positive"
        raise ValueError(f"{name} must be a {kind} integer, got {value!r}")
    return int(value)


@dataclass(frozen=True, kw_only=True)
class PMParameters:
    """The parameters of one Perona-Malik run, checked once where the user's values enter.

    :meth:`check` makes one from the arguments of :func:`anisotropic_diffusion` (or
    :func:`diffusion.mesh_diffusion`) and raises their one-line errors; every layer below
    (the iteration loops, the fused device path, the MPI blocks) passes the object on and
    trusts its fields. Made directly, the fields must already be valid.

    Attributes
    ----------
    spacing : tuple of float
        Distance between neighbours along every axis (one per axis of the image).
    niter : int
        Iterations (the most, with ``epsilon``).
    kappa, gamma : float
        Conduction coefficient and speed of diffusion.
    option : {1, 2, 3}
        Conduction function (:data:`diffusion.conduction.OPTIONS`).
    epsilon : float
        Fixed-point threshold (0: every point every iteration).
    freeze : bool
        With ``epsilon``, a point that once falls below it stays frozen.

    Examples
    --------
    >>> p = PMParameters.check(2, niter=3, kappa=20, voxelspacing=(1, 2), option=2)
    >>> p.spacing, p.niter, p.kappa, p.gamma, p.option, p.epsilon, p.freeze
    ((1.0, 2.0), 3, 20.0, 0.1, 2, 0.0, False)
    >>> PMParameters.check(2, kappa=0)
    Traceback (most recent call last):
    ...
    ValueError: kappa must be a positive finite number, got 0
    """

    spacing: tuple[float, ...]
    niter: int = 1
    kappa: float = 50.0
    gamma: float = 0.1
    option: int = 1
    epsilon: float = 0.0
    freeze: bool = False

    @classmethod
    def check(
        cls,
        ndim: int,
        niter: Any = 1,
        kappa: Any = 50,
        gamma: Any = 0.1,
        voxelspacing: Any = None,
        option: Any = 1,
        *,
        epsilon: Any = 0.0,
        freeze: Any = False,
    ) -> PMParameters:
        """The user's arguments (those of :func:`anisotropic_diffusion`) for an
        ``ndim``-dimensional image, validated and normalised (Python ints and floats,
        ``voxelspacing`` as a tuple, ones when None); ValueError naming the first bad one."""
        niter = check_count(niter, "niter")
        kappa = check_positive(kappa, "kappa")
        gamma = check_positive(gamma, "gamma")
        if option not in (1, 2, 3):
            raise ValueError(f"option must be 1, 2 or 3, got {option!r}")
        if not (
            isinstance(epsilon, int | float | np.number) and epsilon >= 0 and math.isfinite(epsilon)
        ):
            raise ValueError(f"epsilon must be a non-negative finite number, got {epsilon!r}")
        return cls(
            spacing=check_spacing(voxelspacing, ndim, "voxelspacing"),
            niter=niter,
            kappa=kappa,
            gamma=gamma,
            option=int(option),
            epsilon=float(epsilon),
            freeze=bool(freeze),
        )

    def warn_if_unstable(self, stacklevel: int = 2) -> None:
        """:class:`DiffusionStabilityWarning` when ``gamma`` is past the stability limit
        of the explicit scheme (:func:`diffusion.conduction.stable_gamma`), pointing
        ``stacklevel`` frames above the caller of this method."""
        limit = stable_gamma(self.spacing, self.option)
        if self.gamma > limit:
            warnings.warn(
                f"gamma={self.gamma} is past the stability limit {limit:.4g} of the explicit "
                f"scheme for spacing {self.spacing}: the result may oscillate",
                DiffusionStabilityWarning,
                stacklevel=stacklevel + 1,
            )


# ------------------------------------------------------------------------- Perona-Malik


def pm_update(xp: Any, out: Any, p: PMParameters) -> Any:
    """``p.gamma`` times the sum over axes of forward flux minus backward flux (float32).

    The same operations as medpy's loop body; zero flux through the border faces.
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


class _Workspace:
    """Preallocated float32 buffers for :func:`pm_update_inplace` (NumPy)."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.d = np.zeros(shape, np.float32)
        self.t = np.empty(shape, np.float32)
        self.m = np.empty(shape, np.float32)
        self.u = np.empty(shape, np.float32)
        self.total = np.empty(shape, np.float32)


def _flux_inplace(ws: _Workspace, kappa: float, spacing: float, option: int) -> None:
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


def pm_update_inplace(out: np.ndarray, p: PMParameters, ws: _Workspace) -> np.ndarray:
    """:func:`pm_update` for NumPy in preallocated buffers (returns ``ws.total``).

    Bit for bit the same values: the same float32 operations in the same order, only
    written into buffers instead of new arrays.
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
    """``mask`` or any of its 2k orthogonal neighbours (no wrap at the border)."""
    out = mask.copy()
    for axis in range(mask.ndim):
        hi = [slice(None)] * mask.ndim
        lo = [slice(None)] * mask.ndim
        hi[axis] = slice(1, None)
        lo[axis] = slice(None, -1)
        out[tuple(hi)] |= mask[tuple(lo)]
        out[tuple(lo)] |= mask[tuple(hi)]
    return out


class Layout:
    """How this process holds the image: here all of it, one block with no neighbours.

    :class:`diffusion.blocks` splits the image in blocks of rows across MPI ranks with a
    subclass; the iteration loop (:func:`pm_diffuse`) is the same for both.

    Attributes
    ----------
    shape : tuple of int
        Shape of the whole image.
    size : int
        Points of the whole image.
    local : int
        Rows (along axis 0) of this process's block.
    ghosts : tuple of int
        Ghost rows the block needs below and above (from neighbour blocks): none here.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.zeros((3, 4), np.float32)
    >>> layout = Layout(a.shape)
    >>> layout.size, layout.ghosts, layout.buffer(np, a)[1]
    (12, (0, 0), slice(0, 3, None))
    """

    ghosts: tuple[int, int] = (0, 0)

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = tuple(int(n) for n in shape)
        self.size = math.prod(self.shape)
        self.local = self.shape[0]

    def buffer(self, xp: Any, block: Any) -> tuple[Any, slice]:
        """A C-contiguous array holding ``block`` (this process's own copy) with room for
        its ghost rows around it, and the slice of the block's rows in it: ``block``
        itself when there are none."""
        below, above = self.ghosts
        if not (below or above):
            return block, slice(0, self.local)
        ext = xp.empty((below + self.local + above, *block.shape[1:]), dtype=block.dtype)
        ext[below : below + self.local] = block
        return ext, slice(below, below + self.local)

    def fill(self, ext: Any, own: slice) -> None:
        """Write the neighbours' face rows into the ghost rows of ``ext`` (whose own rows
        are ``ext[own]``): nothing to do without neighbours."""

    def total(self, counts: np.ndarray) -> np.ndarray:
        """``counts`` (integers) summed over the processes that hold the image."""
        return counts

    def gather_rows(self, values: np.ndarray) -> np.ndarray:
        """Per-row host values of shape ``(k, rows of the block)`` of every block, in row
        order: ``(k, rows of the image)``."""
        return values


def pm_diffuse(
    xp: Any, out: Any, layout: Layout, p: PMParameters, return_info: bool
) -> tuple[Any, DiffusionInfo]:
    """The iteration loop of :func:`anisotropic_diffusion` with the parameters ``p`` on the
    validated float32 block ``out`` of ``layout`` (the whole image on one process): returns
    the block's result and the (global) :class:`DiffusionInfo`."""
    info = DiffusionInfo()
    if xp is not np and not force_reference():
        return _fused(xp, out, layout, p, info, return_info), info
    epsilon = p.epsilon
    n = layout.size
    ws = None
    active_count = None
    frozen = xp.zeros(out.shape, dtype=bool) if (epsilon > 0 and p.freeze) else None
    ext, own = layout.buffer(xp, out)
    out = ext[own]  # a view: the block's updates land in the buffer
    wide = None  # the changed points with ghost rows, for the dilation
    for _ in range(p.niter):
        layout.fill(ext, own)
        if layout.local == 0:
            upd = xp.zeros_like(out)
        elif xp is np:
            if ws is None or ws.d.shape != ext.shape:
                ws = _Workspace(ext.shape)
            upd = pm_update_inplace(ext, p, ws)[own]
        else:
            upd = pm_update(xp, ext, p)[own]
        info.iterations += 1
        if epsilon == 0:
            out += upd
            info.active_fraction.append(1.0)
            info.updated_fraction.append(1.0)
            continue
        info.active_fraction.append(1.0 if active_count is None else active_count / n)
        changed = xp.abs(upd) >= epsilon
        if frozen is not None:
            changed &= ~frozen
        xp.copyto(out, out + upd, where=changed)
        if frozen is not None:
            frozen |= ~changed
            active = ~frozen
        else:
            if wide is None:
                wide, _ = layout.buffer(xp, changed)
            else:
                wide[own] = changed
            layout.fill(wide, own)
            active = dilate(xp, wide)[own]
        mine = np.array([int(active.sum()), int(changed.sum())], dtype=np.int64)
        active_count, changed_count = (int(c) for c in layout.total(mine))
        info.updated_fraction.append(changed_count / n)
        if active_count == 0:
            info.converged = True
            break
    return out, info


def anisotropic_diffusion(
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

    Warns
    -----
    DiffusionStabilityWarning
        When ``gamma`` exceeds the stability limit for the spacing (see
        :func:`diffusion.conduction.stable_gamma`).

    Notes
    -----
    On CuPy arrays every iteration is one fused CUDA kernel (:mod:`diffusion.cuda_source`),
    with ``epsilon`` too (the activity test on the device; the counts are read back every
    :data:`diffusion._cupy.CHECK_EVERY` iterations), and so on MPI ranks (the kernel on the
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
    check_machine(machine)
    if getattr(machine, "ranks", None) is not None:
        from diffusion.blocks import block_anisotropic_diffusion

        return block_anisotropic_diffusion(
            image,
            niter,
            kappa,
            gamma,
            voxelspacing,
            option,
            epsilon=epsilon,
            freeze=freeze,
            return_info=return_info,
            machine=machine,
        )
    xp, out = check_image(image)
    p = PMParameters.check(
        out.ndim, niter, kappa, gamma, voxelspacing, option, epsilon=epsilon, freeze=freeze
    )
    p.warn_if_unstable()
    out, info = pm_diffuse(xp, out, Layout(out.shape), p, return_info)
    return (out, info) if return_info else out


def _fused(
    xp: Any, out: Any, layout: Layout, p: PMParameters, info: DiffusionInfo, dilated: bool
) -> Any:
    """The device path: one fused kernel per iteration (:mod:`diffusion._cupy`) on the
    block of ``layout``; fills ``info`` as the array-code loop does (the active counts only
    with ``dilated``)."""
    from diffusion._cupy import pm_iterate, pm_iterate_epsilon

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


# ------------------------------------------------------------------------- ITK


def gradient_row_sums(xp: Any, p: Any, scale: tuple[float, ...], rows: slice) -> np.ndarray:
    """Per axis and per row (of ``rows``, along axis 0), the sum of the squared central
    differences (float64, host array of shape ``(ndim, len(rows))``); ``p`` is the image
    padded by one point on every side.

    The mean squared gradient sums these row sums in row order (:func:`mean_of_row_sums`):
    a row is never split between ranks, so one rank and many give the same bits.
    """
    k = p.ndim
    sums = []
    for axis in range(k):
        plus = tuple(slice(2, None) if a == axis else slice(1, -1) for a in range(k))
        minus = tuple(slice(None, -2) if a == axis else slice(1, -1) for a in range(k))
        v = ((p[plus] - p[minus]) / -2.0 * scale[axis])[rows]
        sums.append((v * v).reshape(v.shape[0], -1).sum(axis=1))
    out = xp.stack(sums)
    return out if xp is np else xp.asnumpy(out)


def mean_of_row_sums(sums: np.ndarray, size: int) -> float:
    """ITK's ``CalculateAverageGradientMagnitudeSquared`` from :func:`gradient_row_sums`
    of every row in order: the mean over the points of the sum over axes."""
    acc = 0.0
    for axis_sums in sums:
        acc += float(np.sum(np.ascontiguousarray(axis_sums)))
    return acc / size


def itk_conductance(avg: float, conductance: float) -> float:
    """ITK's ``m_K`` from the mean squared gradient, kept in the pixel type as ITK does."""
    return float(np.float32(avg * conductance * conductance * -2.0))


def itk_delta(xp: Any, x: Any, p: Any, big_k: float, scale: tuple[float, ...]) -> Any:
    """ITK's update (float64, before the time step) of ``x``, ``p`` being ``x`` padded by
    one point on every side (by replication at the image border)."""
    k = x.ndim

    def at(offset: dict[int, int]) -> Any:
        return p[
            tuple(slice(1 + offset.get(a, 0), p.shape[a] - 1 + offset.get(a, 0)) for a in range(k))
        ]

    central = [(at({a: 1}) - at({a: -1})) / 2.0 * scale[a] for a in range(k)]
    delta = xp.zeros_like(x)
    for i in range(k):
        fwd = (at({i: 1}) - x) * scale[i]
        bwd = (x - at({i: -1})) * scale[i]
        acc = xp.zeros_like(x)
        acc_d = xp.zeros_like(x)
        for j in range(k):
            if j == i:
                continue
            aug = (at({i: 1, j: 1}) - at({i: 1, j: -1})) / 2.0 * scale[j]
            dim = (at({i: -1, j: 1}) - at({i: -1, j: -1})) / 2.0 * scale[j]
            acc += 0.25 * (central[j] + aug) ** 2
            acc_d += 0.25 * (central[j] + dim) ** 2
        if big_k == 0.0:
            continue  # ITK: zero conductance everywhere
        cx = xp.exp((fwd**2 + acc) / big_k)
        cxd = xp.exp((bwd**2 + acc_d) / big_k)
        delta += fwd * cx - bwd * cxd
    return delta


@dataclass(frozen=True, kw_only=True)
class ITKParameters:
    """The parameters of one ITK gradient anisotropic diffusion run, checked once where the
    user's values enter (:meth:`check`); the iteration loop (:func:`itk_diffuse`), one rank
    or many, takes the object and trusts its fields.

    Attributes
    ----------
    spacing : tuple of float
        Pixel spacing per axis.
    time_step, conductance : float
        Step of the explicit scheme and conductance parameter ``K``.
    interval : int
        Iterations between recomputations of the mean squared gradient.
    niter : int
        Iterations to run.

    Examples
    --------
    >>> p = ITKParameters.check(2, time_step=0.1, number_of_iterations=3)
    >>> p.spacing, p.time_step, p.conductance, p.interval, p.niter
    ((1.0, 1.0), 0.1, 3.0, 1, 3)
    >>> ITKParameters.check(2, conductance_scaling_update_interval=0)
    Traceback (most recent call last):
    ...
    ValueError: conductance_scaling_update_interval must be a positive integer, got 0
    """

    spacing: tuple[float, ...]
    time_step: float = 0.125
    conductance: float = 3.0
    interval: int = 1
    niter: int = 5

    @classmethod
    def check(
        cls,
        ndim: int,
        time_step: Any = 0.125,
        conductance: Any = 3.0,
        conductance_scaling_update_interval: Any = 1,
        number_of_iterations: Any = 5,
        spacing: Any = None,
    ) -> ITKParameters:
        """The user's arguments (those of :func:`gradient_anisotropic_diffusion`) for an
        ``ndim``-dimensional image, validated and normalised; ValueError naming the first
        bad one."""
        return cls(
            time_step=check_positive(time_step, "time_step"),
            conductance=check_positive(conductance, "conductance"),
            interval=check_count(
                conductance_scaling_update_interval, "conductance_scaling_update_interval", least=1
            ),
            niter=check_count(number_of_iterations, "number_of_iterations"),
            spacing=check_spacing(spacing, ndim, "spacing"),
        )

    def warn_if_unstable(self, stacklevel: int = 2) -> None:
        """:class:`DiffusionStabilityWarning` when ``time_step`` is past ITK's stability
        limit, pointing ``stacklevel`` frames above the caller of this method."""
        limit = min(self.spacing) / 2.0 ** (len(self.spacing) + 1)
        if self.time_step > limit:
            warnings.warn(
                f"time_step={self.time_step} is past ITK's stability limit {limit:.4g} "
                f"(min spacing / 2^(ndim+1)): the result may oscillate",
                DiffusionStabilityWarning,
                stacklevel=stacklevel + 1,
            )


def gradient_anisotropic_diffusion(
    image: Any,
    time_step: float = 0.125,
    conductance: float = 3.0,
    conductance_scaling_update_interval: int = 1,
    number_of_iterations: int = 5,
    spacing: Any = None,
    *,
    machine: Any = None,
) -> Any:
    """ITK's gradient anisotropic diffusion (``sitk.GradientAnisotropicDiffusion``).

    Parameters
    ----------
    image : array_like (NumPy or CuPy), 2-D or 3-D
        Input image; the result is float32 like ITK's for a float image.
    time_step : float
        Step of the explicit scheme; stable below ``min(spacing) / 2**(ndim + 1)``
        (0.125 in 2-D, 0.0625 in 3-D).
    conductance : float
        Conductance parameter ``K``, relative to the mean squared gradient: the
        conductance of a face is ``exp(-|grad|^2 / (2 K^2 <|grad|^2>))``.
    conductance_scaling_update_interval : int
        Recompute the mean squared gradient every this many iterations.
    number_of_iterations : int
        Iterations to run.
    spacing : sequence of float, optional
        Pixel spacing per axis (NumPy axis order); differences are divided by it.
    machine : simd.Machine, optional
        A machine spread over MPI ranks (``Machine(comm=...)``): ``image`` is then this
        rank's block of rows (along axis 0, any layout, e.g. from ``machine.scatter``)
        and so is the result, equal bit for bit to the one-rank result's rows
        (:mod:`diffusion.blocks`). Collective. Ignored on a one-process machine.

    Returns
    -------
    array (float32, same kind as ``image``)

    Warns
    -----
    DiffusionStabilityWarning
        When ``time_step`` exceeds ITK's stability limit.

    Notes
    -----
    Each face's gradient magnitude combines the difference across the face with the
    average of the central differences along the other axes at its two sides (the
    "transverse" term of ``GradientNDAnisotropicDiffusionFunction``). As in ITK, the
    update is computed in double, rounded to float32, multiplied by the time step and
    added in float32; the border extends by replication (zero-flux Neumann). A constant
    image (mean squared gradient 0) is left as it is. The mean squared gradient adds the
    per-row sums in row order, so that any number of ranks gives the same bits.

    Examples
    --------
    >>> import numpy as np
    >>> img = np.zeros((3, 3), np.float32); img[1, 1] = 8
    >>> out = gradient_anisotropic_diffusion(img, number_of_iterations=1)
    >>> out.dtype, bool(out[1, 1] < 8), float(out.sum()) == 8.0
    (dtype('float32'), True, True)
    """
    check_machine(machine)
    if getattr(machine, "ranks", None) is not None:
        from diffusion.blocks import block_gradient_anisotropic_diffusion

        return block_gradient_anisotropic_diffusion(
            image,
            time_step,
            conductance,
            conductance_scaling_update_interval,
            number_of_iterations,
            spacing,
            machine=machine,
        )
    xp, out = check_image(image)
    p = ITKParameters.check(
        out.ndim,
        time_step,
        conductance,
        conductance_scaling_update_interval,
        number_of_iterations,
        spacing,
    )
    p.warn_if_unstable()
    return itk_diffuse(xp, out, Layout(out.shape), p)


def itk_diffuse(xp: Any, out: Any, layout: Layout, p: ITKParameters) -> Any:
    """The iteration loop of :func:`gradient_anisotropic_diffusion` with the parameters
    ``p`` on the validated float32 block ``out`` of ``layout`` (the whole image on one
    process)."""
    scale = tuple(1.0 / s for s in p.spacing)
    big_k = 0.0
    empty = layout.local == 0
    ext, own = layout.buffer(xp, out)
    out = ext[own]  # a view: the block's updates land in the buffer
    for it in range(p.niter):
        layout.fill(ext, own)
        if not empty:
            x = ext.astype(np.float64)
            # At the image border the pad replicates; beside a ghost row it only feeds the
            # ghost row's own update, which is dropped.
            padded = xp.pad(x, 1, mode="edge")
        if it % p.interval == 0:
            sums = np.zeros((out.ndim, 0)) if empty else gradient_row_sums(xp, padded, scale, own)
            avg = mean_of_row_sums(layout.gather_rows(sums), layout.size)
            big_k = itk_conductance(avg, p.conductance)
        if empty:
            continue
        update = itk_delta(xp, x, padded, big_k, scale)[own].astype(np.float32)
        out[...] = out + (update.astype(np.float64) * p.time_step).astype(np.float32)
    return out
