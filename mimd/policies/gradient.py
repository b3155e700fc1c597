"""The Gradient Model and the Extended Gradient (Muniz & Zaluska sections 4.1, 4.2, 5 and
6.1): a pressure surface propagated by mesh shifts, a spawn tree placed down it, and the
Extended Gradient's check-and-reserve handshakes."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .base import INF, QUEUED, Policy, check_nonneg

__all__ = ["GradientModel", "ExtendedGradient"]

#: neighbour reached by each winning direction of the pressure's shifts (from N, S, W, E)
_DVEC = ((-1, 0), (1, 0), (0, -1), (0, 1))


@dataclass(frozen=True)
class GradientModel(Policy):
    """Gradient Model of Lin & Keller (1986) as described in Muniz & Zaluska section 4.1.

    Each processor measures its busyness as the fraction of time spent on tasks, averaged
    over ``window`` seconds (Muniz & Zaluska section 5: the idle count, averaged over a period of
    the order of a migration, after Barak & Shiloh). Every ``interval`` seconds it
    classifies itself with two thresholds: lightly loaded when busyness ``< low`` and its
    queue is empty, over-loaded when busyness ``> high`` and it has queued work. Its
    pressure is 0 when light, else one more than the smallest pressure of its four torus
    neighbours (capped at the diameter + 1), so the distance to the nearest light
    processor propagates one hop per interval (mesh shifts).
    A heavily loaded processor sends one unit of work per interval to its neighbour of
    least pressure when that is below its own: work flows down the gradient hop by hop,
    with no check that the target is still light (the overflow effect). Spawning is not
    rate-limited: a busy processor holding a spawn bundle places half of it at once
    (``spawn`` seconds of its CPU per placement), down its current gradient.

    Muniz & Zaluska gives neither the interval nor the averaging window; the defaults (status every
    1 s, busyness averaged over 2 s, against tasks of 0.3-10 s) are our choice for its
    transputer machine, and ``simd-emu bench mimd`` reports how GM and EG move with them.

    A unit of work is a task, or half of a spawn bundle (Muniz & Zaluska section 6.1: processes are
    spawned recursively by splitting the descriptor array).
    """

    interval: float = 1.0
    low: float = 0.25
    high: float = 0.75
    window: float = 2.0
    spawn: float = 5e-3
    name = "gradient"
    default_placement = "root"

    def __post_init__(self) -> None:
        check_nonneg(self, "interval", "low", "high", "spawn", "window")
        if self.interval <= 0 or self.window <= 0:
            raise ValueError("GradientModel.interval and window must be > 0")
        if self.high > 1:
            raise ValueError(f"busyness thresholds lie in [0, 1], got high={self.high}")
        if self.high <= self.low:
            raise ValueError(f"thresholds need low < high, got low={self.low}, high={self.high}")

    def bundles(self, placement: str) -> bool:
        """From the root, the tasks start as one spawn bundle (Muniz & Zaluska 6.1)."""
        return placement == "root"

    # the protocol ------------------------------------------------------------------------
    def setup(self, sim) -> None:
        """Pressure surface, busyness and reservations."""
        xp = sim.xp
        sim.next_status = 0
        sim.pmax = sim.net.diameter + 1
        # at time 0 every processor is idle: the gradient is flat at 0
        sim.pressure = xp.zeros(sim.P, dtype=np.int64)
        sim.light_id = sim.pid.copy()
        sim.nb_p = xp.zeros(sim.P, dtype=np.int64)
        sim.nb_dir = xp.zeros(sim.P, dtype=np.int64)
        sim.spawn_pending = False
        sim.busyness = xp.zeros(sim.P)
        sim.reserved = xp.zeros(sim.P, dtype=bool)

    def after_progress(self, sim, span, use) -> None:
        # busyness averaged over a window (Barak & Shiloh), as an idle-count measure
        a = math.exp(-span / self.window)
        sim.busyness = a * sim.busyness + (1 - a) * (use / span)

    def protocol(self, sim) -> None:
        heavy = self.status(sim)
        if heavy is None:
            return
        # heavy processors send one unit down the gradient to the least-pressure
        # neighbour, if that is lower than their own pressure
        go = heavy & (sim.nb_p < sim.pressure) & (sim.nb_p < sim.pmax)
        self.send_down(sim, go)

    def after_dispatch(self, sim) -> None:
        """Spawn-tree placement, every tick (Muniz & Zaluska section 6.1).

        A busy processor holding a spawn bundle splits it and places the upper half at once,
        to the downhill neighbour of its (possibly stale) gradient, with no check, so every
        spawn of one interval follows the same gradient (overflow).
        """
        busy = sim.cur >= 0
        go = busy & self.holds_bundle(sim) & (sim.nb_p < sim.pmax)
        sim.spawn_pending = bool(go.any())
        self.send_down(sim, go)

    def delivered(self, sim, procs) -> None:
        sim.reserved[procs] = False

    def next_tick(self, sim) -> float:
        c = INF
        if sim.spawn_pending:
            c = sim.t + 1
        # a status update matters only while some work waits in a queue
        if bool((sim.qcount > 0).any()) or sim.transit_count:
            c = min(c, float(sim.next_status))
        return c

    # steps -------------------------------------------------------------------------------
    def status(self, sim):
        """Periodic status update: classify, propagate pressure one hop.

        Returns the over-loaded processors (a mask), or None when no update is due.
        """
        if sim.t < sim.next_status:
            return None
        sim.next_status = sim.t + max(1, int(round(self.interval / sim.dt)))
        xp, m = sim.xp, sim.m
        rows, cols = sim.net.shape
        # two-threshold classification of the smoothed busyness (Muniz & Zaluska section 5)
        light = (sim.busyness < self.low) & ~sim.reserved & (sim.qcount == 0)
        heavy = (sim.busyness > self.high) & (sim.qcount > 0)
        # pressure = distance to the nearest light processor, one hop per update, by NEWS
        # shifts on the torus; the id of that processor travels with it (for EG)
        pr = sim.pressure.reshape(rows, cols)
        lid = sim.light_id.reshape(rows, cols)
        best_p = xp.full((rows, cols), sim.pmax, dtype=np.int64)
        best_id = xp.full((rows, cols), -1, dtype=np.int64)
        best_dir = xp.full((rows, cols), -1, dtype=np.int64)
        dirs = ((1, 0), (-1, 0), (1, 1), (-1, 1))  # (offset, axis): from N, S, W, E
        for k, (off, ax) in enumerate(dirs):
            if sim.net.shape[ax] == 1:
                continue  # a ring: that axis wraps onto the processor itself
            sp = m.shift(pr, off, ax, boundary="wrap")
            si = m.shift(lid, off, ax, boundary="wrap")
            better = (sp < best_p) | ((sp == best_p) & (si >= 0) & ((si < best_id) | (best_id < 0)))
            best_p = xp.where(better, sp, best_p)
            best_id = xp.where(better, si, best_id)
            best_dir = xp.where(better, k, best_dir)
        new_p = xp.where(light.reshape(rows, cols), 0, xp.minimum(best_p + 1, sim.pmax))
        new_id = xp.where(
            light.reshape(rows, cols),
            sim.pid.reshape(rows, cols),
            xp.where(new_p < sim.pmax, best_id, -1),
        )
        sim.pressure = new_p.reshape(-1)
        sim.light_id = new_id.reshape(-1)
        sim.nb_p = best_p.reshape(-1)
        sim.nb_dir = best_dir.reshape(-1)
        return heavy

    def holds_bundle(self, sim):
        """Processors with a spawn bundle in their queue (router or)."""
        return sim.m.send(
            sim.bsize > 1,
            sim.owner,
            size=sim.P,
            combine="or",
            mask=sim.state == QUEUED,
            fill=False,
        )

    def send_down(self, sim, go) -> None:
        """Move one unit of work from each ``go`` processor to its downhill neighbour."""
        xp = sim.xp
        if not bool(go.any()):
            return
        donors = xp.flatnonzero(go)
        dvec = xp.asarray(_DVEC, dtype=np.int64)
        dests = sim.net.neighbour(donors, dvec[sim.nb_dir[donors]], xp)
        sim.charge(donors, self.spawn)
        depart = sim.now() + sim.debt[donors]
        sim.give(donors, dests, depart, "tail")


@dataclass(frozen=True)
class ExtendedGradient(GradientModel):
    """Extended Gradient of Muniz (1994), Muniz & Zaluska section 4.2.

    The gradient also carries the id of the nearest light processor. A heavily loaded
    processor asks that processor directly (routed, any distance) to confirm it is still
    light and to reserve itself (check-and-reserve handshake, ``process`` seconds on the
    target); only on a yes is the work sent, straight to it. Several sources asking one
    target in the same instant: the lowest processor id wins, the others are refused.
    """

    process: float = 2e-4
    name = "extended-gradient"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_nonneg(self, "process")

    def setup(self, sim) -> None:
        """The gradient's state and the handshakes'."""
        super().setup(sim)
        xp = sim.xp
        sim.hs_wait = xp.zeros(sim.P, dtype=bool)  # refused: wait for fresh status
        sim.hs_state = xp.zeros(sim.P, dtype=np.int8)  # 0 none, 1 asked, 2 answered
        sim.hs_target = xp.full(sim.P, -1, dtype=np.int64)
        sim.hs_due = xp.full(sim.P, INF)
        sim.hs_ok = xp.zeros(sim.P, dtype=bool)

    def protocol(self, sim) -> None:
        self.handshakes(sim)
        if self.status(sim) is not None:
            sim.hs_wait[:] = False  # fresh information: refused sources may ask again

    def after_dispatch(self, sim) -> None:
        """Spawn-tree placement, every tick: a busy processor with a spawn bundle, or an
        over-loaded one with queued tasks, first asks the nearest light processor to check
        and reserve itself (:meth:`ask`)."""
        busy = sim.cur >= 0
        has_bundle = self.holds_bundle(sim)
        heavy = (sim.busyness > self.high) & (sim.qcount > 0)
        self.ask(sim, busy & (has_bundle | heavy))

    def next_due(self, sim) -> float:
        return float(sim.hs_due.min())

    # steps -------------------------------------------------------------------------------
    def ask(self, sim, want) -> None:
        """Sources ask the nearest light processor to check and reserve itself."""
        xp = sim.xp
        ask = (
            want
            & (sim.hs_state == 0)
            & ~sim.hs_wait
            & (sim.light_id >= 0)
            & (sim.light_id != sim.pid)
        )
        n = sim.m.count(ask)
        sim.spawn_pending = n > 0
        if not n:
            return
        procs = xp.flatnonzero(ask)
        tg = sim.light_id[procs]
        sim.hs_target[procs] = tg
        sim.hs_due[procs] = sim.message(
            procs, tg, sim.net.request_bytes, sim.now() + sim.debt[procs]
        )
        sim.hs_state[procs] = 1
        sim.charge(procs, sim.net.startup)
        sim.messages += n

    def handshakes(self, sim) -> None:
        """Targets answer check-and-reserve requests; sources act on the answers."""
        xp = sim.xp
        now = sim.now() + 1e-12
        # 1. requests arriving at their target: still light and not reserved? reserve.
        arr = (sim.hs_state == 1) & (sim.hs_due <= now)
        if bool(arr.any()):
            procs = xp.flatnonzero(arr)
            tg = sim.hs_target[procs]
            # the check is of the target's instantaneous state: idle, nothing queued
            free = (sim.cur < 0) & (sim.qcount == 0) & ~sim.reserved
            r = sim.rank(sim.hs_target, arr)[procs]
            ok = free[tg] & (r == 0)
            sim.reserved[tg[ok]] = True
            sim.charge(tg, self.process + sim.net.startup)
            sim.hs_ok[procs] = ok
            # the answer leaves the target after processing: target -> source
            sim.hs_due[procs] = sim.message(
                tg, procs, sim.net.request_bytes, sim.hs_due[procs] + self.process
            )
            sim.hs_state[procs] = 2
            sim.messages += int(procs.size)
        # 2. answers arriving at the source: on yes send the work straight to the target
        ans = (sim.hs_state == 2) & (sim.hs_due <= now)
        if bool(ans.any()):
            procs = xp.flatnonzero(ans)
            sim.hs_state[procs] = 0
            sim.hs_due[procs] = INF
            sim.hs_wait[procs[~sim.hs_ok[procs]]] = True
            yes = procs[sim.hs_ok[procs]]
            if yes.size:
                tg = sim.hs_target[yes]
                ok = sim.give(yes, tg, sim.now() + sim.debt[yes], "tail")
                # a reserved target that gets nothing (source ran dry) is released
                sim.reserved[tg[~ok]] = False
