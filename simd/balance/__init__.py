"""Load balancers of the SIMD machine (see DESIGN.md, simd/balance)."""

from __future__ import annotations

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

__all__ = [
    "FORMS",
    "LOOP_FORMS",
    "Calibration",
    "CostOverestimateWarning",
    "Information",
    "LoopResult",
    "PhaseTiming",
    "Redistribution",
    "calibrate",
    "gather_information",
    "load_overestimate",
    "redistribute",
    "run_loop",
    "store_overestimate",
]
