"""Edge-directed (Perona-Malik) anisotropic diffusion, dense and on the emulated PE mesh.

* :func:`anisotropic_diffusion`: medpy-compatible, with Biagioni & Prins's fixed point
  (``epsilon``) and the activity it leaves;
* :func:`gradient_anisotropic_diffusion`: ITK's formulation (SimpleITK's
  ``GradientAnisotropicDiffusion``);
* :func:`mesh_diffusion`: the same diffusion on a MasPar-like PE mesh, tile per PE, only
  active points computed, with Biagioni & Prins scan-directed load balancing
  (``simd.balance.scan_directed``).
"""

from __future__ import annotations

from diffusion.dense import (
    DiffusionInfo,
    DiffusionStabilityWarning,
    anisotropic_diffusion,
    gradient_anisotropic_diffusion,
)
from diffusion.mesh import MeshResult, mesh_diffusion

__all__ = [
    "DiffusionInfo",
    "DiffusionStabilityWarning",
    "MeshResult",
    "anisotropic_diffusion",
    "gradient_anisotropic_diffusion",
    "mesh_diffusion",
]
