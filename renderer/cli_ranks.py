"""``mpiexec -n N simd-emu render ...``: the render command on N MPI ranks.

:func:`renderer.cli.run` hands over here when :func:`simd.launch.world` gives a
communicator (more than one rank); ``-n 1`` never gets here. Every rank loads or builds
only its share: for ``--mesh``, its contiguous range of the file's faces
(:func:`~renderer.mesh.mesh_share`, with the whole mesh's normals, so the image is the one
of ``-n 1``); for the built-in data sets, its marching-cubes slab
(:func:`~renderer.datasets.load_dataset_slab`, so ``--dataset-size`` may name grids no one
process could hold). The frame is rendered sort-last (:mod:`renderer.sortlast`). Rank 0
prints and writes the outputs; the other ranks print nothing. A bad input on any rank gives
one line from rank 0, and every rank exits with status 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["run_ranks"]


def run_ranks(args: argparse.Namespace, comm: Any) -> int:
    """Handler of ``simd-emu render`` on the ranks of ``comm``; returns the exit status."""
    from renderer.cli import (
        _check_outputs,
        _loop_table,
        _names,
        _note_if_empty,
        _picture_options,
        _warm_up,
        _write_outputs,
    )
    from renderer.pipeline import render
    from simd import Machine, SimdError
    from simd.outputs import announce_replace
    from simd.ranks import CollectiveError

    root = comm.Get_rank() == 0
    errors = (ValueError, TypeError, OSError, SimdError, CollectiveError)

    def fail(err: Exception) -> int:
        if root:
            print(f"simd-emu render: {err}", file=sys.stderr)
        return 2

    def detail(*text: Any) -> None:
        if args.verbose and root:
            print(*text)

    if args.output is None:
        args.output = "orbit.gif" if args.orbit else "frame.png"
    try:
        machine = Machine(pes=args.pes, backend=args.backend, comm=comm)
    except errors as err:  # the same arguments, so the same error, on every rank
        return fail(err)
    ranks = machine.ranks
    try:
        with ranks.collective_errors():
            for flag, given in (
                ("--orbit", args.orbit is not None),
                ("--compare", args.compare),
                ("--table1", args.table1),
            ):
                if given:
                    raise ValueError(
                        f"{flag} runs on one process; run it without mpiexec (or with -n 1)"
                    )
            if getattr(args, "colormap", None) and args.colour_by == "distance":
                raise ValueError(
                    "--colour-by distance needs the whole mesh's box; not on several MPI "
                    "ranks (--colour-by height is)"
                )
            outputs = _check_outputs(args) if root else []
            share = _load_share(args, ranks.rank, ranks.size)
            picture = _picture_options(args, share)
    except errors as err:
        return fail(err)
    if root:
        announce_replace(outputs)
    width, height = args.size
    detail(f"machine  : {machine} on {ranks.size} MPI ranks")
    detail(
        f"view     : ({args.view[0]:g}, {args.view[1]:g}), magnification "
        f"{args.magnification:g}, {width}x{height}"
    )
    _warm_up(args, (args.loop,))  # each rank alone, on a machine of its own
    try:
        frame = render(
            share,
            view=tuple(args.view),
            magnification=args.magnification,
            size=(width, height),
            loop=args.loop,
            machine=machine,
            shading=args.shading,
            clock=args.clock,
            **picture,
        )
    except errors as err:  # render raises on every rank alike
        return fail(err)
    error = None
    if root:
        counts = frame.stats.counts
        detail()
        detail(f"loop form: {args.loop}")
        detail("\n".join(_loop_table(frame, machine)))
        detail("\n".join(_rank_table(frame.stats.ranks)))
        _note_if_empty(counts)
        try:
            _write_outputs(frame, args, lambda: _jsonable(frame, args, ranks.size))
        except (ValueError, OSError) as err:
            error = err
    try:
        ranks.agree(error)
    except errors as err:
        return fail(err)
    if root:
        stats = frame.stats
        print(
            f"wrote {_names(outputs)}: {stats.counts.triangles} triangles at {width}x{height} "
            f"with the {args.loop} loops on {machine.backend} and {ranks.size} MPI ranks in "
            f"{stats.wall:.2f} s ({machine.cost.seconds(stats.cycles):.4f} s on the emulated "
            "machine of rank 0)"
        )
    return 0


def _load_share(args: argparse.Namespace, rank: int, nranks: int) -> Any:
    """This rank's share: its faces of the mesh file, or its slab of the data set."""
    from renderer.cli import _dataset_size
    from renderer.datasets import load_dataset_slab
    from renderer.mesh import load_mesh, mesh_share

    if args.mesh:
        return mesh_share(load_mesh(args.mesh), rank, nranks)
    return load_dataset_slab(args.dataset, _dataset_size(args), rank, nranks)


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
