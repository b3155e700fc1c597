"""What the two runs of ``simd-emu diffuse`` (on the PE mesh and dense) share.

Both check every option and output path (a file that exists is replaced only with
``--force``) and read the input the same way (:func:`read_input`), share the thresholds
rank 0 computed from the image (:func:`share_thresholds`), print errors on one line
(:func:`fail`), and note a result that barely differs from its input
(:func:`barely_changed`).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "DEFAULT_KAPPA",
    "barely_changed",
    "check_options",
    "check_picture_path",
    "fail",
    "pm_arguments",
    "read_input",
    "share_thresholds",
]


#: The edge threshold when --kappa is not given.
DEFAULT_KAPPA = 20.0


def read_input(args: argparse.Namespace, *, mesh: bool = True) -> Any:
    """Check every output path, then read the input as a 2-D image (a SourceImage; the
    options are checked before, by :func:`check_options`); ``mesh``: for the PE mesh
    (``--pes`` must fit the image). Sets
    ``args.kappa`` and ``args.epsilon`` (scaled to the image's range of values with
    ``--relative``) and ``args.data_range``."""
    from diffusion.images import builtin_path, check_dicom_output, read_image

    output = _check_outputs(args)
    source = read_image(builtin_path(args.builtin) if args.image is None else args.image)
    name = args.image or f"the built-in {args.builtin}"
    if source.is_colour:
        if not args.grey:
            h, w, c = source.data.shape
            raise ValueError(
                f"{name} is a colour image ({h} x {w}, {c} channels): pass --grey to diffuse "
                "its grey version, or diffuse the channels one by one as grey images"
            )
        source = source.grey()
    if source.data.ndim != 2:
        raise ValueError(
            f"need a 2-D image for the 2-D PE mesh, got shape {source.data.shape} (for a "
            "volume, use diffusion.anisotropic_diffusion, or save one slice)"
        )
    if output.suffix.lower() == ".dcm":
        check_dicom_output(source)
    h, w = source.data.shape
    if not np.isfinite(source.data).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    if mesh and (args.pes[0] > h or args.pes[1] > w):
        raise ValueError(
            f"--pes {args.pes[0]} {args.pes[1]} is more PEs than {name} has pixels ({h} x {w}): "
            "every PE must hold at least one; give a smaller --pes"
        )
    _set_thresholds(args, source.data)
    return source


def check_options(args: argparse.Namespace) -> None:
    """The counts and numbers of the options, the first check of a run (on every rank
    alike; the library checks the rest, in the warm-up on a tiny image, before the run)."""
    from simd.operands import MAX_PES

    if args.niter < 0:
        raise ValueError(f"--niter must be 0 or more, got {args.niter}")
    if args.every < 0:
        raise ValueError(f"--every must be 0 (never balance) or more, got {args.every}")
    if min(args.pes) < 1:
        raise ValueError(
            f"--pes must be two positive numbers of PEs, got {args.pes[0]} {args.pes[1]}"
        )
    if args.pes[0] * args.pes[1] > MAX_PES:
        raise ValueError(
            f"--pes {args.pes[0]} {args.pes[1]} is {args.pes[0] * args.pes[1]:,} PEs; the "
            f"machine's limit is {MAX_PES:,} (2**24)"
        )
    if args.buffer is not None and args.buffer < 1:
        raise ValueError(f"--buffer must be a positive number of points, got {args.buffer}")
    if args.kappa is not None and not (math.isfinite(args.kappa) and args.kappa > 0):
        raise ValueError(f"--kappa must be a positive number, got {args.kappa:g}")
    if args.spacing is not None and not all(math.isfinite(s) and s > 0 for s in args.spacing):
        raise ValueError(
            f"--spacing must be two positive numbers (DY DX), got {args.spacing[0]:g} "
            f"{args.spacing[1]:g}"
        )
    from diffusion.settings import PMParameters

    # --gamma against the stability bound of the explicit scheme (for --spacing, --option)
    PMParameters.check(2, gamma=args.gamma, voxelspacing=args.spacing, option=args.option)
    suffix = Path(args.output).suffix.lower()
    if args.float and suffix not in (".tif", ".tiff", ".npy"):
        raise ValueError(
            f"--float writes float32 values, which a {suffix or 'file without a suffix'} "
            "cannot hold: use .tif or .npy for -o"
        )


def _check_outputs(args: argparse.Namespace) -> Path:
    """The output paths (the image's, returned, and the pictures'): writable, of a type
    their writer knows, none named twice, none an input, and none a file that exists
    unless ``--force`` is given (then each is named)."""
    from diffusion.images import check_output_path
    from simd.outputs import announce_replace, check_not_inputs, check_output_file

    output = check_output_path(args.output)
    seen = {output.resolve()}
    for picture in (args.plot_load, args.activity_map):
        if picture is not None:  # an empty name is refused, not taken as no picture
            check_output_file(picture)
            path = Path(picture)
            check_picture_path(path)
            if path.resolve() in seen:
                raise ValueError(f"{path} is named for two outputs")
            seen.add(path.resolve())
    outputs = [args.output, args.plot_load, args.activity_map]
    check_not_inputs(outputs, [args.image])
    announce_replace(outputs, force=args.force)
    return output


def _set_thresholds(args: argparse.Namespace, data: np.ndarray) -> None:
    """``args.data_range`` of the image ``data``, ``args.kappa`` (its default when not
    given) and with ``--relative`` ``args.kappa`` and ``args.epsilon`` scaled to the range."""
    args.data_range = (float(data.min()), float(data.max()))
    if args.kappa is None:
        args.kappa = DEFAULT_KAPPA
    if args.relative:  # thresholds as on the 8-bit version: scaled to the range of values
        span = args.data_range[1] - args.data_range[0]
        scale = span / 255 if span > 0 else 1.0
        args.kappa, args.epsilon = args.kappa * scale, args.epsilon * scale


def pm_arguments(args: argparse.Namespace) -> dict[str, Any]:
    """The Perona-Malik arguments of ``diffusion.anisotropic_diffusion`` and
    ``mesh_diffusion`` from the options (``--niter`` aside: the warm-up runs fewer).

    >>> args = argparse.Namespace(kappa=20.0, gamma=0.2, spacing=None, option=1, epsilon=0.25,
    ...                           freeze=False)
    >>> sorted(pm_arguments(args))
    ['epsilon', 'freeze', 'gamma', 'kappa', 'option', 'voxelspacing']
    """
    return dict(
        kappa=args.kappa,
        gamma=args.gamma,
        voxelspacing=args.spacing,
        option=args.option,
        epsilon=args.epsilon,
        freeze=args.freeze,
    )


def barely_changed(source: Any, image: Any, args: argparse.Namespace) -> str | None:
    """A note when the result differs from the input by less than a thousandth of the
    input's range of values (a ``--kappa`` far too small for the data's units, or an
    ``--epsilon`` too large), else None; none for ``--niter 0``, which asks for the input
    as it is. The note suggests ``--relative`` only where it was not given.

    >>> import argparse, types
    >>> src = types.SimpleNamespace(data=np.array([0.0, 1000.0]))
    >>> args = argparse.Namespace(data_range=(0.0, 1000.0), niter=10, kappa=20.0, epsilon=0.25,
    ...                           relative=False)
    >>> barely_changed(src, src.data, args).split(": ")[1]
    "--kappa 20 and --epsilon 0.25 are in the image's units; try --relative (or a larger --kappa)"
    >>> args.relative = True
    >>> barely_changed(src, src.data, args).split(": ")[1]
    'try a larger --kappa or a smaller --epsilon'
    >>> args.niter = 0
    >>> barely_changed(src, src.data, args) is None
    True
    """
    lo, hi = args.data_range
    if hi <= lo or args.niter == 0:
        return None
    change = float(np.nanmax(np.abs(np.asarray(image, np.float64) - source.data))) / (hi - lo)
    if change >= 1e-3:
        return None
    if args.relative:  # the thresholds are scaled already
        advice = "try a larger --kappa or a smaller --epsilon"
    else:
        advice = (
            f"--kappa {args.kappa:g} and --epsilon {args.epsilon:g} are in the image's units; "
            "try --relative (or a larger --kappa)"
        )
    return (
        f"the result differs from the input by at most {change:.1e} of its range of values "
        f"({lo:g} to {hi:g}): {advice}"
    )


def fail(problem: object, *, quiet: bool = False) -> int:
    """Print the one line of error (unless ``quiet``: another rank says it); returns 2."""
    if not quiet:
        print(f"simd-emu diffuse: {problem}", file=sys.stderr)
    return 2


def check_picture_path(path: Path) -> None:
    """ValueError unless matplotlib can write a picture at ``path``."""
    from matplotlib.figure import Figure

    kinds = Figure().canvas.get_supported_filetypes()
    if path.suffix.lower().lstrip(".") not in kinds:
        raise ValueError(
            f"cannot write {path}: unknown picture type {path.suffix!r} (use .png, .pdf, .svg)"
        )


def share_thresholds(args: argparse.Namespace, comm: Any) -> None:
    """Across the ranks of ``comm`` (None: one process, nothing to do), give every rank
    the thresholds rank 0 computed from the image it read (``--kappa``, ``--epsilon``
    and the image's range of values)."""
    if comm is not None:
        args.kappa, args.epsilon, args.data_range = comm.bcast(
            (args.kappa, args.epsilon, getattr(args, "data_range", None))
        )
