"""The balancing policies as SimGrid actors: the oracle of the event engine
(:mod:`mimd.on_simgrid` runs them, in a process of their own, through
:func:`mimd.simgrid_policies.run_policy`).

Written from the policies' descriptions (:mod:`mimd.policies`), not from the engine's
handlers: each processor is a SimGrid host whose *application* actor runs its tasks
(executions of their cost, priority 1) and, when it runs dry, the requesting side of its
policy; its *polling thread* (Diffusion, work stealing) wakes every quantum and answers the
queries and requests that have arrived; its *system* actor (the Gradient Models) places
spawn bundles and answers handshakes; the farmer's *server* answers requests in the order
they arrive. Protocol work (start-ups, processing, packing) runs at a priority a million
times the tasks', so that it preempts them as in the engine. Every message is carried by a
courier actor of its own: its latency, then its bytes across the platform's links
(``Comm.sendto``, sharing them with the other messages), then its delivery.
"""

from __future__ import annotations

from collections import deque

#: The priority of protocol work against a task's (1).
HIGH = 1e6
#: Message kinds, as the engine's (:mod:`mimd.network_kernels`).
REQUEST, TASK, QUERY, REPLY, ASK, REFUSE, CHECK, ANSWER = range(8)
_MASK = (1 << 64) - 1


def draw(seed: int, p: int, n: int, k: int) -> int:
    """Draw ``n`` of processor ``p`` in ``[0, k)``: the engine's SplitMix64 of the three
    (:func:`mimd.engine_kernels.draw`), so that both engines draw the same victims."""
    x = (seed * 0x9E3779B97F4A7C15) & _MASK
    x = (x + ((p * 0xBF58476D1CE4E5B9) & _MASK) + n) & _MASK
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & _MASK
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & _MASK
    x ^= x >> 31
    return x % k


class World:
    """One simulation: the platform, the queues and what the actors share."""

    def __init__(self, sg, costs, policy, network, owners, bundle, seed):
        from .on_simgrid import platform

        self.sg, self.costs, self.pol, self.net = sg, costs, policy, network
        self.engine, self.hosts = platform(sg, network)
        self.P, self.N = network.p, len(costs)
        self.seed = seed
        self.queues = [deque() for _ in range(self.P)]  # units: [first task, tasks]
        self._queue(owners, bundle)
        self.start = [float("nan")] * self.N
        self.finish = [float("nan")] * self.N
        self.runner = [-1] * self.N
        self.done = 0
        self.migrations = self.messages = 0
        self.couriers = 0
        self.receive = None  # a policy's own reception of a unit
        self.handshake = None  # the Extended Gradient's
        self.pending = [[] for _ in range(self.P)]  # (arrival, courier, message) at a poll
        self.inbox = [sg.Mailbox.by_name(f"app{p}") for p in range(self.P)]
        self.system = [sg.Mailbox.by_name(f"sys{p}") for p in range(self.P)]

    def _queue(self, owners, bundle):
        for p in range(self.P):
            mine = [i for i, o in enumerate(owners) if o == p]
            if bundle and mine:
                self.queues[p].append([mine[0], len(mine)])
            else:
                self.queues[p].extend([i, 1] for i in mine)

    # the CPU ------------------------------------------------------------------------------
    def protocol(self, seconds: float) -> None:
        """Protocol work on this actor's host, preempting its tasks."""
        if seconds > 0:
            self.sg.this_actor.execute(seconds, HIGH)

    def run_task(self, p: int, h: int) -> None:
        self.start[h] = self.sg.Engine.clock
        self.runner[h] = p
        self.sg.this_actor.execute(self.costs[h])
        self.finish[h] = self.sg.Engine.clock
        self.done += 1
        if self.done == self.N:
            self.sg.Actor.kill_all()

    # the queues ---------------------------------------------------------------------------
    def take_head(self, p: int) -> int:
        unit = self.queues[p][0]
        h = unit[0]
        if unit[1] == 1:
            self.queues[p].popleft()
        else:
            unit[0], unit[1] = h + 1, unit[1] - 1
        return h

    def take_for_migration(self, p: int) -> list | None:
        """Half of the last bundle (its upper tasks), else the last task; None if empty."""
        q = self.queues[p]
        for unit in reversed(q):
            if unit[1] > 1:
                half = unit[1] // 2
                unit[1] -= half
                return [unit[0] + unit[1], half]
        return q.pop() if q else None

    def count(self, p: int) -> int:
        return sum(u[1] for u in self.queues[p])

    # messages ------------------------------------------------------------------------------
    def send(self, src, dst, kind, payload, nbytes, scale=1.0):
        """A message leaves ``src`` now (its start-up paid): its courier carries it."""
        if kind not in (TASK,):
            self.messages += 1
        self.couriers += 1
        self.sg.Actor.create(f"m{self.couriers}", self.hosts[src], self.carry,
                             src, dst, kind, payload, nbytes * scale, scale)  # fmt: skip

    def carry(self, src, dst, kind, payload, nbytes, scale):
        hops = int(self.net.hops(src, dst))
        if hops:
            if self.net.per_hop > 0:
                self.sg.this_actor.sleep_for(hops * self.net.per_hop * scale)
            self.sg.Comm.sendto(self.hosts[src], self.hosts[dst], int(round(nbytes)))
        message = (kind, src, payload)
        if kind in (QUERY, ASK):
            self.pending[dst].append((self.sg.Engine.clock, message))
        elif kind == TASK and self.receive is not None:
            self.receive(dst, payload)
        elif kind == CHECK:
            self.handshake.check(dst, src)
        elif kind == ANSWER:
            self.handshake.answer(dst, payload)
        else:
            self.inbox[dst].put_init(message, 0).detach()

    def give(self, p, dst, before) -> bool:
        """``p`` sends a unit of its work to ``dst`` after ``before`` seconds of protocol
        work, packing and the start-up; False if it had none."""
        unit = self.take_for_migration(p)
        if unit is None:
            return False
        self.protocol(before + self.net.pack + self.net.startup)
        self.send(p, dst, TASK, unit, self.net.task_bytes * unit[1])
        self.migrations += 1
        return True

    def control(self, p, dst, kind, payload=None, scale=1.0):
        self.protocol(self.net.startup)
        self.send(p, dst, kind, payload, self.net.request_bytes, scale)

    def neighbour(self, p, j):
        rows, cols = self.net.shape
        off = self.offsets[j]
        return ((p // cols + off[0]) % rows) * cols + (p % cols + off[1]) % cols
