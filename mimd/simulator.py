"""Time-stepped, data-parallel simulation of a message-passing machine on the SIMD machine.

The MIMD machines of Muniz & Zaluska and of Barker & Chrisochoides are simulated
*data-parallel*: all processor state lives in arrays of length P (one virtual processor of our SIMD
machine per simulated processor) and all task state in arrays of length N (one VP per task). Time
advances in ticks of ``Network.tick`` seconds; ticks in which nothing can happen (no task finishes,
no message arrives, no status update is due) are skipped, so the cost is proportional to the
number of *event ticks*, not to the simulated time. Every tick runs the same SIMD program:

1. progress: each processor pays its CPU debt (message start-ups, packing, polling-thread
   wake-ups) and spends the rest of the tick on its running task (elementwise);
2. deliveries: migrated work whose message has arrived joins the receiver's queue;
3. protocol: requests, replies and handshakes that are due are answered; requests travel as
   router messages (``machine.send`` / ``machine.get``), several requests to one target are
   ranked with a scan;
4. status: the Gradient Model's pressures propagate one hop per interval by mesh shifts
   (``machine.shift`` on the torus);
5. dispatch: idle processors take the head of their queue (a segmented min by router send).

Messages cross the torus links as resources (:mod:`mimd.links`; ``Network.contention``):
their arrivals include the time they queue for busy links. Every message's start-up is paid
once, on the sender's CPU, before it enters its first link (:meth:`Simulation.message`).

Event times are exact where a chain of messages decides them: a request leaves when its
processor went idle inside the step (not at the tick after), the farmer serves requests
from their exact arrivals, delivered work starts at its arrival, and a message that arrives
within the step it was sent in is handled in that step (an event-driven inner step of up to
:attr:`Simulation.INNER` passes). What remains rounded to the tick (``Network.tick``, default
1/200 of the mean task): CPU debt (start-ups, services, packing) is paid from the tick it
was charged at, so a processor that both runs tasks and serves (the working farmer, a
donor) resumes its task up to a tick late; decisions on state (GM/EG status, a refused
requester asking again, a polling thread's view of its queue) see the state at the tick;
and more than :attr:`Simulation.INNER` chained messages in one step wait for the next tick. The
hand-computed tests (``tests/mimd/test_links.py``) are exact to rounding with a tick 25
times the messages; without them an event-driven check found 1.2 % from the tick on
coarse tasks.

Random choices (work-stealing victims, poll phases) come from one seeded generator, so a
run is deterministic for a given seed. Processor and task ids decide every tie.

The simulator names no policy: steps 3 and 4, and the policy's share of the others (the
initial placement, polling overheads, what a delivery ends), are the methods of the
:class:`mimd.Policy` it is given (:mod:`mimd.policies`), called in this fixed order each
tick. What stays here is :func:`simulate` and the steps every policy shares -- progress,
event times, migration, delivery, dispatch -- which read and write the same task and
processor arrays; the result record is :class:`SimResult` (:mod:`mimd.result`).
"""

from __future__ import annotations

import math

import numpy as np

from .links import Links
from .network import Network, torus_shape
from .policies.base import (
    DONE,
    INF,
    MEMBER,
    QUEUED,
    RUNNING,
    TRANSIT,
    Policy,
    initial_placement,
)
from .result import SimResult

__all__ = ["SimResult", "simulate", "initial_placement"]


