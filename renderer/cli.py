"""``simd-emu render``: render an isosurface or a mesh file on the emulated SIMD machine.

Quiet by default: one line saying what was written and how long the frame took.
``--verbose`` adds, per loop (scan conversion, z-buffer), the iterations, the largest and
average workload, the balancing decisions and the time of each phase on the model clock
and the wall clock (Tables 1 and 4 of Ahrens & Hansen in form). ``--compare`` runs the
three loop forms, prints their times and speedups and checks that the images are
identical. Every output path is checked before any work; an existing file is replaced,
and a line says so. Under ``mpiexec -n N`` (N > 1) the command runs on N ranks with no
extra flag (:mod:`renderer.cli_ranks`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from typing import Any

from renderer.pipeline import LOOP_FORMS, MAX_SIZE

__all__ = ["register", "run"]

DESCRIPTION = (
    "Render an isosurface or a mesh file on the emulated SIMD machine and write the image. "
    "Under mpiexec -n N it runs on N ranks, sort-last (each rank its share of the "
    "triangles; rank 0 writes). "
    "Prints one line (what was written, the time); --verbose adds the workload and time "
    "of each loop and balancing phase, on the model clock and the wall clock. --compare "
    "renders with the three loop forms, prints their times and speedups and checks that "
    "the images are identical. Output paths are checked before any work; an existing "
    "file is replaced, and a line says so."
)

#: Suffixes ``--depth`` can be written as (``renderer.image.save_depth``).
DEPTH_SUFFIXES = (".png", ".npy", ".tif", ".tiff")

#: Packages the command imports, by the extra that installs them (checked by simd.cli).
REQUIRES = {"data": ("PIL", "skimage", "tqdm", "imageio", "matplotlib")}


def _size(text: str) -> tuple[int, int]:
    """``N`` or ``WxH`` -> (width, height), each 1..MAX_SIZE.

    >>> _size("512"), _size("640x480")
    ((512, 512), (640, 480))
    """
    try:
        if "x" in text.lower():
            w, h = (int(v) for v in text.lower().split("x"))
        else:
            w = h = int(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"size must be N or WxH, got {text!r}") from err
    if not (1 <= w <= MAX_SIZE and 1 <= h <= MAX_SIZE):
        raise argparse.ArgumentTypeError(f"size must be 1..{MAX_SIZE} each way, got {text!r}")
    return w, h


def _positive(text: str) -> float:
    """A finite number > 0 (the magnification)."""
    try:
        value = float(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from err
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a finite positive number, got {text!r}")
    return value


def _pes(text: str) -> int:
    """A number of processors, 1 to the machine's limit (``simd.operands.MAX_PES``),
    refused when the arguments are read, before any work.

    >>> _pes("512")
    512
    """
    from simd.operands import MAX_PES

    try:
        value = int(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"must be a whole number of PEs, got {text!r}") from err
    if not 1 <= value <= MAX_PES:
        raise argparse.ArgumentTypeError(
            f"must be 1 to {MAX_PES:,} PEs (2**24, the machine's limit), got {text}"
        )
    return value


def _finite(text: str) -> float:
    """A finite number (a view angle)."""
    try:
        value = float(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from err
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``render`` subcommand to ``subparsers`` (``simd.cli`` calls this)."""
    p = subparsers.add_parser(
        "render",
        help="render an isosurface (or a mesh file) with load-balanced loops",
        description=DESCRIPTION,
    )
    p.add_argument(
        "--mesh",
        metavar="FILE",
        help="mesh file (PLY, OBJ, STL, OFF, GLB, ...); "
        "default: the built-in Marschner-Lobb isosurface",
    )
    p.add_argument(
        "--dataset",
        # renderer.datasets.DATASETS, spelled out so that building the parser imports nothing
        choices=("balanced", "unbalanced", "oilwell", "oilwell-unbalanced"),
        default=None,  # balanced; None tells a choice made from the default (see _check_options)
        help="built-in data set: the Marschner-Lobb isosurfaces (balanced, unbalanced) or "
        "the oil-well ones, whose Table 1 workloads come close to those of Ahrens & "
        "Hansen's paper (oilwell, oilwell-unbalanced); default: balanced",
    )
    p.add_argument(
        "--dataset-size",
        default=None,  # 250k (see _check_options)
        help="built-in data set size: 250k, 1m, 2m, 4m or a grid resolution (8..1024); "
        "under mpiexec, built in slabs, one per rank, also 16m, 64m and grids to 8192",
    )
    p.add_argument(
        "--view",
        nargs=2,
        type=_finite,
        metavar=("AZ", "EL"),
        default=(45.0, 45.0),
        help="azimuth and elevation in degrees (default: 45 45)",
    )
    p.add_argument(
        "--magnification",
        "-M",
        type=_positive,
        default=1.0,
        help="magnification factor (default: 1)",
    )
    p.add_argument(
        "--size",
        type=_size,
        default=(512, 512),
        metavar="N|WxH",
        help="image size (default: 512, at most 4096)",
    )
    p.add_argument(
        "--loop",
        choices=LOOP_FORMS,
        default="cost-effective",
        help="loop form (default: cost-effective)",
    )
    p.add_argument(
        "--backend",
        choices=("auto", "numpy", "cupy"),
        default="auto",
        help="machine backend (default: auto)",
    )
    p.add_argument(
        "--pes", type=_pes, default=512, help="number of processors (default: 512, at most 2**24)"
    )
    p.add_argument("--shading", choices=("gouraud", "flat"), default="gouraud")
    p.add_argument(
        "--clock",
        choices=("model", "wall"),
        default="model",
        help="clock the balancer decides with (default: model)",
    )
    p.add_argument(
        "--compare",
        action="store_true",
        help="run all three loop forms, print times and speedups, check the images",
    )
    p.add_argument(
        "--table1",
        action="store_true",
        help="print the maximum and average workloads of both loops in the four "
        "views of Table 1 (for --mesh, or both built-in data sets of --dataset's family: "
        "Marschner-Lobb or oil well) and exit",
    )
    p.add_argument(
        "--orbit",
        type=int,
        metavar="N",
        help="render N frames of a turntable (azimuth from --view's, its elevation) and "
        "write them as an animated GIF or an MP4 (-o orbit.gif, orbit.mp4)",
    )
    p.add_argument(
        "--fps", type=_positive, default=12.0, help="frames per second of --orbit (default: 12)"
    )
    # output and messages (kept together)
    p.add_argument(
        "--output",
        "-o",
        metavar="FILE",
        default=None,
        help="image file, format from the suffix (default: frame.png; with --orbit an "
        "animation, default orbit.gif)",
    )
    p.add_argument(
        "--depth",
        metavar="FILE",
        help="also write the depth buffer: 16-bit PNG or TIFF (0 near .. 65535 far and "
        "empty) or .npy (float32 window-space depth)",
    )
    p.add_argument("--json", metavar="FILE", help="also write the statistics as JSON")
    p.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="print the mesh, the machine and the tables of every loop and phase",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    _register_picture(p)
    p.set_defaults(func=run)
    return p


