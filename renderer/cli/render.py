"""``simd-emu render``: render a volume's isosurface, a mesh file or a built-in data set on
the emulated SIMD machine.

Quiet by default: one line saying what was written and how long the frame took.
``--verbose`` adds, per loop (scan conversion, z-buffer), the iterations, the largest and
average workload, the balancing decisions and the time of each phase on the model clock
and the wall clock (Tables 1 and 4 of Ahrens & Hansen in form). ``--compare`` runs the
three loop forms, prints their times and speedups and checks that the images are
identical. Every output path is checked before any work; a file that exists is replaced
only with ``--force`` (and a line says so). Under ``mpiexec -n N`` (N > 1) the command
runs on N ranks with no extra flag (:mod:`renderer.cli.ranks`).

The arguments are in :mod:`renderer.cli.arguments`; what the one-process command and the
ranks share (checks, tables, outputs, messages) in :mod:`renderer.cli.common`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from renderer.cli.arguments import add_arguments
from renderer.cli.common import (
    check_options,
    check_outputs,
    dataset_size,
    default_output,
    fail,
    loop_table,
    names,
    note_if_empty,
    picture_options,
    view_line,
    warm_up_loops,
    write_outputs,
)
from renderer.pipeline import LOOP_FORMS

__all__ = ["register", "run"]

DESCRIPTION = (
    "Render a volume's isosurface (VOLUME --level L: extracted by marching cubes on the "
    "machine), a mesh file or a built-in data set on the emulated SIMD machine and write "
    "the image. "
    "Under mpiexec -n N it runs on N ranks, sort-last (each rank its share of the "
    "triangles; rank 0 writes). "
    "Prints one line (what was written, the time); --verbose adds the workload and time "
    "of each loop and balancing phase, on the model clock and the wall clock. --compare "
    "renders with the three loop forms, prints their times and speedups and checks that "
    "the images are identical. Output paths are checked before any work; a file that "
    "exists is replaced only with --force."
)

#: Packages the command imports, by the extra that installs them (checked by simd.cli).
REQUIRES = {"data": ("PIL", "tqdm", "imageio", "matplotlib")}


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``render`` subcommand to ``subparsers`` (``simd.cli`` calls this)."""
    p = subparsers.add_parser(
        "render",
        help="render an isosurface (or a mesh file) with load-balanced loops",
        description=DESCRIPTION,
    )
    add_arguments(p)
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Handler of ``simd-emu render``; returns the exit status."""
    from simd import SimdError
    from simd.launch import world

    try:
        check_options(args)
    except ValueError as err:
        from simd.launch import launched_rank

        return fail(err, say=launched_rank() == 0)  # rank 0 says it, once
    try:
        comm = world()  # under mpiexec with several ranks; None otherwise (and for -n 1)
    except RuntimeError as err:
        return fail(err)
    if comm is not None:
        from renderer.cli.ranks import run_ranks

        return run_ranks(args, comm)
    default_output(args)
    try:
        outputs, mesh, machine, t_load = _prepare(args)
    except (ValueError, OSError, SimdError) as err:
        return fail(err)
    if args.table1:
        return _table1(args, mesh, machine)
    if args.verbose:
        _describe(args, mesh, machine, t_load)
    if args.orbit is not None:
        return _orbit(args, mesh, machine)
    return _frames(args, mesh, machine, outputs)


def _prepare(args: argparse.Namespace) -> tuple[list[str], Any, Any, float]:
    """Check what one process alone refuses and the output paths, then load the mesh and
    make the machine: (output paths, mesh, machine, seconds the loading took, compiles left
    out)."""
    from kernels.compiles import Stopwatch
    from simd import Machine

    if args.orbit is not None:
        if args.orbit < 1:
            raise ValueError(f"--orbit needs at least 1 frame, got {args.orbit}")
        if args.compare or args.table1 or args.depth:
            raise ValueError(
                "--orbit renders a turntable; it takes no --compare, --table1 or --depth"
            )
    outputs = check_outputs(args)
    machine = Machine(pes=args.pes, backend=args.backend)
    with Stopwatch() as clock:  # the compiles left out (said while they run)
        mesh = _load(args, machine)
    return outputs, mesh, machine, clock.seconds


def _load(args: argparse.Namespace, machine: Any) -> Any:
    """The volume's isosurface (extracted on ``machine``), the mesh file, or the whole
    built-in data set."""
    from renderer.datasets.builtin import load_dataset
    from renderer.scene.mesh import load_mesh

    if args.volume:
        from renderer.cli.volumes import volume_surface

        return volume_surface(args, machine)
    if args.mesh:
        return load_mesh(args.mesh)
    return load_dataset(args.dataset, dataset_size(args))


def _describe(args: argparse.Namespace, mesh: Any, machine: Any, t_load: float) -> None:
    """The ``--verbose`` lines before the first frame: mesh (and the extraction's phases
    for a volume), machine, view."""
    made = "extracted" if args.volume else "loaded"
    print(
        f"mesh     : {mesh.name}, {mesh.n_faces} triangles, {mesh.n_vertices} vertices "
        f"({made} in {t_load:.2f} s)"
    )
    if args.volume:
        from renderer.cli.volumes import phase_table

        print("\n".join(phase_table(machine)))
    print(f"machine  : {machine}")
    print(view_line(args))


def _frames(args: argparse.Namespace, mesh: Any, machine: Any, outputs: list[str]) -> int:
    """One frame in ``--loop``'s form, or with ``--compare`` one in every form; write the
    outputs of the last and say what was written."""
    from simd import Machine, SimdError

    forms = LOOP_FORMS if args.compare else (args.loop,)
    warm_up_loops(args, forms)
    frames = {}
    for form in forms:
        m = machine if len(forms) == 1 else Machine(pes=args.pes, backend=args.backend)
        try:
            frames[form] = frame = _render(args, mesh, m, form)
        except (ValueError, SimdError) as err:
            return fail(err)
        if args.verbose:
            _report_form(frame, m, form)
        if form == forms[-1]:
            note_if_empty(frame.stats.counts)
    status = _compare(args, frames, machine) if args.compare else 0
    last = frames[forms[-1]]
    try:
        write_outputs(last, args, lambda: _jsonable(frames, mesh, args))
    except (ValueError, OSError) as err:
        return fail(err)
    width, height = args.size
    print(
        f"wrote {names(outputs)}: {mesh.n_faces} triangles at {width}x{height} with the "
        f"{forms[-1]} loops on {machine.backend} in {last.stats.wall:.2f} s "
        f"({machine.cost.seconds(last.stats.cycles):.4f} s on the emulated machine)"
    )
    return status


def _render(args: argparse.Namespace, mesh: Any, machine: Any, form: str) -> Any:
    """One frame of ``mesh`` in loop form ``form`` on ``machine``, as the options say."""
    from renderer.pipeline import render

    width, height = args.size
    return render(
        mesh,
        view=tuple(args.view),
        magnification=args.magnification,
        size=(width, height),
        loop=form,
        machine=machine,
        shading=args.shading,
        clock=args.clock,
        progress=None if args.no_progress else _auto_bar(mesh.n_faces, width * height),
        **picture_options(args, mesh),
    )


def _report_form(frame: Any, machine: Any, form: str) -> None:
    """The ``--verbose`` tables and counts of one loop form's frame."""
    print()
    print(f"loop form: {form}")
    print("\n".join(loop_table(frame, machine)))
    counts = frame.stats.counts
    print(
        f"triangles {counts.triangles}, rejected {counts.rejected}, clipped "
        f"{counts.clipped}, spans {counts.spans}, fragments {counts.fragments}, "
        f"pixels {counts.pixels}"
    )


