"""Tables 1 to 4 of Ahrens & Hansen in form: the renderer's balanced loops.

Renders the built-in balanced and unbalanced isosurfaces (``renderer.datasets.builtin``) in the four
views of Table 1 on emulated CM-5s of 32 to 512 nodes and compares the three forms of the
balanced loops (``simd.balance.run_loop``): the original loop of Figure 1 (OR), the
cost-effective loop of Figure 2 (LB) and the flattened ``expand`` form (EX).

1. Table 1: maximum and average workload of the scan conversion loop (scan lines per
   polygon) and the z-buffer loop (pixels per span), per data set and view.
2. Calibration (section 2.1 / 4.1): the cost-effective renderer is run on the unbalanced
   data set in every view with balancing forced (overestimate 0); for each loop the
   largest (max information gathering + max redistribution) / min solution time, plus 2
   iterations, is the overestimate used by every later run on that machine size.
3. Tables 2 and 3: render time in emulated seconds of the model clock (the whole frame,
   and the two loops alone) for the unbalanced and the balanced data set, OR vs LB vs EX,
   with the speedup of LB over OR; plus the emulator's wall time on this host at 512 nodes.
4. Table 4: per-execution time of the information gathering, redistribution and solution
   phases of both loops on 512 nodes over the unbalanced runs (min, max, average).
5. The balanced loops alone on synthetic workloads with the statistics of the paper's own
   Table 1 (ours at 250,000 polygons; its scan-line maxima in the (0,0) views exceed ours),
   with solution phases that cost what the renderer's do, overestimates from
   ``simd.balance.calibrate``.
6. The paper's Tables 2 to 4 cell by cell beside ours (ratio per cell), the overestimates
   beside its 20 and 32 iterations, the speedups and the balanced-set losses, on the
   synthetic frames of ``bench/cm5/paper.py`` (paper-like workloads, nested z-buffer loop).

Every part runs under each model-clock preset asked for (``--preset``; both by default):
``cm5``, the idealised CM-5 of ``simd.cost``, and ``cm5_calibrated``, the CM-5 fitted to
the paper's own timings (``bench/cm5/fit.py``); the record holds one entry per preset and
the plot (``.png`` beside the JSON) ours against the paper per cell, one panel per preset.

Run ``python -m bench.render [--quick] [--out DIR | --save]``; the results go to
``render.json`` (``render-quick.json`` with ``--quick``) in the current folder, in ``--out
DIR``, or with ``--save`` in this source tree's ``bench/results``. It is one script for the
five parts of one paper's evaluation, which share the data sets, machines and calibrations,
hence its length (the paper's reproduction lives in ``bench/cm5/paper.py``).
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from bench import ROOT
from bench.cm5.paper import print_reproduction, reproduce
from bench.cm5.workload import PAPER_TABLE1, SyntheticBody, paper_like_workload, task_costs
from simd import CostModel, Machine
from simd.balance.cost_effective import (
    PHASE_INFORMATION,
    PHASE_REDISTRIBUTION,
    PHASE_SOLUTION,
    CostOverestimateWarning,
)
from simd.info import environment
from simd.outputs import (
    add_output_arguments,
    announce_replace_from_args,
    output_folder_from_args,
    write_text,
)

LOOPS = ("scan-conversion", "z-buffer")
FORMS = {"OR": "original", "LB": "cost-effective", "EX": "expand"}
NODES = (32, 64, 128, 256, 512)
MARGIN = 2.0

# The paper's numbers (seconds on a CM-5) to print beside ours.
PAPER_SPEEDUP = "paper: LB 8x to 33x faster than OR on unbalanced data, at most 27% slower on "
PAPER_SPEEDUP += "balanced data (Tables 2 and 3)"


#: The model-clock presets this benchmark can run under: the idealised CM-5 and
#: the one fitted to the paper's own timings (``bench/cm5/fit.py``). Every table printed
#: and every record written names its preset.
PRESETS = {"cm5": CostModel.cm5, "cm5_calibrated": CostModel.cm5_calibrated}
_PRESET = ["cm5"]


def machine(nodes: int, backend: str) -> Machine:
    """A CM-5 of ``nodes`` nodes under the preset being run."""
    return Machine(pes=nodes, backend=backend, cost=PRESETS[_PRESET[0]](nodes))


def plot_comparison(per_preset: dict[str, list[dict]], path: Path) -> Path | None:
    """Ours against the paper per cell, log-log, one colour per table, one panel per preset."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - matplotlib is a bench extra
        print("matplotlib missing: no plot")
        return None
    fig, axes = plt.subplots(1, len(per_preset), figsize=(6 * len(per_preset), 5.5), squeeze=False)
    for ax, (preset, cells) in zip(axes[0], per_preset.items(), strict=True):
        for table, colour in (("2", "C0"), ("3", "C1"), ("4", "C2")):
            xs = [c["paper"] for c in cells if c["table"] == table and c["ours"] > 0]
            ys = [c["ours"] for c in cells if c["table"] == table and c["ours"] > 0]
            ax.scatter(xs, ys, s=14, color=colour, label=f"Table {table}")
        lo, hi = 1e-5, 200.0
        ax.plot([lo, hi], [lo, hi], "k-", lw=0.8, label="ours = paper")
        ax.fill_between([lo, hi], [lo * 0.7, hi * 0.7], [lo * 1.3, hi * 1.3], color="0.85")
        ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi))
        ax.set(xlabel="paper (s, CM-5)", ylabel="ours (emulated s, model clock)", title=preset)
        ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")
    return path


