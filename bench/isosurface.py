"""Isosurface extraction: ours against scikit-image and VTK, side by side in one run.

Extracts the isosurface at 0.5 of the Marschner-Lobb signal (``renderer.datasets.builtin.
marschner_lobb``) at 128^3, 256^3 and 512^3 samples (``--quick``: 32^3 and 64^3) with

- scikit-image's ``marching_cubes``, ``method="lorensen"`` and ``"lewiner"``;
- VTK's ``vtkMarchingCubes`` and ``vtkFlyingEdges3D`` (normals on, as ours; VTK's SMP
  backend as installed, printed with the results);
- ours, ``renderer.isosurface`` on a machine of ``--backend`` (NumPy by default: the
  fused Numba kernels on the CPU);

each warmed up once, then timed ``--repeat`` times in two ways:

- *in turns*: the methods take turns, so that all see the same machine load, and each
  finds the caches full of the others' data, as in a pipeline where other work comes
  between two extractions;
- *in a row*: each method's runs back to back, its own data in the caches, as when a user
  extracts one level after another from the same volume.

Each method keeps its output until it runs again (as VTK's filters do), so that none finds
the memory another's freed output left to the allocator. The table gives the median wall
time per method and size both ways, the triangles each made (VTK's and ours must agree),
and our time over Flying Edges'; for ours the machine's phases (in turns) say where the
time goes. The goal on the CPU: at least as fast as ``vtkFlyingEdges3D``.

Run ``python -m bench.isosurface [--quick] [--sizes N ...] [--repeat K] [--backend B]
[--out DIR | --save]``: it writes ``isosurface[-quick].json`` and a plot
``isosurface[-quick].png`` to the current folder (or ``--out DIR``; the committed results
are in ``bench/results/isosurface/``, written with ``--out``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench import ROOT
from simd.outputs import (
    StagedOutputs,
    add_output_arguments,
    announce_replace_from_args,
    output_folder_from_args,
    write_text,
)

#: Where ``--save`` writes: the results committed with the source tree.
SAVE_DIR = ROOT / "bench" / "results"

LEVEL = 0.5
METHODS = ("skimage-lorensen", "skimage-lewiner", "vtk-marching-cubes", "vtk-flying-edges", "ours")


def _vtk_image(volume: np.ndarray) -> Any:
    """The volume as ``vtkImageData`` with its axis 0 as VTK's x (a Fortran-order copy)."""
    from vtkmodules.util.numpy_support import numpy_to_vtk
    from vtkmodules.vtkCommonDataModel import vtkImageData

    image = vtkImageData()
    image.SetDimensions(*volume.shape)
    image.GetPointData().SetScalars(numpy_to_vtk(np.ravel(volume, order="F"), deep=True))
    return image


def _vtk_filter(kind: str, image: Any) -> Callable[[], tuple[int, int]]:
    from vtkmodules.vtkFiltersCore import vtkFlyingEdges3D, vtkMarchingCubes

    algorithm = vtkMarchingCubes() if kind == "vtk-marching-cubes" else vtkFlyingEdges3D()
    algorithm.SetInputData(image)
    algorithm.SetValue(0, LEVEL)
    algorithm.ComputeNormalsOn()

    def run() -> tuple[int, int]:
        algorithm.Modified()
        algorithm.Update()
        out = algorithm.GetOutput()
        return out.GetNumberOfCells(), out.GetNumberOfPoints()

    return run


def _methods(volume: np.ndarray, machine: Any) -> dict[str, Callable[[], tuple[int, int]]]:
    """Each method as a call giving (triangles, vertices); those whose package is missing
    are left out. Each keeps its output until its next call, which frees it first: as a
    VTK filter keeps its output and frees it when it runs again, so that every method
    finds the allocator as it left it."""
    import renderer

    last: dict[str, Any] = {}

    def ours() -> tuple[int, int]:
        last.pop("ours", None)
        mesh = last["ours"] = renderer.isosurface(volume, LEVEL, machine=machine)
        return mesh.n_faces, len(mesh.vertices)

    out: dict[str, Callable[[], tuple[int, int]]] = {}
    try:
        from skimage.measure import marching_cubes

        for method in ("lorensen", "lewiner"):

            def run(method: str = method) -> tuple[int, int]:
                last.pop(method, None)
                verts, faces, _, _ = last[method] = marching_cubes(volume, LEVEL, method=method)
                return len(faces), len(verts)

            out[f"skimage-{method}"] = run
    except ImportError:
        print("scikit-image is not installed: left out", file=sys.stderr)
    try:
        image = _vtk_image(volume)
        out["vtk-marching-cubes"] = _vtk_filter("vtk-marching-cubes", image)
        out["vtk-flying-edges"] = _vtk_filter("vtk-flying-edges", image)
    except ImportError:
        print("VTK is not installed: left out", file=sys.stderr)
    out["ours"] = ours
    return out


