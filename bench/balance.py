"""Scan-heavy balancing on the built-in workload families, and the hardware what-if.

1. Every built-in family (:mod:`simd.balance.workloads`: uniform, zipf, pareto, bimodal,
   linear-2, linear-4, step, hotspot; 16 tasks per entry on average) at 512 and 4,096
   processors:
   * as tasks per processor, through the loops of Ahrens & Hansen (1995) (none,
     cost-effective, balance-always, expand) on the idealised and calibrated CM-5 and the
     MasPar MP-1, beside the MIMD policies on a cluster after Barker & Chrisochoides' (10 ms tasks);
   * as a grid of 4 x 4 points per PE of the mesh (16 x 32 and 64 x 64), each point active
     for its count of iterations, without balancing and with Biagioni & Prins' (1991)
     scan-directed balancing every 1, 2, 5, 10 and 20 iterations, on the MP-1 and the
     idealised CM-5.
2. The what-if, per family: the costs of scans, shifts, the router, and scans and shifts
   together, from 1/16 to 16 times the preset's; the loops at 512 processors on the
   calibrated CM-5, the mesh at 64 x 64 on the MP-1.

Run ``python -m bench.balance [--quick] [--out DIR | --save]``. It prints the tables and
writes ``balance.json`` (``balance-quick.json``: 512 processors, four families, no MIMD
baselines) with the machine and versions, ``balance.txt`` (the tables), the speed-ups of
every family (``speedups-<P>.png``), every family's runs at the largest size
(``runs-<family>.png``) and its what-if (``whatif-<family>.png``), to the current folder,
``--out DIR``, or with ``--save`` this source tree's ``bench/results/balance``.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
from typing import Any

import numpy as np

from bench import ROOT
from mimd.balance_baselines import baselines
from mimd.balance_plots import MACHINE_NAMES, plot_runs, plot_sweep
from simd.balance.comparison import compare, mesh_shape
from simd.balance.whatif import sweep
from simd.balance.workloads import FAMILIES, generate
from simd.info import environment
from simd.outputs import (
    StagedOutputs,
    add_output_arguments,
    announce_replace_from_args,
    output_folder_from_args,
)

#: Where ``--save`` writes: the results committed with the source tree.
SAVE_DIR = ROOT / "bench" / "results" / "balance"

SIZES = (512, 4096)
LOOP_MACHINES = ("cm5", "cm5_calibrated", "mp1")
MESH_MACHINES = ("mp1", "cm5")
KINDS = ("scan", "shift", "router", "scan+shift")
GRID_SIDE = 4
MEAN = 16.0
#: The pictures' resolution (they are committed: small files).
DPI = 72


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.balance", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="512 processors, four families")
    parser.add_argument("--backend", default="numpy", choices=("numpy", "cupy", "auto"))
    add_output_arguments(parser, save_dir=SAVE_DIR)
    args = parser.parse_args(argv)
    out = output_folder_from_args(parser, args, save_dir=SAVE_DIR)
    families = ("uniform", "zipf", "linear-4", "hotspot") if args.quick else tuple(FAMILIES)
    sizes = SIZES[:1] if args.quick else SIZES
    tag = "-quick" if args.quick else ""
    files = {
        "json": out / f"balance{tag}.json",
        "text": out / f"balance{tag}.txt",
        **{f"speedups-{p}": out / f"speedups{tag}-{p}.png" for p in sizes},
        **{f"runs-{f}": out / f"runs{tag}-{f}.png" for f in families},
        **{f"whatif-{f}": out / f"whatif{tag}-{f}.png" for f in families},
    }
    announce_replace_from_args(parser, args, files.values())
    with StagedOutputs() as stage:
        record = measure(args, stage, files, families, sizes)
        record["environment"] = environment()  # the machine and the versions
        stage.path(files["json"]).write_text(json.dumps(_plain(record), indent=1), encoding="utf-8")
    print(f"wrote {files['json']} and the tables and pictures beside it")
    return 0


def measure(
    args: argparse.Namespace,
    stage: StagedOutputs,
    files: dict[str, Any],
    families: tuple[str, ...],
    sizes: tuple[int, ...],
) -> dict[str, Any]:
    """Every comparison and what-if, their tables and pictures (staged); the record."""
    log = io.StringIO()
    t0 = time.perf_counter()
    results = run(families, sizes, args.quick, args.backend, log)
    stage.path(files["text"]).write_text(log.getvalue(), encoding="utf-8")
    for p in sizes:
        plot_speedups(results, p, stage.path(files[f"speedups-{p}"]))
    for f in families:
        top = results["loops"][(f, sizes[-1])]
        title = f"Balancing {f} on {sizes[-1]} processors (tasks per processor)"
        runs_png, whatif_png = stage.path(files[f"runs-{f}"]), stage.path(files[f"whatif-{f}"])
        plot_runs(top, runs_png, title, dpi=DPI)
        plot_sweep(
            results["sweeps"][f],
            whatif_png,
            f"Where balancing pays on {f}: the loops (top), the mesh (bottom)",
            dpi=DPI,
        )
        small_png(runs_png)
        small_png(whatif_png)
    return results["data"] | {"wall_seconds": time.perf_counter() - t0}


def run(families, sizes, quick: bool, backend: str, log: io.StringIO) -> dict[str, Any]:
    """Every comparison and what-if; the tables are printed and kept in ``log``."""
    loops, meshes, sweeps = {}, {}, {}

    def say(text: str) -> None:
        print(text, flush=True)
        log.write(text + "\n")

    for p in sizes:
        for f in families:
            counts = generate(f, p, mean=MEAN)
            mimd = baselines() if not quick else []
            loops[(f, p)] = compare(counts, name=f, machines=LOOP_MACHINES, baselines=mimd,
                                    backend=backend)  # fmt: skip
            say(_header(f, counts, f"{p} processors") + loops[(f, p)].table() + "\n")
            rows, cols = mesh_shape(p)
            grid = generate(f, (rows * GRID_SIDE, cols * GRID_SIDE), mean=MEAN)
            meshes[(f, p)] = compare(grid, name=f, processors=(rows, cols),
                                     machines=MESH_MACHINES, backend=backend)  # fmt: skip
            say(_header(f, grid, f"a {rows}x{cols} mesh") + meshes[(f, p)].table() + "\n")
    for f in families:
        loop = sweep(generate(f, sizes[0], mean=MEAN), name=f, machine="cm5_calibrated",
                     kinds=KINDS, backend=backend)  # fmt: skip
        rows, cols = mesh_shape(sizes[-1])
        grid = generate(f, (rows * GRID_SIDE, cols * GRID_SIDE), mean=MEAN)
        mesh = sweep(grid, name=f, processors=(rows, cols), machine="mp1", kinds=KINDS,
                     backend=backend)  # fmt: skip
        sweeps[f] = [loop, mesh]
        say(loop.table() + "\n\n" + mesh.table() + "\n")
    data = {
        "benchmark": "balance",
        "families": list(families),
        "sizes": list(sizes),
        "mean_tasks": MEAN,
        "grid_side": GRID_SIDE,
        "loops": [_workload(c, f, p) for (f, p), c in loops.items()],
        "meshes": [_workload(c, f, p) for (f, p), c in meshes.items()],
        "whatif": [s.to_dict() for pair in sweeps.values() for s in pair],
    }
    return {"loops": loops, "meshes": meshes, "sweeps": sweeps, "data": data}


def _header(name: str, counts: np.ndarray, where: str) -> str:
    return (
        f"{name} on {where}: {int(counts.sum()):,} tasks, max {int(counts.max()):,}, "
        f"mean {counts.mean():.3g}\n"
    )


def _workload(c: Any, family: str, processors: int) -> dict[str, Any]:
    """Per balancer its iterations, model seconds and speed-up; the runs without their
    per-iteration series (the pictures show them)."""
    runs = []
    for r in c:
        d = r.to_dict()
        d.pop("active")
        d.pop("cumulative")
        runs.append(d)
    return {"family": family, "processors": processors, "runs": runs}


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "item"):
        return value.item()
    return value


def plot_speedups(results: dict[str, Any], processors: int, path: Any) -> None:
    """Two heat maps (loops, mesh): a row per family, a column per machine and balancer,
    the speed-up over no balancing in every cell."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    fig, axes = plt.subplots(1, 2, figsize=(18, 5.5), layout="constrained",
                             gridspec_kw={"width_ratios": [3, 2]})  # fmt: skip
    norm = LogNorm(vmin=1 / 8, vmax=8)
    for ax, key, label in (
        (axes[0], "loops", "tasks per processor"),
        (axes[1], "meshes", "a grid on the mesh"),
    ):  # noqa: E501
        comps = {f: c for (f, p), c in results[key].items() if p == processors}
        families = list(comps)
        columns = [
            (r.machine, r.balancer) for r in next(iter(comps.values())) if r.balancer != "none"
        ]
        grid = np.array([[comps[f].find(b, m).speedup for m, b in columns] for f in families])
        im = ax.imshow(grid, cmap="RdYlGn", norm=norm, aspect="auto")
        for (i, j), v in np.ndenumerate(grid):
            ax.text(j, i, f"{v:.2g}", ha="center", va="center", fontsize=7)
        ax.set_yticks(range(len(families)), families)
        names = [f"{b}\n{MACHINE_NAMES.get(m, m)}" for m, b in columns]
        ax.set_xticks(range(len(columns)), names, rotation=90, fontsize=6)
        shape = "x".join(map(str, mesh_shape(processors))) if key == "meshes" else processors
        ax.set_title(f"Speed-up over no balancing, {label}, {shape} processors")
    ticks = [1 / 8, 1 / 4, 1 / 2, 1, 2, 4, 8]
    bar = fig.colorbar(im, ax=axes, label="speed-up (green: balancing pays)", ticks=ticks)
    bar.ax.set_yticklabels([f"{t:g}x" for t in ticks])
    bar.ax.minorticks_off()
    fig.savefig(path, dpi=DPI + 18)
    plt.close(fig)
    small_png(path)


def small_png(path: Any) -> None:
    """Re-encode a picture with a palette of 128 colours: a third of the bytes, for the
    files committed with the source tree."""
    from PIL import Image

    with Image.open(path) as im:
        picture = im.convert("RGB").quantize(colors=128, method=Image.Quantize.MEDIANCUT)
    picture.save(path, optimize=True)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
