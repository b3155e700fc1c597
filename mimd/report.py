"""The MIMD benchmark: Muniz & Zaluska's Table 1, Barker & Chrisochoides Figures 1-3,
and MIMD against SIMD balancing.

Run by ``simd-emu bench mimd [--quick]`` and ``python -m bench.mimd [--quick]``. Parts:

``table1``
    The runs of Muniz & Zaluska's Table 1: the height-field ray tracer (150x150 pixels,
    64 sub-surfaces, each sub-surface's cost measured by tracing, scaled to the paper's
    328 s control run) on a 4x4 transputer torus under the farmer (original and + VCR),
    the Gradient Model, the Extended Gradient and the single-processor farmer control
    run: time, processor-seconds and utilisation ``100 * T_control / (P * T)`` as the
    paper defines it; each run with links shared and without contention.
``farmer``
    The farmer's scaling on 4x4 to 32x32 transputer tori with fine (3 ms) and coarse (1 s)
    tasks, with and without link contention: hand-outs a second against the hand-computed
    bounds of the farmer's CPU and of its four links, and the busiest link's occupancy.
``gradient``
    Sensitivity of GM and EG to the status interval (Muniz & Zaluska do not give it).
``figure1``
    The runs of Barker & Chrisochoides' Figure 1: Diffusion on linear-2, linear-4 and step, 32 and
    64 processors, 2 to 16 tasks per processor; simulated time against the model's lower,
    upper and average predictions, with the error of the average.
``figure2`` / ``figure3``
    Barker & Chrisochoides' Figures 2 and 3 (model predictions, simulated points
    beside them): over-decomposition, polling quantum and neighbourhood size, bi-modal imbalance
    (heavy tasks 50 %, variance 0.5 / 1 / 3) and linear imbalance (mild 1.2x, moderate 2x,
    severe 4x, four application messages per task).
``compare``
    One table with the MIMD policies and the cost-effective SIMD balancer (Ahrens & Hansen (1995),
    :func:`simd.balance.run_loop`) on the same task sets (Barker & Chrisochoides's synthetic sets,
    the ray tracer, and the renderer's real per-polygon scan-line workload): utilisation and
    speed-up over no balancing on each machine.
``scale``
    4096 processors x 100,000 tasks: the simulation's events, and events a second, on this
    host.
``simgrid`` (only with ``--only``)
    The engine beside SimGrid on fine-grained task sets (:mod:`mimd.engine_check`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from kernels.compiles import Stopwatch
from simd.outputs import write_text

from .experiments import (
    compare,
    farmer_scaling,
    figure1,
    gradient_sensitivity,
    parametric,
    scale,
    table1,
)
from .policies import POLICIES, NoBalancing

__all__ = ["ALL_PARTS", "PARTS", "run", "format_table", "output_folder"]

PARTS = ("table1", "farmer", "gradient", "figure1", "figure2", "figure3", "compare", "scale")
#: The parts run only when asked for (``--only``): SimGrid must be installed.
ALL_PARTS = (*PARTS, "simgrid")


def format_table(rows: list[dict], cols: list[tuple[str, str, str]]) -> str:
    """Plain-text table: ``cols`` are (key, header, format)."""
    head = [h for _, h, _ in cols]
    body = []
    for r in rows:
        line = []
        for k, _, f in cols:
            v = r.get(k)
            if v is None or (isinstance(v, float) and math.isnan(v)):
                line.append("-")
            else:
                line.append(format(v, f) if f else str(v))
        body.append(line)
    w = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    out = ["  ".join(h.rjust(w[i]) for i, h in enumerate(head))]
    out.append("  ".join("-" * x for x in w))
    out += ["  ".join(b[i].rjust(w[i]) for i in range(len(w))) for b in body]
    return "\n".join(out)


def output_folder(out: str | Path | None = None) -> Path:
    """The folder the results go to, made if missing and checked writable.

    ``out`` defaults to the current folder (never the repository's ``bench/results``
    unless asked for). Called before any work, so that a bad folder fails at once.

    Raises
    ------
    OSError
        The folder cannot be made or written in; the message names it and says why.
    """
    from simd.outputs import check_output_folder

    return check_output_folder(out)


def _environment() -> dict:
    try:
        from simd.info import environment

        return environment()
    except Exception as exc:  # pragma: no cover - report anyway
        import platform

        return {"platform": platform.platform(), "numpy": np.__version__, "error": str(exc)}


def run(
    *,
    quick: bool = False,
    parts: tuple[str, ...] | None = None,
    out: str | Path | None = None,
    plots: bool = True,
    echo=print,
    backend: str = "numpy",
) -> dict:
    """Run the benchmark parts, print tables, write JSON (and PNG plots) under ``out``.

    Parameters
    ----------
    quick : bool
        Smaller sweeps (seconds).
    parts : str or tuple of str, optional
        One or several of :data:`PARTS` (default all).
    out : path, optional
        Output folder, made if missing (default the current folder).
    plots : bool
        Also write the PNG plots of Figures 1-3.
    echo : callable
        Where the tables and progress lines go (default ``print``).
    backend : {"numpy", "cupy", "auto"}
        Backend of the SIMD machine that runs the balanced loops of the ``compare`` part.
    """
    if isinstance(parts, str):
        parts = (parts,)
    parts = PARTS if parts is None else tuple(parts)
    bad = [p for p in parts if p not in ALL_PARTS]
    if bad:
        raise ValueError(f"unknown benchmark part(s) {bad}; expected some of {ALL_PARTS}")
    out = output_folder(out)
    tag = "-quick" if quick else ""
    res: dict[str, Any] = {
        "benchmark": "mimd",
        "quick": quick,
        "backend": backend,
        "environment": _environment(),
    }
    walls = {}
    for part in parts:
        echo(f"\n[{part}] running ...")
        with Stopwatch() as clock:  # the compiles left out (said while they run)
            r = _PARTS[part](part, quick=quick, backend=backend, echo=echo)
        walls[part] = clock.seconds
        res[part] = r
    res["wall_per_part"] = walls
    if plots:
        from .plots import plots as draw_plots

        res["plots"] = draw_plots(res, out, tag)
    path = out / f"mimd{tag}.json"
    write_text(path, json.dumps(res, indent=1, default=_json_default))
    echo(f"\nwrote {path}" + (f" and {len(res.get('plots', []))} plots" if plots else ""))
    return res


def _table1(part: str, *, quick: bool, backend: str, echo) -> dict:
    r = table1(quick=quick)
    echo("\nThe ray tracer of Muniz & Zaluska's Table 1: 150x150, 64 sub-surfaces, 4x4 torus")
    echo(
        f"(task costs measured by tracing, {r['min_task']:.2f}..{r['max_task']:.2f} s;"
        " utilisation = 100 x control time / processor-seconds)"
    )
    echo(
        format_table(
            r["rows"],
            [
                ("run", "run", ""),
                ("time", "time s", ".2f"),
                ("processor_seconds", "proc-s", ".1f"),
                ("utilisation", "util %", ".1f"),
                ("time_free", "no-links s", ".2f"),
                ("utilisation_free", "no-links %", ".1f"),
                ("link_busy_max_pct", "top link %", ".1f"),
                ("migrations", "moves", "d"),
                ("all_once", "each once", ""),
                ("paper", "paper (s/proc-s/%)", ""),
            ],
        )
    )
    echo(
        "note: task messages take milliseconds against 5 s tasks, so the farmer with "
        "user-level routing (wire time x4) and the farmer + VCR nearly coincide, and "
        "links change little; no-links = contention=False"
    )
    return r


def _farmer(part: str, *, quick: bool, backend: str, echo) -> dict:
    r = farmer_scaling(quick=quick)
    echo("\nFarmer scaling on transputer tori (4 tasks per processor; links on/off)")
    echo(
        format_table(
            r["rows"],
            [
                ("shape", "torus", ""),
                ("grain", "tasks", ""),
                ("contention", "links", ""),
                ("time", "time s", ".3f"),
                ("utilisation", "util", ".3f"),
                ("handouts_per_s", "hand-outs/s", ".0f"),
                ("link_busy_max_pct", "top link %", ".1f"),
                ("optimism_pct", "no-links optimism %", ".1f"),
                ("wall", "wall s", ".1f"),
            ],
        )
    )
    row = r["rows"][0]
    echo(
        f"by hand: farmer CPU at most {row['cpu_bound_per_s']:.0f} hand-outs/s "
        f"(serve + start-up), its four links at most {row['link_bound_per_s']:.0f}/s "
        "(4 / store-and-forward hold); optimism = (time - no-links time) / time"
    )
    return r


def _gradient(part: str, *, quick: bool, backend: str, echo) -> dict:
    r = gradient_sensitivity(quick=quick)
    echo("\nGM and EG vs status interval (ray tracer, 16 processors; window = 2 x interval)")
    echo(
        format_table(
            r["rows"],
            [
                ("interval", "interval s", ".2f"),
                ("farmer", "farmer s", ".2f"),
                ("eg", "EG s", ".2f"),
                ("gm", "GM s", ".2f"),
                ("eg_over_farmer", "EG/farmer", ".2f"),
                ("gm_over_farmer", "GM/farmer", ".2f"),
            ],
        )
    )
    return r


def _figure1(part: str, *, quick: bool, backend: str, echo) -> dict:
    r = figure1(quick=quick)
    echo(
        "\nDiffusion against Barker & Chrisochoides' model, the runs of their Figure 1 "
        "(quantum 10 ms, "
        "4 neighbours), "
        "10 s of work per processor"
    )
    echo(
        format_table(
            r["rows"],
            [
                ("workload", "workload", ""),
                ("processors", "P", "d"),
                ("tasks_per_proc", "tasks/P", "d"),
                ("no_balancing", "static s", ".2f"),
                ("simulated", "sim s", ".3f"),
                ("lower", "lower", ".3f"),
                ("upper", "upper", ".3f"),
                ("average", "average", ".3f"),
                ("error_pct", "error %", "+.1f"),
                ("average_paper", "paper avg", ".3f"),
                ("error_paper_pct", "paper err %", "+.1f"),
                ("gamma", "Gamma", "d"),
            ],
        )
    )
    s = r["summary"]
    for key, label in (
        ("", "refined model"),
        ("paper_", "paper's model"),
        ("free_", "refined vs no-links sim"),
    ):
        echo(
            f"{label}: mean |error| {s[key + 'mean_abs_error_pct']:.1f} % (linear-2 "
            f"{s[key + 'mean_abs_error_pct_linear-2']:.1f}, linear-4 "
            f"{s[key + 'mean_abs_error_pct_linear-4']:.1f}, step "
            f"{s[key + 'mean_abs_error_pct_step']:.1f}); max "
            f"{s[key + 'max_abs_error_pct']:.1f} %"
        )
    return r


def _parametric(part: str, *, quick: bool, backend: str, echo) -> dict:
    r = parametric("bimodal" if part == "figure2" else "linear", quick=quick)
    e = r.get("model_vs_sim_mean_abs_error_pct")
    npts = sum(len(s["points"]) for s in r["series"])
    echo(
        f"\nBarker & Chrisochoides' {part} ({r['kind']} imbalance): "
        f"{npts} model points"
        + (
            f"; mean |model - sim| {e:.1f} % over the simulated ones"
            if e is not None
            else "; no simulated points in this mode"
        )
    )
    return r


def _compare(part: str, *, quick: bool, backend: str, echo) -> dict:
    r = compare(quick=quick, backend=backend)
    echo(
        "\nMIMD policies vs SIMD balanced loops on the same task sets "
        "(utilisation; speed-up over no balancing in brackets)"
    )
    cols = [("task_set", "task set", ""), ("processors", "P", "d")]
    names = [name for name in POLICIES if name != NoBalancing.name]
    names += ["simd-original", "simd-cost-effective", "simd-expand"]
    for row in r["rows"]:
        for nm in names:
            row[nm] = f"{row[nm + ':util']:.2f} ({row[nm + ':speedup']:.2f}x)"
        row["simd-cost-effective"] += f" {row['simd-cost-effective:decisions']}d"
    cols += [("tasks", "tasks", "d")]
    cols += [(nm, nm, "") for nm in names] + [("best", "best", "")]
    echo(format_table(r["rows"], cols))
    echo(
        f"SIMD: one datum per task, workload = cost in units of max/{r['units']} "
        "(render: the polygon's scan lines), "
        f"{r['task_cost']:g} model cycles per unit; Nd = redistributions taken"
    )
    echo(
        "render: the renderer's scan-conversion workload, one task per polygon "
        "(unbalanced isosurface, view M(45,45), 256x256)"
    )
    return r


def _scale(part: str, *, quick: bool, backend: str, echo) -> dict:
    r = scale(quick=quick, progress=echo)
    echo("\nScale: the simulation's speed on this host")
    echo(
        format_table(
            r["rows"],
            [
                ("policy", "policy", ""),
                ("processors", "P", "d"),
                ("tasks", "tasks", "d"),
                ("makespan", "makespan s", ".2f"),
                ("utilisation", "util", ".2f"),
                ("events", "events", "d"),
                ("events_per_s", "events/s", ".3g"),
                ("wall", "wall s", ".2f"),
                ("all_once", "each once", ""),
            ],
        )
    )
    return r


def _simgrid(part: str, *, quick: bool, backend: str, echo) -> dict:
    from .engine_check import agreement

    r = agreement(quick=quick, progress=echo)
    echo("\nThe engine beside SimGrid: makespans on the same task sets (cluster network)")
    echo(
        format_table(
            r["rows"],
            [
                ("task_set", "task set", ""),
                ("policy", "policy", ""),
                ("engine", "engine s", ".5f"),
                ("simgrid", "SimGrid s", ".5f"),
                ("difference_pct", "difference %", "+.2f"),
                ("events", "events", "d"),
                ("engine_wall", "engine wall s", ".3f"),
                ("simgrid_wall", "SimGrid wall s", ".2f"),
            ],
        )
    )
    echo(
        f"largest difference: {r['max_abs_difference_pct']:.2f} %; all {r['events']:,} events: "
        f"the engine {r['engine_events_per_s']:.3g} a second, SimGrid "
        f"{r['simgrid_events_per_s']:.3g}"
    )
    return r


#: Each part's runner: runs its experiment, prints its table, returns its results.
_PARTS = {
    "table1": _table1,
    "farmer": _farmer,
    "gradient": _gradient,
    "figure1": _figure1,
    "figure2": _parametric,
    "figure3": _parametric,
    "compare": _compare,
    "scale": _scale,
    "simgrid": _simgrid,
}


def _json_default(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)
