"""The parameters of a Perona-Malik run, checked once where the user's values enter.

:class:`PMParameters` holds the arguments of medpy's ``anisotropic_diffusion`` (and
Biagioni & Prins's ``epsilon``), which :func:`diffusion.anisotropic_diffusion` and
:func:`diffusion.mesh_diffusion` share. A ``gamma`` past the explicit scheme's stability
bound is refused; :class:`DiffusionStabilityWarning` is what ITK's formulation
(:mod:`diffusion.itk`) warns of a time step past ITK's limit, as ITK does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from diffusion.checks import check_count, check_positive, check_spacing
from diffusion.conduction import stable_gamma

__all__ = ["DiffusionStabilityWarning", "PMParameters"]


class DiffusionStabilityWarning(UserWarning):
    """The time step is past the stability limit of the explicit scheme (ITK's)."""


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
        Conduction coefficient and speed of diffusion; ``gamma`` at most the explicit
        scheme's stability bound (:func:`diffusion.conduction.stable_gamma`).
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
    >>> PMParameters.check(2, gamma=10)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: gamma 10 is past the explicit scheme's stability bound 0.25 for this image ...
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
        ``voxelspacing`` as a tuple, ones when None); ValueError naming the first bad one.

        ``gamma`` past the stability bound of the explicit scheme
        (:func:`~diffusion.conduction.stable_gamma`: 1/(number of neighbours) for unit
        spacing, the ``0 <= gamma <= 1/4`` of Perona & Malik's 2-D scheme) is refused:
        beyond it a point's new value is no longer a weighted average of itself and its
        neighbours, and the iterations amplify the noise instead of smoothing it."""
        niter = check_count(niter, "niter")
        kappa = check_positive(kappa, "kappa")
        gamma = check_positive(gamma, "gamma")
        if option not in (1, 2, 3):
            raise ValueError(f"option must be 1, 2 or 3, got {option!r}")
        spacing = check_spacing(voxelspacing, ndim, "voxelspacing")
        limit = stable_gamma(spacing, int(option))
        if gamma > limit:
            raise ValueError(
                f"gamma {gamma:g} is past the explicit scheme's stability bound {limit:.4g} "
                "for this image (1/(number of neighbours) at unit spacing: 1/4 in 2-D, 1/6 in "
                "3-D; twice that with option 3, less with a finer spacing): past it the "
                "result turns to noise"
            )
        if not (
            isinstance(epsilon, int | float | np.number) and epsilon >= 0 and math.isfinite(epsilon)
        ):
            raise ValueError(f"epsilon must be a non-negative finite number, got {epsilon!r}")
        return cls(
            spacing=spacing,
            niter=niter,
            kappa=kappa,
            gamma=gamma,
            option=int(option),
            epsilon=float(epsilon),
            freeze=bool(freeze),
        )