def _phases(machine: Any) -> dict[str, float]:
    """Our last extraction's wall seconds per machine phase."""
    return {name: entry.wall for name, entry in machine.stats.phases.items()}


def run_size(n: int, repeat: int, machine: Any) -> list[dict[str, Any]]:
    """Time every method on the n^3 volume; one row per method."""
    from renderer.datasets.builtin import marschner_lobb

    volume = marschner_lobb(n)
    methods = _methods(volume, machine)
    counts = {name: fn() for name, fn in methods.items()}  # warm-up (JIT, caches)
    times: dict[str, list[float]] = {name: [] for name in methods}
    phases: list[dict[str, float]] = []
    for _ in range(repeat):
        for name, fn in methods.items():
            machine.reset_stats()
            times[name].append(_timed(fn))
            if name == "ours":
                phases.append(_phases(machine))
    # each method's first run in a row follows the others' runs: an in-turns run, dropped
    in_a_row = {name: [_timed(fn) for _ in range(repeat + 1)][1:] for name, fn in methods.items()}
    rows = []
    for name in methods:
        row = {"n": n, "method": name, "triangles": counts[name][0],
               "vertices": counts[name][1], "seconds": times[name],
               "median_s": statistics.median(times[name]), "min_s": min(times[name]),
               "in_a_row_seconds": in_a_row[name],
               "in_a_row_median_s": statistics.median(in_a_row[name])}  # fmt: skip
        if name == "ours":  # each phase's median over the runs
            row["phases_s"] = {k: statistics.median(p[k] for p in phases) for k in phases[0]}
        rows.append(row)
    return rows