def render(
    mesh: Any, view: tuple, mag: float, form: str, m: Machine, image: int, **kwargs: Any
) -> tuple[Any, int]:
    """One frame; returns it and the number of CostOverestimateWarnings raised."""
    import renderer

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CostOverestimateWarning)
        frame = renderer.render(
            mesh, view=view, magnification=mag, size=(image, image), loop=form, machine=m, **kwargs
        )
    n_warn = sum(issubclass(w.category, CostOverestimateWarning) for w in caught)
    return frame, n_warn


def loop_result(frame: Any, name: str) -> Any:
    return frame.stats.loops[name]


def model_seconds(m: Machine, cycles: float) -> float:
    return m.cost.seconds(cycles)


def table1(meshes: dict, views: dict, image: int, backend: str) -> list[dict]:
    rows = []
    for kind, mesh in meshes.items():
        for vname, (view, mag) in views.items():
            frame, _ = render(mesh, view, mag, "expand", machine(512, backend), image)
            row = {"dataset": kind, "view": vname}
            for loop, key in zip(LOOPS, ("scan", "zbuf"), strict=True):
                res = loop_result(frame, loop)
                row[f"{key}_max"] = int(res.max_workload)
                row[f"{key}_avg"] = float(res.mean_workload)
                row[f"{key}_tasks"] = int(res.total_tasks)
                row[f"{key}_data"] = (
                    int(round(res.total_tasks / res.mean_workload)) if (res.mean_workload) else 0
                )
            rows.append(row)
    return rows


def calibrate_overestimates(
    mesh: Any, views: dict, nodes: tuple, image: int, backend: str
) -> dict[int, dict[str, Any]]:
    """Section 2.1 on the unbalanced data set, per machine size."""
    out: dict[int, dict[str, Any]] = {}
    for p in nodes:
        costs: dict[str, list[float]] = {loop: [] for loop in LOOPS}
        vp_ratios: dict[str, list[int]] = {loop: [] for loop in LOOPS}
        for view, mag in views.values():
            m = machine(p, backend)
            frame, _ = render(mesh, view, mag, "cost-effective", m, image, overestimate=0.0)
            for loop in LOOPS:
                res = loop_result(frame, loop)
                c = res.cost_in_iterations("model")
                if c is not None:
                    costs[loop].append(float(c))
                    vp_ratios[loop].append(m.cost.vp_ratio(res.vps))
        entry: dict[str, Any] = {}
        for loop in LOOPS:
            measured = costs[loop]
            entry[loop] = {
                "max_cost": max(measured) if measured else None,
                "costs": measured,
                # No redistribution ever happened: keep balancing off for this loop.
                "overestimate": (max(measured) + MARGIN) if measured else 1e9,
                "min_vp_ratio": min(vp_ratios[loop]) if measured else None,
            }
        out[p] = entry
    return out


