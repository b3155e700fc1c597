"""``simd-emu diffuse IMAGE``: edge-directed diffusion on the emulated MasPar mesh.

Runs the diffusion on the PE mesh twice over the same iterations, the activity being the
same either way: without balancing and with scan-directed balancing every ``k``
iterations, and prints iterations, the average over the iterations of the busiest PE's
load with and without balancing, their ratio, and the model and wall times.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["register", "run"]


def register(subparsers: Any) -> None:
    """Add the ``diffuse`` subcommand to ``simd-emu``."""
    p = subparsers.add_parser(
        "diffuse",
        help="anisotropic diffusion on the PE mesh with scan-directed load balancing",
        description=__doc__,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument(
        "image",
        nargs="?",
        default=None,
        help="PNG, TIFF, DICOM or .npy file (default: the built-in camera image)",
    )
    p.add_argument(
        "--builtin",
        default="camera",
        help="built-in image when IMAGE is not given (camera, moon, brick, coffee, ct, ...)",
    )
    p.add_argument(
        "-o",
        "--output",
        default="diffused.png",
        help="where to write the diffused image (.png, .tif, .npy)",
    )
    p.add_argument("--niter", type=int, default=100, help="most iterations")
    p.add_argument("--kappa", type=float, default=20.0, help="conduction coefficient")
    p.add_argument("--gamma", type=float, default=0.2, help="diffusion speed")
    p.add_argument(
        "--option",
        type=int,
        choices=(1, 2, 3),
        default=1,
        help="conduction: 1 exponential, 2 rational, 3 Tukey",
    )
    p.add_argument(
        "--spacing", type=float, nargs=2, default=None, metavar=("DY", "DX"), help="pixel spacing"
    )
    p.add_argument(
        "--epsilon",
        type=float,
        default=0.25,
        help="fixed-point threshold (0: every point every iteration)",
    )
    p.add_argument(
        "--freeze", action="store_true", help="points below epsilon stay frozen for good"
    )
    p.add_argument(
        "--mesh",
        type=int,
        nargs=2,
        default=(64, 64),
        metavar=("R", "C"),
        help="PE mesh (64 x 64 is the MasPar MP-1)",
    )
    p.add_argument(
        "--buffer", type=int, default=None, help="buffer side per PE (default: twice the tile side)"
    )
    p.add_argument(
        "--every", type=int, default=5, help="balance every this many iterations (0: never)"
    )
    p.add_argument(
        "--axes",
        choices=("both", "rows", "cols"),
        default="both",
        help="balance both dimensions or one (Figure 10)",
    )
    p.add_argument(
        "--unlimited",
        action="store_true",
        help="Algorithm 3 (no pseudo-load) instead of Algorithm 4",
    )
    p.add_argument("--backend", choices=("auto", "numpy", "cupy"), default="auto")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--plot-load",
        default=None,
        metavar="PNG",
        help="save the busiest PE's load per iteration as a plot",
    )
    p.add_argument(
        "--activity-map",
        default=None,
        metavar="PNG",
        help="save the map of how often each pixel was active",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Execute ``simd-emu diffuse``; returns the exit status."""
    from diffusion.images import builtin_image, load_image, save_image
    from diffusion.mesh import mesh_diffusion
    from simd import Machine

    try:
        img = builtin_image(args.builtin) if args.image is None else load_image(args.image)
    except (OSError, ValueError) as exc:
        print(f"simd-emu diffuse: {exc}", file=sys.stderr)
        return 2
    if img.ndim != 2:
        print(f"simd-emu diffuse: need a 2-D image, got shape {img.shape}", file=sys.stderr)
        return 2
    axes = {"both": (0, 1), "rows": (0,), "cols": (1,)}[args.axes]
    common = dict(
        niter=args.niter,
        kappa=args.kappa,
        gamma=args.gamma,
        voxelspacing=args.spacing,
        option=args.option,
        epsilon=args.epsilon,
        freeze=args.freeze,
        buffer=args.buffer,
    )
    name = args.image or f"built-in {args.builtin}"
    print(f"image   : {name}, {img.shape[0]} x {img.shape[1]}")
    runs, machines = {}, {}
    try:
        for label, every in (("without", 0), ("with", args.every)):
            if label == "with" and every == 0:
                break
            m = Machine(pes=tuple(args.mesh), backend=args.backend)
            runs[label] = mesh_diffusion(
                img,
                machine=m,
                balance_every=every,
                balance_axes=axes,
                limited_buffers=not args.unlimited,
                progress=not args.no_progress,
                **common,
            )
            machines[label] = m
    except ValueError as exc:
        print(f"simd-emu diffuse: {exc}", file=sys.stderr)
        return 2
    base = runs["without"]
    m = machines["without"]
    print(
        f"machine : {m.cost.name} mesh {m.pes[0]} x {m.pes[1]}, backend {m.backend}, "
        f"buffer {base.grid.buffer}"
    )
    print(f"iterations: {base.iterations} (converged: {base.converged})")
    if base.active_fraction:
        frac = base.active_fraction
        print(
            f"active fraction: first {frac[0]:.3f}, last {frac[-1]:.3f}, "
            f"mean {sum(frac) / len(frac):.3f}"
        )
    print(f"avg max load per PE without balancing: {base.mean_max_load:.2f}")
    rows = [("without", base)]
    if "with" in runs:
        bal = runs["with"]
        print(
            f"avg max load per PE with balancing every {args.every} ({args.axes}): "
            f"{bal.mean_max_load:.2f}"
        )
        print(
            f"ratio (with / without): load {bal.mean_max_load / base.mean_max_load:.3f}, "
            f"model time {bal.cycles['total'] / base.cycles['total']:.3f}"
        )
        rows.append(("with", bal))
    for label, r in rows:
        cyc = r.cycles
        print(
            f"{label:>7} balancing: model {m.cost.seconds(cyc['total']):.4f} s "
            f"({cyc['diffusion']:.0f} + {cyc['balancing']:.0f} cycles), "
            f"wall {r.wall['total']:.2f} s, balancing steps {len(r.balance_reports)}, "
            f"aborted {r.aborted}"
        )
    final = rows[-1][1]
    save_image(args.output, final.image)
    print(f"wrote {args.output}")
    if args.plot_load:
        _plot_load(Path(args.plot_load), rows, args.every)
        print(f"wrote {args.plot_load}")
    if args.activity_map:
        _plot_activity(Path(args.activity_map), final.activity)
        print(f"wrote {args.activity_map}")
    return 0


def _plot_load(path: Path, rows: list, every: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for label, r in rows:
        tag = "no balancing" if label == "without" else f"balancing every {every}"
        ax.plot(np.arange(1, len(r.max_load) + 1), r.max_load, label=tag)
    ax.set_xlabel("iteration")
    ax.set_ylabel("active points on the busiest PE")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _plot_activity(path: Path, activity: np.ndarray) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 5))
    im = ax.imshow(activity, cmap="magma")
    ax.set_title("iterations each pixel was active")
    fig.colorbar(im, ax=ax)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
