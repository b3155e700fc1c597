"""Golden model-clock figures: a change to any charge of the model clock shows up here.

The figures were recorded before the machine's code was restructured and must not
move unless a charge is changed on purpose (then update them here and say why in the
commit). They cover one small frame of the renderer in each loop form (per machine phase,
per pipeline stage and per execution of the balancing phases) and a short diffusion run on
a PE mesh with balancing.
"""

from __future__ import annotations

import numpy as np
import pytest

import renderer
from diffusion import mesh_diffusion
from simd import CostModel, Machine
from tests.renderer.meshes import grid_mesh

# The machine's phase table (model cycles) after one frame, per loop form.
MACHINE_PHASES = {
    "original": {
        "transform": 196.0,
        "clip": 618.0,
        "setup": 1040.0,
        "scan-conversion/solution": 26696.0,
        "z-buffer/solution": 10080.0,
        "shading": 3840.0,
    },
    "cost-effective": {
        "transform": 196.0,
        "clip": 618.0,
        "setup": 1040.0,
        "scan-conversion/information gathering": 1873.0,
        "scan-conversion/decision": 0.0,
        "scan-conversion/redistribution": 4012.0,
        "scan-conversion/solution": 2403.0,
        "z-buffer/information gathering": 2045.0,
        "z-buffer/decision": 0.0,
        "z-buffer/redistribution": 3020.0,
        "z-buffer/solution": 1915.0,
        "shading": 3840.0,
    },
    "expand": {
        "transform": 196.0,
        "clip": 618.0,
        "setup": 1040.0,
        "scan-conversion/expansion": 2154.0,
        "scan-conversion/solution": 626.0,
        "z-buffer/expansion": 2125.0,
        "z-buffer/solution": 916.0,
        "shading": 3840.0,
    },
}

# The frame's own figures: model cycles per pipeline stage.
STAGES = {
    "original": {
        "transform": 196.0,
        "clip": 618.0,
        "setup": 1040.0,
        "scan-conversion": 26696.0,
        "z-buffer": 10080.0,
        "shading": 3840.0,
    },
    "cost-effective": {
        "transform": 196.0,
        "clip": 618.0,
        "setup": 1040.0,
        "scan-conversion": 8288.0,
        "z-buffer": 6980.0,
        "shading": 3840.0,
    },
    "expand": {
        "transform": 196.0,
        "clip": 618.0,
        "setup": 1040.0,
        "scan-conversion": 2780.0,
        "z-buffer": 3041.0,
        "shading": 3840.0,
    },
}

# Per loop, per balancing phase: the model cycles of each execution (Table 4's samples).
SAMPLES = {
    "original": {
        "scan-conversion": {"solution": [775.0] * 34},
        "z-buffer": {"solution": [375.0] * 26},
    },
    "cost-effective": {
        "scan-conversion": {
            "information gathering": [1873.0],
            "decision": [0.0],
            "redistribution": [4012.0],
            "solution": [801.0] * 3,
        },
        "z-buffer": {
            "information gathering": [665.0, 1380.0],
            "decision": [0.0, 0.0],
            "redistribution": [3020.0],
            "solution": [375.0] + [385.0] * 4,
        },
    },
    "expand": {
        "scan-conversion": {"expansion": [705.0, 1449.0], "solution": [626.0]},
        "z-buffer": {"expansion": [665.0, 1460.0], "solution": [916.0]},
    },
}

# A 40x40 image on an 8x8 MP-1 mesh, 6 iterations with the epsilon fixed point, balancing
# every 2 iterations.
DIFFUSION_CYCLES = {"diffusion": 86208.0, "balancing": 22576.0, "total": 108784.0}


def _unbalanced_mesh():
    """A fine grid in one corner and one large triangle across the view."""
    v, f = grid_mesh(16, 12, -1.0, -0.9, -0.2, -0.3, jitter=0.3, seed=3)
    big = np.array([[-0.9, 0.0, 0.1], [0.95, -0.9, 0.2], [0.6, 0.95, -0.1]])
    n = len(v)
    return np.vstack([v, big]), np.vstack([f, [[n, n + 1, n + 2]]])


def _frame(form: str):
    m = Machine(pes=32, backend="numpy", cost=CostModel.cm5(32))
    frame = renderer.render(
        _unbalanced_mesh(), view=(20, 10), size=(64, 48), loop=form, machine=m, overestimate=12.0
    )
    return m, frame


@pytest.mark.parametrize("form", sorted(MACHINE_PHASES))
def test_frame_model_cycles(form):
    m, frame = _frame(form)
    phases = {name: p.cycles for name, p in m.stats.phases.items() if p.cycles or "/" in name}
    assert phases == MACHINE_PHASES[form]
    assert m.clock == sum(MACHINE_PHASES[form].values())
    stages = {name: s.cycles for name, s in frame.stats.stages.items()}
    assert stages == STAGES[form]
    assert frame.stats.cycles == sum(STAGES[form].values())
    samples = {
        loop: {name: t.cycle_samples for name, t in s.stats.items()}
        for loop, s in frame.stats.loops.items()
    }
    assert samples == SAMPLES[form]


def test_diffusion_model_cycles():
    rng = np.random.default_rng(7)
    image = rng.uniform(0, 255, (40, 40)).astype(np.float32)
    image[:, 20:] = 0  # a flat half goes quiet, so balancing has work to move
    m = Machine(pes=(8, 8), backend="numpy", cost=CostModel.mp1(64))
    res = mesh_diffusion(image, niter=6, kappa=20, epsilon=0.5, balance_every=2, machine=m)
    assert res.iterations == 6 and len(res.balance_reports) == 2
    assert res.cycles == DIFFUSION_CYCLES
