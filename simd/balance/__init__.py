"""Load balancers of the SIMD machine, and the comparison of balancers on a workload.

>>> from simd.balance import compare
>>> compare([100, 19, 0, 0, 0, 0, 0], machines=["cm5"]).find("none", "cm5").iterations
100
"""

from __future__ import annotations

from simd.balance.comparison import Comparison, compare
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
from simd.balance.whatif import Sweep, sweep
from simd.balance.workloads import generate, read_workload

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