def store_calibration(over: dict[int, dict[str, Any]], where: str, backend: str) -> None:
    from simd.balance.cost_effective.store import PACKAGE_STORE, store_overestimate

    path = {"user": None, "package": PACKAGE_STORE}.get(where, where)
    written = None
    for p, entry in over.items():
        for loop in LOOPS:
            e = entry[loop]
            if e["max_cost"] is None:
                continue
            written = store_overestimate(
                machine(p, backend),
                e["overestimate"],
                name=loop,
                clock="model",
                min_vp_ratio=e["min_vp_ratio"],
                path=path,
                extra={
                    "max_cost": e["max_cost"],
                    "margin": MARGIN,
                    "source": "bench/render.py, unbalanced data set, all views",
                },
            )
    if written is None:
        print("no loop redistributed during calibration: nothing stored")
    else:
        print(f"stored the overestimates in {written}")


def run_tables(
    meshes: dict,
    views: dict,
    nodes: tuple,
    image: int,
    backend: str,
    over: dict[int, dict[str, Any]],
) -> list[dict]:
    rows = []
    for kind, mesh in meshes.items():
        for vname, (view, mag) in views.items():
            for p in nodes:
                pair = tuple(over[p][loop]["overestimate"] for loop in LOOPS)
                row: dict[str, Any] = {"dataset": kind, "view": vname, "nodes": p}
                for label, form in FORMS.items():
                    m = machine(p, backend)
                    kwargs = {"overestimate": pair} if form == "cost-effective" else {}
                    t0 = time.perf_counter()
                    frame, n_warn = render(mesh, view, mag, form, m, image, **kwargs)
                    wall = time.perf_counter() - t0
                    loops = frame.stats.loops
                    loops_cycles = sum(loops[lp].cycles for lp in LOOPS)
                    row[label] = {
                        "model_s": model_seconds(m, frame.stats.cycles),
                        "loops_model_s": model_seconds(m, loops_cycles),
                        "wall_s": wall,
                        "loops_wall_s": sum(loops[lp].wall for lp in LOOPS),
                        "iterations": {lp: loops[lp].iterations for lp in LOOPS},
                        "decisions": {lp: loops[lp].decisions for lp in LOOPS},
                        "warnings": n_warn,
                    }
                    if form == "cost-effective" and p == max(nodes):
                        row["phases"] = {
                            lp: {
                                ph: loop_result(frame, lp).stats[ph].cycle_samples
                                for ph in (PHASE_INFORMATION, PHASE_REDISTRIBUTION, PHASE_SOLUTION)
                                if ph in loop_result(frame, lp).stats
                            }
                            for lp in LOOPS
                        }
                row["speedup_model"] = row["OR"]["model_s"] / row["LB"]["model_s"]
                row["speedup_loops"] = row["OR"]["loops_model_s"] / row["LB"]["loops_model_s"]
                row["speedup_expand"] = row["OR"]["model_s"] / row["EX"]["model_s"]
                rows.append(row)
                print(
                    f"  {kind:10s} {vname:9s} P={p:3d}  OR {row['OR']['model_s']:.4f}s  "
                    f"LB {row['LB']['model_s']:.4f}s  EX {row['EX']['model_s']:.4f}s  "
                    f"speedup OR to LB {row['speedup_model']:.2f}",
                    flush=True,
                )
    return rows


