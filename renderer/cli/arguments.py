"""The arguments of ``simd-emu render``, one function per group, and their checks.

Every value is checked when the arguments are read, before any work: a bad one is one line
from argparse (``argument --pes: must be 1 to ...``). :func:`add_arguments` adds them all,
in the order ``--help`` lists them.
"""

from __future__ import annotations

import argparse
import math

from renderer.pipeline import LOOP_FORMS, MAX_SIZE
from simd.outputs import add_force_argument

__all__ = [
    "add_arguments",
    "add_machine_arguments",
    "add_mode_arguments",
    "add_output_arguments",
    "add_picture_arguments",
    "add_scene_arguments",
    "add_volume_arguments",
    "colour",
    "crease_angle",
    "field_of_view",
    "finite_number",
    "image_size",
    "pe_count",
    "positive_number",
    "supersample_factor",
]


def image_size(text: str) -> tuple[int, int]:
    """``N`` or ``WxH`` -> (width, height), each 1..MAX_SIZE.

    >>> image_size("512"), image_size("640x480")
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


def positive_number(text: str) -> float:
    """A finite number > 0 (the magnification, a distance, frames per second).

    >>> positive_number("2.5")
    2.5
    """
    try:
        value = float(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from err
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a finite positive number, got {text!r}")
    return value


def add_backend_arguments(p: argparse.ArgumentParser) -> None:
    """The machine's options, the same for every renderer command: ``--backend``, ``--pes``."""
    p.add_argument(
        "--backend",
        choices=("auto", "numpy", "cupy"),
        default="auto",
        help="machine backend (default: auto)",
    )
    p.add_argument(
        "--pes",
        type=pe_count,
        default=512,
        help="number of processors (default: 512, at most 2**24)",
    )


def pe_count(text: str) -> int:
    """A number of processors, 1 to the machine's limit (``simd.operands.MAX_PES``),
    refused when the arguments are read, before any work.

    >>> pe_count("512")
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


def finite_number(text: str) -> float:
    """A finite number (a view angle, a direction's component, an isovalue).

    >>> finite_number("-45")
    -45.0
    """
    try:
        value = float(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from err
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def field_of_view(text: str) -> float:
    """Degrees strictly between 0 and 180 (a field of view).

    >>> field_of_view("30")
    30.0
    """
    value = finite_number(text)
    if not 0 < value < 180:
        raise argparse.ArgumentTypeError(f"must be between 0 and 180 degrees, got {text!r}")
    return value


def crease_angle(text: str) -> float:
    """Degrees from 0 to 180 (a crease angle).

    >>> crease_angle("0")
    0.0
    """
    value = finite_number(text)
    if not 0 <= value <= 180:
        raise argparse.ArgumentTypeError(f"must be 0 to 180 degrees, got {text!r}")
    return value


def supersample_factor(text: str) -> int:
    """A whole number from 1 to ``renderer.stages.picture.MAX_SUPERSAMPLE``.

    >>> supersample_factor("2")
    2
    """
    from renderer.stages.picture import MAX_SUPERSAMPLE

    try:
        value = int(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from err
    if not 1 <= value <= MAX_SUPERSAMPLE:
        raise argparse.ArgumentTypeError(f"must be 1..{MAX_SUPERSAMPLE}, got {text!r}")
    return value


def colour(text: str) -> tuple[float, float, float]:
    """A colour as :func:`renderer.stages.shading.parse_colour` reads it: a name, ``#rrggbb`` or
    ``R,G,B`` in 0..1.

    >>> colour("1,0,0")
    (1.0, 0.0, 0.0)
    """
    from renderer.stages.shading import parse_colour

    try:
        return parse_colour(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("colour: ")) from err


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add every argument of ``simd-emu render`` to ``p``.

    >>> p = argparse.ArgumentParser()
    >>> add_arguments(p)
    >>> p.parse_args(["--size", "64x48"]).size
    (64, 48)
    """
    add_scene_arguments(p)
    add_machine_arguments(p)
    add_mode_arguments(p)
    add_output_arguments(p)
    add_picture_arguments(p)


def add_volume_arguments(p: argparse.ArgumentParser, *, required: bool) -> None:
    """Add ``VOLUME`` (optional unless ``required``) and ``--level`` to ``p``."""
    p.add_argument(
        "volume",
        nargs=None if required else "?",
        metavar="VOLUME",
        help="a volume file (.npy, .tif/.tiff, .nii/.nii.gz, .nrrd/.nhdr, .vti) or a folder "
        "of DICOM slices: its isosurface at --level is extracted on the machine"
        + ("" if required else " and rendered"),
    )
    p.add_argument(
        "--level",
        type=finite_number,
        metavar="L",
        required=required,
        help="the isovalue of VOLUME's surface (values at or above it are inside)"
        + ("" if required else "; needed with VOLUME"),
    )


def add_scene_arguments(p: argparse.ArgumentParser) -> None:
    """What is rendered and how it is seen: a volume's isosurface, the mesh or data set,
    the view, the size."""
    add_volume_arguments(p, required=False)
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
        default=None,  # balanced; None tells a choice made from the default (check_options)
        help="built-in data set: the Marschner-Lobb isosurfaces (balanced, unbalanced) or "
        "the oil-well ones, whose Table 1 workloads come close to those of Ahrens & "
        "Hansen's paper (oilwell, oilwell-unbalanced); default: balanced",
    )
    p.add_argument(
        "--dataset-size",
        default=None,  # 250k (check_options)
        help="built-in data set size: 250k, 1m, 2m, 4m or a grid resolution (8..1024); "
        "under mpiexec, built in slabs, one per rank, also 16m, 64m and grids to 8192",
    )
    p.add_argument(
        "--view",
        nargs=2,
        type=finite_number,
        metavar=("AZ", "EL"),
        default=(45.0, 45.0),
        help="azimuth and elevation in degrees (default: 45 45)",
    )
    p.add_argument(
        "--magnification",
        "-M",
        type=positive_number,
        default=1.0,
        help="magnification factor (default: 1)",
    )
    p.add_argument(
        "--size",
        type=image_size,
        default=(512, 512),
        metavar="N|WxH",
        help="image size (default: 512, at most 4096)",
    )


