"""The experiments of ``simd-emu bench mimd``: each part's numbers, no printing.

Muniz & Zaluska Table 1 (:func:`table1`), the farmer's scaling with links as resources
(:func:`farmer_scaling`) and the status-interval sensitivity (:func:`gradient_sensitivity`),
Barker & Chrisochoides Figure 1 (:func:`figure1`) and Figures 2 and 3 (:func:`parametric`),
MIMD policies next to the SIMD balancer (:func:`compare`, with the renderer's workload from
:func:`render_workload`) and the scale run (:func:`scale`).
:mod:`mimd.report` prints them and writes the JSON; :mod:`mimd.plots` draws them.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np

from .model import ModelParams, predict
from .network import Network
from .policies import (
    POLICIES,
    Diffusion,
    ExtendedGradient,
    Farmer,
    GradientModel,
    NoBalancing,
    WorkStealing,
)
from .simulator import simulate
from .workloads import bimodal, linear, workload

__all__ = [
    "table1",
    "farmer_scaling",
    "gradient_sensitivity",
    "figure1",
    "parametric",
    "render_workload",
    "compare",
    "scale",
]


# --------------------------------------------------------------------------- Muniz & Zaluska
def table1(*, quick: bool = False, machine=None) -> dict:
    """The runs of Muniz & Zaluska's Table 1 on the measured ray-tracing workload.

    Every run twice: links as resources (``time``, ``utilisation``) and without contention
    (``time_free``, ``utilisation_free``), the model before links were modelled.
    """
    from .raytrace import raytrace_costs

    t0 = time.perf_counter()
    costs = raytrace_costs(150, 64, total=328.0, machine=machine)
    trace_wall = time.perf_counter() - t0
    net = Network.transputer((4, 4))
    runs = [
        ("farmer original, 16", Farmer(routing_factor=4.0), net),
        ("farmer + VCR, 16", Farmer(), net),
        ("GM original, 16", GradientModel(), net),
        ("EG system-level, 16", ExtendedGradient(), net),
        ("diffusion, 16", Diffusion(quantum=0.05), net),
        ("work stealing, 16", WorkStealing(quantum=0.05), net),
        ("farmer + VCR, 1", Farmer(), Network.transputer((1, 1))),
    ]
    results = []
    for label, pol, nw in runs:
        r = simulate(costs, pol, network=nw)
        free = simulate(costs, pol, network=nw.with_(contention=False))
        results.append((label, r, free))
    control = results[-1][1].makespan
    rows = []
    for label, r, free in results:
        rows.append(
            {
                "run": label,
                "policy": r.policy,
                "processors": r.processors,
                "time": r.makespan,
                "processor_seconds": r.processor_seconds,
                "utilisation": 100.0 * control / r.processor_seconds,
                "migrations": r.migrations,
                "messages": r.messages,
                "all_once": bool(np.all(r.runs == 1)),
                "wall": r.wall,
                "time_free": free.makespan,
                "utilisation_free": 100.0 * control / free.processor_seconds,
                "link_busy_max_pct": 100.0 * r.extra["link_busy_max"] / r.makespan,
            }
        )
    paper = {
        "farmer original, 16": (28, 448, 73),
        "farmer + VCR, 16": (26, 416, 79),
        "GM original, 16": (">50", ">800", "<41"),
        "EG system-level, 16": (29, 464, 71),
        "farmer + VCR, 1": (328, 328, 100),
    }
    for r in rows:
        p = paper.get(r["run"])
        r["paper"] = "/".join(str(x) for x in p) if p else "-"
    return {
        "rows": rows,
        "task_costs": costs.tolist(),
        "trace_wall": trace_wall,
        "network": "transputer 4x4 torus (Network.transputer)",
        "min_task": float(costs.min()),
        "max_task": float(costs.max()),
    }


def farmer_scaling(*, quick: bool = False, tasks_per_proc: int = 4) -> dict:
    """The farmer on 4x4 to 32x32 transputer tori, fine and coarse tasks, links on and off.

    ``tasks_per_proc`` tasks per processor, uniform in 0.5..1.5 times the mean: fine (3 ms,
    the grain where an event-driven check found a coarser model 17-62 % optimistic)
    and coarse (1 s). By hand, the farmer can hand out at most ``1 / (serve + startup)``
    tasks a second (its CPU) and at most ``4 / hold`` (its four links, each holding a
    store-and-forward hand-out ``per_hop + task_bytes * per_byte`` per hop); dimension-order
    routes put most workers behind the farmer's two column links, so the links' real bound
    is lower. ``handouts_per_s`` is tasks over makespan.
    """
    shapes = [(4, 4), (8, 8), (16, 16)] + ([] if quick else [(32, 32)])
    pol = Farmer()
    rows = []
    for shape in shapes:
        for grain, mean in (("fine", 3e-3), ("coarse", 1.0)):
            p = shape[0] * shape[1]
            n = tasks_per_proc * p
            costs = np.random.default_rng(p).uniform(0.5 * mean, 1.5 * mean, n)
            for contention in (True, False):
                net = Network.transputer(shape, contention=contention)
                r = simulate(costs, pol, network=net)
                hold = net.per_hop + net.task_bytes * net.per_byte
                rows.append(
                    {
                        "shape": f"{shape[0]}x{shape[1]}",
                        "processors": p,
                        "grain": grain,
                        "mean_task": mean,
                        "tasks": n,
                        "contention": contention,
                        "time": r.makespan,
                        "utilisation": r.utilisation,
                        "handouts_per_s": n / r.makespan,
                        "cpu_bound_per_s": 1.0 / (pol.serve + net.startup),
                        "link_bound_per_s": 4.0 / hold,
                        "link_busy_max_pct": 100.0 * r.extra["link_busy_max"] / r.makespan,
                        "all_once": bool(np.all(r.runs == 1)),
                        "events": r.events,
                        "wall": r.wall,
                    }
                )
    for row in rows:
        if row["contention"]:
            free = next(
                x
                for x in rows
                if x["shape"] == row["shape"] and x["grain"] == row["grain"] and not x["contention"]
            )
            row["optimism_pct"] = 100.0 * (row["time"] - free["time"]) / row["time"]
    return {"rows": rows, "network": "transputer torus (Network.transputer), Farmer()"}


def gradient_sensitivity(*, quick: bool = False) -> dict:
    """GM and EG against the farmer as the status interval grows (ray tracer, 16)."""
    from .raytrace import raytrace_costs

    costs = raytrace_costs()
    net = Network.transputer((4, 4))
    farmer = simulate(costs, Farmer(), network=net).makespan
    rows = []
    for iv in (0.25, 1.0, 2.0) if quick else (0.1, 0.25, 0.5, 1.0, 2.0, 4.0):
        g = simulate(costs, GradientModel(interval=iv, window=2 * iv), network=net).makespan
        e = simulate(costs, ExtendedGradient(interval=iv, window=2 * iv), network=net).makespan
        rows.append(
            {
                "interval": iv,
                "window": 2 * iv,
                "farmer": farmer,
                "gm": g,
                "eg": e,
                "gm_over_farmer": g / farmer,
                "eg_over_farmer": e / farmer,
            }
        )
    return {"rows": rows}


# ------------------------------------------------------------------ Barker & Chrisochoides
def _validate_point(name, p, k, *, quantum=0.01, seed=0):
    costs = workload(name, p, k)
    net = Network.cluster(p)
    pol = Diffusion(quantum=quantum)
    r = simulate(costs, pol, network=net, seed=seed)
    free = simulate(costs, pol, network=net.with_(contention=False), seed=seed)
    prm = ModelParams.from_sim(net, pol)
    return r, predict(costs, prm), predict(costs, prm, refine=False), free


def figure1(*, quick: bool = False) -> dict:
    """The runs of Barker & Chrisochoides' Figure 1: model against simulation, Diffusion."""
    rows = []
    ks = (2, 4, 8, 16)
    for name in ("linear-2", "linear-4", "step"):
        for p in (32, 64):
            for k in ks:
                r, pr, pp, free = _validate_point(name, p, k)
                err = 100.0 * (pr.average - r.makespan) / r.makespan
                err_paper = 100.0 * (pp.average - r.makespan) / r.makespan
                rows.append(
                    {
                        "workload": name,
                        "processors": p,
                        "tasks_per_proc": k,
                        "simulated": r.makespan,
                        "lower": pr.lower,
                        "upper": pr.upper,
                        "average": pr.average,
                        "error_pct": err,
                        "average_paper": pp.average,
                        "error_paper_pct": err_paper,
                        "simulated_free": free.makespan,
                        "error_free_pct": 100.0 * (pr.average - free.makespan) / free.makespan,
                        "gamma": pr.fit.gamma,
                        "t_alpha": pr.fit.t_alpha,
                        "t_beta": pr.fit.t_beta,
                        "dominating": pr.dominating,
                        "migrations": r.migrations,
                        "no_balancing": float(
                            workload(name, p, k).reshape(p, -1).sum(axis=1).max()
                        ),
                    }
                )
    summary = {}
    for key, col in (
        ("", "error_pct"),
        ("paper_", "error_paper_pct"),
        ("free_", "error_free_pct"),
    ):
        errs = np.abs([r[col] for r in rows])
        summary[f"{key}mean_abs_error_pct"] = float(errs.mean())
        summary[f"{key}max_abs_error_pct"] = float(errs.max())
        for name in ("linear-2", "linear-4", "step"):
            e = np.abs([r[col] for r in rows if r["workload"] == name])
            summary[f"{key}mean_abs_error_pct_{name}"] = float(e.mean())
    return {"rows": rows, "summary": summary}


