"""``mpiexec -n N simd-emu render ...``: the render command on N MPI ranks.

:func:`renderer.cli.render.run` hands over here when :func:`simd.launch.world` gives a
communicator (more than one rank); ``-n 1`` never gets here. Every rank loads or builds
only its share: for a VOLUME, its slab's isosurface, extracted by the ranks together
(:func:`renderer.isosurface` on the machine across the ranks; a ``.npy`` file is mapped,
so each rank reads only its slab); for ``--mesh``, its contiguous range of the file's faces
(:func:`~renderer.scene.mesh.mesh_share`, with the whole mesh's normals, so the image is the one
of ``-n 1``); for the built-in data sets, its marching-cubes slab
(:func:`~renderer.datasets.builtin.load_dataset_slab`, so ``--dataset-size`` may name grids no one
process could hold). The frame is rendered sort-last (:mod:`renderer.ranks.sortlast`). Rank 0
prints and writes the outputs; the other ranks print nothing. A bad input on any rank gives
one line from rank 0, and every rank exits with status 2.
"""

from __future__ import annotations

import argparse
from typing import Any

from renderer.cli.common import (
    check_outputs,
    dataset_size,
    default_output,
    fail,
    loop_table,
    names,
    note_if_empty,
    picture_options,
    rank_errors,
    view_line,
    warm_up_loops,
    write_outputs,
)

__all__ = ["run_ranks"]


def run_ranks(args: argparse.Namespace, comm: Any) -> int:
    """Handler of ``simd-emu render`` on the ranks of ``comm``; returns the exit status."""
    from simd import Machine

    root = comm.Get_rank() == 0
    errors = rank_errors()
    default_output(args)
    try:
        machine = Machine(pes=args.pes, backend=args.backend, comm=comm)
    except errors as err:  # the same arguments, so the same error, on every rank
        return fail(err, say=root)
    ranks = machine.ranks
    try:
        with ranks.collective_errors():
            outputs, share, picture = _prepare(args, ranks, root)
        if args.volume:  # the volume read; its surface extracted by the ranks together
            from renderer.cli.volumes import warm_up_extraction

            warm_up_extraction(share.array, args.backend)  # each rank alone: compiles first
            share = share.isosurface(args.level, machine=machine)
            with ranks.collective_errors():
                picture = picture_options(args, share)
    except errors as err:
        return fail(err, say=root)
    if root:
        if args.verbose:
            if args.volume:
                from renderer.cli.volumes import phase_table

                print("\n".join(phase_table(machine)))
            print(f"machine  : {machine} on {ranks.size} MPI ranks")
            print(view_line(args))
    warm_up_loops(args, (args.loop,))  # each rank alone, on a machine of its own
    try:
        frame = _render(args, share, machine, picture)
    except errors as err:  # render raises on every rank alike
        return fail(err, say=root)
    error = _report(args, frame, machine) if root else None
    try:
        ranks.agree(error)
    except errors as err:
        return fail(err, say=root)
    if root:
        stats, (width, height) = frame.stats, args.size
        print(
            f"wrote {names(outputs)}: {stats.counts.triangles} triangles at {width}x{height} "
            f"with the {args.loop} loops on {machine.backend} and {ranks.size} MPI ranks in "
            f"{stats.wall:.2f} s ({machine.cost.seconds(stats.cycles):.4f} s on the emulated "
            "machine of rank 0)"
        )
    return 0


def _prepare(args: argparse.Namespace, ranks: Any, root: bool) -> tuple[list[str], Any, dict]:
    """Refuse what does not run on ranks, check the outputs (rank 0), load this rank's
    share and its ``picture`` options: (output paths, share, picture options)."""
    for flag, given in (
        ("--orbit", args.orbit is not None),
        ("--compare", args.compare),
        ("--table1", args.table1),
        ("--fit", getattr(args, "fit", False)),
    ):
        if given:
            raise ValueError(f"{flag} runs on one process; run it without mpiexec (or with -n 1)")
    if getattr(args, "colormap", None) and args.colour_by == "distance":
        raise ValueError(
            "--colour-by distance needs the whole mesh's box; not on several MPI "
            "ranks (--colour-by height is)"
        )
    outputs = check_outputs(args) if root else []
    share = _load_share(args, ranks.rank, ranks.size)
    return outputs, share, None if args.volume else picture_options(args, share)


def _load_share(args: argparse.Namespace, rank: int, nranks: int) -> Any:
    """This rank's share: its faces of the mesh file, or its slab of the data set; for a
    volume, the volume (a ``.npy`` file mapped, so that each rank reads only its slab)."""
    from renderer.datasets.builtin import load_dataset_slab
    from renderer.scene.mesh import load_mesh, mesh_share

    if args.volume:
        from renderer.contour.volumes import read_volume

        return read_volume(args.volume, mmap=True)
    if args.mesh:
        return mesh_share(load_mesh(args.mesh), rank, nranks)
    return load_dataset_slab(args.dataset, dataset_size(args), rank, nranks)


def _render(args: argparse.Namespace, share: Any, machine: Any, picture: dict) -> Any:
    """This rank's share of the frame, composited sort-last across the ranks."""
    from renderer.pipeline import render

    return render(
        share,
        view=tuple(args.view),
        magnification=args.magnification,
        size=tuple(args.size),
        loop=args.loop,
        machine=machine,
        shading=args.shading,
        clock=args.clock,
        **picture,
    )


def _report(args: argparse.Namespace, frame: Any, machine: Any) -> Exception | None:
    """Rank 0: the ``--verbose`` tables, the note on an empty frame, and the outputs
    written; returns the error of a failed write (for every rank to agree on), or None."""
    if args.verbose:
        print()
        print(f"loop form: {args.loop}")
        print("\n".join(loop_table(frame, machine)))
        print("\n".join(_rank_table(frame.stats.ranks)))
    note_if_empty(frame.stats.counts)
    nranks = machine.ranks.size
    try:
        write_outputs(frame, args, lambda: _jsonable(frame, args, nranks))
    except (ValueError, OSError) as err:
        return err
    return None


def _rank_table(ranks: dict) -> list[str]:
    """Per rank: faces of its share, clipped triangles, estimated work before and after
    the balancing across ranks."""
    moved = f"moved {ranks['moved']} triangles" if ranks["balanced"] else "nothing moved"
    lines = [
        f"balancing across ranks: {moved}",
        f"{'rank':>4} {'faces':>9} {'triangles':>9} {'work before':>12} {'work after':>11}",
    ]
    columns = (ranks["faces"], ranks["triangles"], ranks["work_before"], ranks["work_after"])
    for r, row in enumerate(zip(*columns, strict=True)):
        lines.append(f"{r:>4} {row[0]:>9} {row[1]:>9} {row[2]:>12} {row[3]:>11}")
    return lines


def _jsonable(frame: Any, args: argparse.Namespace, nranks: int) -> dict:
    """The frame's statistics with the machine, versions and ranks, for JSON."""
    from simd.info import environment

    return {
        "triangles": frame.stats.counts.triangles,
        "view": list(args.view),
        "magnification": args.magnification,
        "size": list(args.size),
        "ranks": nranks,
        "environment": environment(),
        "forms": {args.loop: frame.stats.to_dict()},
    }
