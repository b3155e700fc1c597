"""``simd-emu isosurface``: extract a volume's isosurface on the emulated machine and write
it as a mesh file.

``simd-emu isosurface VOLUME --level L -o mesh.ply`` reads the volume
(:func:`renderer.read_volume`: ``.npy``, TIFF, NIfTI, NRRD, ``.vti`` or a folder of DICOM
slices), extracts the surface by data-parallel marching cubes (:func:`renderer.isosurface`,
in the file's space) and writes it with trimesh: PLY (binary, with the vertex normals),
OBJ (with the normals) or STL (triangles only), by the output's suffix. It prints one
line: the file, the triangles and vertices, the time; ``--verbose`` adds the table of the
extraction's phases. The output is checked before the volume is read (its folder, its
suffix, that it is not the input, and that it does not exist unless ``--force`` is given),
and the file is written whole or not at all. Under ``mpiexec -n N`` each rank reads its slab of the
volume (a ``.npy`` file memory-mapped, so only that slab) and extracts its share; rank 0
gathers the one-rank mesh, bit for bit, and writes it.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["MESH_SUFFIXES", "register", "run", "write_mesh"]

PROGRAM = "simd-emu isosurface"

#: The mesh formats written, by suffix: trimesh's file type and its options for normals.
MESH_SUFFIXES = {
    ".ply": ("ply", {"vertex_normal": True}),
    ".obj": ("obj", {"include_normals": True}),
    ".stl": ("stl", {}),
}

#: Packages the command imports, by the extra that installs them (checked by simd.cli).
REQUIRES = {"data": ("trimesh",)}

DESCRIPTION = (
    "Extract the isosurface of a volume (a .npy, TIFF, NIfTI, NRRD or .vti file, or a "
    "folder of DICOM slices) at --level by data-parallel marching cubes on the emulated "
    "SIMD machine, and write it as a mesh file: PLY or OBJ (with vertex normals) or STL, "
    "by the suffix of -o. Prints the triangles, the vertices and the time; --verbose adds "
    "the extraction's phases on the model clock and the wall clock. The output is checked "
    "before any work; a file that exists is replaced only with --force."
)


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``isosurface`` subcommand to ``subparsers`` (``simd.cli`` calls this)."""
    from renderer.cli.arguments import add_backend_arguments, add_volume_arguments
    from simd.outputs import add_force_argument

    p = subparsers.add_parser(
        "isosurface",
        help="extract a volume's isosurface on the machine and write it as a mesh file",
        description=DESCRIPTION,
    )
    add_volume_arguments(p, required=True)
    p.add_argument(
        "--output",
        "-o",
        metavar="FILE",
        default="isosurface.ply",
        help="mesh file: .ply, .obj or .stl (default: isosurface.ply)",
    )
    add_force_argument(p)
    add_backend_arguments(p)
    p.add_argument(
        "--float64",
        action="store_true",
        help="keep the vertices and normals in float64 (default: rounded to float32, as VTK "
        "stores them)",
    )
    p.add_argument("--verbose", "-v", action="store_true", help="print the extraction's phases")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Handler of ``simd-emu isosurface``; returns the exit status."""
    from kernels.compiles import Stopwatch
    from renderer.cli.volumes import check_volume_options, volume_surface
    from simd import Machine, SimdError
    from simd.launch import launched_rank, world

    try:
        comm = world()
        check_volume_options(args)
        if comm is None:
            _check_output(args)
        machine = Machine(pes=args.pes, backend=args.backend, comm=comm)
    except (ValueError, OSError, RuntimeError, SimdError) as err:
        return _fail(err, say=launched_rank() == 0)
    if machine.ranks is not None:
        return _run_ranks(args, machine)
    try:
        with Stopwatch() as clock:  # the compiles left out (said while they run)
            mesh = volume_surface(args, machine)
        write_mesh(mesh, args.output)
    except (ValueError, OSError, SimdError) as err:
        return _fail(err)
    _report(args, machine, mesh, clock.seconds)
    return 0


def _run_ranks(args: argparse.Namespace, machine: Any) -> int:
    """On MPI ranks: each rank reads its slab of the volume (a ``.npy`` file mapped) and
    extracts its share; rank 0 gathers the whole surface, the one-rank mesh bit for bit,
    and writes it."""
    from kernels.compiles import Stopwatch
    from renderer.cli.common import rank_errors
    from renderer.cli.volumes import volume_surface
    from renderer.contour.marching_cubes import gather_isosurface

    errors = rank_errors()
    ranks, root = machine.ranks, machine.ranks.rank == 0
    try:
        with ranks.collective_errors():  # the output checked on rank 0, which writes it
            if root:
                _check_output(args)
    except errors as err:
        return _fail(err, say=root)
    try:
        with Stopwatch() as clock:  # the compiles left out (said while they run)
            mesh = gather_isosurface(volume_surface(args, machine), machine)
        seconds = clock.seconds
        error = None
        if root:
            try:
                write_mesh(mesh, args.output)
            except errors as err:
                error = err
        ranks.agree(error)
    except errors as err:
        return _fail(err, say=root)
    if root:
        _report(args, machine, mesh, seconds, f" and {ranks.size} MPI ranks")
    return 0


def _report(args: argparse.Namespace, machine: Any, mesh: Any, seconds: float,
            where: str = "") -> None:  # fmt: skip
    """The phase table (``--verbose``) and the line saying what was written."""
    from renderer.cli.volumes import ISOSURFACE_PHASES, phase_table

    if args.verbose:
        print("\n".join(phase_table(machine)))
    cycles = sum(machine.stats.phases[name].cycles for name in ISOSURFACE_PHASES)
    print(
        f"wrote {args.output}: {mesh.n_faces} triangles, {len(mesh.vertices)} vertices at "
        f"level {args.level:g} on {machine.backend}{where} in {seconds:.2f} s "
        f"({machine.cost.seconds(cycles):.4f} s on the emulated machine)"
    )


def _fail(err: Exception, *, say: bool = True) -> int:
    """Print ``simd-emu isosurface: <err>`` on stderr (when ``say``); the status 2."""
    if say:
        print(f"{PROGRAM}: {err}", file=sys.stderr)
    return 2


def _check_output(args: argparse.Namespace) -> None:
    """The output file, before any work: a mesh suffix, a folder that takes it, not the
    input, not a file that exists unless ``--force`` is given."""
    from simd.outputs import announce_replace, check_not_inputs, check_output_file

    check_output_file(args.output, MESH_SUFFIXES, example="-o mesh.ply")
    check_not_inputs([args.output], [args.volume])
    announce_replace(args.output, force=args.force)


def write_mesh(mesh: Any, path: str) -> None:
    """Write ``mesh`` to ``path`` with trimesh, the format by the suffix
    (:data:`MESH_SUFFIXES`; the vertex normals where it holds them), whole or not at all.

    >>> import os, tempfile
    >>> import numpy as np
    >>> from renderer import Mesh
    >>> tri = Mesh(np.eye(3), np.array([[0, 1, 2]]), np.ones((3, 3)) / 3**0.5)
    >>> path = os.path.join(tempfile.mkdtemp(), "tri.ply")
    >>> write_mesh(tri, path)
    >>> import trimesh; trimesh.load(path).faces.tolist()
    [[0, 1, 2]]
    """
    from pathlib import Path

    from simd.errors import require
    from simd.outputs import StagedOutputs

    trimesh = require("trimesh", "data", "writing a mesh file")
    file_type, options = MESH_SUFFIXES[Path(path).suffix.lower()]
    surface = trimesh.Trimesh(mesh.vertices, mesh.faces, vertex_normals=mesh.normals,
                              process=False)  # fmt: skip
    with StagedOutputs() as stage:
        surface.export(stage.path(path), file_type=file_type, **options)


def warm_up(backend: str) -> str:
    """``simd-emu warmup``'s part for isosurfaces: a small extraction on ``backend``,
    compiling the marching-cubes kernels."""
    import numpy as np

    import renderer
    from simd import Machine

    x, y, z = np.mgrid[-1:1:12j, -1:1:12j, -1:1:12j]
    for dtype in (np.float32, np.float64):
        ball = (x * x + y * y + z * z).astype(dtype)
        renderer.isosurface(ball, 0.5, machine=Machine(backend=backend))
    return "the isosurface kernels (float32 and float64 volumes)"
