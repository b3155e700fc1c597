"""Each policy's actors on SimGrid (:mod:`mimd.simgrid_actors` has the world they share):
the farmer of Muniz & Zaluska 4.3, Diffusion and work stealing of Barker & Chrisochoides
sections 2 and 4, the Gradient Model and the Extended Gradient of Muniz & Zaluska 4.1
and 4.2. :func:`start` creates them."""

from __future__ import annotations

import math
import time

import numpy as np

from .simgrid_actors import (
    ANSWER,
    ASK,
    CHECK,
    QUERY,
    REFUSE,
    REPLY,
    REQUEST,
    TASK,
    World,
    draw,
)


def run_policy(costs, policy, network, owners, bundle, seed) -> dict:
    """Run the policy's actors on SimGrid (in the child process of :mod:`mimd.on_simgrid`)."""
    from .on_simgrid import load_simgrid

    sg = load_simgrid()
    w = World(sg, np.asarray(costs), policy, network, owners, bundle, seed)
    w.offsets = network.offsets()
    start(w)
    t0 = time.perf_counter()
    w.engine.run()
    wall = time.perf_counter() - t0
    finish = np.asarray(w.finish)
    return {
        "makespan": float(np.nanmax(finish)),
        "start": w.start,
        "finish": w.finish,
        "runner": w.runner,
        "migrations": w.migrations,
        "messages": w.messages,
        "done": w.done,
        "wall": wall,
    }


def start(w) -> None:
    """Create the actors of ``w``'s policy on its hosts."""
    name = w.pol.name
    if name == "farmer":
        _farmer(w)
    elif name in ("diffusion", "work-stealing"):
        for p in range(w.P):
            _actor(w, p, f"app{p}", _requester, w.inbox[p])
        phases = np.random.default_rng(w.seed).uniform(0.0, w.pol.quantum, w.P)
        for p in range(w.P):
            w.sg.Actor.create(f"poll{p}", w.hosts[p], _poller, w, p, float(phases[p]))
    elif name in ("gradient", "extended-gradient"):
        _Gradient(w).start()
    else:
        for p in range(w.P):
            _actor(w, p, f"app{p}", _run_queue, None)


def _actor(w, p, name, fn, mailbox):
    actor = w.sg.Actor.create(name, w.hosts[p], fn, w, p)
    if mailbox is not None:
        mailbox.set_receiver(actor)  # messages are taken in as they arrive
    return actor


def _run_queue(w, p) -> None:
    while w.queues[p]:
        w.run_task(p, w.take_head(p))


# ------------------------------------------------------------------------------------------
# the farmer
# ------------------------------------------------------------------------------------------
def _farmer(w) -> None:
    f, scale = w.pol.farmer, w.pol.routing_factor
    _actor(w, f, "server", _serve, w.inbox[f])
    if w.pol.farmer_works or w.P == 1:
        _actor(w, f, "farmer", _run_queue, None)
    for p in range(w.P):
        if p != f:
            _actor(w, p, f"worker{p}", _work, w.inbox[p])
    w.scale = scale


def _serve(w, f) -> None:
    """Requests in the order they arrive: ``serve`` and the hand-out's start-up, or with
    the pool empty ``serve`` only."""
    while True:
        _, worker, _ = w.inbox[f].get()
        if w.queues[f]:
            w.protocol(w.pol.serve + w.net.startup)
            h = w.take_head(f)
            w.send(f, worker, TASK, [h, 1], w.net.task_bytes, w.scale)
            w.migrations += 1
        else:
            w.protocol(w.pol.serve)


def _work(w, p) -> None:
    while True:
        w.control(p, w.pol.farmer, REQUEST, scale=w.scale)
        _, _, unit = w.inbox[p].get()
        for i in range(unit[1]):
            w.run_task(p, unit[0] + i)


# ------------------------------------------------------------------------------------------
# Diffusion and work stealing
# ------------------------------------------------------------------------------------------
def _requester(w, p) -> None:
    """Run the queue; when dry, query the neighbourhood (Diffusion) or ask a random victim
    (work stealing) for a task."""
    pol, k = w.pol, max(1, min(w.pol.neighbours, w.P - 1))
    rounds = attempts = 0
    while True:
        _run_queue(w, p)
        if w.P == 1:
            return
        if pol.name == "diffusion":
            first = rounds * k
            for j in range(k):
                w.control(p, w.neighbour(p, (first + j) % len(w.offsets)), QUERY, j)
            best, most = -1, 0
            for _ in range(k):
                _, _, (count, column) = w.inbox[p].get()
                if count > most or (count == most and column < best):
                    best, most = column, count
            w.protocol(k * pol.process_reply + pol.decision)
            if most == 0:
                rounds += 1
                continue
            target = w.neighbour(p, (first + best) % len(w.offsets))
        else:
            target = w.neighbour(p, draw(w.seed, p, attempts, k))
            attempts += 1
        w.control(p, target, ASK)
        kind, _, unit = w.inbox[p].get()
        if kind == TASK:
            w.protocol(w.net.unpack)
            w.queues[p].append(unit)
        else:
            w.protocol(pol.process_reply)
            rounds += 1


