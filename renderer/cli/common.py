"""What ``simd-emu render`` does alike on one process and on MPI ranks.

The checks of options and output paths made before any work, the ``picture`` options handed
to :func:`renderer.render`, the tables and lines printed, the outputs written together, and
the one-line error. :mod:`renderer.cli.render` (one process) and :mod:`renderer.cli.ranks` (N ranks)
both build on these.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

__all__ = [
    "DEPTH_SUFFIXES",
    "PROGRAM",
    "check_options",
    "check_outputs",
    "check_source_options",
    "dataset_size",
    "default_output",
    "fail",
    "image_suffixes",
    "loop_table",
    "names",
    "note_if_empty",
    "picture_options",
    "view_line",
    "warm_up_loops",
    "write_outputs",
]

#: The command, as its messages start.
PROGRAM = "simd-emu render"

#: Suffixes ``--depth`` can be written as (``renderer.image.save_depth``).
DEPTH_SUFFIXES = (".png", ".npy", ".tif", ".tiff")


def fail(err: Exception, *, say: bool = True, program: str = PROGRAM) -> int:
    """Print ``<program>: <err>`` on stderr (when ``say``) and return the exit status of a
    bad input or a failed write, 2.

    >>> fail(ValueError("--size: too big"), say=False)
    2
    """
    if say:
        print(f"{program}: {err}", file=sys.stderr)
    return 2


def rank_errors() -> tuple[type[Exception], ...]:
    """The errors that end a command on MPI ranks with one line: a bad input on any rank,
    or a collective that failed because of one."""
    from simd import SimdError
    from simd.ranks import CollectiveError

    return (ValueError, TypeError, OSError, SimdError, CollectiveError)


def names(paths: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``.

    >>> names(["a"]), names(["a", "b"]), names(["a", "b", "c"])
    ('a', 'a and b', 'a, b and c')
    """
    return paths[0] if len(paths) == 1 else ", ".join(paths[:-1]) + " and " + paths[-1]


def default_output(args: argparse.Namespace) -> None:
    """Name the image file when ``-o`` is not given: ``frame.png``, or ``orbit.gif``
    with ``--orbit``.

    >>> args = argparse.Namespace(output=None, orbit=None)
    >>> default_output(args)
    >>> args.output
    'frame.png'
    """
    if args.output is None:
        args.output = "orbit.gif" if args.orbit else "frame.png"


def dataset_size(args: argparse.Namespace) -> str | int:
    """``--dataset-size`` as :func:`renderer.datasets.builtin.load_dataset` takes it: a grid
    resolution as an int, a named size as given.

    >>> dataset_size(argparse.Namespace(dataset_size="64")), dataset_size(
    ...     argparse.Namespace(dataset_size="1m"))
    (64, '1m')
    """
    size = args.dataset_size
    return int(size) if str(size).isdigit() else size


def check_options(args: argparse.Namespace) -> None:
    """Refuse options that contradict each other, before anything is read or rendered (a
    ValueError with one line); then fill in the built-in data set's defaults.

    >>> args = argparse.Namespace(mesh=None, dataset=None, dataset_size=None, table1=False)
    >>> check_options(args)
    >>> args.dataset, args.dataset_size
    ('balanced', '250k')
    """
    check_source_options(args)
    if args.table1:
        given = _given(
            (
                ("-o", args.output),
                ("--depth", args.depth),
                ("--json", args.json),
                ("--orbit", args.orbit),
                ("--compare", args.compare or None),
            )
        )
        if given:
            raise ValueError(
                f"--table1 prints a table and writes nothing; it takes no {names(given)}"
            )


def check_source_options(args: argparse.Namespace) -> None:
    """Refuse a volume, mesh file or built-in data set chosen in contradicting ways (one
    line, before anything is read); then fill in the built-in data set's defaults where
    neither a volume nor a mesh file is given.

    >>> args = argparse.Namespace(volume=None, level=None, mesh="part.ply", dataset="oilwell",
    ...                           dataset_size=None)
    >>> check_source_options(args)
    Traceback (most recent call last):
    ValueError: --dataset chooses a built-in data set; not with --mesh FILE
    """
    from renderer.cli.volumes import check_volume_options

    check_volume_options(args)
    if args.mesh is not None and not args.mesh.strip():
        raise ValueError("--mesh: empty file name")
    if args.mesh is not None:
        given = _given((("--dataset", args.dataset), ("--dataset-size", args.dataset_size)))
        if given:
            verb = "chooses" if len(given) == 1 else "choose"
            raise ValueError(f"{names(given)} {verb} a built-in data set; not with --mesh FILE")
    if getattr(args, "volume", None) is None:
        args.dataset = args.dataset or "balanced"
        args.dataset_size = args.dataset_size or "250k"


def _given(flags: tuple[tuple[str, Any], ...]) -> list[str]:
    """The flags whose value was given (is not None)."""
    return [flag for flag, value in flags if value is not None]


def image_suffixes() -> list[str]:
    """The suffixes Pillow can write an image as (``.png``, ``.jpg``, ``.tif``, ...).

    >>> image_suffixes()[:3]
    ['.png', '.jpg', '.tif']
    """
    from PIL import Image

    Image.init()
    known = [ext for ext, fmt in Image.EXTENSION.items() if fmt in Image.SAVE]
    first = [".png", ".jpg", ".tif"]
    return [e for e in first if e in known] + sorted(e for e in known if e not in first)