def parametric(kind: str = "bimodal", *, quick: bool = False, simulate_upto: int = 64) -> dict:
    """The runs of Barker & Chrisochoides' Figure 2 (``bimodal``) or Figure 3 (``linear``).

    Model predictions over tasks per processor, polling quantum and neighbourhood size for
    three processor counts; simulated points for machines up to ``simulate_upto``.
    """
    if kind == "bimodal":
        procs = (32, 64, 256)
        levels = {"variance 0.5": 0.5, "variance 1": 1.0, "variance 3": 3.0}
        app = 0
    elif kind == "linear":
        procs = (64, 256, 512)
        levels = {"mild (1.2x)": 1.2, "moderate (2x)": 2.0, "severe (4x)": 4.0}
        app = 4
    else:
        raise ValueError(f"kind must be 'bimodal' or 'linear', got {kind!r}")
    if quick:
        procs = procs[:2]
    tpp = (2, 3, 4, 6, 8, 12, 16, 24, 32)
    quanta = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)
    nbs = (1, 2, 4, 8, 16)
    base = {"k": 8, "quantum": 0.01, "neighbours": 4}

    def costs_for(level, p, k):
        n = p * k
        total = 10.0 * p
        return (
            bimodal(n, 0.5, level, total=total)
            if kind == "bimodal"
            else linear(n, level, total=total)
        )

    out = {"kind": kind, "processors": list(procs), "levels": list(levels), "series": []}
    for p in procs:
        net = Network.cluster(p)
        for lname, level in levels.items():
            for param, values in (
                ("tasks_per_proc", tpp),
                ("quantum", quanta),
                ("neighbours", nbs),
            ):
                pts = []
                for v in values:
                    k = v if param == "tasks_per_proc" else base["k"]
                    q = v if param == "quantum" else base["quantum"]
                    nb = v if param == "neighbours" else base["neighbours"]
                    pol = Diffusion(quantum=q, neighbours=nb)
                    c = costs_for(level, p, k)
                    pr = predict(c, ModelParams.from_sim(net, pol, app_messages=app, app_bytes=256))
                    sim = None
                    if p <= simulate_upto and not (quick and p > 32):
                        sim = simulate(
                            c, pol, network=net, app_messages=app, app_bytes=256
                        ).makespan
                    pts.append(
                        {
                            "value": v,
                            "lower": pr.lower,
                            "upper": pr.upper,
                            "average": pr.average,
                            "simulated": sim,
                        }
                    )
                out["series"].append(
                    {"processors": p, "level": lname, "param": param, "points": pts}
                )
    sims = [
        (pt["average"], pt["simulated"])
        for s in out["series"]
        for pt in s["points"]
        if pt["simulated"] is not None
    ]
    if sims:
        e = np.abs([(a - b) / b * 100 for a, b in sims])
        out["model_vs_sim_mean_abs_error_pct"] = float(e.mean())
    return out


