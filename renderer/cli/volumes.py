"""Volumes on the command line: what ``simd-emu render VOLUME --level L`` and ``simd-emu
isosurface`` share.

The checks of the positional ``VOLUME`` and ``--level``
(:func:`renderer.cli.arguments.add_volume_arguments`) made before anything is read
(:func:`check_volume_options`), the surface extracted on the
machine (:func:`volume_surface`: the file read, the level checked against its values, the
kernels compiled on a tiny volume of the same kind (:func:`warm_up_extraction`), then
:func:`renderer.isosurface` in the file's space), and the table of the extraction's phases
for ``--verbose`` (:func:`phase_table`).
"""

from __future__ import annotations

import argparse
import math
import os
from typing import Any

import numpy as np

__all__ = [
    "ISOSURFACE_PHASES",
    "check_volume_options",
    "is_volume_path",
    "phase_table",
    "volume_surface",
    "warm_up_extraction",
]

#: The machine phases of an extraction (:func:`renderer.isosurface`).
ISOSURFACE_PHASES = ("classify", "scan", "emit")


def is_volume_path(path: str) -> bool:
    """Whether ``path`` names a volume: a folder (of DICOM slices) or a file whose suffix
    :func:`renderer.read_volume` reads.

    >>> is_volume_path("head.nii.gz"), is_volume_path("part.ply")
    (True, False)
    """
    from renderer.contour.volumes import VOLUME_SUFFIXES

    return os.path.isdir(path) or path.lower().endswith(VOLUME_SUFFIXES)


def check_volume_options(args: argparse.Namespace) -> None:
    """Refuse, in one line and before anything is read, a volume without ``--level``, a
    level without a volume, a volume with a mesh or a built-in data set, and a file that
    is not a volume.

    >>> check_volume_options(argparse.Namespace(volume=None, level=None))
    >>> try:
    ...     check_volume_options(argparse.Namespace(volume="head.nii", level=None))
    ... except ValueError as err:
    ...     print(err)
    head.nii: a volume needs --level L, the value of the surface to extract
    """
    volume, given_level = getattr(args, "volume", None), getattr(args, "level", None)
    if volume is None:
        if given_level is not None:
            raise ValueError(
                "--level extracts the isosurface of a VOLUME file; give one (a mesh file and "
                "the built-in data sets are surfaces already)"
            )
        return
    if not volume.strip():
        raise ValueError("VOLUME: empty file name")
    others = [
        flag
        for flag, name in (
            ("--mesh", "mesh"),
            ("--dataset", "dataset"),
            ("--dataset-size", "dataset_size"),
        )  # fmt: skip
        if getattr(args, name, None) is not None
    ]
    if others:
        raise ValueError(f"{volume}: a VOLUME is rendered alone; not with {', '.join(others)}")
    if os.path.exists(volume) and not is_volume_path(volume):
        from renderer.contour.volumes import VOLUME_SUFFIXES

        raise ValueError(
            f"{volume}: not a volume file ({', '.join(VOLUME_SUFFIXES)}) or a folder of DICOM "
            "slices (a mesh file is rendered with --mesh FILE)"
        )
    if given_level is None:
        raise ValueError(f"{volume}: a volume needs --level L, the value of the surface to extract")


def volume_surface(args: argparse.Namespace, machine: Any) -> Any:
    """Read ``args.volume`` and extract its isosurface at ``args.level`` on ``machine``, in
    the file's space (:meth:`renderer.Volume.isosurface`). A level with no surface is
    refused, naming the volume's range of values, before the extraction; on MPI ranks
    (each rank maps a ``.npy`` file and reads its slab) the extraction refuses it.
    """
    from renderer.contour.volumes import read_volume

    volume = read_volume(args.volume, mmap=machine.ranks is not None)
    if machine.ranks is None:
        _check_level(volume.array, args.level)
    dtype = np.float64 if getattr(args, "float64", False) else np.float32
    warm_up_extraction(volume.array, args.backend, dtype)
    return volume.isosurface(args.level, machine=machine, dtype=dtype)


def warm_up_extraction(array: Any, backend: str, dtype: Any = np.float32) -> None:
    """Extract a surface from a tiny volume of ``array``'s kind first (its value type; read
    only where ``array``'s contiguous values are, as the kernels then read them in place),
    on a machine of its own on ``backend``: the kernels the extraction runs are compiled
    (or loaded from the cache) here, so that neither its phases' times nor the time a
    command reports include a compile. ``dtype``: the mesh's, as the extraction's.

    >>> import numpy as np
    >>> warm_up_extraction(np.zeros((40, 40, 40), np.int16), "numpy")
    """
    import numpy as np

    import renderer
    from simd import Machine

    tiny = np.zeros((3, 3, 3), dtype=array.dtype)
    tiny[1, 1, 1] = 1  # a small closed surface at 0.5 around the middle point
    if array.flags.c_contiguous and not array.flags.writeable:
        tiny.setflags(write=False)
    renderer.isosurface(tiny, 0.5, machine=Machine(backend=backend), dtype=dtype)


def _check_level(array: Any, value: float) -> None:
    """One line when no surface lies at ``value``: every value below it, or every value
    at or above it (NaN values are the extraction's to refuse)."""
    import numpy as np

    if array.size == 0 or array.ndim != 3 or array.dtype.kind not in "biuf":
        return  # the extraction says what is wrong with it
    with np.errstate(invalid="ignore"):
        low, high = float(np.nanmin(array)), float(np.nanmax(array))
    if not (math.isfinite(low) and math.isfinite(high)):
        return
    if high < value or low >= value:
        raise ValueError(
            f"--level {value:g} has no surface: the volume's values run from {low:g} to "
            f"{high:g} (a surface needs values below the level and values at or above it)"
        )


def phase_table(machine: Any) -> list[str]:
    """The ``--verbose`` table of the extraction's phases on ``machine``: calls, model
    cycles and seconds, wall seconds.

    >>> from simd import Machine
    >>> import numpy as np, renderer
    >>> m = Machine(pes=16, backend="numpy")
    >>> x, y, z = np.mgrid[-1:1:6j, -1:1:6j, -1:1:6j]
    >>> _ = renderer.isosurface(x * x + y * y + z * z, 0.5, machine=m)
    >>> [line.split()[0] for line in phase_table(m)]
    ['isosurface', 'classify', 'scan', 'emit', 'total']
    """
    seconds = machine.cost.seconds
    stats = machine.stats.phases
    lines = [f"{'isosurface':<38} {'calls':>6} {'model cycles':>13} {'model s':>9} {'wall s':>8}"]
    cycles = wall = 0.0
    for name in ISOSURFACE_PHASES:
        phase = stats.get(name)
        if phase is None:
            continue
        cycles, wall = cycles + phase.cycles, wall + phase.wall
        lines.append(
            f"  {name:<36} {sum(phase.calls.values()):>6} {phase.cycles:>13.0f} "
            f"{seconds(phase.cycles):>9.4f} {phase.wall:>8.3f}"
        )
    lines.append(f"{'total':<38} {'':>6} {cycles:>13.0f} {seconds(cycles):>9.4f} {wall:>8.3f}")
    return lines