def _register_picture(p: argparse.ArgumentParser) -> None:
    """The ``picture`` options: camera, colours, light, normals, anti-aliasing. Their
    defaults give the paper's frame, exactly as before they existed."""
    g = p.add_argument_group(
        "picture", "camera, colours, light, normals and anti-aliasing (defaults: the paper's)"
    )
    g.add_argument(
        "--fov",
        type=_angle_open,
        metavar="DEG",
        help="vertical field of view in degrees (default: 30)",
    )
    place = g.add_mutually_exclusive_group()
    place.add_argument(
        "--distance",
        type=_positive,
        metavar="D",
        help="camera distance from the centre of the object's bounding box "
        "(default: where the bounding sphere fits the view)",
    )
    place.add_argument(
        "--fit",
        action="store_true",
        help="centre the object in the picture and fill it, leaving 5%% of the smaller side "
        "free at the closest sides (with --orbit, each frame is fitted on its own)",
    )
    g.add_argument(
        "--up",
        nargs=3,
        type=_finite,
        metavar=("X", "Y", "Z"),
        help="the world direction that is up in the picture; --view turns around it "
        "(default: 0 1 0; 0 0 1 for z-up models)",
    )
    paint = g.add_mutually_exclusive_group()
    paint.add_argument(
        "--colour",
        "--color",
        type=_colour,
        metavar="COLOUR",
        help="surface colour: a name (steelblue), #rrggbb or R,G,B in 0..1 "
        "(default: #ebdbb8, a warm ivory)",
    )
    paint.add_argument(
        "--colormap",
        "--cmap",
        metavar="NAME",
        help="colour the surface by a value per vertex (see --colour-by) through a "
        "matplotlib colormap: viridis, plasma, coolwarm, ...",
    )
    g.add_argument(
        "--colour-by",
        "--color-by",
        choices=("height", "distance"),
        default="height",
        help="the value --colormap colours: height along the up direction, or the "
        "distance from the centre of the bounding box (default: height)",
    )
    g.add_argument(
        "--background",
        type=_colour,
        metavar="COLOUR",
        help="background colour, as --colour (default: black)",
    )
    g.add_argument(
        "--light",
        nargs=3,
        type=_finite,
        metavar=("X", "Y", "Z"),
        help="direction towards the light, seen from the camera: x right, y up, z towards "
        "you (default: 0.3 0.5 1)",
    )
    g.add_argument(
        "--crease-angle",
        type=_crease,
        metavar="DEG",
        help="keep edges sharper than this angle sharp (smooth shading only across "
        "gentler edges), e.g. 30 for cubes and nuts (default: smooth everywhere)",
    )
    g.add_argument(
        "--supersample",
        type=_supersample,
        default=1,
        metavar="K",
        help="anti-aliasing: render K times as wide and high and average down "
        "(default: 1, the exact OpenGL image)",
    )