def wall_clock_decisions(meshes: dict, views: dict, image: int, backend: str) -> list[dict]:
    """The cost-effective loop deciding with the wall clock (online overestimate)."""
    rows = []
    for kind, mesh in meshes.items():
        for vname, (view, mag) in views.items():
            m = machine(512, backend)
            t0 = time.perf_counter()
            frame, n_warn = render(mesh, view, mag, "cost-effective", m, image, clock="wall")
            rows.append(
                {
                    "dataset": kind,
                    "view": vname,
                    "wall_s": time.perf_counter() - t0,
                    "decisions": {lp: frame.stats.loops[lp].decisions for lp in LOOPS},
                    "warnings": n_warn,
                }
            )
    return rows


def table4(rows: list[dict], nodes: int, clock_hz: float) -> dict[str, dict[str, dict]]:
    out: dict[str, dict[str, dict]] = {}
    for lp in LOOPS:
        out[lp] = {}
        for ph in (PHASE_INFORMATION, PHASE_REDISTRIBUTION, PHASE_SOLUTION):
            samples = [
                c / clock_hz
                for r in rows
                if r["dataset"] == "unbalanced" and r["nodes"] == nodes and "phases" in r
                for c in r["phases"][lp].get(ph, [])
            ]
            out[lp][ph] = (
                {
                    "min": min(samples),
                    "max": max(samples),
                    "avg": sum(samples) / len(samples),
                    "n": len(samples),
                }
                if samples
                else {"min": math.nan, "max": math.nan, "avg": math.nan, "n": 0}
            )
    return out


def print_tables(t1, over, rows, t4, wall_rows, nodes) -> None:
    print("\nTable 1: maximum and average workloads")
    print(
        f"{'dataset':10s} {'view':9s} {'scan max':>8s} {'scan avg':>8s} {'z max':>6s} "
        f"{'z avg':>6s} {'polygons':>9s} {'spans':>8s}"
    )
    for r in t1:
        print(
            f"{r['dataset']:10s} {r['view']:9s} {r['scan_max']:8d} {r['scan_avg']:8.2f} "
            f"{r['zbuf_max']:6d} {r['zbuf_avg']:6.2f} {r['scan_data']:9d} {r['zbuf_data']:8d}"
        )
    print("\nCost overestimates (iterations, section 2.1: max measured cost + 2)")
    for p, e in over.items():
        print(
            f"  {machine(p, 'numpy').cost.name}: "
            + ", ".join(
                f"{lp} {e[lp]['overestimate']:.1f} (measured {e[lp]['max_cost'] or 0:.2f})"
                for lp in LOOPS
            )
        )
    for kind, title in (("unbalanced", "Table 2"), ("balanced", "Table 3")):
        print(f"\n{title}: rendering of {kind} data sets, emulated seconds (model clock)")
        header = f"{'view':9s}" + "".join(f"{'P=' + str(p):>24s}" for p in nodes)
        print(header)
        print(f"{'':9s}" + "".join(f"{'OR':>8s}{'LB':>8s}{'EX':>8s}" for _ in nodes))
        for vname in dict.fromkeys(r["view"] for r in rows):
            line = f"{vname:9s}"
            for p in nodes:
                r = next(
                    x
                    for x in rows
                    if x["dataset"] == kind and x["view"] == vname and x["nodes"] == p
                )
                line += "".join(f"{r[k]['model_s']:8.4f}" for k in ("OR", "LB", "EX"))
            print(line)
        sp = [r["speedup_model"] for r in rows if r["dataset"] == kind]
        spl = [r["speedup_loops"] for r in rows if r["dataset"] == kind]
        spx = [r["speedup_expand"] for r in rows if r["dataset"] == kind]
        print(
            f"  speedup OR to LB, whole frame: {min(sp):.2f}x .. {max(sp):.2f}x; loops only: "
            f"{min(spl):.2f}x .. {max(spl):.2f}x; OR to EX, whole frame {min(spx):.2f}x .. "
            f"{max(spx):.2f}x"
        )
    print(f"  ({PAPER_SPEEDUP})")
    warn = sum(r["LB"]["warnings"] for r in rows)
    print(f"  cost overestimate warnings in LB runs: {warn}")
    print(
        f"\nTable 4: phases of the balanced loops on {max(nodes)} nodes, unbalanced data, "
        "emulated seconds"
    )
    print(
        f"{'':8s}"
        + "".join(
            f"{lp[:4] + ' ' + ph[:5]:>14s}"
            for lp in LOOPS
            for ph in (PHASE_INFORMATION, PHASE_REDISTRIBUTION, PHASE_SOLUTION)
        )
    )
    for stat in ("min", "max", "avg"):
        print(
            f"{stat:8s}"
            + "".join(
                f"{t4[lp][ph][stat]:14.6f}"
                for lp in LOOPS
                for ph in (PHASE_INFORMATION, PHASE_REDISTRIBUTION, PHASE_SOLUTION)
            )
        )
    big = max(nodes)
    print(f"\nWall clock of the emulator on this host ({big} nodes), seconds per frame")
    print(f"{'dataset':10s} {'view':9s} {'OR':>8s} {'LB':>8s} {'EX':>8s} {'LB(wall)':>9s}")
    for r in rows:
        if r["nodes"] != big:
            continue
        w = next(x for x in wall_rows if x["dataset"] == r["dataset"] and x["view"] == r["view"])
        print(
            f"{r['dataset']:10s} {r['view']:9s} {r['OR']['wall_s']:8.3f} "
            f"{r['LB']['wall_s']:8.3f} {r['EX']['wall_s']:8.3f} {w['wall_s']:9.3f}"
        )


