"""MIMD load-balancing baselines (Muniz & Zaluska; Barker & Chrisochoides) on a
simulated message-passing machine.

* :mod:`.network` -- the machine: torus topology, linear message costs, links shared
  max-min fairly;
* :mod:`.policies` -- farmer, Gradient Model, Extended Gradient, Diffusion, work stealing:
  each a record of its parameters (:class:`Policy` says how to add one);
* :mod:`.simulator` -- :func:`simulate`, on the discrete-event engine compiled by Numba
  (:mod:`.run_kernels` and the modules it names), and its result (:mod:`.result`);
* :mod:`.on_simgrid` -- the same machine and policies on SimGrid, the engine's oracle;
* :mod:`.workloads` -- Barker & Chrisochoides' synthetic task sets and Muniz & Zaluska's
  height-field ray tracer (:mod:`.raytrace`);
* :mod:`.model` -- Barker & Chrisochoides' bi-modal approximation and runtime model
  (equations 1-6);
* :mod:`.experiments`, :mod:`.report`, :mod:`.plots` -- the parts, tables, JSON and plots
  of ``simd-emu bench mimd`` (:mod:`.cli`; ``bench/mimd.py`` in the source tree), and
  ``simd-emu bench balance``'s baselines and driver (:mod:`.bench_balance`).
"""

from __future__ import annotations

from . import on_simgrid
from .model import BiModal, ModelParams, Prediction, bimodal_fit, predict
from .network import Network, torus_shape
from .policies import (
    POLICIES,
    Diffusion,
    ExtendedGradient,
    Farmer,
    GradientModel,
    NoBalancing,
    Policy,
    WorkStealing,
)
from .simulator import SimResult, initial_placement, simulate
from .workloads import bimodal, linear, step, workload

__all__ = [
    "BiModal",
    "Diffusion",
    "ExtendedGradient",
    "Farmer",
    "GradientModel",
    "ModelParams",
    "Network",
    "NoBalancing",
    "POLICIES",
    "Policy",
    "Prediction",
    "SimResult",
    "WorkStealing",
    "bimodal",
    "bimodal_fit",
    "on_simgrid",
    "initial_placement",
    "linear",
    "predict",
    "simulate",
    "step",
    "torus_shape",
    "workload",
]
