"""``simd-emu bench mimd`` and ``simd-emu bench balance``: the load-balancing benchmarks.

``register(subparsers)`` adds the ``bench`` command if no other module has yet, and the
``mimd`` and ``balance`` sub-commands under it (``balance``'s options and driver are
:mod:`mimd.bench_balance`); :mod:`simd.cli` calls it through the ``bench`` entry point
of the ``simd_emu.commands`` group. ``bench/mimd.py`` in the source tree uses
:func:`add_arguments` and :func:`run_args` with one option more (``--save``).

Results (``mimd[-quick].json`` and the PNG plots) go to the current folder, or to
``--out DIR``; the folder is checked writable before any work starts (:mod:`simd.outputs`)
and a file that exists is replaced only with ``--force`` (and named first). Nothing heavy is
imported here, so ``simd-emu --help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["register", "add_arguments", "result_files", "run_args", "main", "warm_up"]

#: Packages the command imports, by the extra that installs them (checked by simd.cli).
REQUIRES = {"data": ("matplotlib",)}

DESCRIPTION = (
    "Load balancing on MIMD machines (message passing) next to the SIMD balancer. Runs "
    "the ray tracer on a 4x4 transputer torus of Table 1 of Muniz and Zaluska "
    "(farmer, Gradient Model, Extended Gradient); the farmer's scaling from 4x4 to 32x32 "
    "processors with links as shared resources; how the Gradient Models depend on their "
    "status interval; Figures 1 to 3 of Barker and Chrisochoides' bi-modal model against "
    "simulated Diffusion; the MIMD policies next to the cost-effective SIMD balancer on "
    "the same task sets (synthetic, the ray tracer, the renderer's scan lines); and the "
    "simulation's speed at 4096 processors and 100,000 tasks. With --only simgrid, the "
    "engine beside SimGrid on fine-grained task sets. Prints tables and writes "
    "mimd.json (mimd-quick.json with --quick) and PNG plots to the current folder or "
    "--out DIR; a file that exists is replaced only with --force."
)


def _bench_subparsers(subparsers) -> argparse._SubParsersAction:
    """The sub-command table of ``bench``, creating ``bench`` if it is not there yet."""
    bench = subparsers.choices.get("bench")
    if bench is None:
        bench = subparsers.add_parser(
            "bench",
            help="benchmarks (bench mimd, ...)",
            description="Benchmarks. Each writes its results to the current folder or to "
            "--out DIR; a file that exists is replaced only with --force.",
        )
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
    p.add_argument("--quick", action="store_true", help="smaller sweeps (seconds)")
    p.add_argument(
        "--only",
        default="",
        metavar="PARTS",
        help="comma-separated parts: table1, farmer, gradient, figure1, figure2, figure3, "
        "compare, scale (the default: all these), and simgrid (the engine beside SimGrid, "
        "which must be installed)",
    )
    p.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="output folder, made if missing (default: the current folder)",
    )
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--force", action="store_true", help="replace output files that exist")
    p.add_argument(
        "--backend",
        choices=("numpy", "cupy", "auto"),
        default="numpy",
        help="backend of the SIMD machine that runs the balanced loops of the compare part "
        "(default numpy)",
    )


#: The plots each part draws (``mimd.plots``), as ``mimd{tag}-NAME.png``.
_PLOTS = {"farmer": "farmer", "figure1": "figure1", "figure2": "figure2", "figure3": "figure3"}


def result_files(out, *, quick: bool, parts: tuple[str, ...] | None, plots: bool) -> list:
    """The files a run writes in the folder ``out``: the JSON and the plots of its parts."""
    from pathlib import Path

    from .report import PARTS

    tag = "-quick" if quick else ""
    files = [Path(out) / f"mimd{tag}.json"]
    if plots:
        files += [Path(out) / f"mimd{tag}-{_PLOTS[p]}.png" for p in (parts or PARTS) if p in _PLOTS]
    return files


def run_args(args: argparse.Namespace, prog: str = "simd-emu bench mimd") -> int:
    """Run the benchmark with parsed options; returns the exit status."""
    from simd.backend import resolve_backend
    from simd.errors import BackendUnavailableError
    from simd.outputs import OutputError, announce_replace, check_output_folder

    from .report import ALL_PARTS

    def fail(problem: object) -> int:
        print(f"{prog}: {problem}", file=sys.stderr)
        return 2

    parts = None
    if args.only:
        parts = tuple(p.strip() for p in args.only.split(",") if p.strip())
        bad = [p for p in parts if p not in ALL_PARTS]
        if bad:
            return fail(f"unknown part(s) {bad}; choose from {ALL_PARTS}")
        if not parts:
            return fail(f"--only names no part; choose from {ALL_PARTS}")
    if parts is None or "compare" in parts:
        try:  # before any work: the compare part would find out only after the others
            resolve_backend(args.backend)
        except (BackendUnavailableError, ValueError) as exc:
            return fail(exc)
    if parts is not None and "simgrid" in parts:
        from .on_simgrid import SimGridMissing, require

        try:
            require()
        except SimGridMissing as exc:
            return fail(f"{exc}; or leave out --only simgrid")
    try:
        out = check_output_folder(args.out)
        files = result_files(out, quick=args.quick, parts=parts, plots=not args.no_plots)
        announce_replace(files, force=args.force)
    except OutputError as exc:
        return fail(exc)

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
        return fail(exc)
    return 0


def _run(args: argparse.Namespace) -> int:
    return run_args(args)


def _run_balance(args: argparse.Namespace) -> int:
    from .bench_balance import run_args as run_balance

    return run_balance(args)


def register(subparsers) -> None:
    """Add ``bench mimd`` and ``bench balance`` to the ``simd-emu`` command line."""
    sub = _bench_subparsers(subparsers)
    if "mimd" not in sub.choices:
        p = sub.add_parser(
            "mimd",
            help="MIMD load-balancing policies (farmer, Gradient Model, Extended Gradient, "
            "Diffusion, work stealing) next to the SIMD balancer",
            description=DESCRIPTION,
        )
        add_arguments(p)
        p.set_defaults(func=_run)
    _register_balance(sub)


def _register_balance(sub) -> None:
    """Add ``bench balance`` (its options module is light: no heavy import here)."""
    if "balance" in sub.choices:
        return
    from .bench_balance import DESCRIPTION as BALANCE
    from .bench_balance import add_arguments as balance_arguments

    p = sub.add_parser(
        "balance",
        help="which load balancing pays on your workload, on which machine, and the "
        "hardware what-if",
        description=BALANCE,
    )
    balance_arguments(p)
    p.set_defaults(func=_run_balance)


def warm_up(backend: str) -> str:
    """``simd-emu warmup``'s part for the benchmarks: the MIMD engine compiled (once per
    install; Numba keeps it in its cache) by a small simulation of every policy."""
    from . import POLICIES, Network, simulate

    for policy in POLICIES.values():
        simulate([1e-2] * 8, policy(), network=Network.cluster(4))
    return "the MIMD simulation engine"


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry: the same options as ``simd-emu bench mimd``."""
    parser = argparse.ArgumentParser(prog="bench mimd", description=DESCRIPTION)
    add_arguments(parser)
    return run_args(parser.parse_args(argv))
