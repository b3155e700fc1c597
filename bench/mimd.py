"""MIMD load-balancing baselines against the scan-based balancers.

The runs of Muniz & Zaluska's Table 1 (ray tracer on a 4x4 transputer torus: farmer, Gradient
Model, Extended Gradient, single-processor control run), of Barker & Chrisochoides' Figure 1
(bi-modal model against simulated Diffusion) and Figures 2 and 3 (parametric studies, PNG), one
table of MIMD policies next to the cost-effective SIMD balancer on the same task sets (synthetic,
the ray tracer, and the renderer's real per-polygon scan-line workload), the simulation's speed
at 4096 processors x 100,000 tasks, and on request (``--only simgrid``) the engine beside SimGrid.

Run ``python -m bench.mimd [--quick] [--only table1,figure1,...] [--backend numpy|cupy|auto]
[--out DIR | --save]`` (the backend is the SIMD machine's for the scale part). Results
(``mimd.json``, ``mimd-quick.json`` with ``--quick``, and PNG plots) go to the current
folder, to ``--out DIR``, or with ``--save`` to this source tree's ``bench/results``.

This is the script entry of the benchmark; the experiments, the report and the plots are
the installed package's (:mod:`mimd.experiments`, :mod:`mimd.report`, :mod:`mimd.plots`),
which ``simd-emu bench mimd`` runs with the same options (less ``--save``).
"""

from __future__ import annotations

import argparse
import sys

from bench import ROOT
from mimd.cli import DESCRIPTION, add_arguments, run_args

#: Where ``--save`` writes: the results committed with the source tree.
SAVE_DIR = ROOT / "bench" / "results"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.mimd", description=DESCRIPTION)
    add_arguments(parser)
    parser.add_argument(
        "--save",
        action="store_true",
        help=f"write to the source tree's bench/results ({SAVE_DIR}) instead of --out",
    )
    args = parser.parse_args(argv)
    if args.save:
        if args.out is not None:
            parser.error("--save and --out are exclusive")
        args.out = str(SAVE_DIR)
    return run_args(args, prog="python -m bench.mimd")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