def _timed(fn: Callable[[], Any]) -> float:
    """The wall seconds of one call of ``fn``."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _versions() -> dict[str, str]:
    out = {}
    for name in ("skimage", "vtkmodules", "numba"):
        try:
            module = __import__(name)
            out[name] = getattr(module, "__version__", "?")
        except ImportError:
            out[name] = "not installed"
    try:
        from vtkmodules.vtkCommonCore import vtkSMPTools, vtkVersion

        out["vtk"] = vtkVersion.GetVTKVersion()
        out["vtk_smp_backend"] = vtkSMPTools.GetBackend()
        out["vtk_smp_threads"] = str(vtkSMPTools.GetEstimatedNumberOfThreads())
    except ImportError:
        pass
    return out


def _print_table(rows: list[dict[str, Any]]) -> None:
    print(f"{'':>26} {'in turns (ms)':^23}  {'in a row (ms)':^16}")
    header = (f"{'n':>5} {'method':<20} {'median':>8} {'min':>7} {'/ FE':>6}  "
              f"{'median':>8} {'/ FE':>6} {'triangles':>10}")  # fmt: skip
    print(header)
    print("-" * len(header))
    for n in sorted({r["n"] for r in rows}):
        sel = [r for r in rows if r["n"] == n]
        fe = next((r for r in sel if r["method"] == "vtk-flying-edges"), None)
        for r in sel:
            turns = f"{r['median_s'] / fe['median_s']:6.2f}" if fe else "     -"
            row = f"{r['in_a_row_median_s'] / fe['in_a_row_median_s']:6.2f}" if fe else "     -"
            print(f"{n:>5} {r['method']:<20} {1e3 * r['median_s']:>8.1f} "
                  f"{1e3 * r['min_s']:>7.1f} {turns}  {1e3 * r['in_a_row_median_s']:>8.1f} "
                  f"{row} {r['triangles']:>10}")  # fmt: skip
        ours = next(r for r in sel if r["method"] == "ours")
        where = ", ".join(f"{k} {1e3 * v:.1f}" for k, v in ours["phases_s"].items())
        print(f"{'':>5} ours by phase (medians, ms): {where}")


def _agreement(rows: list[dict[str, Any]]) -> bool:
    """Whether ours made as many triangles as ``vtkMarchingCubes`` at every size."""
    made = {(r["n"], r["method"]): r["triangles"] for r in rows}
    sizes = {n for n, method in made if method == "vtk-marching-cubes"}
    return all(made[(n, "ours")] == made[(n, "vtk-marching-cubes")] for n in sizes)


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Median time against grid size per method, log-log: in turns, and for ours and
    Flying Edges in a row too (dotted)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, ax = plt.subplots(figsize=(7, 5))
    for method in METHODS:
        sel = sorted((r for r in rows if r["method"] == method), key=lambda r: r["n"])
        if sel:
            style = "o-" if method == "ours" else "s--"
            ax.loglog([r["n"] for r in sel], [r["median_s"] for r in sel], style, label=method)
            if method in ("ours", "vtk-flying-edges"):
                ax.loglog([r["n"] for r in sel], [r["in_a_row_median_s"] for r in sel], ":",
                          color=ax.lines[-1].get_color(), label=f"{method}, in a row")  # fmt: skip
    sizes = sorted({r["n"] for r in rows})
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xticks(sizes, [f"{n}^3" for n in sizes])
    ax.set_xlabel("Marschner-Lobb grid")
    ax.set_ylabel("seconds (median; in turns unless marked)")
    ax.set_title(f"isosurface at {LEVEL}: marching cubes implementations")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def measure(args: argparse.Namespace, stage: StagedOutputs, picture: Path) -> dict[str, Any]:
    """Run every size, print the table, stage the plot ``picture``; the record for the
    JSON."""
    from simd import Machine
    from simd.info import environment

    machine = Machine(backend=args.backend)
    print(f"isosurface at {LEVEL} of the Marschner-Lobb signal; ours on {machine.backend}; "
          f"medians of {args.repeat} runs after a warm-up")  # fmt: skip
    rows = []
    for n in args.sizes:
        rows.extend(run_size(n, args.repeat, machine))
    _print_table(rows)
    agree = _agreement(rows)
    print(
        "triangles: ours "
        + ("agree with vtkMarchingCubes'" if agree else "DIFFER from vtkMarchingCubes'")
        + " (Flying Edges and scikit-image keep the triangles that values exactly at the "
        "level make degenerate; vtkMarchingCubes and ours drop them)"
    )
    plot(rows, stage.path(picture))
    fe = {r["n"]: r for r in rows if r["method"] == "vtk-flying-edges"}
    ours = {r["n"]: r for r in rows if r["method"] == "ours"}
    return {
        "benchmark": "isosurface",
        "environment": environment(),
        "versions": _versions(),
        "backend": machine.backend,
        "level": LEVEL,
        "repeat": args.repeat,
        "rows": rows,
        "triangles_agree": agree,
        "goal": "ours at least as fast as vtkFlyingEdges3D on the CPU",
        "goal_met": {
            way: bool(fe) and all(ours[n][key] <= fe[n][key] for n in fe)
            for way, key in (("in_turns", "median_s"), ("in_a_row", "in_a_row_median_s"))
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.isosurface", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--quick", action="store_true", help="32^3 and 64^3, 2 runs each")
    parser.add_argument("--sizes", type=int, nargs="+", default=None,
                        help="grid sizes (default 128 256 512)")  # fmt: skip
    parser.add_argument("--repeat", type=int, default=None, help="timed runs (default 5)")
    parser.add_argument("--backend", default="numpy", help="our machine's backend (numpy)")
    add_output_arguments(parser, save_dir=SAVE_DIR)
    args = parser.parse_args(argv)
    args.sizes = args.sizes or ([32, 64] if args.quick else [128, 256, 512])
    args.repeat = args.repeat or (2 if args.quick else 5)
    if args.repeat < 1 or min(args.sizes) < 4:
        parser.error("--repeat must be at least 1 and every size at least 4")
    folder = output_folder_from_args(parser, args, save_dir=SAVE_DIR)
    stem = "isosurface-quick" if args.quick else "isosurface"
    path, picture = folder / f"{stem}.json", folder / f"{stem}.png"
    announce_replace_from_args(parser, args, [path, picture])
    with StagedOutputs() as stage:
        record = measure(args, stage, picture)
        write_text(stage.path(path), json.dumps(record, indent=1, default=float) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
