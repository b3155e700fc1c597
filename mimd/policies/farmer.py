"""The farmer (master and workers) of Muniz & Zaluska section 4.3: workers ask, the farmer
serves one request at a time."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import INF, TRANSIT, Policy, check_nonneg

__all__ = ["Farmer"]


@dataclass(frozen=True)
class Farmer(Policy):
    """Master/worker farm (Muniz & Zaluska section 4.3, Pritchard et al. 1987).

    Processor ``farmer`` holds every task and hands one out per request, in task order; a
    worker asks when it runs dry. The farmer serves requests one at a time (``serve`` seconds
    of its CPU each), which is the centralised bottleneck that grows with P. With
    ``farmer_works`` the farmer's processor also runs tasks between requests (the control
    run of Muniz & Zaluska section 4.4 is this policy on a single processor).
    ``routing_factor`` multiplies the wire time of its messages (per hop and per byte, so
    also how long they hold each link): 1 for "farmer + VCR", above 1 for the "farmer
    original" whose messages were forwarded by user-level processes.

    Each hand-out costs the farmer ``serve`` and the message start-up on its CPU; not the
    network's ``pack`` / ``unpack`` (uninstalling and installing a process or mobile object,
    Barker & Chrisochoides, section 4.5): the farmer sends batches of data to worker
    processes placed at compile time (Muniz & Zaluska 4.3), whose preparation ``serve``
    stands for.
    """

    serve: float = 2e-4
    farmer: int = 0
    farmer_works: bool = True
    routing_factor: float = 1.0
    name = "farmer"
    default_placement = "root"

    def __post_init__(self) -> None:
        check_nonneg(self, "serve", "routing_factor")
        if isinstance(self.farmer, bool) or not isinstance(self.farmer, int) or self.farmer < 0:
            raise ValueError(f"Farmer.farmer must be a processor id >= 0, got {self.farmer!r}")

    # where the tasks start: the farmer holds every task by definition ---------------------
    def owners(self, n, p, placement):
        if self.farmer >= p:
            raise ValueError(f"farmer processor {self.farmer} not in a machine of {p}")
        return np.full(n, self.farmer, dtype=np.int64)

    # the protocol ------------------------------------------------------------------------
    def setup(self, sim) -> None:
        """The farmer's pool and the workers' outstanding requests."""
        xp = sim.xp
        sim.order_ptr = 0  # next task of the farmer's pool (task order)
        sim.pool = sim.N
        sim.req_due = xp.full(sim.P, INF)  # arrival of a worker's request at the farmer
        sim.req_out = xp.zeros(sim.P, dtype=bool)
        sim.finished_worker = xp.zeros(sim.P, dtype=bool)
        sim.farmer_free = 0.0

    def protocol(self, sim) -> None:
        self.serve_requests(sim)

    def dispatchers(self, sim, waiting):
        """The farmer, when it also works, takes the next task of its pool itself; the
        workers take the head of their queue."""
        f = self.farmer
        works = self.farmer_works or sim.P == 1
        if works and sim.pool > 0 and int(sim.cur[f]) < 0:
            h = sim.xp.asarray([sim.order_ptr])
            sim.order_ptr += 1
            sim.pool -= 1
            sim.start_tasks(sim.xp.asarray([f]), h)
        return waiting & (sim.pid != f)

    def after_dispatch(self, sim) -> None:
        self.ask(sim)

    def delivered(self, sim, procs) -> None:
        sim.req_out[procs] = False

    def unpack_cost(self, network) -> float:
        # hand-outs carry data to worker processes placed at compile time: nothing to install
        return 0.0

    def next_due(self, sim) -> float:
        return float(sim.req_due.min())

    # steps -------------------------------------------------------------------------------
    def ask(self, sim) -> None:
        """Workers that ran dry ask the farmer for a task (Muniz & Zaluska section 4.3)."""
        xp = sim.xp
        f = self.farmer
        want = (
            (sim.cur < 0) & (sim.qcount == 0) & ~sim.req_out & ~sim.finished_worker & (sim.pid != f)
        )
        n = sim.m.count(want)
        if not n:
            return
        procs = xp.flatnonzero(want)
        # the request leaves when the worker went idle (exact, not the tick after); its
        # start-up is on the worker's CPU and counted once in the arrival
        leave = sim.idle_time(procs)
        sim.req_due[procs] = sim.message(
            procs, f, sim.net.request_bytes, leave, self.routing_factor
        )
        sim.req_out[procs] = True
        sim.charge_from(procs, sim.net.startup, leave)
        sim.messages += n

    def serve_requests(self, sim) -> None:
        """The farmer answers arrived requests one at a time, in arrival order.

        Each request costs the farmer ``serve`` of CPU and, when it hands out a task, the
        start-up of the hand-out message: a FIFO server whose departures are the max-plus
        recurrence ``c_i = max(a_i, c_{i-1}) + s_i`` from the exact arrivals ``a_i``
        (an add-scan and a max-scan). The hand-out then crosses the links. Not charged:
        ``pack`` (and the worker's ``unpack``), the cost of uninstalling and packing a
        *process* (Barker & Chrisochoides, section 4.5): the farmer of Muniz & Zaluska 4.3 sends
        batches of data to worker processes placed at compile time, whose preparation is its
        ``serve``.
        """
        xp, m = sim.xp, sim.m
        now = sim.now() + 1e-12
        arrived = sim.req_out & (sim.req_due <= now)
        n = m.count(arrived)
        if not n:
            return
        procs = xp.flatnonzero(arrived)
        procs = procs[xp.lexsort(xp.stack([procs.astype(np.float64), sim.req_due[procs]]))]
        a = sim.req_due[procs]
        sim.req_due[procs] = INF  # req_out stays set until the task is delivered
        f = self.farmer
        served = min(n, sim.pool)
        # serial service in arrival order from the exact arrival times
        s = xp.full(n, self.serve)
        s[:served] += sim.net.startup
        incl = m.scan(s, op="add")
        dep = incl + xp.maximum(m.scan(a - (incl - s), op="max"), sim.farmer_free)
        sim.farmer_free = float(dep[-1])
        sim.charge(xp.asarray([f]), float(s.sum()))
        sim.messages += n
        if served < n:
            sim.finished_worker[procs[served:]] = True
        if served == 0:
            return
        procs = procs[:served]
        h = xp.arange(sim.order_ptr, sim.order_ptr + served, dtype=np.int64)
        sim.order_ptr += served
        sim.pool -= served
        sim.state[h] = TRANSIT
        sim.dest[h] = procs
        sim.bsize[h] = 1
        # dep is after the start-up: the hand-out enters its first link then
        sim.arrive[h] = sim.message(
            xp.full(served, f, dtype=np.int64),
            procs,
            sim.net.task_bytes,
            dep[:served] - sim.net.startup,
            self.routing_factor,
        )
        sim.qcount[f] -= served
        sim.transit_count += served
        sim.migrations += served