def simulate(  # noqa: PLR0913 (the public signature)
    costs,
    policy: Policy,
    *,
    network: Network | None = None,
    processors: int | None = None,
    machine=None,
    placement: str | None = None,
    bundle: bool | None = None,
    seed: int = 0,
    app_messages: float = 0.0,
    app_bytes: int = 0,
    max_ticks: int = 10_000_000,
) -> SimResult:
    """Run ``costs`` (one entry per task, seconds) on the simulated MIMD machine.

    Parameters
    ----------
    costs : array_like of float
        Execution time of each task on one processor (seconds, > 0).
    policy : Policy
        :class:`Farmer`, :class:`GradientModel`, :class:`ExtendedGradient`,
        :class:`Diffusion`, :class:`WorkStealing` or :class:`NoBalancing`.
    network : Network, optional
        Topology and costs; default ``Network(shape=torus_shape(processors))``.
    processors : int, optional
        Number of processors when ``network`` is not given (default 16).
    machine : simd.Machine, optional
        The SIMD machine that runs the simulation; default a NumPy ``Machine`` shaped like
        the torus.
    placement : {"block", "cyclic", "root"}, optional
        Initial placement of the tasks; default the policy's (root for Muniz & Zaluska's policies).
    bundle : bool, optional
        With root placement, start from one spawn bundle of all tasks that the gradient
        policies split in halves as they place it (Muniz & Zaluska's multiple-spawning tree);
        default True for the gradient policies, False otherwise.
    seed : int
        Seed of the random choices (work-stealing victims, polling phases).
    app_messages, app_bytes : float, int
        Messages of ``app_bytes`` bytes each task sends while it runs (Barker & Chrisochoides,
        section 6.2: four neighbours); each costs the sender ``startup + app_bytes * per_byte`` of
        CPU.
    max_ticks : int
        Safety limit on simulated event ticks.

    Returns
    -------
    SimResult

    Examples
    --------
    >>> from mimd import Farmer, simulate
    >>> r = simulate([1.0] * 8, Farmer(), processors=4)
    >>> bool(r.runs.tolist() == [1] * 8), round(r.makespan, 1)
    (True, 2.0)
    """

    if not isinstance(policy, Policy):
        raise TypeError(f"policy must be a Policy instance, got {type(policy).__name__}")
    host = np.asarray(costs, dtype=np.float64)
    if host.ndim != 1 or host.size == 0:
        raise ValueError(f"costs must be a non-empty 1-D array, got shape {host.shape}")
    if not np.all(np.isfinite(host)) or np.any(host <= 0):
        raise ValueError("costs must be finite and > 0 (seconds per task)")
    if network is None:
        p = 16 if processors is None else processors
        network = Network(shape=torus_shape(p))
    elif processors is not None and processors != network.p:
        raise ValueError(f"processors={processors} disagrees with network of {network.p}")
    if not (app_messages >= 0 and app_bytes >= 0):
        raise ValueError("app_messages and app_bytes must be >= 0")
    if not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an integer, got {type(seed).__name__}")
    if machine is None:
        from simd import Machine

        machine = Machine(pes=network.shape, backend="numpy")
    app = app_messages * (network.startup + app_bytes * network.per_byte)
    with machine.phase("mimd-simulation") as record:
        sim = Simulation(host, policy, network, machine, placement, bundle, int(seed), app)
        sim.run(max_ticks)
        res = sim.result()
    res.record = record
    return res