def _compare(args: argparse.Namespace, frames: dict, machine: Any) -> int:
    """``--compare``: print each form's time and speedup and whether the images agree;
    returns the exit status (1 when they differ)."""
    if args.verbose:
        print()
    print("\n".join(_compare_table(frames, machine.cost.seconds)))
    same = _identical(frames.values())
    print("images identical across loop forms:", "yes" if same else "NO")
    return 0 if same else 1


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


def _orbit(args: argparse.Namespace, mesh: Any, machine: Any) -> int:
    """``--orbit N``: a turntable of N frames written as one animation."""
    import statistics

    from renderer.orbit import orbit
    from simd import SimdError

    try:
        picture = picture_options(args, mesh)
    except ValueError as err:
        return fail(err)
    warm_up_loops(args, (args.loop,))
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
    try:
        images, times, stats, total = _gather_orbit(frames, args)
    except (ValueError, SimdError) as err:  # a frame the GPU cannot hold
        return fail(err)
    try:
        _write_orbit(args, images, {"orbit": args.orbit, "frame_seconds": times, "frames": stats})
    except (ValueError, OSError) as err:
        return fail(err)
    written = [p for p in (args.output, args.json) if p]
    print(
        f"wrote {names(written)}: {len(images)} frames in {total:.2f} s, "
        f"{len(images) / total:.2f} frames/s, median {1e3 * statistics.median(times):.1f} ms "
        f"per frame ({args.loop} loops on {machine.backend})"
    )
    return 0


def _gather_orbit(frames: Any, args: argparse.Namespace) -> tuple[list, list, list, float]:
    """Render the turntable's frames (a progress bar unless ``--no-progress``): their
    images, seconds and statistics, and the total seconds."""
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
    return images, times, stats, time.perf_counter() - t_start


def _write_orbit(args: argparse.Namespace, images: list, record: dict) -> None:
    """Write the animation, and the JSON ``record`` when asked, together."""
    from renderer.orbit import save_animation
    from simd.outputs import StagedOutputs

    with StagedOutputs() as stage:
        save_animation(images, stage.path(args.output), fps=args.fps)
        if args.json:
            with open(stage.path(args.json), "w") as fh:
                json.dump(record, fh)


def _table1(args: argparse.Namespace, mesh: Any, machine: Any) -> int:
    """Table 1 of Ahrens & Hansen: max and average workload per loop, per data set and view."""
    from renderer.datasets.builtin import load_dataset, workload_table

    if args.mesh or args.volume:
        meshes = {mesh.name: mesh}
    else:
        size = dataset_size(args)
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
    """``simd-emu warmup``'s part for rendering: the built-in 250k-triangle data set, a
    small frame of it in every loop form and a small isosurface on ``backend`` (compiling
    what a frame and an extraction run)."""
    from renderer.cli.isosurface import warm_up as warm_up_isosurface
    from renderer.datasets.builtin import load_dataset
    from renderer.pipeline import render
    from simd import Machine

    mesh = load_dataset("balanced", "250k")
    for form in LOOP_FORMS:
        render(mesh, size=64, loop=form, machine=Machine(backend=backend))
    warm_up_isosurface(backend)
    return (
        f"the built-in data set ({mesh.n_faces} triangles), every loop form and the "
        "isosurface kernels"
    )


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