# ------------------------------------------------------------------ paper-like workloads


def paper_workload_tables(
    n_polygons: int, nodes: tuple, backend: str, seed: int = 0
) -> dict[str, Any]:
    """The three loop forms on workloads with the statistics of the paper's Table 1.

    The scan conversion loop has one datum per polygon; the z-buffer loop one per span
    (as many as the scan conversion loop's tasks). The overestimates are calibrated with
    :func:`simd.balance.calibrate` on the unbalanced workloads, per machine size.
    """
    from simd.balance import calibrate, run_loop

    rng = np.random.default_rng(seed)
    costs = task_costs()
    loads: dict[tuple[str, str, str], np.ndarray] = {}
    for kind, views in PAPER_TABLE1.items():
        for view, (smax, savg, zmax, zavg) in views.items():
            scan = paper_like_workload(n_polygons, smax, savg, rng)
            loads[(kind, view, "scan-conversion")] = scan
            loads[(kind, view, "z-buffer")] = paper_like_workload(int(scan.sum()), zmax, zavg, rng)
    over: dict[int, dict[str, float]] = {}
    rows = []
    for p in nodes:
        over[p] = {}
        for loop in LOOPS:
            m = machine(p, backend)
            cal_loads = [w for (k, _, lp), w in loads.items() if k == "unbalanced" and lp == loop]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CostOverestimateWarning)
                cal = calibrate(
                    cal_loads,
                    SyntheticBody(m, loop, 1 << 18),
                    machine=m,
                    task_cost=costs[loop],
                    name=loop,
                    margin=MARGIN,
                    store=False,
                )
            over[p][loop] = cal.overestimate
        for (kind, view, loop), w in loads.items():
            row: dict[str, Any] = {
                "dataset": kind,
                "view": view,
                "loop": loop,
                "nodes": p,
                "max": int(w.max()),
                "avg": float(w.mean()),
                "n": int(w.size),
            }
            for label, form in FORMS.items():
                m = machine(p, backend)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", CostOverestimateWarning)
                    res = run_loop(
                        w,
                        SyntheticBody(m, loop, 1 << 18),
                        machine=m,
                        form=form,
                        name=loop,
                        task_cost=costs[loop],
                        overestimate=over[p][loop] if form == "cost-effective" else None,
                    )
                row[label] = {
                    "model_s": m.cost.seconds(res.cycles),
                    "wall_s": res.wall,
                    "iterations": res.iterations,
                    "decisions": res.decisions,
                    "warnings": len(caught),
                }
            row["speedup"] = row["OR"]["model_s"] / row["LB"]["model_s"]
            row["speedup_expand"] = row["OR"]["model_s"] / row["EX"]["model_s"]
            rows.append(row)
        print(f"  paper-like workloads, P={p}: done", flush=True)
    # Both loops of a frame together, as the paper's rendering times.
    frames = []
    for kind, views in PAPER_TABLE1.items():
        for view in views:
            for p in nodes:
                parts = [
                    r
                    for r in rows
                    if r["dataset"] == kind and r["view"] == view and r["nodes"] == p
                ]
                t = {label: sum(r[label]["model_s"] for r in parts) for label in FORMS}
                frames.append(
                    {
                        "dataset": kind,
                        "view": view,
                        "nodes": p,
                        **t,
                        "speedup": t["OR"] / t["LB"],
                        "speedup_expand": t["OR"] / t["EX"],
                    }
                )
    return {
        "n_polygons": n_polygons,
        "overestimates": {str(p): v for p, v in over.items()},
        "loops": rows,
        "frames": frames,
    }


