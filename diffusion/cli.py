"""simd-emu diffuse IMAGE: edge-directed (Perona-Malik) diffusion of an image on the
emulated MasPar PE grid, with Biagioni & Prins' scan-directed load balancing.

Runs the diffusion once, balancing every few iterations, writes the result and prints
one line (what was written, the model and wall times). --compare also runs it without
balancing and prints the ratios; --verbose prints the per-run tables. The result has the
input's value type (TIFF, NPY) or its DICOM tags and rescaling; PNG is 8-bit.

Launched as "mpiexec -n N simd-emu diffuse ..." it runs on N ranks with the PE mesh's
rows split across them (the balancing too), or with --method dense the dense path (every
point every iteration) with the image's rows split across them; either way the result is
the one-process result bit for bit. Rank 0 reads the input, prints and writes the outputs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

from diffusion.cli_shared import (
    barely_changed,
    check_options,
    fail,
    pm_arguments,
    read_input,
    share_thresholds,
)

__all__ = ["register", "run"]

#: Packages the command imports, by the extra that installs them (checked by simd.cli).
REQUIRES = {"data": ("skimage", "imageio", "PIL", "tqdm", "matplotlib")}


#: The options of the PE-mesh path and their defaults: one set otherwise selects the mesh.
MESH_OPTIONS = {
    "pes": (64, 64),
    "buffer": None,
    "every": 5,
    "axes": "both",
    "unlimited": False,
    "compare": False,
    "plot_load": None,
    "activity_map": None,
}


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Shows a default only where there is one worth showing (not None, not off)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if action.default in (None, False, argparse.SUPPRESS) or "default" in (action.help or ""):
            return action.help or ""
        return super()._get_help_string(action) or ""


def register(subparsers: Any) -> None:
    """Add the ``diffuse`` subcommand to ``simd-emu``."""
    p = subparsers.add_parser(
        "diffuse",
        help="anisotropic diffusion of an image on the PE grid, with load balancing",
        description=__doc__,
        formatter_class=_HelpFormatter,
    )
    # In this order in the help: the input and output, the diffusion, the PE mesh, the run.
    _add_image_arguments(p)
    _add_diffusion_arguments(p)
    _add_mesh_arguments(p)
    _add_run_arguments(p)
    p.set_defaults(func=run)


def _add_image_arguments(p: argparse.ArgumentParser) -> None:
    """The input image and the output file."""
    from diffusion.images import BUILTIN
    from simd.outputs import add_force_argument

    p.add_argument(
        "image",
        nargs="?",
        default=None,
        help="PNG, TIFF, DICOM or .npy file (default: the built-in image, see --builtin)",
    )
    p.add_argument(
        "--builtin",
        default="camera",
        choices=sorted(BUILTIN),
        help="built-in image when IMAGE is not given, shipped with scikit-image or pydicom "
        "(coffee is in colour: add --grey)",
    )
    p.add_argument(
        "-o",
        "--output",
        default="diffused.png",
        help="where to write the result: .tif or .npy keep the input's value type, .dcm "
        "(for a DICOM input) its tags, .png is 8-bit",
    )
    add_force_argument(p)


def _add_diffusion_arguments(p: argparse.ArgumentParser) -> None:
    """The options of the diffusion itself (both paths)."""
    p.add_argument("--niter", type=int, default=100, help="most iterations")
    p.add_argument(
        "--kappa",
        type=float,
        default=None,
        help="edge threshold, in the image's units (default 20; see --relative)",
    )
    p.add_argument(
        "--relative",
        action="store_true",
        help="read --kappa and --epsilon as for the image's 8-bit version (in 255ths of its "
        "range of values): the same smoothing at any bit depth",
    )
    p.add_argument(
        "--gamma",
        type=float,
        default=0.2,
        help="diffusion speed, at most the explicit scheme's stability bound: 1/(number of "
        "neighbours), 0.25 for an image at unit spacing, 0.5 with --option 3, less with a "
        "finer --spacing (past it the result is noise, and the command refuses it)",
    )
    p.add_argument(
        "--option",
        type=int,
        choices=(1, 2, 3),
        default=1,
        help="conduction: 1 exponential, 2 rational, 3 Tukey",
    )
    p.add_argument(
        "--spacing",
        type=float,
        nargs=2,
        default=None,
        metavar=("DY", "DX"),
        help="pixel spacing (default: 1 1)",
    )
    p.add_argument(
        "--epsilon",
        type=float,
        default=0.25,
        help="a point whose change is below this sleeps until a neighbour changes "
        "(0: every point every iteration)",
    )
    p.add_argument(
        "--freeze", action="store_true", help="points that stop changing stay frozen for good"
    )


def _add_mesh_arguments(p: argparse.ArgumentParser) -> None:
    """The options of the PE mesh and its balancing (:data:`MESH_OPTIONS`)."""
    p.add_argument(
        "--pes",
        type=int,
        nargs=2,
        default=MESH_OPTIONS["pes"],
        metavar=("R", "C"),
        help="grid of processors (PEs), R rows by C columns (default: 64 64, the MasPar MP-1)",
    )
    # Renamed to --pes: --mesh names a mesh file (simd-emu render). Refused with a message.
    p.add_argument("--mesh", nargs="*", default=None, help=argparse.SUPPRESS)
    p.add_argument(
        "--buffer",
        type=int,
        default=None,
        help="points each PE can hold, per side (default: twice its share of the image)",
    )
    p.add_argument(
        "--every",
        type=int,
        default=MESH_OPTIONS["every"],
        help="balance every this many iterations (0: never)",
    )
    p.add_argument(
        "--axes",
        choices=("both", "rows", "cols"),
        default=MESH_OPTIONS["axes"],
        help="balance along both grid dimensions or one",
    )
    p.add_argument(
        "--unlimited",
        action="store_true",
        help="balance without the limit on each PE's room (Algorithm 3 instead of 4)",
    )
    p.add_argument(
        "--compare",
        action="store_true",
        help="also run without balancing and print the ratios of load and times",
    )


def _add_run_arguments(p: argparse.ArgumentParser) -> None:
    """Colour input and float output, the backend, the path, and what to print and plot."""
    p.add_argument(
        "--grey",
        action="store_true",
        help="diffuse a colour image's grey version (colour images are refused otherwise)",
    )
    p.add_argument(
        "--float",
        action="store_true",
        help="write .tif or .npy as computed (float32), not rounded to the input's type",
    )
    p.add_argument(
        "--backend",
        choices=("auto", "numpy", "cupy"),
        default="auto",
        help="array library the machine runs on (auto: CuPy where a GPU works)",
    )
    p.add_argument(
        "--method",
        choices=("auto", "mesh", "dense"),
        default="auto",
        help="mesh: the PE mesh with balancing, its PE rows split across the ranks under "
        "mpiexec; dense: every point every iteration, the image rows split across the "
        "ranks (the same result); auto: the mesh",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="print the per-run tables")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--plot-load",
        default=None,
        metavar="PNG",
        help="save a plot of the busiest PE's load in each iteration",
    )
    p.add_argument(
        "--activity-map",
        default=None,
        metavar="PNG",
        help="save a map of how many iterations each pixel was computed in",
    )


def run(args: argparse.Namespace) -> int:
    """Execute ``simd-emu diffuse``; returns the exit status (2 on bad input)."""
    from simd.launch import world

    if args.mesh is not None:
        return fail("--mesh R C is renamed --pes R C (--mesh names a mesh file elsewhere)")
    try:
        comm = world()
        dense = _dense_selected(args)
        check_options(args)  # before anything is read or made
    except (RuntimeError, ValueError) as exc:
        # Every rank has the same arguments and reaches the same verdict: rank 0 says it.
        return fail(exc, quiet=comm_rank() > 0)
    if dense:
        from diffusion.cli_dense import run_dense

        return run_dense(args, comm)
    return _run_mesh(args, comm)


def _run_mesh(args: argparse.Namespace, comm: Any) -> int:
    """The PE-mesh run on one process (``comm`` None) or across the ranks of ``comm``:
    rank 0 reads the input, prints and writes; a bad input fails on every rank alike."""
    from simd.errors import SimdError

    errors: tuple[type[BaseException], ...] = (ValueError, SimdError)
    root = comm is None or comm.Get_rank() == 0
    source = None
    try:
        if comm is None:
            source = read_input(args)  # every output is checked before this reads anything
        else:
            from simd.ranks import CollectiveError, Ranks

            errors += (CollectiveError,)
            with Ranks(comm).collective_errors():
                if root:
                    source = read_input(args)
    except (OSError, *errors) as exc:
        return fail(exc, quiet=not root)
    share_thresholds(args, comm)  # the thresholds come from the image, which rank 0 read
    hint = _balancing_hint(source.data.shape, args) if root else None
    if hint:
        print(hint)
    try:
        runs, machine = _run(source.data if root else None, args, comm)
    except errors as exc:
        return fail(exc, quiet=not root)
    if not root:
        return 0
    if args.verbose:
        _report(runs, machine, args)
    elif len(runs) == 2:
        print(_ratios(runs, args))
    _write_outputs(source, runs, machine, args)
    return 0


def comm_rank() -> int:
    """This process's MPI rank as the launcher set it (0 when not under ``mpiexec``), known
    without MPI, for errors found before any communicator exists."""
    import os

    for name in ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"):
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return 0


def _dense_selected(args: argparse.Namespace) -> bool:
    """Whether ``--method`` selects the dense path (auto takes the mesh, on any number of
    ranks); ValueError where mesh-only options come with ``--method dense``."""
    given = [
        "--" + name.replace("_", "-")
        for name, default in MESH_OPTIONS.items()
        if getattr(args, name) != default and not (name == "pes" and tuple(args.pes) == default)
    ]
    if args.method == "dense" and given:
        raise ValueError(f"{', '.join(given)}: for the PE-mesh path only, not --method dense")
    return args.method == "dense"


def _balancing_hint(shape: tuple[int, ...], args: argparse.Namespace) -> str | None:
    """One line when the PEs hold too few points each for balancing to help."""
    (h, w), (r, c) = shape, args.pes
    if args.every <= 0 or r <= 0 or c <= 0 or h < r or w < c:
        return None
    th, tw = -(-h // r), -(-w // c)
    if th * tw > 4:
        return None
    return (
        f"balancing can hardly help: each PE holds at most {th} x {tw} points of the "
        f"{h} x {w} image on {r} x {c} PEs (--pes {max(1, h // 8)} {max(1, w // 8)} "
        "gives each about 8 x 8)"
    )


def warm_up(backend: str) -> str:
    """``simd-emu warmup``'s part for diffusion: a small run on a PE mesh with and without
    balancing, and the dense path, on ``backend`` (compiling what a run launches)."""
    from diffusion.dense import anisotropic_diffusion
    from diffusion.mesh import mesh_diffusion
    from simd import Machine

    image = (np.random.default_rng(0).random((32, 32)) * 255).astype(np.float32)
    for balance_every, epsilon in ((0, 0.0), (1, 0.0), (1, 1e-3)):
        machine = Machine(pes=(4, 4), backend=backend)
        mesh_diffusion(image, niter=2, machine=machine, balance_every=balance_every,
                       epsilon=epsilon)  # fmt: skip
    anisotropic_diffusion(Machine(backend=backend).asarray(image), niter=2)
    return "the PE mesh's and the dense path's kernels"


def _run(
    img: np.ndarray | None, args: argparse.Namespace, comm: Any = None
) -> tuple[dict[str, Any], Any]:
    """The run with balancing every ``--every`` iterations (without when 0), and with
    ``--compare`` the one without balancing first; across the ranks of ``comm`` when given
    (``img`` on rank 0 only)."""
    from diffusion.mesh import mesh_diffusion
    from simd import Machine

    axes = {"both": (0, 1), "rows": (0,), "cols": (1,)}[args.axes]
    common = dict(pm_arguments(args), balance_axes=axes, limited_buffers=not args.unlimited)
    # Warm up on a tiny image first (JIT compilation, imports), so that the wall times
    # leave compilation out and the runs compare; each rank alone (no communication).
    root = comm is None or comm.Get_rank() == 0
    rng = np.random.default_rng(0)
    mesh_diffusion(
        (rng.random((8, 8)) * 255).astype(np.float32),
        niter=2,
        machine=Machine(pes=(2, 2), backend=args.backend),
        balance_every=1,
        **common,
    )
    plan = [("without", 0)] if args.compare or args.every <= 0 else []
    if args.every > 0:
        plan.append(("with", args.every))
    runs, machine = {}, None
    for label, every in plan:
        machine = Machine(pes=tuple(args.pes), backend=args.backend, comm=comm)
        bar, progress = None, None
        if not args.no_progress and root:
            from tqdm.auto import tqdm

            desc = "no balancing" if every == 0 else f"balancing every {every}"
            # disable=None: a bar only on a terminal; it goes away when done unless -v.
            bar = tqdm(total=args.niter, desc=desc, unit="it", disable=None, leave=args.verbose)

            def progress(it: int, res: Any, bar: Any = bar) -> None:
                bar.update(1)

        try:
            runs[label] = mesh_diffusion(
                img,
                niter=args.niter,
                machine=machine,
                buffer=args.buffer,
                balance_every=every,
                progress=progress,
                **common,
            )
        finally:
            if bar is not None:
                bar.close()
    return runs, machine


def _final(runs: dict[str, Any]) -> Any:
    return runs["with"] if "with" in runs else runs["without"]


def _ratios(runs: dict[str, Any], args: argparse.Namespace) -> str:
    base, bal = runs["without"], runs["with"]
    return (
        f"with / without balancing every {args.every} ({args.axes}): busiest PE's load "
        f"{_ratio(bal.mean_max_load, base.mean_max_load)}, model time "
        f"{_ratio(bal.cycles['total'], base.cycles['total'])}, wall time "
        f"{_ratio(bal.wall['total'], base.wall['total'])}"
    )


def _report(runs: dict[str, Any], m: Any, args: argparse.Namespace) -> None:
    """The tables of --verbose: the image and machine, iterations, the busiest PE's
    average load with and without balancing, and per run the model and wall times."""
    final = _final(runs)
    name = args.image or f"built-in {args.builtin}"
    print(f"image   : {name}, {final.image.shape[0]} x {final.image.shape[1]}")
    ranks = f", {m.nranks} MPI ranks" if m.nranks > 1 else ""
    print(
        f"machine : {m.cost.name} {_mesh(m)}{ranks}, backend {m.backend}, "
        f"buffer {final.grid.buffer}"
    )
    print(f"iterations: {final.iterations} (converged: {final.converged})")
    if final.active_fraction:
        frac = final.active_fraction
        print(
            f"active fraction: first {frac[0]:.3f}, last {frac[-1]:.3f}, "
            f"mean {sum(frac) / len(frac):.3f}"
        )
    # The activity does not depend on the balancing: a balanced run also records the
    # load without it, on the first tiles.
    base = runs["without"].mean_max_load if "without" in runs else final.mean_static_max_load
    print(f"busiest PE's load, mean over the iterations, without balancing: {base:.2f}")
    if "with" in runs:
        bal = runs["with"]
        print(
            f"busiest PE's load, mean over the iterations, with balancing every {args.every} "
            f"({args.axes}): {bal.mean_max_load:.2f} (ratio {_ratio(bal.mean_max_load, base)})"
        )
    if len(runs) == 2:
        print(_ratios(runs, args))
    for label, r in runs.items():
        cyc = r.cycles
        print(
            f"{label:>7} balancing: model {m.cost.seconds(cyc['total']):.4f} s "
            f"({cyc['diffusion']:.0f} + {cyc['balancing']:.0f} cycles), "
            f"wall {r.wall['total']:.2f} s, balancing steps {len(r.balance_reports)}, "
            f"aborted {r.aborted}"
        )


def _write_outputs(source: Any, runs: dict[str, Any], m: Any, args: argparse.Namespace) -> None:
    """Write the result and the pictures; print the notes of the image writer and the
    one line of result."""
    from diffusion.images import save_image
    from simd.outputs import StagedOutputs

    final = _final(runs)
    short = Path(args.image).name if args.image else args.builtin
    dtype = np.float32 if args.float else source.dtype
    written = [args.output]
    # under temporary names, renamed into place together: a failure (or Ctrl-C) leaves
    # neither a half-written file nor the image without its plots (simd.outputs)
    with StagedOutputs() as stage:
        notes = save_image(stage.path(args.output), final.image, dtype=dtype, dicom=source.dicom)
        if args.plot_load:
            _plot_load(stage.path(args.plot_load), runs, args.every, title=f"{short}, {_mesh(m)}")
            written.append(args.plot_load)
        if args.activity_map:
            _plot_activity(
                stage.path(args.activity_map),
                final.activity,
                title=f"{short}: iterations each pixel was active (of {final.iterations})",
            )
            written.append(args.activity_map)
    for note in notes:
        print(f"{args.output}: {note}")
    h, w = final.image.shape
    done = " (converged)" if final.converged else ""
    where = f" on {m.nranks} MPI ranks" if m.nranks > 1 else ""
    if "with" in runs:
        how = (
            f"balancing every {args.every}, busiest PE at "
            f"{_ratio(final.mean_max_load, final.mean_static_max_load)} of its load without"
        )
    else:
        how = "no balancing"
    print(
        f"wrote {', '.join(written)}: {h} x {w}, {final.iterations} iterations{done}{where}, "
        f"{how}; model {m.cost.seconds(final.cycles['total']):.4f} s, "
        f"wall {final.wall['total']:.2f} s"
    )
    note = barely_changed(source, final.image, args)
    if note:
        print(f"simd-emu diffuse: note: {note}", file=sys.stderr)


def _ratio(a: float, b: float) -> str:
    """``a / b`` to three decimals, or "n/a" when nothing ran (``b`` is 0)."""
    return f"{a / b:.3f}" if b else "n/a"


def _mesh(m: Any) -> str:
    return f"{m.pes[0]} x {m.pes[1]} PEs"


def _plot_load(path: Path, runs: dict[str, Any], every: int, *, title: str) -> None:
    """The busiest PE's active points per iteration, with and without balancing."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = []
    if "without" in runs:
        r = runs["without"]
        curves.append(("no balancing", r.max_load, r.mean_max_load))
    else:  # the same activity on the first tiles, recorded by the balanced run
        r = runs["with"]
        curves.append(("no balancing", r.static_max_load, r.mean_static_max_load))
    if "with" in runs:
        r = runs["with"]
        curves.append((f"balancing every {every}", r.max_load, r.mean_max_load))
    fig, ax = plt.subplots(figsize=(7, 4))
    for tag, load, mean in curves:
        ax.plot(np.arange(1, len(load) + 1), load, label=f"{tag} (mean {mean:.1f})")
    ax.set_xlabel("iteration")
    ax.set_ylabel("active points on the busiest PE")
    ax.set_title(title)
    ax.set_ylim(bottom=0)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _plot_activity(path: Path, activity: np.ndarray, *, title: str) -> None:
    """The activity map: per pixel, the iterations in which it was computed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 5))
    im = ax.imshow(activity, cmap="magma")
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("column")
    ax.set_ylabel("row")
    fig.colorbar(im, ax=ax, label="iterations active")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