def _angle_open(text: str) -> float:
    """Degrees strictly between 0 and 180 (a field of view)."""
    value = _finite(text)
    if not 0 < value < 180:
        raise argparse.ArgumentTypeError(f"must be between 0 and 180 degrees, got {text!r}")
    return value


def _crease(text: str) -> float:
    """Degrees from 0 to 180 (a crease angle)."""
    value = _finite(text)
    if not 0 <= value <= 180:
        raise argparse.ArgumentTypeError(f"must be 0 to 180 degrees, got {text!r}")
    return value


def _supersample(text: str) -> int:
    from renderer.picture import MAX_SUPERSAMPLE

    try:
        value = int(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from err
    if not 1 <= value <= MAX_SUPERSAMPLE:
        raise argparse.ArgumentTypeError(f"must be 1..{MAX_SUPERSAMPLE}, got {text!r}")
    return value


def _colour(text: str) -> tuple[float, float, float]:
    from renderer.shading import parse_colour

    try:
        return parse_colour(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("colour: ")) from err


def _picture_options(args: argparse.Namespace, mesh: Any) -> dict[str, Any]:
    """The keyword arguments of ``render`` from the ``picture`` options (only those given,
    so that the defaults stay ``render``'s own); checked here, before any rendering."""
    from renderer.camera import unit_vector
    from renderer.picture import check_supersample
    from renderer.shading import surface_colours, vertex_scalars

    options: dict[str, Any] = {}
    for name in ("fov", "distance", "colour", "background", "crease_angle"):
        value = getattr(args, name, None)
        if value is not None:
            options[name] = value
    if getattr(args, "fit", False):
        options["framing"] = "fit"
    for name in ("up", "light"):
        value = getattr(args, name, None)
        if value is not None:
            unit_vector(value, f"--{name}")
            options[name] = tuple(value)
    if getattr(args, "colormap", None) is not None:
        values = vertex_scalars(mesh.vertices, args.colour_by, up=options.get("up"))
        # a known name? (checked on one value where a rank's share has none)
        probe = values if len(values) else [0.0]
        surface_colours(len(probe), values=probe, colormap=args.colormap)
        options["values"], options["colormap"] = values, args.colormap
    if getattr(args, "supersample", 1) != 1:
        from renderer.pipeline import MAX_SIZE

        options["supersample"] = check_supersample(args.supersample, *args.size, MAX_SIZE)
    return options


def _check_options(args: argparse.Namespace) -> None:
    """Refuse options that contradict each other, before anything is read or rendered (a
    ValueError with one line); then fill in the built-in data set's defaults."""
    if args.mesh is not None and not args.mesh.strip():
        raise ValueError("--mesh: empty file name")
    if args.mesh is not None:
        given = [
            flag
            for flag, value in (("--dataset", args.dataset), ("--dataset-size", args.dataset_size))
            if value is not None
        ]
        if given:
            verb = "chooses" if len(given) == 1 else "choose"
            raise ValueError(f"{_names(given)} {verb} a built-in data set; not with --mesh FILE")
    if args.table1:
        given = [
            flag
            for flag, value in (
                ("-o", args.output),
                ("--depth", args.depth),
                ("--json", args.json),
                ("--orbit", args.orbit),
                ("--compare", args.compare or None),
            )
            if value is not None
        ]
        if given:
            raise ValueError(
                f"--table1 prints a table and writes nothing; it takes no {_names(given)}"
            )
    args.dataset = args.dataset or "balanced"
    args.dataset_size = args.dataset_size or "250k"


def _load(args: argparse.Namespace) -> Any:
    from renderer.datasets import load_dataset
    from renderer.mesh import load_mesh

    if args.mesh:
        return load_mesh(args.mesh)
    return load_dataset(args.dataset, _dataset_size(args))


def _dataset_size(args: argparse.Namespace) -> str | int:
    size = args.dataset_size
    return int(size) if str(size).isdigit() else size


def _loop_table(frame: Any, machine: Any) -> list[str]:
    """Per loop (Table 1 and 2 in form) and per stage and balancing phase (Table 4)."""
    seconds = machine.cost.seconds
    lines = [
        f"{'loop':<16} {'form':<15} {'iter':>6} {'max':>6} {'avg':>7} {'decisions':>9} "
        f"{'model cycles':>13} {'model s':>9} {'wall s':>8}"
    ]
    for name, loop in frame.stats.loops.items():
        lines.append(
            f"{name:<16} {frame.loop:<15} {loop.iterations:>6} {loop.max_workload:>6} "
            f"{loop.mean_workload:>7.2f} {loop.decisions:>9} {loop.cycles:>13.0f} "
            f"{seconds(loop.cycles):>9.4f} {loop.wall:>8.3f}"
        )
    lines.append("")
    lines.append(f"{'phase':<38} {'calls':>6} {'model cycles':>13} {'model s':>9} {'wall s':>8}")

    def row(name: str, calls: Any, cycles: float, wall: float) -> str:
        return f"{name:<38} {calls:>6} {cycles:>13.0f} {seconds(cycles):>9.4f} {wall:>8.3f}"

    for stage, record in frame.stats.stages.items():
        lines.append(row(stage, "", record.cycles, record.wall))
        loop = frame.stats.loops.get(stage)
        for phase, t in (loop.stats if loop is not None else {}).items():
            lines.append(row(f"  {phase}", t.calls, t.cycles, t.wall))
    lines.append(row("total", "", frame.stats.cycles, frame.stats.wall))
    return lines


def _image_suffixes() -> list[str]:
    """The suffixes Pillow can write an image as (``.png``, ``.jpg``, ``.tif``, ...)."""
    from PIL import Image

    Image.init()
    known = [ext for ext, fmt in Image.EXTENSION.items() if fmt in Image.SAVE]
    first = [".png", ".jpg", ".tif"]
    return [e for e in first if e in known] + sorted(e for e in known if e not in first)


def _check_outputs(args: argparse.Namespace) -> list[str]:
    """Check every output path before any work (:mod:`simd.outputs`); returns them.

    Raises ``OutputError`` or ``ValueError`` with a one-line message."""

    from simd.outputs import check_not_inputs, check_output_file

    if args.table1:
        return []  # prints a table, writes nothing
    if args.orbit is not None:
        from renderer.orbit import check_animation_path, check_video_size

        check_animation_path(args.output)
        check_video_size(args.output, *args.size)
    else:
        check_output_file(args.output, _image_suffixes(), example="-o frame.png")
    # "is not None": an empty name given is refused (saying so), not taken as no file
    if args.depth is not None:
        check_output_file(args.depth, DEPTH_SUFFIXES, example="--depth depth.png")
    if args.json is not None:
        check_output_file(args.json, example="--json stats.json")
    paths = [p for p in (args.output, args.depth, args.json) if p]
    check_not_inputs(paths, [args.mesh])
    real = [os.path.realpath(p) for p in paths]
    for i, path in enumerate(real):
        if path in real[:i]:
            raise ValueError(f"{paths[i]}: named for two outputs; give each its own file")
    return paths


def _names(paths: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return paths[0] if len(paths) == 1 else ", ".join(paths[:-1]) + " and " + paths[-1]


def run(args: argparse.Namespace) -> int:
    """Handler of ``simd-emu render``; returns the exit status."""
    from renderer.pipeline import render
    from simd import Machine, SimdError
    from simd.launch import world
    from simd.outputs import announce_replace

    def fail(err: Exception) -> int:
        print(f"simd-emu render: {err}", file=sys.stderr)
        return 2

    def detail(*text: Any) -> None:
        if args.verbose:
            print(*text)

    try:
        _check_options(args)
    except ValueError as err:
        from simd.launch import launched_rank

        return fail(err) if launched_rank() == 0 else 2  # rank 0 says it, once
    try:
        comm = world()  # under mpiexec with several ranks; None otherwise (and for -n 1)
    except RuntimeError as err:
        return fail(err)
    if comm is not None:
        from renderer.cli_ranks import run_ranks

        return run_ranks(args, comm)
    if args.output is None:
        args.output = "orbit.gif" if args.orbit else "frame.png"
    try:
        if args.orbit is not None:
            if args.orbit < 1:
                raise ValueError(f"--orbit needs at least 1 frame, got {args.orbit}")
            if args.compare or args.table1 or args.depth:
                raise ValueError(
                    "--orbit renders a turntable; it takes no --compare, --table1 or --depth"
                )
        outputs = _check_outputs(args)
        t0 = time.perf_counter()
        mesh = _load(args)
        t_load = time.perf_counter() - t0
        machine = Machine(pes=args.pes, backend=args.backend)
    except (ValueError, OSError, SimdError) as err:
        return fail(err)
    width, height = args.size
    if args.table1:
        return _table1(args, mesh, machine)
    announce_replace(outputs)
    detail(
        f"mesh     : {mesh.name}, {mesh.n_faces} triangles, {len(mesh.vertices)} vertices "
        f"(loaded in {t_load:.2f} s)"
    )
    detail(f"machine  : {machine}")
    detail(
        f"view     : ({args.view[0]:g}, {args.view[1]:g}), magnification "
        f"{args.magnification:g}, {width}x{height}"
    )
    if args.orbit is not None:
        return _orbit(args, mesh, machine)
    forms = LOOP_FORMS if args.compare else (args.loop,)
    _warm_up(args, forms)
    frames = {}
    for form in forms:
        m = machine if len(forms) == 1 else Machine(pes=args.pes, backend=args.backend)
        try:
            frame = render(
                mesh,
                view=tuple(args.view),
                magnification=args.magnification,
                size=(width, height),
                loop=form,
                machine=m,
                shading=args.shading,
                clock=args.clock,
                progress=None if args.no_progress else _auto_bar(mesh.n_faces, width * height),
                **_picture_options(args, mesh),
            )
        except ValueError as err:
            return fail(err)
        frames[form] = frame
        detail()
        detail(f"loop form: {form}")
        detail("\n".join(_loop_table(frame, m)))
        counts = frame.stats.counts
        detail(
            f"triangles {counts.triangles}, rejected {counts.rejected}, clipped "
            f"{counts.clipped}, spans {counts.spans}, fragments {counts.fragments}, "
            f"pixels {counts.pixels}"
        )
        if form == forms[-1]:
            _note_if_empty(counts)
    status = 0
    if args.compare:
        detail()
        print("\n".join(_compare_table(frames, machine.cost.seconds)))
        same = _identical(frames.values())
        print("images identical across loop forms:", "yes" if same else "NO")
        status = 0 if same else 1
    last = frames[forms[-1]]
    try:
        _write_outputs(last, args, lambda: _jsonable(frames, mesh, args))
    except (ValueError, OSError) as err:
        return fail(err)
    stats = last.stats
    print(
        f"wrote {_names(outputs)}: {mesh.n_faces} triangles at {width}x{height} with the "
        f"{forms[-1]} loops on {machine.backend} in {stats.wall:.2f} s "
        f"({machine.cost.seconds(stats.cycles):.4f} s on the emulated machine)"
    )
    return status


def _note_if_empty(counts: Any) -> None:
    """Say so when a frame drew nothing (every triangle degenerate or outside the view)."""
    if counts.pixels == 0:
        print(
            f"note: nothing was drawn ({counts.degenerate} triangles of zero area on "
            f"screen, {counts.rejected} outside the view); the image is empty"
        )


def _write_outputs(frame: Any, args: argparse.Namespace, record: Any) -> None:
    """Write the image, and the depth and JSON (``record()``) when asked, together
    (:class:`simd.outputs.StagedOutputs`)."""
    from renderer.image import save_depth
    from simd.outputs import StagedOutputs

    with StagedOutputs() as stage:
        frame.save(stage.path(args.output))
        if args.depth:
            save_depth(frame.depth, stage.path(args.depth))
        if args.json:
            with open(stage.path(args.json), "w") as fh:
                json.dump(record(), fh, indent=2)


def _orbit(args: argparse.Namespace, mesh: Any, machine: Any) -> int:
    """``--orbit N``: a turntable of N frames written as one animation."""
    import statistics

    from renderer.orbit import orbit, save_animation
    from simd.outputs import StagedOutputs

    try:
        picture = _picture_options(args, mesh)
    except ValueError as err:
        print(f"simd-emu render: {err}", file=sys.stderr)
        return 2
    _warm_up(args, (args.loop,))
    frames = orbit(
        mesh,
        args.orbit,
        azimuth=args.view[0],
        elevation=args.view[1],
        machine=machine,
        magnification=args.magnification,
        size=tuple(args.size),
        loop=args.loop,
        shading=args.shading,
        clock=args.clock,
        **picture,
    )
    bar = None
    if not args.no_progress:
        from tqdm.auto import tqdm

        # disable=None: a bar only on a terminal (in a log its redraws are noise)
        bar = tqdm(total=args.orbit, desc="orbit", unit="frame", leave=False, disable=None)
    images, times, stats = [], [], []
    t_start = t0 = time.perf_counter()
    try:
        for frame in frames:
            now = time.perf_counter()
            times.append(now - t0)
            t0 = now
            images.append(frame.image)
            stats.append(frame.stats.to_dict())
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    total = time.perf_counter() - t_start
    try:
        with StagedOutputs() as stage:
            save_animation(images, stage.path(args.output), fps=args.fps)
            if args.json:
                with open(stage.path(args.json), "w") as fh:
                    json.dump({"orbit": args.orbit, "frame_seconds": times, "frames": stats}, fh)
    except (ValueError, OSError) as err:
        print(f"simd-emu render: {err}", file=sys.stderr)
        return 2
    written = [p for p in (args.output, args.json) if p]
    print(
        f"wrote {_names(written)}: {len(images)} frames in {total:.2f} s, "
        f"{len(images) / total:.2f} frames/s, median {1e3 * statistics.median(times):.1f} ms "
        f"per frame ({args.loop} loops on {machine.backend})"
    )
    return 0


def _compare_table(frames: dict, seconds: Any) -> list[str]:
    """Total time of each loop form and its speedup over the original loop."""
    base = frames["original"].stats
    lines = [
        f"{'form':<15} {'model cycles':>13} {'model s':>9} {'wall s':>8} "
        f"{'speedup (model)':>16} {'speedup (wall)':>15}"
    ]
    for form, f in frames.items():
        t = f.stats
        lines.append(
            f"{form:<15} {t.cycles:>13.0f} {seconds(t.cycles):>9.4f} {t.wall:>8.3f} "
            f"{base.cycles / t.cycles:>16.2f} {base.wall / t.wall:>15.2f}"
        )
    return lines


def _identical(frames: Any) -> bool:
    """Whether all frames have the same image, depth buffer and visible faces."""
    import numpy as np

    frames = list(frames)
    return all(
        np.array_equal(f.image, frames[0].image)
        and np.array_equal(f.depth, frames[0].depth)
        and np.array_equal(f.face, frames[0].face)
        for f in frames[1:]
    )


def _table1(args: argparse.Namespace, mesh: Any, machine: Any) -> int:
    """Table 1 of Ahrens & Hansen: max and average workload per loop, per data set and view."""
    from renderer.datasets import load_dataset, workload_table

    if args.mesh:
        meshes = {mesh.name: mesh}
    else:
        size = _dataset_size(args)
        pair = ("oilwell", "oilwell-unbalanced") if "oilwell" in args.dataset else None
        meshes = {kind: load_dataset(kind, size) for kind in pair or ("balanced", "unbalanced")}
    print(f"{'data set':<34} {'view':<9} {'scan max':>8} {'scan avg':>8} {'z max':>6} {'z avg':>6}")
    for name, m in meshes.items():
        for row in workload_table(m, size=args.size, machine=machine):
            print(
                f"{name:<34} {row['view']:<9} {row['scan_max']:>8} {row['scan_avg']:>8.2f} "
                f"{row['zbuf_max']:>6} {row['zbuf_avg']:>6.2f}"
            )
    return 0


def warm_up(backend: str) -> str:
    """``simd-emu warmup``'s part for rendering: the built-in 250k-triangle data set, and a
    small frame of it in every loop form on ``backend`` (compiling what a frame runs)."""
    from renderer.datasets import load_dataset
    from renderer.pipeline import render
    from simd import Machine

    mesh = load_dataset("balanced", "250k")
    for form in LOOP_FORMS:
        render(mesh, size=64, loop=form, machine=Machine(backend=backend))
    return f"the built-in data set ({mesh.n_faces} triangles) and every loop form"


def _warm_up(args: argparse.Namespace, forms: tuple[str, ...]) -> None:
    """Render a tiny mesh in every form first, so that one-time costs (loading compiled
    kernels, imports) do not land in the wall time of the first stage or form."""
    import numpy as np

    from renderer.pipeline import render
    from simd import Machine

    quad = (
        np.array([[0.0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]]),
        np.array([[0, 1, 2], [0, 2, 3]]),
    )
    for form in forms:
        render(quad, size=8, loop=form, machine=Machine(pes=args.pes, backend=args.backend))


def _auto_bar(n_faces: int, n_pixels: int) -> bool | None:
    """A tqdm bar over the pipeline stages (``True``) for long runs: big meshes or images."""
    if n_faces < 500_000 and n_pixels < 1024 * 1024:
        return None
    # only on a terminal: in a log or a pipe a bar's redraws are noise (as diffuse does)
    return True if sys.stderr.isatty() else None


def _jsonable(frames: dict, mesh: Any, args: argparse.Namespace) -> dict:
    """The statistics of every form rendered, with the machine and versions, for JSON."""
    from simd.info import environment

    out: dict[str, Any] = {
        "mesh": mesh.name,
        "triangles": mesh.n_faces,
        "view": list(args.view),
        "magnification": args.magnification,
        "size": list(args.size),
        "environment": environment(),
        "forms": {},
    }
    for form, f in frames.items():
        out["forms"][form] = f.stats.to_dict()
    return out
