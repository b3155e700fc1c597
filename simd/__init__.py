"""An emulated data-parallel SIMD machine (Connection Machine CM-2/CM-5, MasPar MP-1).

One virtual processor per array element, on NumPy or on a GPU with CuPy. See
:class:`simd.Machine` for the instruction set and ``simd.cost`` for the model clock.
"""

from __future__ import annotations

from simd.cost import CostModel
from simd.errors import BackendUnavailableError, CollisionError, SimdError
from simd.machine import COMBINERS, XNET, Machine
from simd.stats import PhaseRecord, PhaseStats, Stats

__all__ = [
    "COMBINERS",
    "XNET",
    "BackendUnavailableError",
    "CollisionError",
    "CostModel",
    "Machine",
    "PhaseRecord",
    "PhaseStats",
    "SimdError",
    "Stats",
]

__version__ = "0.1.0"
