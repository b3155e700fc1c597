"""``simd-emu diffuse`` on the dense path, on one process or across MPI ranks.

Under ``mpiexec -n N`` rank 0 reads the input and scatters its rows, every rank diffuses
its block (:mod:`diffusion.blocks`), and rank 0 gathers the result, prints and writes the
outputs; the other ranks print nothing. A bad input is reported once, by rank 0, and every
rank exits with status 2 (the error is shared before anyone waits on a collective).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from diffusion.cli_shared import (
    barely_changed,
    fail,
    pm_arguments,
    read_input,
    share_thresholds,
)

__all__ = ["run_dense"]


def run_dense(args: argparse.Namespace, comm: Any) -> int:
    """The dense run of ``simd-emu diffuse`` on the ranks of ``comm`` (None: one process);
    returns the exit status (2 on bad input, on every rank)."""
    from diffusion.dense import anisotropic_diffusion
    from simd import Machine
    from simd.errors import SimdError

    errors: tuple[type[BaseException], ...] = (OSError, ValueError, SimdError)
    root = comm is None or comm.Get_rank() == 0
    source = None
    try:  # the input and the outputs checked before the machine is made (no work before)
        if comm is None:
            source = read_input(args, mesh=False)
        else:
            from simd.ranks import CollectiveError, Ranks

            errors += (CollectiveError,)
            with Ranks(comm).collective_errors():
                if root:
                    source = read_input(args, mesh=False)
        machine = Machine(backend=args.backend, comm=comm)
    except errors as exc:
        return fail(exc, quiet=not root)
    share_thresholds(args, comm)  # the thresholds come from the image, which rank 0 read
    block = machine.scatter(source.data if root else None)
    start = time.perf_counter()
    try:
        out, info = anisotropic_diffusion(
            block, niter=args.niter, return_info=True, machine=machine, **pm_arguments(args)
        )
    except errors as exc:
        return fail(exc, quiet=not root)
    wall = time.perf_counter() - start
    image = machine.gather(out)
    if root:
        _write(source, image, info, wall, machine, args)
    return 0


def _write(
    source: Any, image: np.ndarray, info: Any, wall: float, m: Any, args: argparse.Namespace
) -> None:
    """Write the result (as the mesh path does) and print the one line of result."""
    from diffusion.images import save_image
    from simd.outputs import StagedOutputs

    where = f"{m.nranks} MPI ranks" if m.nranks > 1 else "one process"
    if args.verbose:
        name = args.image or f"built-in {args.builtin}"
        print(f"image   : {name}, {image.shape[0]} x {image.shape[1]}")
        print(f"machine : dense path on {where}, backend {m.backend}")
        print(f"iterations: {info.iterations} (converged: {info.converged})")
        if args.epsilon > 0 and info.active_fraction:
            frac = info.active_fraction
            print(
                f"active fraction: first {frac[0]:.3f}, last {frac[-1]:.3f}, "
                f"mean {sum(frac) / len(frac):.3f}"
            )
    dtype = np.float32 if args.float else source.dtype
    with StagedOutputs() as stage:  # written whole or not at all (simd.outputs)
        notes = save_image(stage.path(args.output), image, dtype=dtype, dicom=source.dicom)
    for note in notes:
        print(f"{args.output}: {note}")
    h, w = image.shape
    done = " (converged)" if info.converged else ""
    print(
        f"wrote {Path(args.output)}: {h} x {w}, {info.iterations} iterations{done}, "
        f"dense path on {where}; wall {wall:.2f} s"
    )
    note = barely_changed(source, image, args)
    if note:
        print(f"simd-emu diffuse: note: {note}", file=sys.stderr)