def print_paper_workloads(res: dict[str, Any], nodes: tuple) -> None:
    print(
        f"\nThe balanced loops alone on workloads with the statistics of the paper's Table 1 "
        f"({res['n_polygons']} polygons; both loops, emulated seconds)"
    )
    for p, o in res["overestimates"].items():
        print(
            f"  {_PRESET[0]} P={p}: overestimates "
            + ", ".join(f"{k} {v:.1f}" for k, v in o.items())
        )
    for kind in PAPER_TABLE1:
        print(f"  {kind}:")
        print(f"  {'view':9s}" + "".join(f"{'P=' + str(p):>24s}" for p in nodes))
        print(f"  {'':9s}" + "".join(f"{'OR':>8s}{'LB':>8s}{'EX':>8s}" for _ in nodes))
        for view in PAPER_TABLE1[kind]:
            line = f"  {view:9s}"
            for p in nodes:
                f = next(
                    x
                    for x in res["frames"]
                    if x["dataset"] == kind and x["view"] == view and x["nodes"] == p
                )
                line += f"{f['OR']:8.3f}{f['LB']:8.3f}{f['EX']:8.3f}"
            print(line)
        sp = [f["speedup"] for f in res["frames"] if f["dataset"] == kind]
        spx = [f["speedup_expand"] for f in res["frames"] if f["dataset"] == kind]
        print(
            f"  speedup OR to LB {min(sp):.2f}x .. {max(sp):.2f}x; "
            f"OR to EX {min(spx):.2f}x .. {max(spx):.2f}x"
        )
    warn = sum(r["LB"]["warnings"] for r in res["loops"])
    print(f"  cost overestimate warnings in LB runs: {warn}")


