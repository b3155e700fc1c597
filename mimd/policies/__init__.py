"""Load-balancing policies of Muniz & Zaluska and Barker & Chrisochoides: each a
record of its parameters whose methods are the steps of its protocol.

* :mod:`.base` -- :class:`Policy`, the steps the simulator calls and how to add a policy;
  :class:`NoBalancing`; the initial placements and the task states;
* :mod:`.farmer` -- :class:`Farmer` (Muniz & Zaluska 4.3);
* :mod:`.gradient` -- :class:`GradientModel`, :class:`ExtendedGradient` (Muniz & Zaluska
  4.1, 4.2);
* :mod:`.diffusion` -- :class:`Diffusion`, :class:`WorkStealing` (Barker & Chrisochoides
  sections 2 and 4).

Each class's docstring says which mechanism of which paper it follows and what its
parameters mean; the simulator (:mod:`mimd.simulator`) calls their steps and names none.
"""

from __future__ import annotations

from .base import NoBalancing, Policy
from .diffusion import Diffusion, WorkStealing
from .farmer import Farmer
from .gradient import ExtendedGradient, GradientModel

__all__ = [
    "Policy",
    "Farmer",
    "GradientModel",
    "ExtendedGradient",
    "Diffusion",
    "WorkStealing",
    "NoBalancing",
    "POLICIES",
]

#: The policies by the name they carry in tables, in the order of ``simd-emu bench mimd``'s
#: comparison (where no balancing comes first, as the baseline).
POLICIES: dict[str, type[Policy]] = {
    cls.name: cls
    for cls in (Farmer, GradientModel, ExtendedGradient, Diffusion, WorkStealing, NoBalancing)
}
