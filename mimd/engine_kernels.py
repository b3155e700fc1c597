"""The event engine of the simulated message-passing machine: its state, its event queue,
the processors' CPUs and their task queues (compiled by Numba).

The simulation is discrete-event and exact: every event (a task ends, a message enters or
leaves the network, a polling thread wakes, a status update is due) happens at its own time,
kept in a binary heap ordered by time and then by the order the events were made, so that a
run is deterministic. The state is a :class:`State` of a few arrays, one row per processor,
task, message, link and network component, and a column per field (the column numbers are
the constants below); :mod:`mimd.network_kernels` moves the messages, :mod:`mimd.policy_kernels`
and :mod:`mimd.gradient_kernels` are the policies, :mod:`mimd.run_kernels` the event loop.

A processor's CPU runs its current task and, before it, its *system work*: message
start-ups, request processing, packing and unpacking, decisions. System work is served
first come first served at once (it preempts the task, which resumes after it), so a message
whose start-up is charged at ``t`` leaves when the system work before it and its start-up
are done. A polling thread (Diffusion, work stealing) wakes every quantum and takes its
overhead off the running task: a task's end counts the wake-ups inside its span.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba import njit

from .policies.base import DIFFUSION, EXTENDED, FARMER, GRADIENT, NONE, STEALING  # noqa: F401

INF = math.inf


def kernel(fn=None, **options):
    """``numba.njit`` as the engine's code is compiled: without reference counting (it
    indexes the arrays of the state, allocates nothing) and with IEEE division."""
    options = {"_nrt": False, "error_model": "numpy", **options}
    if fn is None:
        return lambda f: njit(**options)(f)
    return njit(**options)(fn)


#: The state of a run: float and integer columns of the processors (``pf``, ``pi``), tasks
#: (``tf``, ``ti``), messages (``mf``, ``mi``), directed links (``lf``, ``li``) and
#: network components (``cf``, ``ci``); the event heap (``hi`` its rows, ``ht`` the same
#: rows as floats, for the times); the
#: run's counters (``gf``, ``gi``); the parameters (``prm``); the torus offsets by
#: distance (``offsets``); scratch rows (``scratch``).
State = namedtuple(
    "State",
    "pf pi tf ti mf mi lf li cf ci ht hi gf gi prm offsets scratch",
)

# processors: floats ---------------------------------------------------------------------
P_SYS = 0  # when the system work charged so far is done
P_TSTART = 1  # the running task's start
P_TWORK = 2  # its work so far: its cost and the system work that preempted it
P_TEND = 3  # its end
P_BUSY = 4  # time spent on tasks
P_OVER = 5  # system work done
P_PHASE = 6  # the polling thread's phase
P_BUSYNESS = 7  # the Gradient Model's busyness at P_BTIME
P_BTIME = 8
P_POLL = 9  # the earliest wake-up of the polling thread that is due to answer requests
NPF = 10
# processors: integers -------------------------------------------------------------------
Q_HEAD = 0  # first unit of the queue (a task, or the head of a spawn bundle), -1 empty
Q_TAIL = 1
Q_COUNT = 2  # tasks queued (a bundle counts its tasks)
Q_BUNDLES = 3  # queued units that are bundles
CUR = 4  # the running task, -1 idle
TVER = 5  # number of the running task's end event
LB = 6  # the protocol's phase (policy_kernels)
ROUND = 7  # Diffusion's neighbourhood round
TARGET = 8
NREPLY = 9
BEST = 10
BESTCOUNT = 11
PEND_HEAD = 12  # requests waiting for the polling thread
PEND_TAIL = 13
POLLING = 14  # (free)
ATTEMPT = 15  # random draws made
FLAG = 16  # the farmer: a request is out; the gradients: reserved
DONE_P = 17  # the farmer's worker has been told there is no more work
PRESSURE = 18
LIGHT = 19
NBP = 20
NBDIR = 21
HS = 22  # Extended Gradient handshake: 0 none, 1 asked
HSWAIT = 23  # refused: wait for the next status update
PLACING = 24  # a placement is under way (its wake-up is due)
NPI = 25
# tasks ------------------------------------------------------------------------------------
T_COST = 0
T_START = 1
T_FINISH = 2
NTF = 3
T_OWNER = 0
T_STATE = 1
T_BSIZE = 2
T_NEXT = 3
T_PREV = 4
T_RUNS = 5
T_RUNNER = 6
NTI = 7
#: task states: queued (a unit's head), running, in a message, finished, inside a bundle
QUEUED, RUNNING, TRANSIT, DONE, MEMBER = 0, 1, 2, 3, 4
# counters -----------------------------------------------------------------------------------
G_DONE = 0
G_EVENTS = 1
G_MIGRATIONS = 2
G_MESSAGES = 3
G_SEQ = 4
G_HEAPN = 5
G_MFREE = 6  # first free message row
G_CFREE = 7  # first free component row
G_ERROR = 8
G_STAMP = 9
G_NFIN = 10  # messages that left the network in the last component event
G_RANDOM = 11  # the seed of the random draws
G_STARTED = 12  # the run has begun (it goes on in slices of events)
NGI = 13
GF_NOW = 0
GF_WAIT = 1  # time messages spent beyond their uncontended time
GF_STATUS = 2  # time of the next status update
NGF = 3
#: errors a run ends with
ERR_HEAP, ERR_MESSAGES, ERR_DEADLOCK, ERR_EVENTS = 1, 2, 3, 4
# events ---------------------------------------------------------------------------------------
EV_TASK_END, EV_JOIN, EV_COMPONENT, EV_ARRIVE, EV_POLL, EV_STATUS, EV_WAKE, EV_ALONE = range(8)
H_TIME, H_SEQ, H_EVENT = range(3)  # the time is the float view of the first column
# parameters ------------------------------------------------------------------------------------
(
    PR_ROWS, PR_COLS, PR_STARTUP, PR_PER_BYTE, PR_PER_HOP, PR_SAF, PR_TASK_BYTES,
    PR_REQUEST_BYTES, PR_PACK, PR_UNPACK, PR_CONTENTION, PR_APP, PR_POLICY, PR_QUANTUM,
    PR_POLL_COST, PR_NEIGHBOURS, PR_A, PR_B, PR_C, PR_D, PR_E, PR_F, PR_G,
) = range(23)  # fmt: skip
NPR = 23


def parameters(policy, network, app: float) -> np.ndarray:
    """The engine's parameters (``PR_*``) of ``policy`` on ``network``; ``app``: the CPU
    seconds each task spends on its own messages."""
    prm = np.zeros(NPR)
    values = {
        "ROWS": network.shape[0],
        "COLS": network.shape[1],
        "STARTUP": network.startup,
        "PER_BYTE": network.per_byte,
        "PER_HOP": network.per_hop,
        "SAF": float(network.store_and_forward),
        "TASK_BYTES": network.task_bytes,
        "REQUEST_BYTES": network.request_bytes,
        "PACK": network.pack,
        "UNPACK": network.unpack,
        "CONTENTION": float(network.contention),
        "APP": app,
        "POLICY": policy.code,
        "NEIGHBOURS": 1,
    }
    values |= policy.engine_parameters(network)
    for name, value in values.items():
        prm[globals()[f"PR_{name}"]] = value
    return prm


def new_state(costs, owners, bundle, prm, offsets, phases, seed, capacity):
    """The state of a run at time 0 (NumPy; the tasks queued on their owners in task order,
    one spawn bundle per owner's contiguous share with ``bundle``)."""
    n, p = costs.size, int(prm[PR_ROWS] * prm[PR_COLS])
    m_rows, h_rows = capacity
    pf = np.zeros((p, NPF))
    pf[:, P_TEND] = INF
    pf[:, P_POLL] = INF
    pf[:, P_PHASE] = phases
    pi = np.zeros((p, NPI), dtype=np.int64)
    pi[:, Q_HEAD] = pi[:, Q_TAIL] = pi[:, CUR] = pi[:, PEND_HEAD] = pi[:, PEND_TAIL] = -1
    pi[:, LIGHT] = np.arange(p)  # at time 0 every processor is idle: the gradient is flat
    tf = np.full((n, NTF), np.nan)
    tf[:, T_COST] = costs
    ti = np.zeros((n, NTI), dtype=np.int64)
    ti[:, T_OWNER] = owners
    ti[:, T_BSIZE] = 1
    ti[:, T_RUNNER] = -1
    mf = np.zeros((m_rows, 8))
    mi = np.zeros((m_rows, 16), dtype=np.int64)
    mi[:, 0] = np.arange(1, m_rows + 1)  # the free list, through the first column
    mi[-1, 0] = -1
    links = 4 * p
    lf = np.zeros((links, 3))
    li = np.zeros((links, 5), dtype=np.int64)
    li[:, 4] = -1  # no message booked alone
    cf = np.zeros((m_rows, 3))
    ci = np.zeros((m_rows, 10), dtype=np.int64)
    ci[:, 6] = np.arange(1, m_rows + 1)  # the free list of components
    ci[-1, 6] = -1
    gi = np.zeros(NGI, dtype=np.int64)
    gi[G_RANDOM] = seed
    heap = np.zeros((h_rows, 3), dtype=np.int64)
    s = State(pf, pi, tf, ti, mf, mi, lf, li, cf, ci, heap.view(np.float64), heap,
              np.zeros(NGF), gi, prm, offsets,
              np.zeros(max(64, 2 * links), dtype=np.int64))  # fmt: skip
    _queue_initial(ti, pi, owners, bundle)
    return s


def _queue_initial(ti, pi, owners, bundle):
    """Every task in its owner's queue, in task order (NumPy, before the run)."""
    n = owners.size
    if n == 0:
        return
    order = np.argsort(owners, kind="stable")
    own = owners[order]
    first = np.ones(n, dtype=bool)
    first[1:] = own[1:] != own[:-1]
    if bundle:
        heads = order[first]
        sizes = np.diff(np.append(np.flatnonzero(first), n))
        ti[:, T_STATE] = MEMBER
        ti[heads, T_STATE] = QUEUED
        ti[heads, T_BSIZE] = sizes
        pi[own[first], Q_HEAD] = heads
        pi[own[first], Q_TAIL] = heads
        pi[own[first], Q_BUNDLES] = sizes > 1
        ti[:, T_NEXT] = ti[:, T_PREV] = -1
    else:
        last = np.ones(n, dtype=bool)
        last[:-1] = first[1:]
        nxt = np.append(order[1:], -1)
        prv = np.insert(order[:-1], 0, -1)
        ti[order, T_NEXT] = np.where(last, -1, nxt)
        ti[order, T_PREV] = np.where(first, -1, prv)
        pi[own[first], Q_HEAD] = order[first]
        pi[own[last], Q_TAIL] = order[last]
    pi[:, Q_COUNT] = np.bincount(owners, minlength=pi.shape[0])


# --------------------------------------------------------------------------------------------
# the event heap
# --------------------------------------------------------------------------------------------
#: an event's kind, subject and version packed in one integer: the version's low bits,
#: the subject (a processor, message or component row) above them, the kind on top
_V_BITS, _A_BITS = 33, 27
_V_MASK = (1 << _V_BITS) - 1
_A_MASK = (1 << _A_BITS) - 1


@kernel(inline="always")
def _before(s, i, t, seq):
    """Event ``i`` of the heap comes before time ``t`` and number ``seq``."""
    return s.ht[i, H_TIME] < t or (s.ht[i, H_TIME] == t and s.hi[i, H_SEQ] < seq)


@kernel(inline="always")
def _move(s, dst, src):
    for c in range(3):
        s.hi[dst, c] = s.hi[src, c]


@kernel
def push(s, t, kind, a, v):
    """Add an event of ``kind`` about ``a`` (version ``v``) at time ``t``.

    The heap is 4-ary (half the levels of a binary one, each a few entries side by side),
    a row per event: its time, its number (ties go in the order events were made) and its
    kind, subject and version packed.
    """
    n = s.gi[G_HEAPN]
    if n >= s.ht.shape[0]:
        s.gi[G_ERROR] = ERR_HEAP
        return
    seq = s.gi[G_SEQ]
    s.gi[G_SEQ] = seq + 1
    i = n
    while i > 0:
        up = (i - 1) >> 2
        if _before(s, up, t, seq):
            break
        _move(s, i, up)
        i = up
    s.ht[i, H_TIME] = t
    s.hi[i, H_SEQ] = seq
    s.hi[i, H_EVENT] = (kind << (_V_BITS + _A_BITS)) | (a << _V_BITS) | (v & _V_MASK)
    s.gi[G_HEAPN] = n + 1


@kernel
def pop(s):
    """Remove the earliest event; returns its time, kind, subject and version (the
    version's low 33 bits: compare it with :func:`version`)."""
    t, x = s.ht[0, H_TIME], s.hi[0, H_EVENT]
    n = s.gi[G_HEAPN] - 1
    s.gi[G_HEAPN] = n
    lt, lseq = s.ht[n, H_TIME], s.hi[n, H_SEQ]
    i = 0
    while True:
        first = 4 * i + 1
        if first >= n:
            break
        c = first
        for k in range(first + 1, min(first + 4, n)):
            if _before(s, k, s.ht[c, H_TIME], s.hi[c, H_SEQ]):
                c = k
        if not _before(s, c, lt, lseq):
            break
        _move(s, i, c)
        i = c
    _move(s, i, n)
    return t, x >> (_V_BITS + _A_BITS), (x >> _V_BITS) & _A_MASK, x & _V_MASK


@kernel(inline="always")
def version(v):
    """A version as events carry it."""
    return v & _V_MASK


# --------------------------------------------------------------------------------------------
# the CPUs
# --------------------------------------------------------------------------------------------
@kernel
def polls_between(s, p, t0, t1):
    """Wake-ups of processor ``p``'s polling thread in ``(t0, t1]`` (none without one)."""
    q = s.prm[PR_QUANTUM]
    if q <= 0.0 or t1 <= t0:
        return 0.0
    ph = s.pf[p, P_PHASE]
    return math.floor((t1 - ph) / q) - math.floor((t0 - ph) / q)


@kernel
def task_end(s, p):
    """When ``p``'s running task ends: its start, its work and the polling thread's
    wake-ups inside the span (each takes ``PR_POLL_COST`` off the task)."""
    start, work = s.pf[p, P_TSTART], s.pf[p, P_TWORK]
    cost = s.prm[PR_POLL_COST]
    end = start + work
    if cost <= 0.0:
        return end
    for _ in range(64):  # the wake-ups lengthen the span, which may hold more of them
        nxt = start + work + cost * polls_between(s, p, start, end)
        if nxt == end:
            break
        end = nxt
    return end


@kernel
def system_work(s, p, t, work):
    """Charge ``work`` seconds of system work to ``p`` from ``t``; returns when it is done.

    It runs after the system work charged before it; a running task waits for it.
    """
    begin = max(t, s.pf[p, P_SYS])
    done = begin + work
    s.pf[p, P_SYS] = done
    s.pf[p, P_OVER] += work
    if s.pi[p, CUR] >= 0 and work > 0.0:
        s.pf[p, P_TWORK] += work
        s.pf[p, P_TEND] = task_end(s, p)  # its event, when due, is made again for then
    return done


@kernel
def start_task(s, p, h, t):
    """``p`` starts task ``h`` once its system work is done."""
    begin = max(t, s.pf[p, P_SYS])
    s.ti[h, T_STATE] = RUNNING
    s.ti[h, T_RUNS] += 1
    s.ti[h, T_RUNNER] = p
    s.tf[h, T_START] = begin
    s.pi[p, CUR] = h
    s.pf[p, P_TSTART] = begin
    s.pf[p, P_TWORK] = s.tf[h, T_COST] + s.prm[PR_APP]
    s.pf[p, P_TEND] = task_end(s, p)
    s.pi[p, TVER] += 1
    push(s, s.pf[p, P_TEND], EV_TASK_END, p, s.pi[p, TVER])


@kernel
def finish_task(s, p, t):
    """``p``'s running task is done at ``t``."""
    h = s.pi[p, CUR]
    s.ti[h, T_STATE] = DONE
    s.tf[h, T_FINISH] = t
    s.pf[p, P_BUSY] += s.tf[h, T_COST] + s.prm[PR_APP]
    s.pi[p, CUR] = -1
    s.pf[p, P_TEND] = INF
    s.gi[G_DONE] += 1


# --------------------------------------------------------------------------------------------
# the queues: a list of units per processor, each a task or the head of a spawn bundle
# --------------------------------------------------------------------------------------------
@kernel
def unlink(s, p, h):
    """Take unit ``h`` out of ``p``'s queue."""
    nxt, prv = s.ti[h, T_NEXT], s.ti[h, T_PREV]
    if prv >= 0:
        s.ti[prv, T_NEXT] = nxt
    else:
        s.pi[p, Q_HEAD] = nxt
    if nxt >= 0:
        s.ti[nxt, T_PREV] = prv
    else:
        s.pi[p, Q_TAIL] = prv
    s.pi[p, Q_COUNT] -= s.ti[h, T_BSIZE]
    if s.ti[h, T_BSIZE] > 1:
        s.pi[p, Q_BUNDLES] -= 1


@kernel
def append(s, p, h):
    """Put unit ``h`` at the tail of ``p``'s queue."""
    tail = s.pi[p, Q_TAIL]
    s.ti[h, T_PREV] = tail
    s.ti[h, T_NEXT] = -1
    if tail >= 0:
        s.ti[tail, T_NEXT] = h
    else:
        s.pi[p, Q_HEAD] = h
    s.pi[p, Q_TAIL] = h
    s.ti[h, T_OWNER] = p
    s.ti[h, T_STATE] = QUEUED
    s.pi[p, Q_COUNT] += s.ti[h, T_BSIZE]
    if s.ti[h, T_BSIZE] > 1:
        s.pi[p, Q_BUNDLES] += 1


@kernel
def take_head(s, p):
    """The first task of ``p``'s queue, taken out (a bundle leaves the rest in its place)."""
    h = s.pi[p, Q_HEAD]
    size = s.ti[h, T_BSIZE]
    if size == 1:
        unlink(s, p, h)
        return h
    # the bundle's next task becomes the head of the rest, in the same place
    rest = h + 1
    nxt = s.ti[h, T_NEXT]
    s.ti[rest, T_BSIZE] = size - 1
    s.ti[rest, T_STATE] = QUEUED
    s.ti[rest, T_OWNER] = p
    s.ti[rest, T_NEXT] = nxt
    s.ti[rest, T_PREV] = -1
    s.pi[p, Q_HEAD] = rest
    if nxt >= 0:
        s.ti[nxt, T_PREV] = rest
    else:
        s.pi[p, Q_TAIL] = rest
    s.pi[p, Q_COUNT] -= 1
    if size == 2:
        s.pi[p, Q_BUNDLES] -= 1
    s.ti[h, T_BSIZE] = 1
    return h


@kernel
def take_for_migration(s, p):
    """The unit ``p`` gives away: half of its last bundle (the upper tasks, as a spawn
    tree splits its array), else its last task; -1 when its queue is empty."""
    h = s.pi[p, Q_TAIL]
    if h < 0:
        return -1
    if s.pi[p, Q_BUNDLES] > 0:
        while s.ti[h, T_BSIZE] == 1:
            h = s.ti[h, T_PREV]
        size = s.ti[h, T_BSIZE]
        half = size // 2
        g = h + size - half
        s.ti[h, T_BSIZE] = size - half
        s.ti[g, T_BSIZE] = half
        s.pi[p, Q_COUNT] -= half
        if size - half == 1:
            s.pi[p, Q_BUNDLES] -= 1
        s.ti[g, T_STATE] = TRANSIT
        return g
    unlink(s, p, h)
    s.ti[h, T_STATE] = TRANSIT
    return h


@kernel
def idle(s, p):
    """``p`` runs no task and has none queued."""
    return s.pi[p, CUR] < 0 and s.pi[p, Q_COUNT] == 0


@kernel
def random_below(s, p, k):
    """The next of ``p``'s random draws in ``[0, k)``: a hash of the seed, ``p`` and the
    draw's number (SplitMix64), the same in every engine whatever the order of events."""
    n = s.pi[p, ATTEMPT]
    s.pi[p, ATTEMPT] = n + 1
    return draw(s.gi[G_RANDOM], p, n, k)


@kernel
def draw(seed, p, n, k):
    """Draw ``n`` of processor ``p`` in ``[0, k)`` for ``seed`` (SplitMix64 of the three)."""
    x = np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15)
    x += np.uint64(p) * np.uint64(0xBF58476D1CE4E5B9) + np.uint64(n)
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return np.int64(x % np.uint64(k))
