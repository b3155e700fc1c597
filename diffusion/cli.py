"""``simd-emu diffuse IMAGE``: edge-directed diffusion on the emulated MasPar mesh.

Runs the diffusion on the PE mesh twice over the same iterations, the activity being the
same either way: without balancing and with scan-directed balancing every ``k``
iterations, and prints iterations, the average over the iterations of the busiest PE's
load with and without balancing, their ratio, and the model and wall times.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["register", "run"]

#: Packages the command imports, by the extra that installs them (checked by simd.cli).
REQUIRES = {"data": ("skimage", "imageio", "PIL", "pydicom", "tqdm", "matplotlib")}


def register(subparsers: Any) -> None:
    """Add the ``diffuse`` subcommand to ``simd-emu``."""
    from diffusion.images import BUILTIN

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
        choices=sorted(BUILTIN),
        help="built-in image when IMAGE is not given (shipped with scikit-image or pydicom)",
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
    """Execute ``simd-emu diffuse``; returns the exit status (2 on bad input)."""
    from diffusion.dense import DiffusionStabilityWarning
    from diffusion.images import builtin_image, check_output_path, load_image, save_image
    from simd.errors import SimdError

    try:
        # Refuse unwritable outputs before the runs, not after them.
        check_output_path(args.output)
        for picture in (args.plot_load, args.activity_map):
            if picture:
                _check_picture_path(Path(picture))
        img = builtin_image(args.builtin) if args.image is None else load_image(args.image)
    except (OSError, ValueError) as exc:
        return _fail(exc)
    if img.ndim != 2:
        return _fail(
            f"need a 2-D image for the 2-D PE mesh, got shape {img.shape} (for a volume, "
            "use diffusion.anisotropic_diffusion, or save one slice)"
        )
    name = args.image or f"built-in {args.builtin}"
    print(f"image   : {name}, {img.shape[0]} x {img.shape[1]}")
    short = Path(args.image).name if args.image else args.builtin
    with warnings.catch_warnings():
        # One line per distinct warning, without the source line of a traceback.
        warnings.simplefilter("always", DiffusionStabilityWarning)
        warnings.showwarning = _WarningPrinter()
        try:
            runs, machine = _run_both(img, args)
        except (ValueError, SimdError) as exc:
            return _fail(exc)
    _report(runs, machine, args)
    final = runs["with"] if "with" in runs else runs["without"]
    save_image(args.output, final.image)
    print(f"wrote {args.output}")
    if args.plot_load:
        _plot_load(Path(args.plot_load), runs, args.every, title=f"{short}, {_mesh(machine)}")
        print(f"wrote {args.plot_load}")
    if args.activity_map:
        _plot_activity(
            Path(args.activity_map),
            final.activity,
            title=f"{short}: iterations each pixel was active ({final.iterations} run)",
        )
        print(f"wrote {args.activity_map}")
    return 0


def _run_both(img: np.ndarray, args: argparse.Namespace) -> tuple[dict[str, Any], Any]:
    """The run without balancing and, unless ``--every 0``, the one with it."""
    from diffusion.mesh import mesh_diffusion
    from simd import Machine

    axes = {"both": (0, 1), "rows": (0,), "cols": (1,)}[args.axes]
    common = dict(
        kappa=args.kappa,
        gamma=args.gamma,
        voxelspacing=args.spacing,
        option=args.option,
        epsilon=args.epsilon,
        freeze=args.freeze,
        balance_axes=axes,
        limited_buffers=not args.unlimited,
    )
    # Warm up on a tiny image first (JIT compilation, imports), so that the wall times of
    # the two runs compare.
    rng = np.random.default_rng(0)
    mesh_diffusion(
        (rng.random((8, 8)) * 255).astype(np.float32),
        niter=2,
        machine=Machine(pes=(2, 2), backend=args.backend),
        balance_every=1,
        **common,
    )
    runs, machine = {}, None
    for label, every in (("without", 0), ("with", args.every)):
        if label == "with" and every == 0:
            break
        machine = Machine(pes=tuple(args.mesh), backend=args.backend)
        bar, progress = None, None
        if not args.no_progress:
            from tqdm.auto import tqdm

            desc = "no balancing" if every == 0 else f"balancing every {every}"
            bar = tqdm(total=args.niter, desc=desc, unit="it")

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


def _report(runs: dict[str, Any], m: Any, args: argparse.Namespace) -> None:
    """Print iterations, the busiest PE's average load with and without balancing, their
    ratio, and the model and wall times."""
    base = runs["without"]
    print(f"machine : {m.cost.name} {_mesh(m)}, backend {m.backend}, buffer {base.grid.buffer}")
    print(f"iterations: {base.iterations} (converged: {base.converged})")
    if base.active_fraction:
        frac = base.active_fraction
        print(
            f"active fraction: first {frac[0]:.3f}, last {frac[-1]:.3f}, "
            f"mean {sum(frac) / len(frac):.3f}"
        )
    print(f"avg max load per PE without balancing: {base.mean_max_load:.2f}")
    if "with" in runs:
        bal = runs["with"]
        print(
            f"avg max load per PE with balancing every {args.every} ({args.axes}): "
            f"{bal.mean_max_load:.2f}"
        )
        print(
            f"ratio (with / without): load {_ratio(bal.mean_max_load, base.mean_max_load)}, "
            f"model time {_ratio(bal.cycles['total'], base.cycles['total'])}, "
            f"wall time {_ratio(bal.wall['total'], base.wall['total'])}"
        )
    for label, r in runs.items():
        cyc = r.cycles
        print(
            f"{label:>7} balancing: model {m.cost.seconds(cyc['total']):.4f} s "
            f"({cyc['diffusion']:.0f} + {cyc['balancing']:.0f} cycles), "
            f"wall {r.wall['total']:.2f} s, balancing steps {len(r.balance_reports)}, "
            f"aborted {r.aborted}"
        )


def _ratio(a: float, b: float) -> str:
    """``a / b`` to three decimals, or "n/a" when nothing ran (``b`` is 0)."""
    return f"{a / b:.3f}" if b else "n/a"


def _mesh(m: Any) -> str:
    return f"mesh {m.pes[0]} x {m.pes[1]}"


def _fail(problem: object) -> int:
    print(f"simd-emu diffuse: {problem}", file=sys.stderr)
    return 2


class _WarningPrinter:
    """``warnings.showwarning`` that prints each distinct message once, on one line."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def __call__(self, message: Any, category: Any, *args: Any, **kwargs: Any) -> None:
        if str(message) not in self.seen:
            self.seen.add(str(message))
            print(f"simd-emu diffuse: warning: {message}", file=sys.stderr)


def _check_picture_path(path: Path) -> None:
    """ValueError unless matplotlib can write a picture at ``path``."""
    from matplotlib.figure import Figure

    kinds = Figure().canvas.get_supported_filetypes()
    if path.suffix.lower().lstrip(".") not in kinds:
        raise ValueError(
            f"cannot write {path}: unknown picture type {path.suffix!r} (use .png, .pdf, .svg)"
        )
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise ValueError(f"cannot write {path}: folder {parent} does not exist")


def _plot_load(path: Path, runs: dict[str, Any], every: int, *, title: str) -> None:
    """The busiest PE's active points per iteration, with and without balancing."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for label, r in runs.items():
        tag = "no balancing" if label == "without" else f"balancing every {every}"
        ax.plot(
            np.arange(1, len(r.max_load) + 1),
            r.max_load,
            label=f"{tag} (mean {r.mean_max_load:.1f})",
        )
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
