"""The engine beside SimGrid on the same task sets: the ``simgrid`` part of ``simd-emu bench
mimd`` and a part of ``python -m bench.mimd_engines``.

Fine-grained tasks (2 to 4 ms, against 0.1 ms message start-ups and 10 ms polling quanta) on
Barker & Chrisochoides' cluster: the linear-2 and bi-modal task sets of the MIMD benchmark's
comparison (64 processors, 8 tasks each), and a hot spot balanced hard (statuses and polls
every 2 to 10 ms). Every policy on both simulators: the makespans, their difference, and
each simulator's time on this host for the simulation itself (SimGrid's without starting
its process and building its platform); the engine's events a second are its events over
its time, SimGrid's the same events over SimGrid's time (it counts its own work otherwise).
"""

from __future__ import annotations

import numpy as np

from .network import Network
from .policies import Diffusion, ExtendedGradient, Farmer, GradientModel, WorkStealing
from .simulator import simulate
from .workloads import workload

__all__ = ["agreement", "cases"]


def cases(quick: bool = False) -> list[tuple[str, np.ndarray, Network, list, object]]:
    """``(task set, costs, network, policies, placement)`` of the comparison."""
    from simd.balance.workloads import generate

    out = []
    policies = [Farmer(), GradientModel(), ExtendedGradient(), Diffusion(), WorkStealing()]
    for name in ("linear-2", "bimodal"):
        costs = workload(name, 64, 8, work_per_processor=0.024)
        out.append((f"{name} 3 ms", costs, Network.cluster(64), policies, None))
    if not quick:
        counts = generate("hotspot", 64, mean=8)
        owners = np.repeat(np.arange(64), counts)
        rng = np.random.default_rng(0)
        costs = np.full(owners.size, 2e-3) * rng.uniform(0.5, 1.5, owners.size)
        hard = [
            Farmer(),
            GradientModel(interval=0.01, window=0.02),
            ExtendedGradient(interval=0.01, window=0.02),
            Diffusion(quantum=0.002),
            WorkStealing(quantum=0.002, neighbours=64),
        ]
        out.append(("hotspot 2 ms", costs, Network.cluster(64), hard, owners))
    return out


def agreement(*, quick: bool = False, progress=None) -> dict:
    """Every case on the engine and on SimGrid (:mod:`mimd.on_simgrid`, which must be
    installed): a row per task set and policy."""
    from .on_simgrid import simulate as on_simgrid

    rows = []
    simulate([1e-2] * 4, Farmer(), network=Network.cluster(4))  # the engine loaded, untimed
    for name, costs, net, policies, owners in cases(quick):
        for pol in policies:
            if progress is not None:
                progress(f"  {name}: {pol.name}")
            placement = owners
            if owners is None:
                placement = "block" if pol.name in ("diffusion", "work-stealing") else None
            ours = simulate(costs, pol, network=net, placement=placement)
            theirs = on_simgrid(costs, pol, network=net, placement=placement)
            wall = theirs["wall"]
            rows.append(
                {
                    "task_set": name,
                    "policy": pol.name,
                    "processors": net.p,
                    "tasks": costs.size,
                    "engine": ours.makespan,
                    "simgrid": theirs["makespan"],
                    "difference_pct": 100.0 * (ours.makespan / theirs["makespan"] - 1.0),
                    "events": ours.events,
                    "engine_wall": ours.wall,
                    "simgrid_wall": wall,
                    "engine_events_per_s": ours.events / ours.wall if ours.wall > 0 else None,
                    "simgrid_events_per_s": ours.events / wall,
                }
            )
    diff = np.abs([r["difference_pct"] for r in rows])
    events = sum(r["events"] for r in rows)
    return {
        "rows": rows,
        "max_abs_difference_pct": float(diff.max()),
        "events": events,
        "engine_wall": sum(r["engine_wall"] for r in rows),
        "simgrid_wall": sum(r["simgrid_wall"] for r in rows),
        "engine_events_per_s": events / sum(r["engine_wall"] for r in rows),
        "simgrid_events_per_s": events / sum(r["simgrid_wall"] for r in rows),
    }