# --------------------------------------------------------------------------- comparison
def render_workload(
    *,
    dataset: str = "unbalanced",
    resolution: int = 32,
    view: tuple[float, float] = (45.0, 45.0),
    magnification: float = 2.0,
    size: int = 256,
) -> np.ndarray:
    """The renderer's real per-polygon scan-line workloads, in mesh order.

    The scan-conversion loop's workload of a built-in isosurface
    (:func:`renderer.loop_workloads`, the renderer's public interface for this): one task
    per polygon that covers at least one scan line, its work the number of scan lines. The
    default is the built-in unbalanced set (:mod:`renderer.datasets`, our stand-in for Ahrens
    & Hansen's) in view M(45, 45): a few long slivers among many small polygons. The renderer
    is imported here, not at module level, so that the MIMD program loads without it until
    this task set is asked for.
    """
    from renderer import load_dataset, loop_workloads
    from simd import Machine

    mesh = load_dataset(dataset, resolution)
    w = loop_workloads(
        mesh,
        view=view,
        magnification=magnification,
        size=size,
        machine=Machine(pes=64, backend="numpy"),
    )
    return w.scan[w.scan > 0]


def _simd_loop(
    costs: np.ndarray,
    p: int,
    form: str,
    units: int,
    task_cost: float,
    workload: np.ndarray | None = None,
    backend: str = "numpy",
) -> dict:
    """Run the task set as a balanced loop on the SIMD machine (Ahrens & Hansen 1995).

    ``workload``: the integer workload per datum when the task set has one (the renderer's
    scan lines); otherwise each cost in units of ``max cost / units``.
    """
    from simd import Machine
    from simd.balance.cost_effective import run_loop

    if workload is None:
        unit = costs.max() / units
        wl = np.maximum(1, np.round(costs / unit)).astype(np.int64)
    else:
        wl = np.asarray(workload, dtype=np.int64)
    m = Machine(pes=p, backend=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # calibration warnings of a first run
        r = run_loop(
            wl, None, machine=m, form=form, task_cost=task_cost, name=f"mimd-compare-{form}"
        )
    return {
        "cycles": r.cycles,
        "iterations": r.iterations,
        "decisions": r.decisions,
        "utilisation": float(wl.sum() * task_cost / (p * r.cycles)),
    }


def compare(
    *,
    quick: bool = False,
    units: int = 32,
    task_cost: float = 1e4,
    sets: list[tuple[str, int, int]] | None = None,
    backend: str = "numpy",
) -> dict:
    """MIMD policies and the SIMD cost-effective balancer on the same task sets.

    MIMD: simulated makespan on a cluster network (Barker & Chrisochoides costs), tasks
    placed in blocks (the farmer holds them all); utilisation = work / (P * makespan). SIMD: each
    task is a datum whose workload is its cost in units of ``max cost / units`` (at least one), run
    by
    :func:`simd.balance.run_loop` with ``task_cost`` model cycles per unit; utilisation =
    useful cycles / (P * loop cycles). Speed-ups are over no balancing on the same machine
    (MIMD static blocks; SIMD the original loop of Ahrens & Hansen (1995) Figure 1). A unit is 1/32
    of the largest task, seconds of work on the papers' machines, so ``task_cost`` is large (10^4
    cycles); with 10^2 the cost-effective loop's overhead in iterations exceeds any saving
    and it never redistributes. Note that a SIMD datum's units are separate tasks, while a
    MIMD task is indivisible: the SIMD loops balance at a finer grain.

    ``sets``: ``(task set, processors, tasks per processor)`` triples, default a list
    of all task sets (shorter with ``quick``); for ``render`` the third number is the
    isosurface's grid resolution.

    The ``render`` task set is the renderer's real scan-conversion workload
    (:func:`render_workload`): MIMD task costs proportional to each polygon's scan lines
    (10 s of work per processor in all), SIMD workload the scan lines themselves, one
    task per scan line as the renderer's own loop runs them.
    """
    default = [
        ("linear-2", 64, 8),
        ("linear-4", 64, 8),
        ("step", 64, 8),
        ("bimodal", 64, 8),
        ("raytrace", 16, 4),
        ("render", 64, 32),
    ]
    if quick:
        default = [("linear-4", 32, 8), ("step", 32, 8), ("raytrace", 16, 4), ("render", 32, 24)]
    sets = default if sets is None else sets
    # no balancing first: the speed-ups are over it
    pols = [NoBalancing()] + [cls() for cls in POLICIES.values() if cls is not NoBalancing]
    rows = []
    for name, p, k in sets:
        lines = None
        if name == "render":
            # k is the isosurface's grid resolution here
            lines = render_workload(resolution=k)
            costs = lines * (10.0 * p / lines.sum())
        else:
            costs = workload(name, p, k)
        net = Network.cluster(p)
        row: dict[str, Any] = {"task_set": name, "processors": p, "tasks": costs.size}
        base = None
        for pol in pols:
            r = simulate(costs, pol, network=net, placement="block")
            if base is None:
                base = r.makespan
            row[f"{pol.name}:util"] = r.utilisation
            row[f"{pol.name}:speedup"] = base / r.makespan
        orig = None
        for form in ("original", "cost-effective", "expand"):
            s = _simd_loop(costs, p, form, units, task_cost, workload=lines, backend=backend)
            if orig is None:
                orig = s["cycles"]
            row[f"simd-{form}:util"] = s["utilisation"]
            row[f"simd-{form}:speedup"] = orig / s["cycles"]
            row[f"simd-{form}:decisions"] = s["decisions"]
        mimd = {pol.name: row[f"{pol.name}:util"] for pol in pols[1:]}
        simd = {f"simd-{f}": row[f"simd-{f}:util"] for f in ("cost-effective", "expand")}
        best = max({**mimd, **simd}.items(), key=lambda kv: kv[1])
        row["best"] = best[0]
        rows.append(row)
    return {
        "rows": rows,
        "units": units,
        "task_cost": task_cost,
    }


def scale(*, quick: bool = False, progress=None) -> dict:
    """The engine's speed on this host: every policy at 4096 processors x 100,000 tasks
    (1024 x 25,000, Diffusion only, with ``quick``), its events and events a second.

    ``progress``: a callable given one line of text before each policy's run.
    """
    p, n = (1024, 25_000) if quick else (4096, 100_000)
    costs = linear(n, 4.0, total=10.0 * p)
    rows = []
    pols = [Diffusion(), WorkStealing(), ExtendedGradient(), GradientModel(), Farmer()]
    if quick:
        pols = pols[:1]
    net = Network.cluster(p)
    for i, pol in enumerate(pols):
        if progress is not None:
            progress(f"  scale {i + 1}/{len(pols)}: {pol.name}, {p} x {n}")
        r = simulate(costs, pol, network=net, placement=None if pol.name == "farmer" else "block")
        rows.append(
            {
                "policy": pol.name,
                "processors": p,
                "tasks": n,
                "makespan": r.makespan,
                "utilisation": r.utilisation,
                "events": r.events,
                "events_per_s": r.events / r.wall if r.wall > 0 else None,
                "wall": r.wall,
                "all_once": bool(np.all(r.runs == 1)),
            }
        )
    return {"rows": rows}
