"""Load balancers of the SIMD machine, and the comparison of balancers on a workload.

>>> from simd.balance import compare
>>> compare([100, 19, 0, 0, 0, 0, 0], machines=["cm5"]).find("none", "cm5").iterations
100
"""

from __future__ import annotations

import importlib
from typing import Any

from simd.balance.cost_effective import (
    FORMS,
    LOOP_FORMS,
    Calibration,
    CostOverestimateWarning,
    Information,
    LoopResult,
    PhaseTiming,
    Redistribution,
    calibrate,
    gather_information,
    load_overestimate,
    redistribute,
    run_loop,
    store_overestimate,
)

#: The comparison of balancers, imported when first used: the renderer and diffusion import
#: this package for its loops, and do not pay for the benchmark's modules.
_LAZY = {
    "Comparison": "simd.balance.comparison",
    "compare": "simd.balance.comparison",
    "Sweep": "simd.balance.whatif",
    "sweep": "simd.balance.whatif",
    "generate": "simd.balance.workloads",
    "read_workload": "simd.balance.workloads",
}

__all__ = [
    "FORMS",
    "LOOP_FORMS",
    "Calibration",
    "Comparison",
    "CostOverestimateWarning",
    "Information",
    "LoopResult",
    "PhaseTiming",
    "Redistribution",
    "Sweep",
    "calibrate",
    "compare",
    "gather_information",
    "generate",
    "load_overestimate",
    "read_workload",
    "redistribute",
    "run_loop",
    "store_overestimate",
    "sweep",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