def add_machine_arguments(p: argparse.ArgumentParser) -> None:
    """The loops and the machine: loop form, backend, PEs, shading, the balancer's clock."""
    p.add_argument(
        "--loop",
        choices=LOOP_FORMS,
        default="cost-effective",
        help="loop form (default: cost-effective)",
    )
    add_backend_arguments(p)
    p.add_argument("--shading", choices=("gouraud", "flat"), default="gouraud")
    p.add_argument(
        "--clock",
        choices=("model", "wall"),
        default="model",
        help="clock the balancer decides with (default: model)",
    )


def add_mode_arguments(p: argparse.ArgumentParser) -> None:
    """What the command does instead of one frame: compare, Table 1, a turntable."""
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
        "--fps",
        type=positive_number,
        default=12.0,
        help="frames per second of --orbit (default: 12)",
    )


def add_output_arguments(p: argparse.ArgumentParser) -> None:
    """The files written and the messages printed."""
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
    add_force_argument(p)
    p.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="print the mesh, the machine and the tables of every loop and phase",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def add_picture_arguments(p: argparse.ArgumentParser) -> None:
    """The ``picture`` group: camera, colours, light, normals, anti-aliasing. Their
    defaults give the paper's frame."""
    group = p.add_argument_group(
        "picture", "camera, colours, light, normals and anti-aliasing (defaults: the paper's)"
    )
    _add_camera_arguments(group)
    _add_surface_arguments(group)


def _add_camera_arguments(group: argparse._ArgumentGroup) -> None:
    """Field of view, the camera's distance or a fitted framing, the up direction."""
    group.add_argument(
        "--fov",
        type=field_of_view,
        metavar="DEG",
        help="vertical field of view in degrees (default: 30)",
    )
    place = group.add_mutually_exclusive_group()
    place.add_argument(
        "--distance",
        type=positive_number,
        metavar="D",
        help="camera distance from the centre of the object's bounding box "
        "(default: where the bounding sphere fits the view)",
    )
    place.add_argument(
        "--fit",
        action="store_true",
        help="centre the object in each frame and fill it, leaving 5%% of the smaller side "
        "free at the closest sides",
    )
    group.add_argument(
        "--up",
        nargs=3,
        type=finite_number,
        metavar=("X", "Y", "Z"),
        help="the world direction that is up in the picture; --view turns around it "
        "(default: 0 1 0; 0 0 1 for z-up models)",
    )


def _add_surface_arguments(group: argparse._ArgumentGroup) -> None:
    """Colours, light, crease angle and supersampling."""
    paint = group.add_mutually_exclusive_group()
    paint.add_argument(
        "--colour",
        "--color",
        type=colour,
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
    group.add_argument(
        "--colour-by",
        "--color-by",
        choices=("height", "distance"),
        default="height",
        help="the value --colormap colours: height along the up direction, or the "
        "distance from the centre of the bounding box (default: height)",
    )
    group.add_argument(
        "--background",
        type=colour,
        metavar="COLOUR",
        help="background colour, as --colour (default: black)",
    )
    group.add_argument(
        "--light",
        nargs=3,
        type=finite_number,
        metavar=("X", "Y", "Z"),
        help="direction towards the light, seen from the camera: x right, y up, z towards "
        "you (default: 0.3 0.5 1)",
    )
    group.add_argument(
        "--crease-angle",
        type=crease_angle,
        metavar="DEG",
        help="keep edges sharper than this angle sharp (smooth shading only across "
        "gentler edges), e.g. 30 for cubes and nuts (default: smooth everywhere)",
    )
    group.add_argument(
        "--supersample",
        type=supersample_factor,
        default=1,
        metavar="K",
        help="anti-aliasing: render K times as wide and high and average down "
        "(default: 1, the exact OpenGL image)",
    )
