"""MIMD load-balancing baselines (seeds 001 and 002) against the scan-based balancers.

Seed 001 Table 1 in form (ray tracer on a 4x4 transputer torus: farmer, Gradient Model,
Extended Gradient, single-processor control run), seed 002 Figure 1 in form (bi-modal model
against simulated Diffusion), Figures 2 and 3 (parametric studies, PNG), one table of MIMD
policies next to the cost-effective SIMD balancer on the same task sets (synthetic, the ray
tracer, and the renderer's real per-polygon scan-line workload), and the wall time of a
4096-processor x 100,000-task simulation. Same code as ``simd-emu bench mimd``.

Run ``python bench/mimd.py [--quick] [--only table1,figure1,...] [--backend numpy|cupy|auto]``
(the backend is the SIMD machine's for the scale part); results go to
``bench/results/mimd.json`` (``mimd-quick.json`` with ``--quick``) with PNG plots beside it.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from simd.balance.mimd.cli import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