#: Where ``--save`` writes: the results committed with the source tree.
SAVE_DIR = ROOT / "bench" / "results"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.render", description=__doc__.splitlines()[0].replace("``", "")
    )
    ap.add_argument(
        "--quick", action="store_true", help="small data sets, two machine sizes, two views"
    )
    ap.add_argument(
        "--size", default=None, help="data set size: 250k (default), 1m, ... or a grid resolution"
    )
    ap.add_argument("--image", type=int, default=512, help="image size (default 512)")
    ap.add_argument("--backend", default="auto", help="numpy, cupy or auto (default)")
    add_output_arguments(ap, save_dir=SAVE_DIR)
    ap.add_argument(
        "--store",
        default=None,
        metavar="PATH|user|package",
        help="also store the calibrated overestimates (model clock) for "
        "run_loop(overestimate=None): in the user file, in the package's "
        "simd/balance/overestimates.json, or in PATH",
    )
    ap.add_argument(
        "--no-paper-workloads",
        action="store_true",
        help="skip the loops on workloads with the paper's Table 1 statistics",
    )
    ap.add_argument(
        "--preset",
        choices=(*PRESETS, "both"),
        default="both",
        help="model-clock preset: the idealised CM-5, the one calibrated on the paper "
        "(bench/cm5/fit.py) or both (default)",
    )
    args = ap.parse_args(argv)
    out = output_folder_from_args(ap, args, save_dir=SAVE_DIR) / (
        "render-quick.json" if args.quick else "render.json"
    )
    announce_replace_from_args(ap, args, out)
    record = measure(args)
    write_text(out, json.dumps(record, indent=1, default=float))
    cells = {
        p: r["paper_reproduction"]["cells"]
        for p, r in record.get("presets", {}).items()
        if r.get("paper_reproduction")
    }
    if cells:
        plot_comparison(cells, out.with_suffix(".png"))
    print(f"\nwrote {out} ({record['seconds']:.0f} s)")
    return 0


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Every part under each preset asked for (``--preset``); returns the record."""
    presets = tuple(PRESETS) if args.preset == "both" else (args.preset,)
    t_start = time.perf_counter()
    results: dict[str, Any] = {}
    for preset in presets:
        _PRESET[0] = preset
        print(f"\n=== preset {preset} ===", flush=True)
        results[preset] = measure_preset(args)
    return {
        "benchmark": "render",
        "paper": "Ahrens & Hansen (1995), Cost-Effective Data-Parallel Load Balancing",
        "environment": environment(),
        "presets": results,
        "seconds": time.perf_counter() - t_start,
    }


def measure_preset(args: argparse.Namespace) -> dict[str, Any]:
    """Run every part with the parsed options under the current preset, print the tables;
    returns the preset's record."""
    from renderer.datasets.builtin import VIEWS, load_dataset

    size = args.size or (48 if args.quick else "250k")
    if isinstance(size, str) and size.isdigit():
        size = int(size)
    nodes = (32, 512) if args.quick else NODES
    views = dict(list(VIEWS.items())[:2]) if args.quick else dict(VIEWS)
    backend = machine(32, args.backend).backend

    t_start = time.perf_counter()
    meshes = {kind: load_dataset(kind, size) for kind in ("unbalanced", "balanced")}
    print(
        "data sets: "
        + ", ".join(f"{k} {len(v.faces)} triangles" for k, v in meshes.items())
        + f"; backend {backend}",
        flush=True,
    )
    t1 = table1(meshes, views, args.image, backend)
    print("calibrating the cost overestimates on the unbalanced data set ...", flush=True)
    over = calibrate_overestimates(meshes["unbalanced"], views, nodes, args.image, backend)
    print("rendering ...", flush=True)
    if args.store:
        store_calibration(over, args.store, backend)
    rows = run_tables(meshes, views, nodes, args.image, backend, over)
    wall_rows = wall_clock_decisions(meshes, views, args.image, backend)
    t4 = table4(rows, max(nodes), machine(max(nodes), backend).cost.clock_hz)
    print_tables(t1, over, rows, t4, wall_rows, nodes)
    # The paper's Tables 2 to 4 on workloads with its Table 1 statistics (our data sets'
    # workloads differ from the paper's): bench/cm5/paper.py, the calibration's basis.
    reproduction = reproduce(PRESETS[_PRESET[0]])
    print_reproduction(_PRESET[0], reproduction)
    paper = None
    if not args.no_paper_workloads:
        print("\nbalanced loops on workloads with the paper's Table 1 statistics ...", flush=True)
        paper = paper_workload_tables(25_000 if args.quick else 250_000, nodes, backend)
        print_paper_workloads(paper, nodes)
    return {
        "preset": _PRESET[0],
        "machine": machine(max(nodes), backend).cost.name,
        "backend": backend,
        "quick": args.quick,
        "size": size,
        "image": args.image,
        "nodes": list(nodes),
        "triangles": {k: int(len(v.faces)) for k, v in meshes.items()},
        "table1": t1,
        "overestimates": {str(p): e for p, e in over.items()},
        "runs": rows,
        "table4": t4,
        "wall_clock_decisions": wall_rows,
        "paper_workloads": paper,
        "paper_reproduction": reproduction,
        "seconds": time.perf_counter() - t_start,
    }


if __name__ == "__main__":
    raise SystemExit(main())