def check_outputs(args: argparse.Namespace) -> list[str]:
    """Check every output path before any work (:mod:`simd.outputs`: a file that exists
    is refused without ``--force``, and named with it); returns them.

    Raises ``OutputError`` or ``ValueError`` with a one-line message.

    >>> args = argparse.Namespace(table1=False, orbit=None, output="frame.png", depth=None,
    ...                           json="stats.json", mesh=None, force=False)
    >>> check_outputs(args)
    ['frame.png', 'stats.json']
    """
    from simd.outputs import announce_replace, check_not_inputs, check_output_file

    if args.table1:
        return []  # prints a table, writes nothing
    if args.orbit is not None:
        from renderer.orbit import check_animation_path, check_video_size

        check_animation_path(args.output)
        check_video_size(args.output, *args.size)
    else:
        check_output_file(args.output, image_suffixes(), example="-o frame.png")
    # "is not None": an empty name given is refused (saying so), not taken as no file
    if args.depth is not None:
        check_output_file(args.depth, DEPTH_SUFFIXES, example="--depth depth.png")
    if args.json is not None:
        check_output_file(args.json, example="--json stats.json")
    paths = [p for p in (args.output, args.depth, args.json) if p]
    check_not_inputs(paths, [args.mesh, getattr(args, "volume", None)])
    real = [os.path.realpath(p) for p in paths]
    for i, path in enumerate(real):
        if path in real[:i]:
            raise ValueError(f"{paths[i]}: named for two outputs; give each its own file")
    announce_replace(paths, force=args.force)
    return paths


def picture_options(args: argparse.Namespace, mesh: Any) -> dict[str, Any]:
    """The keyword arguments of ``render`` from the ``picture`` options (only those given,
    so that the defaults stay ``render``'s own); checked here, before any rendering.

    >>> picture_options(argparse.Namespace(fov=20.0, fit=True), mesh=None)
    {'fov': 20.0, 'framing': 'fit'}
    """
    from renderer.scene.camera import unit_vector
    from renderer.stages.picture import check_supersample
    from renderer.stages.shading import surface_colours, vertex_scalars

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


def view_line(args: argparse.Namespace) -> str:
    """The ``--verbose`` line of the view: angles, magnification, size.

    >>> view_line(argparse.Namespace(view=(45.0, 30.0), magnification=1.0, size=(64, 48)))
    'view     : (45, 30), magnification 1, 64x48'
    """
    width, height = args.size
    return (
        f"view     : ({args.view[0]:g}, {args.view[1]:g}), magnification "
        f"{args.magnification:g}, {width}x{height}"
    )


def loop_table(frame: Any, machine: Any) -> list[str]:
    """Per loop (Table 1 and 2 in form) and per stage and balancing phase (Table 4), on
    the model clock and the wall clock.

    >>> from renderer import render
    >>> from simd import Machine
    >>> quad = ([[0.0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], [[0, 1, 2], [0, 2, 3]])
    >>> machine = Machine(pes=16, backend="numpy")
    >>> loop_table(render(quad, size=8, machine=machine), machine)[0].split()[:4]
    ['loop', 'form', 'iter', 'max']
    """
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


def note_if_empty(counts: Any) -> None:
    """Say so when a frame drew nothing (every triangle degenerate or outside the view).

    >>> note_if_empty(argparse.Namespace(pixels=0, degenerate=2, rejected=0))
    note: nothing was drawn (2 triangles of zero area on screen, 0 outside the view);
    the image is empty
    """
    if counts.pixels == 0:
        print(
            f"note: nothing was drawn ({counts.degenerate} triangles of zero area on "
            f"screen, {counts.rejected} outside the view); the image is empty"
        )


def write_outputs(frame: Any, args: argparse.Namespace, record: Any) -> None:
    """Write the image, and the depth and JSON (``record()``) when asked, together
    (:class:`simd.outputs.StagedOutputs`): a failure leaves no file half written.

    >>> import tempfile, pathlib
    >>> from renderer import render
    >>> quad = ([[0.0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], [[0, 1, 2], [0, 2, 3]])
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> args = argparse.Namespace(output=str(folder / "f.png"), depth=None,
    ...                           json=str(folder / "s.json"))
    >>> write_outputs(render(quad, size=8), args, lambda: {"triangles": 2})
    >>> sorted(p.name for p in folder.iterdir())
    ['f.png', 's.json']
    >>> import shutil; shutil.rmtree(folder)
    """
    from renderer.image import save_depth
    from simd.outputs import StagedOutputs

    with StagedOutputs() as stage:
        frame.save(stage.path(args.output))
        if args.depth:
            save_depth(frame.depth, stage.path(args.depth))
        if args.json:
            with open(stage.path(args.json), "w") as fh:
                json.dump(record(), fh, indent=2)


def warm_up_loops(args: argparse.Namespace, forms: tuple[str, ...]) -> None:
    """Render a tiny mesh in every form first, so that one-time costs (loading compiled
    kernels, imports) do not land in the wall time of the first stage or form.

    >>> warm_up_loops(argparse.Namespace(pes=16, backend="numpy"), ("original",))
    """
    import numpy as np

    from renderer.pipeline import render
    from simd import Machine

    quad = (
        np.array([[0.0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]]),
        np.array([[0, 1, 2], [0, 2, 3]]),
    )
    for form in forms:
        render(quad, size=8, loop=form, machine=Machine(pes=args.pes, backend=args.backend))
