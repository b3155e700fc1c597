"""Edge-directed (Perona-Malik) anisotropic diffusion, dense and on the emulated PE mesh.

* :func:`anisotropic_diffusion`: medpy-compatible, with Biagioni & Prins's fixed point
  (``epsilon``) and the activity it leaves;
* :func:`gradient_anisotropic_diffusion`: ITK's formulation (SimpleITK's
  ``GradientAnisotropicDiffusion``);
* :func:`mesh_diffusion`: the same diffusion on a MasPar-like PE mesh, tile per PE, only
  active points computed, with Biagioni & Prins scan-directed load balancing
  (``simd.balance.scan_directed``).

The modules: ``settings`` and ``checks`` (the parameters, checked once where they enter),
``conduction`` and ``update`` (the update in array code), ``layout`` and ``blocks`` (the
whole image, or blocks of rows across MPI ranks), ``dense`` and ``itk`` (the dense paths),
``cuda_kernels`` and ``fused`` (the fused kernel and its loops on a GPU), ``mesh`` and
``mesh_grid`` (the PE mesh), ``images`` and the ``cli`` modules (``simd-emu diffuse``).
"""

from __future__ import annotations

from diffusion.dense import DiffusionInfo, anisotropic_diffusion
from diffusion.itk import gradient_anisotropic_diffusion
from diffusion.mesh import MeshResult, mesh_diffusion
from diffusion.settings import DiffusionStabilityWarning

__all__ = [
    "DiffusionInfo",
    "DiffusionStabilityWarning",
    "MeshResult",
    "anisotropic_diffusion",
    "gradient_anisotropic_diffusion",
    "mesh_diffusion",
]