def _poller(w, p, phase) -> None:
    """Wake every quantum: the overhead, then the queries that have arrived, then the
    requests for tasks by requester, while there are tasks to spare."""
    pol, q = w.pol, w.pol.quantum
    n = 0
    while True:
        w.sg.this_actor.sleep_until(phase + n * q)
        now = w.sg.Engine.clock
        n += 1
        arrived = sorted((m for m in w.pending[p] if m[0] <= now), key=lambda m: m[0])
        w.pending[p] = [m for m in w.pending[p] if m[0] > now]
        w.protocol(pol.poll_overhead)
        for _, (kind, src, column) in arrived:
            if kind == QUERY:
                spare = max(w.count(p) - pol.keep, 0)
                w.protocol(pol.process + w.net.startup)
                w.send(p, src, REPLY, (spare, column), w.net.request_bytes)
        for _, (_, src, _) in sorted((m for m in arrived if m[1][0] == ASK), key=lambda m: m[1][1]):
            if w.count(p) - pol.keep <= 0 or not w.give(p, src, pol.process):
                w.protocol(pol.process + w.net.startup)
                w.send(p, src, REFUSE, None, w.net.request_bytes)


# ------------------------------------------------------------------------------------------
# the Gradient Model and the Extended Gradient
# ------------------------------------------------------------------------------------------
class _Gradient:
    """Busyness, the pressure surface, placement and handshakes on SimGrid.

    Each decision is taken when its event happens (a status update, a task's start, a
    unit's or an answer's arrival), from the state then; the protocol work it costs runs on
    the host's *system* actor, first come first served, and the message leaves when it is
    done, as a processor's CPU serves its protocol work.
    """

    DIRECTIONS = ((-1, 0), (1, 0), (0, -1), (0, 1))  # from N, S, W, E

    def __init__(self, w) -> None:
        self.w, self.pol = w, w.pol
        P = w.P
        self.busy = [False] * P
        self.b = [0.0] * P
        self.btime = [0.0] * P
        self.pressure = [0] * P
        self.light = list(range(P))
        self.nbp = [0] * P
        self.nbdir = [0] * P
        self.reserved = [False] * P
        self.hs = [False] * P
        self.hswait = [False] * P
        self.placing = [False] * P
        self.target = [-1] * P
        self.pmax = w.net.shape[0] // 2 + w.net.shape[1] // 2 + 1
        self.extended = w.pol.name == "extended-gradient"

    def start(self) -> None:
        w = self.w
        w.receive, w.handshake = self.receive, self
        for p in range(w.P):
            _actor(w, p, f"sys{p}", self.system, w.system[p])
        self.status_now(0.0)  # before any task starts, as the engine does
        for p in range(w.P):
            _actor(w, p, f"app{p}", self.app, w.inbox[p])
        w.sg.Actor.create("status", w.hosts[0], self.status)

    # the CPU's protocol work ------------------------------------------------------------------
    def later(self, p, work, then=None, *args) -> None:
        """``work`` seconds of protocol work on ``p``'s CPU after what is queued, then
        ``then(*args)``."""
        self.w.system[p].put_init((work, then, args), 0).detach()

    def system(self, w, p) -> None:
        while True:
            work, then, args = w.system[p].get()
            w.protocol(work)
            if then is not None:
                then(*args)

    def give(self, p, dst, before, then=None) -> bool:
        """Take a unit of ``p``'s work now; it leaves after ``before``, packing and the
        start-up."""
        w = self.w
        unit = w.take_for_migration(p)
        if unit is None:
            return False
        w.migrations += 1
        self.later(p, before + w.net.pack + w.net.startup, self.sent, p, dst, unit, then)
        return True

    def sent(self, p, dst, unit, then) -> None:
        self.w.send(p, dst, TASK, unit, self.w.net.task_bytes * unit[1])
        if then is not None:
            then(p)

    def control(self, p, dst, kind, payload) -> None:
        w = self.w
        w.messages += 1
        self.later(p, w.net.startup, w.send, p, dst, kind, payload, w.net.request_bytes)

    # busyness, and the application ---------------------------------------------------------
    def busyness(self, p, t) -> float:
        a = math.exp(-(t - self.btime[p]) / self.pol.window)
        return a * self.b[p] + (1 - a) * (1.0 if self.busy[p] else 0.0)

    def mark(self, p, busy) -> None:
        t = self.w.sg.Engine.clock
        self.b[p] = self.busyness(p, t)
        self.btime[p] = t
        self.busy[p] = busy

    def app(self, w, p) -> None:
        """Run the queue; when it is empty, wait for work to arrive."""
        while True:
            if not w.queues[p]:
                w.inbox[p].get()  # a unit has been queued
                continue
            h = w.take_head(p)
            self.mark(p, True)
            self.changed(p)
            w.run_task(p, h)
            self.mark(p, False)

    def receive(self, p, unit) -> None:
        """A unit arrives at ``p``: queued, its unpacking on ``p``'s CPU (its tasks wait for
        it), then a placement or a handshake."""
        w = self.w
        w.queues[p].append(unit)
        self.reserved[p] = False
        self.later(p, w.net.unpack)
        if self.busy[p]:
            self.changed(p)
        else:
            w.inbox[p].put_init(("work",), 0).detach()

    def changed(self, p) -> None:
        if self.extended:
            self.ask(p)
        else:
            self.place(p)

    # the Gradient Model ---------------------------------------------------------------------
    def place(self, p) -> None:
        """Place half a bundle downhill; the next placement when its work is done."""
        w = self.w
        if self.placing[p] or not self.busy[p] or not any(u[1] > 1 for u in w.queues[p]):
            return
        if self.nbp[p] >= self.pmax or self.nbdir[p] < 0:
            return
        if self.give(p, self.downhill(p), self.pol.spawn, self.placed):
            self.placing[p] = True

    def placed(self, p) -> None:
        self.placing[p] = False
        self.changed(p)

    def downhill(self, p) -> int:
        rows, cols = self.w.net.shape
        dr, dc = self.DIRECTIONS[self.nbdir[p]]
        return ((p // cols + dr) % rows) * cols + (p % cols + dc) % cols

    # the Extended Gradient ------------------------------------------------------------------
    def ask(self, p) -> None:
        """Ask the nearest light processor to check it is still light and reserve itself."""
        w = self.w
        tg = self.light[p]
        if not self.busy[p] or self.hs[p] or self.hswait[p] or tg < 0 or tg == p:
            return
        heavy = self.busyness(p, w.sg.Engine.clock) > self.pol.high and w.count(p) > 0
        if any(u[1] > 1 for u in w.queues[p]) or heavy:
            self.hs[p], self.target[p] = True, tg
            self.control(p, tg, CHECK, None)

    def check(self, q, src) -> None:
        ok = not self.busy[q] and self.w.count(q) == 0 and not self.reserved[q]
        self.reserved[q] = self.reserved[q] or ok
        w = self.w
        w.messages += 1
        self.later(q, self.pol.process + w.net.startup, w.send, q, src, ANSWER, ok,
                   w.net.request_bytes)  # fmt: skip

    def answer(self, p, ok) -> None:
        self.hs[p] = False
        if not ok:
            self.hswait[p] = True
            return
        if not self.give(p, self.target[p], 0.0):
            self.reserved[self.target[p]] = False
        self.ask(p)

    # status updates ---------------------------------------------------------------------------
    def status(self) -> None:
        w = self.w
        n = 1
        while True:
            w.sg.this_actor.sleep_until(n * self.pol.interval)
            n += 1
            t = w.sg.Engine.clock
            self.status_now(t)
            for p in range(w.P):
                if self.extended:
                    self.hswait[p] = False
                    self.ask(p)
                    continue
                over = self.busyness(p, t) > self.pol.high and w.count(p) > 0
                if over and self.nbp[p] < self.pressure[p] and self.nbp[p] < self.pmax:
                    self.give(p, self.downhill(p), self.pol.spawn)
                self.place(p)

    def status_now(self, t) -> None:
        """Classify, and take one more than the neighbours' least pressure."""
        w = self.w
        rows, cols = w.net.shape
        new_p, new_id = [0] * w.P, [0] * w.P
        for p in range(w.P):
            best_p, best_id, best_dir = self.pmax, -1, -1
            for k, (dr, dc) in enumerate(self.DIRECTIONS):
                if (k < 2 and rows == 1) or (k >= 2 and cols == 1):
                    continue
                q = ((p // cols + dr) % rows) * cols + (p % cols + dc) % cols
                sp, si = self.pressure[q], self.light[q]
                if sp < best_p or (sp == best_p and si >= 0 and (si < best_id or best_id < 0)):
                    best_p, best_id, best_dir = sp, si, k
            b = self.busyness(p, t)
            light = b < self.pol.low and not self.reserved[p] and w.count(p) == 0
            new_p[p] = 0 if light else min(best_p + 1, self.pmax)
            new_id[p] = p if light else (best_id if new_p[p] < self.pmax else -1)
            self.nbp[p], self.nbdir[p] = best_p, best_dir
        self.pressure, self.light = new_p, new_id
