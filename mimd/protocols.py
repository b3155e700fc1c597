"""The balancing protocols of the simulated MIMD machine, one mixin per policy family.

:class:`mimd.simulator._Sim` holds the task and processor arrays and runs the per-tick SIMD
program (progress, deliveries, protocol, status, dispatch); the policy-specific steps of
that program live here, each family's state arrays made by its ``init_*`` method:

* :class:`FarmerProtocol` -- requests to the farmer and its serial service (Muniz & Zaluska 4.3);
* :class:`GradientProtocol` -- the Gradient Model's pressure surface and spawn tree, and the
  Extended Gradient's check-and-reserve handshakes (Muniz & Zaluska sections 5 and 6.1);
* :class:`DiffusionProtocol` -- Diffusion's neighbourhood queries and migration requests,
  and work stealing's random victims (Barker & Chrisochoides (2005) section 2).

The methods use the simulator's state and helpers (``self.m``, ``self.net``, ``give``,
``charge``, ``rank``, ``next_poll``, ...); they are not meant to be used on their own.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["INF", "QUEUED", "RUNNING", "TRANSIT", "DONE", "MEMBER"]

INF = math.inf

# task states
QUEUED, RUNNING, TRANSIT, DONE, MEMBER = 0, 1, 2, 3, 4


class FarmerProtocol:
    """Master/worker farm: workers ask, the farmer serves one request at a time."""

    def init_farmer(self) -> None:
        """The farmer's pool and the workers' outstanding requests."""
        xp = self.xp
        self.order_ptr = 0  # next task of the farmer's pool (task order)
        self.pool = self.N
        self.req_due = xp.full(self.P, INF)  # arrival of a worker's request at the farmer
        self.req_out = xp.zeros(self.P, dtype=bool)
        self.finished_worker = xp.zeros(self.P, dtype=bool)
        self.farmer_free = 0.0

    def farmer_self_dispatch(self):
        """The farmer, when it also works, takes the next task of its pool itself."""
        f = self.pol.farmer
        if (not self.pol.farmer_works and self.P > 1) or self.pool == 0 or int(self.cur[f]) >= 0:
            return
        h = self.xp.asarray([self.order_ptr])
        self.order_ptr += 1
        self.pool -= 1
        self.start_tasks(self.xp.asarray([f]), h)

    def farmer_requests(self):
        """Workers that ran dry ask the farmer for a task (Muniz & Zaluska section 4.3)."""
        xp = self.xp
        f = self.pol.farmer
        want = (
            (self.cur < 0)
            & (self.qcount == 0)
            & ~self.req_out
            & ~self.finished_worker
            & (self.pid != f)
        )
        n = self.m.count(want)
        if not n:
            return
        procs = xp.flatnonzero(want)
        # the request leaves when the worker went idle (exact, not the tick after); its
        # start-up is on the worker's CPU and counted once in the arrival
        leave = self.idle_time(procs)
        self.req_due[procs] = self.message(
            procs, f, self.net.request_bytes, leave, self.pol.routing_factor
        )
        self.req_out[procs] = True
        self.charge_from(procs, self.net.startup, leave)
        self.messages += n

    def farmer_serve(self):
        """The farmer answers arrived requests one at a time, in arrival order.

        Each request costs the farmer ``serve`` of CPU and, when it hands out a task, the
        start-up of the hand-out message: a FIFO server whose departures are the max-plus
        recurrence ``c_i = max(a_i, c_{i-1}) + s_i`` from the exact arrivals ``a_i``
        (an add-scan and a max-scan). The hand-out then crosses the links. Not charged:
        ``pack`` (and the worker's ``unpack``), the cost of uninstalling and packing a
        *process* (Barker & Chrisochoides (2005) 4.5): the farmer of Muniz & Zaluska 4.3 sends
        batches of data to worker processes placed at compile time, whose preparation is its
        ``serve``.
        """
        xp, m = self.xp, self.m
        now = self.now() + 1e-12
        arrived = self.req_out & (self.req_due <= now)
        n = m.count(arrived)
        if not n:
            return
        procs = xp.flatnonzero(arrived)
        procs = procs[xp.lexsort(xp.stack([procs.astype(np.float64), self.req_due[procs]]))]
        a = self.req_due[procs]
        self.req_due[procs] = INF  # req_out stays set until the task is delivered
        f = self.pol.farmer
        served = min(n, self.pool)
        # serial service in arrival order from the exact arrival times
        s = xp.full(n, self.pol.serve)
        s[:served] += self.net.startup
        incl = m.scan(s, op="add")
        dep = incl + xp.maximum(m.scan(a - (incl - s), op="max"), self.farmer_free)
        self.farmer_free = float(dep[-1])
        self.charge(xp.asarray([f]), float(s.sum()))
        self.messages += n
        if served < n:
            self.finished_worker[procs[served:]] = True
        if served == 0:
            return
        procs = procs[:served]
        h = xp.arange(self.order_ptr, self.order_ptr + served, dtype=np.int64)
        self.order_ptr += served
        self.pool -= served
        self.state[h] = TRANSIT
        self.dest[h] = procs
        self.bsize[h] = 1
        # dep is after the start-up: the hand-out enters its first link then
        self.arrive[h] = self.message(
            xp.full(served, f, dtype=np.int64),
            procs,
            self.net.task_bytes,
            dep[:served] - self.net.startup,
            self.pol.routing_factor,
        )
        self.qcount[f] -= served
        self.transit_count += served
        self.migrations += served


class GradientProtocol:
    """Gradient Model and Extended Gradient."""

    def init_gradient(self) -> None:
        """Pressure surface, busyness and EG handshake state."""
        xp = self.xp
        self.next_status = 0
        self.pmax = self.net.diameter + 1
        # at time 0 every processor is idle: the gradient is flat at 0
        self.pressure = xp.zeros(self.P, dtype=np.int64)
        self.light_id = self.pid.copy()
        self.nb_p = xp.zeros(self.P, dtype=np.int64)
        self.nb_dir = xp.zeros(self.P, dtype=np.int64)
        self.hs_wait = xp.zeros(self.P, dtype=bool)
        self.spawn_pending = False
        self.busyness = xp.zeros(self.P)
        self.reserved = xp.zeros(self.P, dtype=bool)
        self.hs_state = xp.zeros(self.P, dtype=np.int8)  # EG: 0 none, 1 asked, 2 answered
        self.hs_target = xp.full(self.P, -1, dtype=np.int64)
        self.hs_due = xp.full(self.P, INF)
        self.hs_ok = xp.zeros(self.P, dtype=bool)

    def gradient_status(self):
        """Periodic status update: classify, propagate pressure one hop, move queued work."""
        if self.t < self.next_status:
            return
        pol = self.pol
        self.next_status = self.t + max(1, int(round(pol.interval / self.dt)))
        xp, m = self.xp, self.m
        rows, cols = self.net.shape
        # two-threshold classification of the smoothed busyness (Muniz & Zaluska section 5)
        light = (self.busyness < pol.low) & ~self.reserved & (self.qcount == 0)
        heavy = (self.busyness > pol.high) & (self.qcount > 0)
        # pressure = distance to the nearest light processor, one hop per update, by NEWS
        # shifts on the torus; the id of that processor travels with it (for EG)
        pr = self.pressure.reshape(rows, cols)
        lid = self.light_id.reshape(rows, cols)
        best_p = xp.full((rows, cols), self.pmax, dtype=np.int64)
        best_id = xp.full((rows, cols), -1, dtype=np.int64)
        best_dir = xp.full((rows, cols), -1, dtype=np.int64)
        dirs = ((1, 0), (-1, 0), (1, 1), (-1, 1))  # (offset, axis): from N, S, W, E
        for k, (off, ax) in enumerate(dirs):
            if self.net.shape[ax] == 1:
                continue  # a ring: that axis wraps onto the processor itself
            sp = m.shift(pr, off, ax, boundary="wrap")
            si = m.shift(lid, off, ax, boundary="wrap")
            better = (sp < best_p) | ((sp == best_p) & (si >= 0) & ((si < best_id) | (best_id < 0)))
            best_p = xp.where(better, sp, best_p)
            best_id = xp.where(better, si, best_id)
            best_dir = xp.where(better, k, best_dir)
        new_p = xp.where(light.reshape(rows, cols), 0, xp.minimum(best_p + 1, self.pmax))
        new_id = xp.where(
            light.reshape(rows, cols),
            self.pid.reshape(rows, cols),
            xp.where(new_p < self.pmax, best_id, -1),
        )
        self.pressure = new_p.reshape(-1)
        self.light_id = new_id.reshape(-1)
        self.nb_p = best_p.reshape(-1)
        self.nb_dir = best_dir.reshape(-1)
        self.hs_wait[:] = False  # fresh information: refused EG sources may ask again
        if self.is_eg:
            return
        # GM: heavy processors send one unit down the gradient to the least-pressure
        # neighbour, if that is lower than their own pressure
        go = heavy & (self.nb_p < self.pressure) & (self.nb_p < self.pmax)
        self.gm_send(go)

    _DVEC = ((-1, 0), (1, 0), (0, -1), (0, 1))  # neighbour reached by winning direction

    def gm_send(self, go):
        """GM: move one unit of work from each ``go`` processor to its downhill neighbour."""
        xp = self.xp
        if not bool(go.any()):
            return
        donors = xp.flatnonzero(go)
        dvec = xp.asarray(self._DVEC, dtype=np.int64)
        dests = self.net.neighbour(donors, dvec[self.nb_dir[donors]], xp)
        self.charge(donors, self.pol.spawn)
        depart = self.now() + self.debt[donors]
        self.give(donors, dests, depart, xp.ones(donors.size, dtype=np.int64), "tail")

    def gradient_spawn(self):
        """Spawn-tree placement, every tick (Muniz & Zaluska section 6.1).

        A busy processor holding a spawn bundle splits it and places the upper half at once:
        GM sends it to the downhill neighbour of its (possibly stale) gradient, with no
        check, so every spawn of one interval follows the same gradient (overflow); EG
        first asks the nearest light processor to check and reserve (:meth:`eg_ask`).
        """
        has_bundle = self.m.send(
            self.bsize > 1,
            self.owner,
            size=self.P,
            combine="or",
            mask=self.state == QUEUED,
            fill=False,
        )
        busy = self.cur >= 0
        if self.is_eg:
            # EG also places queued single tasks, but only when over-loaded
            heavy = (self.busyness > self.pol.high) & (self.qcount > 0)
            self.eg_ask(busy & (has_bundle | heavy))
            return
        go = busy & has_bundle & (self.nb_p < self.pmax)
        self.spawn_pending = bool(go.any())
        self.gm_send(go)

    def eg_ask(self, want):
        """EG: sources ask the nearest light processor to check and reserve itself."""
        xp = self.xp
        ask = (
            want
            & (self.hs_state == 0)
            & ~self.hs_wait
            & (self.light_id >= 0)
            & (self.light_id != self.pid)
        )
        n = self.m.count(ask)
        self.spawn_pending = n > 0
        if not n:
            return
        procs = xp.flatnonzero(ask)
        tg = self.light_id[procs]
        self.hs_target[procs] = tg
        self.hs_due[procs] = self.message(
            procs, tg, self.net.request_bytes, self.now() + self.debt[procs]
        )
        self.hs_state[procs] = 1
        self.charge(procs, self.net.startup)
        self.messages += n

    def eg_handshakes(self):
        """EG: targets answer check-and-reserve requests; sources act on the answers."""
        xp = self.xp
        now = self.now() + 1e-12
        # 1. requests arriving at their target: still light and not reserved? reserve.
        arr = (self.hs_state == 1) & (self.hs_due <= now)
        if bool(arr.any()):
            procs = xp.flatnonzero(arr)
            tg = self.hs_target[procs]
            # the check is of the target's instantaneous state: idle, nothing queued
            free = (self.cur < 0) & (self.qcount == 0) & ~self.reserved
            r = self.rank(self.hs_target, arr)[procs]
            ok = free[tg] & (r == 0)
            self.reserved[tg[ok]] = True
            self.charge(tg, self.pol.process + self.net.startup)
            self.hs_ok[procs] = ok
            # the answer leaves the target after processing: target -> source
            self.hs_due[procs] = self.message(
                tg, procs, self.net.request_bytes, self.hs_due[procs] + self.pol.process
            )
            self.hs_state[procs] = 2
            self.messages += int(procs.size)
        # 2. answers arriving at the source: on yes send the work straight to the target
        ans = (self.hs_state == 2) & (self.hs_due <= now)
        if bool(ans.any()):
            procs = xp.flatnonzero(ans)
            self.hs_state[procs] = 0
            self.hs_due[procs] = INF
            self.hs_wait[procs[~self.hs_ok[procs]]] = True
            yes = procs[self.hs_ok[procs]]
            if yes.size:
                tg = self.hs_target[yes]
                hops = self.net.hops(yes, tg, xp)
                ok = self.give(yes, tg, self.now() + self.debt[yes], hops, "tail")
                # a reserved target that gets nothing (source ran dry) is released
                self.reserved[tg[~ok]] = False


class DiffusionProtocol:
    """Diffusion and work stealing."""

    def init_diffusion(self) -> None:
        """Polling phases, request state and, for Diffusion, the neighbourhood queries."""
        xp = self.xp
        q = self.pol.quantum
        self.phase_off = xp.asarray(self.rng.uniform(0.0, q, self.P))
        self.lb_phase = xp.zeros(self.P, dtype=np.int8)
        self.lb_due = xp.full(self.P, INF)
        self.lb_target = xp.zeros(self.P, dtype=np.int64)
        self.round = xp.zeros(self.P, dtype=np.int64)
        self.offsets = xp.asarray(self.net.offsets())
        k = min(self.pol.neighbours, self.P - 1) if self.P > 1 else 1
        self.k = k
        if self.is_diff:
            self.q_due = xp.full((self.P, k), INF)
            self.q_reply = xp.full((self.P, k), INF)
            self.q_count = xp.zeros((self.P, k), dtype=np.int64)
            self.q_target = xp.zeros((self.P, k), dtype=np.int64)

    def start_requests(self):
        """Processors with an empty pool start asking for work (Barker & Chrisochoides 2005,
        section 2)."""
        xp = self.xp
        if self.P == 1:
            return
        want = (self.cur < 0) & (self.qcount == 0) & (self.lb_phase == 0)
        n = self.m.count(want)
        if not n:
            return
        procs = xp.flatnonzero(want)
        if self.is_ws:
            # one victim at random among the k nearest
            j = xp.asarray(self.rng.integers(0, self.k, n))
            tg = self.net.neighbour(procs, self.offsets[j], xp)
            leave = self.idle_time(procs)
            self.send_migration_request(procs, tg, leave, charged=True)
            self.charge_from(procs, self.net.startup, leave)
            return
        k = self.k
        L = self.offsets.shape[0]
        j = (self.round[procs][:, None] * k + xp.arange(k)[None, :]) % L
        tg = self.net.neighbour(procs[:, None], self.offsets[j], xp)
        # the k queries leave one after the other from the requester's CPU: the j-th after
        # j start-ups (its own start-up is in its arrival)
        first = self.idle_time(procs)
        leave = first[:, None] + self.net.startup * xp.arange(k)[None, :]
        src = xp.broadcast_to(procs[:, None], tg.shape)
        arrive = self.message(src, tg, self.net.request_bytes, leave)
        self.q_target[procs] = tg
        self.q_due[procs] = self.next_poll(tg, arrive)
        self.q_reply[procs] = INF
        self.q_count[procs] = 0
        self.lb_phase[procs] = 1
        self.charge_from(procs, k * self.net.startup, first)
        self.messages += n * k

    def diffusion_queries(self):
        """Answer due queries (at the target's poll) and decide when all replies are in."""
        xp, m = self.xp, self.m
        pol = self.pol
        now = self.now() + 1e-12
        due = self.q_due <= now
        if bool(due.any()):
            src, col = xp.nonzero(due)
            tg = self.q_target[src, col]
            spare = xp.maximum(self.qcount - pol.keep, 0)
            self.q_count[src, col] = m.get(spare, tg)
            # the reply leaves the target after processing: target -> requester
            self.q_reply[src, col] = self.message(
                tg, src, self.net.request_bytes, self.q_due[src, col] + pol.process
            )
            self.q_due[src, col] = INF
            self.charge(tg, pol.process + self.net.startup)
            self.messages += int(src.size)
        # all replies in: decide
        waiting = self.lb_phase == 1
        if not bool(waiting.any()):
            return
        last = self.q_reply.max(axis=1)
        ready = waiting & (last <= now)
        if not bool(ready.any()):
            return
        procs = xp.flatnonzero(ready)
        cnt = self.q_count[procs]
        col = xp.argmax(cnt, axis=1)
        best = cnt[xp.arange(procs.size), col]
        t_dec = last[procs] + self.k * pol.process_reply + pol.decision
        self.charge(procs, self.k * pol.process_reply + pol.decision)
        has = best > 0
        if bool(has.any()):
            pr = procs[has]
            tg = self.q_target[pr, col[has]]
            self.send_migration_request(pr, tg, t_dec[has])
        if bool((~has).any()):
            # no one had spare work: evolve the neighbourhood and ask again
            pr = procs[~has]
            self.round[pr] += 1
            self.lb_phase[pr] = 0
        self.q_reply[procs] = INF

    def send_migration_request(self, procs, tg, when, charged=False):
        arrive = self.message(procs, tg, self.net.request_bytes, when)
        self.lb_target[procs] = tg
        self.lb_due[procs] = self.next_poll(tg, arrive)
        self.lb_phase[procs] = 2
        if not charged:
            self.charge(procs, self.net.startup)
        self.messages += int(procs.size)

    def migration_requests(self):
        """Targets answer due migration requests at their poll: give a task or refuse."""
        xp = self.xp
        pol = self.pol
        now = self.now() + 1e-12
        # refusals that have come back: the requester may ask again
        back = (self.lb_phase == 3) & (self.lb_due <= now)
        if bool(back.any()):
            pr = xp.flatnonzero(back)
            self.lb_phase[pr] = 0
            self.lb_due[pr] = INF
            self.charge(pr, pol.process_reply)
            if self.is_diff:
                self.round[pr] += 1
        due = (self.lb_phase == 2) & (self.lb_due <= now)
        if not bool(due.any()):
            return
        r = self.rank(self.lb_target, due)
        procs = xp.flatnonzero(due)
        rk = r[procs]
        tg = self.lb_target[procs]
        self.charge(tg, pol.process)
        self.messages += int(procs.size)
        granted = xp.zeros(procs.size, dtype=bool)
        # serve requests to one target in rank order while it has spare unstarted tasks
        for level in range(int(rk.max()) + 1):
            sel = rk == level
            spare = self.qcount[tg[sel]] - pol.keep
            can = spare > 0
            if not bool(can.any()):
                continue
            idx = xp.flatnonzero(sel)[can]
            donors = tg[idx]
            hops = self.net.hops(donors, procs[idx], xp)
            depart = self.lb_due[procs[idx]] + pol.process
            ok = self.give(donors, procs[idx], depart, hops, "tail")
            granted[idx[ok]] = True
        gp = procs[granted]
        self.lb_phase[gp] = 4  # task on its way; deliver() resets
        self.lb_due[gp] = INF
        refused = procs[~granted]
        if refused.size:
            # the refusal leaves the target after processing: target -> requester
            self.lb_due[refused] = self.message(
                self.lb_target[refused],
                refused,
                self.net.request_bytes,
                self.lb_due[refused] + pol.process,
            )
            self.lb_phase[refused] = 3
            self.charge(self.lb_target[refused], self.net.startup)
            self.messages += int(refused.size)
