"""ITK's gradient anisotropic diffusion (``GradientAnisotropicDiffusionImageFilter``).

:func:`gradient_anisotropic_diffusion` checks its arguments once (:class:`ITKParameters`)
and runs :func:`itk_diffuse` on the image, or across MPI ranks on this rank's block of
rows (:mod:`diffusion.blocks`). Accepts NumPy or CuPy arrays and gives back the same kind.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from diffusion.blocks import image_layout
from diffusion.checks import check_count, check_positive, check_spacing
from diffusion.layout import Layout
from diffusion.settings import DiffusionStabilityWarning

__all__ = [
    "ITKParameters",
    "gradient_anisotropic_diffusion",
    "gradient_row_sums",
    "itk_conductance",
    "itk_delta",
    "itk_diffuse",
    "mean_of_row_sums",
]


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
    xp, out, layout, p = image_layout(
        image,
        machine,
        lambda ndim: ITKParameters.check(
            ndim,
            time_step,
            conductance,
            conductance_scaling_update_interval,
            number_of_iterations,
            spacing,
        ),
    )
    if machine is None or machine.is_root:  # one warning, not one per rank
        p.warn_if_unstable()
    return itk_diffuse(xp, out, layout, p)


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