class Simulation:
    """State and SIMD program of one simulation (see the module docstring).

    The policy's steps (:class:`mimd.Policy`) are called with this object: they read and
    write its task and processor arrays, keep their own state on it (made by
    ``policy.setup``) and use its shared steps (:meth:`message`, :meth:`charge`,
    :meth:`give`, :meth:`rank`, ...).
    """

    def __init__(self, costs, policy, net, m, placement, bundle, seed, app=0.0):
        self.m = m
        self.app = float(app)  # CPU seconds of the application's own messages per task
        xp = self.xp = m.xp
        self.pol = policy
        self.net = net
        self.P = P = net.p
        self.N = N = costs.size
        self.rng = np.random.default_rng(seed)
        mean = float(costs.mean())
        self.dt = net.tick if net.tick is not None else mean / 200.0
        if placement is None:
            placement = policy.default_placement
        own = policy.owners(N, P, placement)
        if bundle is None:
            bundle = policy.bundles(placement)
        # tasks -------------------------------------------------------------------------
        self.cost = xp.asarray(costs)
        self.owner = xp.asarray(own)
        self.state = xp.zeros(N, dtype=np.int8)
        self.bsize = xp.ones(N, dtype=np.int64)
        if bundle:
            # one spawn bundle per processor's contiguous share: head = first task
            heads = np.ones(N, dtype=bool)
            heads[1:] = own[1:] != own[:-1]
            idx = np.flatnonzero(heads)
            sizes = np.diff(np.append(idx, N))
            b = np.zeros(N, dtype=np.int64)
            b[idx] = sizes
            st = np.full(N, MEMBER, dtype=np.int8)
            st[idx] = QUEUED
            self.bsize = xp.asarray(b)
            self.state = xp.asarray(st)
        self.qkey = xp.arange(N, dtype=np.int64)  # queue order: smaller runs first
        self.seq = N
        self.dest = xp.zeros(N, dtype=np.int64)
        self.arrive = xp.full(N, INF)
        self.runs = xp.zeros(N, dtype=np.int64)
        self.start = xp.full(N, np.nan)
        self.finish = xp.full(N, np.nan)
        self.runner = xp.full(N, -1, dtype=np.int64)
        # processors --------------------------------------------------------------------
        self.pid = xp.arange(P, dtype=np.int64)
        self.cur = xp.full(P, -1, dtype=np.int64)
        self.rem = xp.zeros(P)
        self.credit = xp.zeros(P)
        self.debt = xp.zeros(P)
        self.busy = xp.zeros(P)
        self.over = xp.zeros(P)
        # when each processor's CPU last became free (no task, no debt): exact event times
        self.free_at = xp.zeros(P)
        self.links = Links(net, m)
        self.qcount = xp.asarray(np.bincount(own, minlength=P).astype(np.int64))
        self.transit_count = 0
        self.done = 0
        self.migrations = 0
        self.messages = 0
        self.t = 0  # ticks
        self.ticks = 0
        self.work = float(costs.sum()) + N * self.app
        policy.setup(self)

    # helpers -----------------------------------------------------------------------------
    def now(self) -> float:
        return self.t * self.dt

    def message(self, src, dst, nbytes, leave, scale: float = 1.0):
        """Arrival of messages whose senders' CPUs start sending at ``leave``.

        The sender's CPU pays the start-up (the caller charges it), then the message enters
        its first link: the start-up is counted once, as in :meth:`Network.message_time`.
        A message to the sender itself is local and free (arrives at ``leave``).
        """
        xp = self.xp
        src = xp.asarray(src)
        hops = self.net.hops(src, xp.asarray(dst), xp)
        leave = xp.broadcast_to(xp.asarray(leave, dtype=np.float64), hops.shape)
        arr = self.links.send(src, dst, nbytes, leave + self.net.startup, scale)
        return xp.where(hops > 0, arr, leave)

    def idle_time(self, procs):
        """When processors ``procs`` (idle now) can send: the instant they went idle inside
        the last step (not the tick after it), or when their CPU debt is paid."""
        xp = self.xp
        debt = self.debt[procs]
        return xp.where(debt > 0, self.now() + debt, self.now() - self.credit[procs])

    def charge_from(self, procs, amount, begin):
        """CPU work ``amount`` that processors ``procs`` started at ``begin`` (each at most
        once): the part before now is paid already (an idle CPU sent a message the moment it
        went idle, inside the last step), the rest is debt."""
        xp = self.xp
        now = self.now()
        amount = xp.broadcast_to(xp.asarray(amount, dtype=np.float64), procs.shape)
        absorbed = xp.clip(now - begin, 0.0, amount)
        self.over[procs] += absorbed
        self.debt[procs] += amount - absorbed
        end = begin + amount
        self.credit[procs] = xp.where(end <= now, now - end, 0.0)
        self.free_at[procs] = xp.where(end <= now, end, self.free_at[procs])

    def to_tick(self, x):
        """Tick at or after time ``x`` (arrays allowed)."""
        return self.xp.ceil(self.xp.asarray(x) / self.dt - 1e-9)

    def rank(self, target, mask):
        """Rank of each masked sender among senders to the same target (by sender id).

        A segmented enumerate over the senders sorted by target: rank 0 is served first.
        """
        xp = self.xp
        r = xp.full(target.shape, -1, dtype=np.int64)
        idx = xp.flatnonzero(mask)
        if idx.size == 0:
            return r
        order = idx[xp.argsort(target[idx], kind="stable")]
        tg = target[order]
        first = xp.ones(order.size, dtype=bool)
        first[1:] = tg[1:] != tg[:-1]
        pos = xp.arange(order.size)
        start = self.m.scan(xp.where(first, pos, 0), op="max")
        r[order] = pos - start
        return r

    # run ---------------------------------------------------------------------------------
    def run(self, max_ticks):
        self.pol.protocol(self)
        self.dispatch()
        self.pol.after_dispatch(self)
        while self.done < self.N:
            if self.ticks >= max_ticks:
                raise RuntimeError(
                    f"simulation did not finish in {max_ticks} event ticks "
                    f"({self.done}/{self.N} tasks done at t={self.now():.4g} s)"
                )
            nxt = self.next_event()
            if not math.isfinite(nxt):
                raise RuntimeError(
                    f"simulation deadlocked at t={self.now():.4g} s with "
                    f"{self.N - self.done} tasks left (policy {self.pol.name})"
                )
            step = max(1, int(nxt) - self.t)
            self.advance(step)
            # event-driven inner step: a message sent in this step that has already arrived
            # (far shorter than a tick) is handled now, at its exact time, and so is what it
            # causes (a request served, a hand-out delivered and started), instead of one
            # tick later each
            for _ in range(self.INNER):
                self.deliver()
                # an idle processor starts delivered work before its polling thread can give
                # it away again (else a task can bounce between idle processors for ever)
                self.dispatch()
                self.pol.protocol(self)
                self.dispatch()
                self.pol.after_dispatch(self)
                if self.next_due() > self.now() + 1e-12:
                    break
            self.ticks += 1

    #: most passes of the inner step per tick (what is left waits for the next tick)
    INNER = 8

    def next_due(self) -> float:
        """Earliest exact time of a pending message event (arrival, request, reply)."""
        due = self.pol.next_due(self)
        if self.transit_count:
            due = min(due, float(self.arrive.min()))
        return due

    def next_event(self) -> float:
        """Next tick at which something happens: a task ends, a message event is due, or
        the policy acts."""
        t = self.t
        cands = [INF, float(self.to_tick(self.next_due())), self.pol.next_tick(self)]
        running = self.cur >= 0
        if bool(running.any()):
            fin = self.to_tick(t * self.dt + self.debt[running] + self.rem[running])
            cands.append(float(fin.min()))
        c = min(cands)
        return max(c, t + 1) if math.isfinite(c) else c

    def advance(self, step):
        """Progress all processors by ``step`` ticks: pay CPU debt, then run the task."""
        xp = self.xp
        t0 = self.t * self.dt
        self.t += step
        t1 = self.t * self.dt
        span = t1 - t0
        self.pol.before_progress(self, t0, t1)
        owed = self.debt
        # idle processors whose debt ends inside the step are free from then on
        ends = (self.cur < 0) & (owed > 0) & (owed <= span)
        self.free_at = xp.where(ends, t0 + owed, self.free_at)
        avail = xp.maximum(span - owed, 0.0)
        self.over += xp.minimum(owed, span)
        self.debt = xp.maximum(owed - span, 0.0)
        running = self.cur >= 0
        self.credit = xp.zeros(self.P)
        use = xp.where(running, xp.minimum(avail, self.rem), 0.0)
        self.busy += use
        self.rem = self.rem - use
        self.pol.after_progress(self, span, use)
        fin = running & (self.rem <= 1e-12)
        nf = self.m.count(fin)
        if nf:
            tasks = self.cur[fin]
            # finish time inside the step: after the debt and the remaining work
            ft = t0 + xp.minimum(owed[fin], span) + use[fin]
            self.finish[tasks] = xp.minimum(ft, t1)
            self.free_at[fin] = xp.minimum(ft, t1)
            # the rest of the tick is not lost: a next task started now began at ft
            self.credit[fin] = xp.maximum(t1 - ft, 0.0)
            self.state[tasks] = DONE
            self.cur = xp.where(fin, -1, self.cur)
            self.rem = xp.where(fin, 0.0, self.rem)
            self.done += nf

    def charge(self, procs, amount):
        """Add CPU debt (balancing overhead) to processors ``procs`` (router add)."""
        xp = self.xp
        amount = xp.broadcast_to(xp.asarray(amount, dtype=np.float64), procs.shape)
        self.debt = self.m.send(amount, procs, into=self.debt, combine="add")

    # migration ---------------------------------------------------------------------------
    def give(self, donors, dests, depart, which="tail"):
        """Each donor sends one unit of work (a task, or half its largest bundle) to dest.

        donors, dests, depart: equal-length arrays over the donating processors (each
        donor at most once). Donors pay uninstall+pack and the start-up; the work is in
        transit until ``depart + message time``. Returns a mask of donors that had work.
        """
        xp, m, N = self.xp, self.m, self.N
        if donors.size == 0:
            return xp.zeros(0, dtype=bool)
        is_donor = xp.zeros(self.P, dtype=bool)
        is_donor[donors] = True
        queued = (self.state == QUEUED) & is_donor[self.owner]
        tid = xp.arange(N, dtype=np.int64)
        if which == "tail":
            # the last queued unit (largest qkey); bundles first since they hold more work
            key = ((self.bsize > 1) * (1 << 40) + self.qkey) * N + tid
            best = m.send(key, self.owner, size=self.P, combine="max", mask=queued, fill=-1)
        else:
            key = self.qkey * N + tid
            best = m.send(
                key,
                self.owner,
                size=self.P,
                combine="min",
                mask=queued,
                fill=np.iinfo(np.int64).max,
            )
        pick = best[donors]
        ok = (pick >= 0) & (pick < np.iinfo(np.int64).max)
        if not bool(ok.any()):
            return ok
        h = pick[ok] % N
        d, dep, src = dests[ok], depart[ok], donors[ok]
        s = self.bsize[h]
        half = s // 2
        split = s > 1
        # a bundle of s tasks keeps ceil(s/2), the upper floor(s/2) travel (spawn tree)
        g = xp.where(split, h + (s - half), h)
        size = xp.where(split, half, 1)
        self.bsize[h] = xp.where(split, s - half, self.bsize[h])
        self.bsize[g] = size
        self.state[g] = TRANSIT
        self.dest[g] = d
        # uninstall and pack, then the start-up, on the donor's CPU; then the links
        self.arrive[g] = self.message(src, d, self.net.task_bytes * size, dep + self.net.pack)
        self.qcount = m.send(-size, src, into=self.qcount, combine="add")
        self.charge(src, self.net.pack + self.net.startup)
        self.transit_count += int(size.size)
        self.migrations += int(size.size)
        return ok

    def deliver(self):
        """Work whose message has arrived joins the tail of the receiver's queue."""
        if not self.transit_count:
            return
        xp, m = self.xp, self.m
        now = self.now() + 1e-12
        arr = (self.state == TRANSIT) & (self.arrive <= now)
        n = m.count(arr)
        if not n:
            return
        g = xp.flatnonzero(arr)
        d = self.dest[g]
        self.owner[g] = d
        self.state[g] = QUEUED
        self.qkey[g] = self.seq + xp.arange(n)
        self.seq += n
        self.qcount = m.send(self.bsize[g], d, into=self.qcount, combine="add")
        self.unpack(d, self.arrive[g])
        self.arrive[g] = INF
        self.transit_count -= n
        self.pol.delivered(self, d)

    def unpack(self, d, arrive):
        """Receivers ``d`` unpack and install work that arrived at ``arrive`` (CPU time).

        An idle receiver with no debt starts unpacking at the arrival itself (or when its
        CPU went free, if later), not at the tick that processes the delivery: what is left
        of the tick after the unpack is credit for the task it starts now. A busy receiver
        is charged the unpack as debt (the policy's :meth:`~mimd.Policy.unpack_cost` a unit).
        """
        xp, m = self.xp, self.m
        cost = self.pol.unpack_cost(self.net)
        first = m.send(arrive, d, size=self.P, combine="min", fill=INF)
        cnt = m.send(xp.ones(d.size, dtype=np.int64), d, size=self.P, combine="add")
        procs = xp.flatnonzero(cnt > 0)
        idle = (self.cur[procs] < 0) & (self.debt[procs] <= 0)
        now = self.now()
        u = cnt[procs] * cost
        begin = xp.maximum(first[procs], self.free_at[procs])
        ready = begin + u
        absorbed = xp.where(idle, xp.clip(now - begin, 0.0, u), 0.0)
        self.over[procs] += absorbed
        self.debt[procs] += u - absorbed
        self.credit[procs] = xp.where(idle, xp.maximum(now - ready, 0.0), 0.0)

    # dispatch ----------------------------------------------------------------------------
    def dispatch(self):
        """Idle processors take the head of their queue (splitting a bundle if needed)."""
        xp, m, N = self.xp, self.m, self.N
        need = self.pol.dispatchers(self, (self.cur < 0) & (self.qcount > 0))
        if not bool(need.any()):
            return
        queued = (self.state == QUEUED) & need[self.owner]
        tid = xp.arange(N, dtype=np.int64)
        big = np.iinfo(np.int64).max
        best = m.send(
            self.qkey * N + tid, self.owner, size=self.P, combine="min", mask=queued, fill=big
        )
        procs = xp.flatnonzero(need)
        h = best[procs] % N
        s = self.bsize[h]
        split = s > 1
        if bool(split.any()):
            hs, ss = h[split], s[split]
            self.bsize[hs + 1] = ss - 1
            self.state[hs + 1] = QUEUED
            self.qkey[hs + 1] = self.qkey[hs]
            self.owner[hs + 1] = self.owner[hs]
        self.bsize[h] = 1
        self.start_tasks(procs, h)

    def start_tasks(self, procs, h):
        self.state[h] = RUNNING
        self.runs = self.m.send(
            self.xp.ones(h.size, dtype=np.int64), h, into=self.runs, combine="add"
        )
        xp = self.xp
        work = self.cost[h] + self.app
        # credit: the processor went idle inside the last tick; with no debt to pay it
        # started this task at that moment (keeps back-to-back tasks exact)
        c = xp.where(self.debt[procs] > 0, 0.0, xp.minimum(self.credit[procs], 0.5 * work))
        self.credit[procs] = 0.0
        self.busy[procs] += c
        self.start[h] = self.now() - c
        self.runner[h] = procs
        self.cur[procs] = h
        self.rem[procs] = work - c
        self.qcount[procs] -= 1

    # result ------------------------------------------------------------------------------
    def result(self) -> SimResult:
        m = self.m
        finish = m.asnumpy(self.finish)
        makespan = float(np.nanmax(finish)) if finish.size else 0.0
        P = self.P
        ps = P * makespan
        return SimResult(
            policy=self.pol.name,
            processors=P,
            tasks=self.N,
            makespan=makespan,
            work=self.work,
            processor_seconds=ps,
            utilisation=self.work / ps if ps > 0 else 1.0,
            runs=m.asnumpy(self.runs),
            start=m.asnumpy(self.start),
            finish=finish,
            runner=m.asnumpy(self.runner),
            busy=m.asnumpy(self.busy),
            overhead=m.asnumpy(self.over),
            migrations=self.migrations,
            messages=self.messages,
            ticks=self.ticks,
            extra={
                "tick": self.dt,
                "contention": self.net.contention,
                "link_busy_max": float(m.asnumpy(self.links.busy).max()) if P else 0.0,
                "link_wait": self.links.queued,
            },
        )
