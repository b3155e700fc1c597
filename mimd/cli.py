"""``simd-emu bench mimd``: the MIMD load-balancing benchmark (seeds 001 and 002).

``register(subparsers)`` adds the ``bench`` command if no other module has yet, and a
``mimd`` sub-command under it; :mod:`simd.cli` calls it through the ``bench`` entry point
of the ``simd_emu.commands`` group. ``bench/mimd.py`` in the source tree uses
:func:`add_arguments` and :func:`run_args` with one option more (``--save``).

Results (``mimd[-quick].json`` and the PNG plots) go to the current folder, or to
``--out DIR``; the folder is checked writable before any work starts. Nothing heavy is
imported here, so ``simd-emu --help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["register", "add_arguments", "run_args", "main"]

#: Packages the command imports, by the extra that installs them (checked by simd.cli).
REQUIRES = {"data": ("matplotlib", "skimage")}

DESCRIPTION = (
    "Seed 001 Table 1 in form (ray tracer on a 4x4 transputer torus), the farmer's "
    "scaling with links as resources (4x4 to 32x32, fine and coarse tasks), GM/EG status "
    "interval sensitivity, seed 002 Figure 1 (bi-modal model vs simulated Diffusion), "
    "Figures 2 and 3 (parametric studies, PNG), MIMD policies vs the cost-effective "
    "SIMD balancer on the same task sets (synthetic, ray tracer, the renderer's "
    "per-polygon scan lines), and a 4096 x 100,000 scale run. Prints tables; writes "
    "mimd[-quick].json and PNG plots to the current folder (or --out DIR)."
)


def _bench_subparsers(subparsers) -> argparse._SubParsersAction:
    """The sub-command table of ``bench``, creating ``bench`` if it is not there yet."""
    bench = subparsers.choices.get("bench")
    if bench is None:
        bench = subparsers.add_parser("bench", help="benchmarks (bench mimd, ...)")
    sub = getattr(bench, "_bench_sub", None)
    if sub is None:
        # another module may have made ``bench`` with its own sub-command table: reuse it
        for action in bench._actions:
            if isinstance(action, argparse._SubParsersAction):
                sub = action
                break
    if sub is None:
        sub = bench.add_subparsers(dest="bench", required=True, metavar="BENCHMARK")
    bench._bench_sub = sub
    return sub


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``bench mimd`` (shared with ``bench/mimd.py``)."""
    p.add_argument("--quick", action="store_true", help="smaller sweeps (about 20 s on two cores)")
    p.add_argument(
        "--only",
        default="",
        help="comma-separated parts: table1, farmer, gradient, figure1, figure2, figure3, "
        "compare, scale",
    )
    p.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="output folder, made if missing (default: the current folder)",
    )
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument(
        "--backend",
        choices=("numpy", "cupy", "auto"),
        default="numpy",
        help="SIMD machine backend of the scale part (default numpy; the rest runs on NumPy)",
    )


def run_args(args: argparse.Namespace, prog: str = "simd-emu bench mimd") -> int:
    """Run the benchmark with parsed options; returns the exit status."""
    from .report import PARTS, output_folder

    parts = None
    if args.only:
        parts = tuple(p.strip() for p in args.only.split(",") if p.strip())
        bad = [p for p in parts if p not in PARTS]
        if bad:
            raise SystemExit(f"{prog}: unknown part(s) {bad}; choose from {PARTS}")
    try:
        out = output_folder(args.out)
    except OSError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    from simd.errors import BackendUnavailableError

    from . import report

    try:
        report.run(
            quick=args.quick,
            parts=parts,
            out=out,
            plots=not args.no_plots,
            backend=args.backend,
        )
    except BackendUnavailableError as exc:
        raise SystemExit(f"{prog}: {exc}") from exc
    return 0


def _run(args: argparse.Namespace) -> int:
    return run_args(args)


def register(subparsers) -> None:
    """Add ``bench mimd`` to the ``simd-emu`` command line."""
    sub = _bench_subparsers(subparsers)
    if "mimd" in sub.choices:
        return
    p = sub.add_parser(
        "mimd",
        help="MIMD policies (farmer, Gradient Model, Extended Gradient, Diffusion, work "
        "stealing), seed 001 Table 1, seed 002 model and Figures 1-3",
        description=DESCRIPTION,
    )
    add_arguments(p)
    p.set_defaults(func=_run)


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry: the same options as ``simd-emu bench mimd``."""
    parser = argparse.ArgumentParser(prog="bench mimd", description=DESCRIPTION)
    add_arguments(parser)
    return run_args(parser.parse_args(argv))
