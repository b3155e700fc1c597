"""Diffusion (PREMA) and work stealing, Barker & Chrisochoides, sections 2 and 4:
receivers ask their neighbourhood for work, answered by each target's polling thread."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import INF, Policy, check_nonneg

__all__ = ["Diffusion", "WorkStealing"]


@dataclass(frozen=True)
class Diffusion(Policy):
    """Diffusion as in PREMA, Barker & Chrisochoides, sections 2 and 4.

    A processor whose work pool is empty sends a query to every processor of its current
    neighbourhood (the ``neighbours`` nearest on the torus; an evolving set: when all say
    no, the next ``neighbours`` are asked). Queries are answered when the target's polling
    thread wakes (every ``quantum`` seconds, costing ``2 * ctx + poll`` each time) with the
    number of unstarted tasks it can spare. After all replies and ``decision`` seconds the
    requester asks the richest for a task; at that target's next poll one unstarted task is
    uninstalled, packed, sent and unpacked at the requester. ``process`` and
    ``process_reply`` are the CPU times to handle a request and a reply.
    """

    quantum: float = 0.01
    neighbours: int = 4
    poll: float = 2e-5
    ctx: float = 1e-5
    process: float = 5e-5
    process_reply: float = 5e-5
    decision: float = 1e-4
    keep: int = 0
    name = "diffusion"
    default_placement = "block"

    def __post_init__(self) -> None:
        check_nonneg(self, "quantum", "poll", "ctx", "process", "process_reply", "decision", "keep")
        if self.quantum <= 0:
            raise ValueError("quantum must be > 0")
        if not isinstance(self.neighbours, int) or self.neighbours < 1:
            raise ValueError(f"neighbours must be an integer >= 1, got {self.neighbours!r}")

    @property
    def poll_overhead(self) -> float:
        """CPU time of one polling-thread invocation, ``2 T_ctx + T_poll`` (Barker &
        Chrisochoides, section 4.2)."""
        return 2 * self.ctx + self.poll

    # the protocol ------------------------------------------------------------------------
    def setup(self, sim) -> None:
        """Polling phases, migration requests and the neighbourhood queries."""
        self.setup_requests(sim)
        xp, k = sim.xp, sim.k
        sim.q_due = xp.full((sim.P, k), INF)
        sim.q_reply = xp.full((sim.P, k), INF)
        sim.q_count = xp.zeros((sim.P, k), dtype=np.int64)
        sim.q_target = xp.zeros((sim.P, k), dtype=np.int64)

    def before_progress(self, sim, t0, t1) -> None:
        # polling-thread wake-ups in (t0, t1]: fixed overhead per quantum (Barker &
        # Chrisochoides, section 4.2)
        xp, q = sim.xp, self.quantum
        n = xp.floor((t1 - sim.phase_off) / q) - xp.floor((t0 - sim.phase_off) / q)
        sim.charge(sim.pid, n * self.poll_overhead)

    def protocol(self, sim) -> None:
        self.answer_queries(sim)
        self.answer_requests(sim)

    def after_dispatch(self, sim) -> None:
        """Processors with an empty pool start asking for work (Barker & Chrisochoides,
        section 2)."""
        if sim.P == 1:
            return
        want = (sim.cur < 0) & (sim.qcount == 0) & (sim.lb_phase == 0)
        n = sim.m.count(want)
        if n:
            self.ask(sim, sim.xp.flatnonzero(want))

    def delivered(self, sim, procs) -> None:
        # a requester that got work stops asking
        sim.lb_phase[procs] = 0
        sim.lb_due[procs] = INF

    def next_due(self, sim) -> float:
        return min(float(sim.lb_due.min()), float(sim.q_due.min()))

    # steps -------------------------------------------------------------------------------
    def setup_requests(self, sim) -> None:
        """Polling phases and the state of the migration requests."""
        xp = sim.xp
        sim.phase_off = xp.asarray(sim.rng.uniform(0.0, self.quantum, sim.P))
        sim.lb_phase = xp.zeros(sim.P, dtype=np.int8)  # 1 querying, 2 asked, 3 refused, 4 got
        sim.lb_due = xp.full(sim.P, INF)
        sim.lb_target = xp.zeros(sim.P, dtype=np.int64)
        sim.round = xp.zeros(sim.P, dtype=np.int64)
        sim.offsets = xp.asarray(sim.net.offsets())
        sim.k = min(self.neighbours, sim.P - 1) if sim.P > 1 else 1

    def next_poll(self, sim, p, x):
        """Time of processor ``p``'s first polling-thread wake-up at or after time ``x``."""
        xp, q = sim.xp, self.quantum
        ph = sim.phase_off[p]
        return ph + xp.ceil((x - ph) / q - 1e-12) * q

    def ask(self, sim, procs) -> None:
        """Processors ``procs`` query their current neighbourhood."""
        xp = sim.xp
        n, k = procs.size, sim.k
        L = sim.offsets.shape[0]
        j = (sim.round[procs][:, None] * k + xp.arange(k)[None, :]) % L
        tg = sim.net.neighbour(procs[:, None], sim.offsets[j], xp)
        # the k queries leave one after the other from the requester's CPU: the j-th after
        # j start-ups (its own start-up is in its arrival)
        first = sim.idle_time(procs)
        leave = first[:, None] + sim.net.startup * xp.arange(k)[None, :]
        src = xp.broadcast_to(procs[:, None], tg.shape)
        arrive = sim.message(src, tg, sim.net.request_bytes, leave)
        sim.q_target[procs] = tg
        sim.q_due[procs] = self.next_poll(sim, tg, arrive)
        sim.q_reply[procs] = INF
        sim.q_count[procs] = 0
        sim.lb_phase[procs] = 1
        sim.charge_from(procs, k * sim.net.startup, first)
        sim.messages += n * k

    def answer_queries(self, sim) -> None:
        """Answer due queries (at the target's poll) and decide when all replies are in."""
        xp, m = sim.xp, sim.m
        now = sim.now() + 1e-12
        due = sim.q_due <= now
        if bool(due.any()):
            src, col = xp.nonzero(due)
            tg = sim.q_target[src, col]
            spare = xp.maximum(sim.qcount - self.keep, 0)
            sim.q_count[src, col] = m.get(spare, tg)
            # the reply leaves the target after processing: target -> requester
            sim.q_reply[src, col] = sim.message(
                tg, src, sim.net.request_bytes, sim.q_due[src, col] + self.process
            )
            sim.q_due[src, col] = INF
            sim.charge(tg, self.process + sim.net.startup)
            sim.messages += int(src.size)
        # all replies in: decide
        waiting = sim.lb_phase == 1
        if not bool(waiting.any()):
            return
        last = sim.q_reply.max(axis=1)
        ready = waiting & (last <= now)
        if not bool(ready.any()):
            return
        procs = xp.flatnonzero(ready)
        cnt = sim.q_count[procs]
        col = xp.argmax(cnt, axis=1)
        best = cnt[xp.arange(procs.size), col]
        t_dec = last[procs] + sim.k * self.process_reply + self.decision
        sim.charge(procs, sim.k * self.process_reply + self.decision)
        has = best > 0
        if bool(has.any()):
            pr = procs[has]
            tg = sim.q_target[pr, col[has]]
            self.request_migration(sim, pr, tg, t_dec[has])
        if bool((~has).any()):
            # no one had spare work: evolve the neighbourhood and ask again
            pr = procs[~has]
            sim.round[pr] += 1
            sim.lb_phase[pr] = 0
        sim.q_reply[procs] = INF

    def request_migration(self, sim, procs, tg, when, charged=False) -> None:
        """Processors ``procs`` ask ``tg`` for a task, their CPUs sending at ``when``."""
        arrive = sim.message(procs, tg, sim.net.request_bytes, when)
        sim.lb_target[procs] = tg
        sim.lb_due[procs] = self.next_poll(sim, tg, arrive)
        sim.lb_phase[procs] = 2
        if not charged:
            sim.charge(procs, sim.net.startup)
        sim.messages += int(procs.size)

    def answer_requests(self, sim) -> None:
        """Targets answer due migration requests at their poll: give a task or refuse."""
        xp = sim.xp
        now = sim.now() + 1e-12
        # refusals that have come back: the requester may ask again (the next
        # neighbourhood, for Diffusion)
        back = (sim.lb_phase == 3) & (sim.lb_due <= now)
        if bool(back.any()):
            pr = xp.flatnonzero(back)
            sim.lb_phase[pr] = 0
            sim.lb_due[pr] = INF
            sim.charge(pr, self.process_reply)
            sim.round[pr] += 1
        due = (sim.lb_phase == 2) & (sim.lb_due <= now)
        if not bool(due.any()):
            return
        r = sim.rank(sim.lb_target, due)
        procs = xp.flatnonzero(due)
        rk = r[procs]
        tg = sim.lb_target[procs]
        sim.charge(tg, self.process)
        sim.messages += int(procs.size)
        granted = xp.zeros(procs.size, dtype=bool)
        # serve requests to one target in rank order while it has spare unstarted tasks
        for level in range(int(rk.max()) + 1):
            sel = rk == level
            spare = sim.qcount[tg[sel]] - self.keep
            can = spare > 0
            if not bool(can.any()):
                continue
            idx = xp.flatnonzero(sel)[can]
            depart = sim.lb_due[procs[idx]] + self.process
            ok = sim.give(tg[idx], procs[idx], depart, "tail")
            granted[idx[ok]] = True
        gp = procs[granted]
        sim.lb_phase[gp] = 4  # task on its way; delivered() resets
        sim.lb_due[gp] = INF
        refused = procs[~granted]
        if refused.size:
            # the refusal leaves the target after processing: target -> requester
            sim.lb_due[refused] = sim.message(
                sim.lb_target[refused],
                refused,
                sim.net.request_bytes,
                sim.lb_due[refused] + self.process,
            )
            sim.lb_phase[refused] = 3
            sim.charge(sim.lb_target[refused], sim.net.startup)
            sim.messages += int(refused.size)


@dataclass(frozen=True)
class WorkStealing(Diffusion):
    """Work stealing (Barker 2004), the variant of Barker & Chrisochoides, section 4.

    An idle processor asks one victim drawn at random from its ``neighbours`` nearest
    processors (``neighbours >= P - 1``: anyone) for a task; the victim answers at its next
    poll, migrating one unstarted task or refusing, and a refused thief tries another victim.
    """

    name = "work-stealing"

    def setup(self, sim) -> None:
        """Polling phases and migration requests (no queries)."""
        self.setup_requests(sim)

    def protocol(self, sim) -> None:
        self.answer_requests(sim)

    def next_due(self, sim) -> float:
        return float(sim.lb_due.min())

    def ask(self, sim, procs) -> None:
        """Processors ``procs`` ask one victim each, at random among the k nearest."""
        xp = sim.xp
        j = xp.asarray(sim.rng.integers(0, sim.k, procs.size))
        tg = sim.net.neighbour(procs, sim.offsets[j], xp)
        leave = sim.idle_time(procs)
        self.request_migration(sim, procs, tg, leave, charged=True)
        sim.charge_from(procs, sim.net.startup, leave)
