"""The balancing policies' protocols as event handlers (compiled by Numba): what a processor
does when it runs dry, when a message reaches it and when its polling thread wakes. The
farmer of Muniz & Zaluska, Diffusion and work stealing of Barker & Chrisochoides;
the Gradient Models are :mod:`mimd.gradient_kernels`. Each handler's docstring says which
step of :mod:`mimd.policies` it is.
"""

from __future__ import annotations

from . import gradient_kernels as gk
from .engine_kernels import (
    BEST,
    BESTCOUNT,
    CUR,
    DIFFUSION,
    DONE_P,
    EXTENDED,
    FARMER,
    FLAG,
    G_MESSAGES,
    G_MIGRATIONS,
    GRADIENT,
    LB,
    NREPLY,
    PR_A,
    PR_B,
    PR_C,
    PR_D,
    PR_NEIGHBOURS,
    PR_POLICY,
    PR_POLL_COST,
    PR_REQUEST_BYTES,
    PR_STARTUP,
    PR_TASK_BYTES,
    PR_UNPACK,
    Q_COUNT,
    Q_HEAD,
    ROUND,
    STEALING,
    TARGET,
    append,
    kernel,
    random_below,
    start_task,
    system_work,
    take_head,
)
from .flow_kernels import (
    M_AUX,
    M_DST,
    M_KIND,
    M_PAYLOAD,
    M_SRC,
)
from .network_kernels import (
    K_ASK,
    K_CHECK,
    K_QUERY,
    K_REFUSE,
    K_REPLY,
    K_REQUEST,
    K_TASK,
    control,
    give,
    send,
    take_arrived,
    wait_for_poll,
    waits_for_poll,
)


@kernel
def policy(s):
    return int(s.prm[PR_POLICY])


@kernel
def neighbour(s, p, j):
    """Processor ``p`` moved by the ``j``-th torus offset (by distance, then row, column)."""
    rows, cols = int(s.prm[0]), int(s.prm[1])
    r = (p // cols + s.offsets[j, 0]) % rows
    c = (p % cols + s.offsets[j, 1]) % cols
    return r * cols + c


# --------------------------------------------------------------------------------------------
# every policy
# --------------------------------------------------------------------------------------------
@kernel
def dispatch(s, p, t):
    """An idle ``p`` starts the head of its queue, or does what its policy does when dry
    ."""
    if s.pi[p, CUR] >= 0:
        return
    pol = policy(s)
    if pol == FARMER and p == int(s.prm[PR_B]):
        works = s.prm[PR_C] > 0 or s.pf.shape[0] == 1
        if works and s.pi[p, Q_HEAD] >= 0:
            start_task(s, p, take_head(s, p), t)
        return
    if s.pi[p, Q_HEAD] >= 0:
        if pol == GRADIENT or pol == EXTENDED:
            gk.mark_busyness(s, p, t)
        start_task(s, p, take_head(s, p), t)
        if pol == GRADIENT or pol == EXTENDED:
            gk.changed(s, p, t)
        return
    if pol == FARMER:
        if s.pi[p, FLAG] == 0 and s.pi[p, DONE_P] == 0:
            s.pi[p, FLAG] = 1
            control(s, p, int(s.prm[PR_B]), K_REQUEST, 0, 0, t, s.prm[PR_D])
    elif (pol == DIFFUSION or pol == STEALING) and s.pi[p, LB] == 0 and s.pf.shape[0] > 1:
        if pol == DIFFUSION:
            query(s, p, t)
        else:
            steal(s, p, t)


@kernel
def receive(s, p, g, t):
    """Unit ``g`` arrives at ``p``: unpacked and installed, queued, started if ``p`` is idle
    ."""
    pol = policy(s)
    if pol != FARMER:
        system_work(s, p, t, s.prm[PR_UNPACK])
    append(s, p, g)
    if pol == FARMER or pol == GRADIENT or pol == EXTENDED:
        s.pi[p, FLAG] = 0  # the farmer's request answered; a reservation used
    else:
        s.pi[p, LB] = 0
    if s.pi[p, CUR] < 0:
        dispatch(s, p, t)
    elif pol == GRADIENT or pol == EXTENDED:
        gk.changed(s, p, t)


@kernel
def deliver(s, m, t):
    """Message ``m`` has reached its destination at ``t``. Returns False if it waits there
    (for the polling thread) and must not be freed yet."""
    kind, src, dst = s.mi[m, M_KIND], s.mi[m, M_SRC], s.mi[m, M_DST]
    payload = s.mi[m, M_PAYLOAD]
    if kind == K_TASK:
        receive(s, dst, payload, t)
    elif kind == K_REQUEST:
        serve(s, dst, src, t)
    elif waits_for_poll(kind):
        wait_for_poll(s, dst, m, t)
        return False
    elif kind == K_REPLY:
        reply(s, dst, payload, s.mi[m, M_AUX], t)
    elif kind == K_REFUSE:
        s.pi[dst, ROUND] += 1
        s.pi[dst, LB] = 0
        system_work(s, dst, t, s.prm[PR_B])
        dispatch(s, dst, t)
    elif kind == K_CHECK:
        gk.check(s, dst, src, t)
    else:
        gk.answer(s, dst, payload, t)
    return True


# --------------------------------------------------------------------------------------------
# the farmer (Muniz & Zaluska 4.3)
# --------------------------------------------------------------------------------------------
@kernel
def serve(s, f, w, t):
    """The farmer answers worker ``w``'s request in arrival order: ``serve`` and the
    hand-out's start-up on its CPU, the next task of its pool; with the pool empty, only
    ``serve``, and the worker asks no more."""
    s.gi[G_MESSAGES] += 1
    if s.pi[f, Q_HEAD] < 0:
        system_work(s, f, t, s.prm[PR_A])
        s.pi[w, DONE_P] = 1
        return
    h = take_head(s, f)
    leave = system_work(s, f, t, s.prm[PR_A] + s.prm[PR_STARTUP])
    send(s, f, w, K_TASK, h, 0, s.prm[PR_TASK_BYTES], leave, s.prm[PR_D])
    s.gi[G_MIGRATIONS] += 1


# --------------------------------------------------------------------------------------------
# Diffusion and work stealing (Barker & Chrisochoides, sections 2 and 4)
# --------------------------------------------------------------------------------------------
@kernel
def query(s, p, t):
    """``p`` queries its current neighbourhood, one query after the other from its CPU
    ."""
    k = int(s.prm[PR_NEIGHBOURS])
    first = s.pi[p, ROUND] * k
    for j in range(k):
        tg = neighbour(s, p, (first + j) % s.offsets.shape[0])
        control(s, p, tg, K_QUERY, 0, j, t, 1.0)
    s.pi[p, LB] = 1
    s.pi[p, NREPLY] = 0
    s.pi[p, BEST] = -1
    s.pi[p, BESTCOUNT] = 0


@kernel
def reply(s, p, count, column, t):
    """A reply reaches ``p``; with all in, it asks the richest neighbour for a task, or the
    next neighbourhood when none has one to spare."""
    if count > s.pi[p, BESTCOUNT] or (count == s.pi[p, BESTCOUNT] and column < s.pi[p, BEST]):
        s.pi[p, BEST] = column
        s.pi[p, BESTCOUNT] = count
    s.pi[p, NREPLY] += 1
    k = int(s.prm[PR_NEIGHBOURS])
    if s.pi[p, NREPLY] < k:
        return
    system_work(s, p, t, k * s.prm[PR_B] + s.prm[PR_C])
    if s.pi[p, BESTCOUNT] > 0:
        j = (s.pi[p, ROUND] * k + s.pi[p, BEST]) % s.offsets.shape[0]
        ask(s, p, neighbour(s, p, j), t)
    else:
        s.pi[p, ROUND] += 1
        s.pi[p, LB] = 0
        dispatch(s, p, t)


@kernel
def ask(s, p, tg, t):
    """``p`` asks ``tg`` for a task."""
    s.pi[p, TARGET] = tg
    s.pi[p, LB] = 2
    control(s, p, tg, K_ASK, 0, 0, t, 1.0)


@kernel
def steal(s, p, t):
    """``p`` asks a victim drawn among its ``neighbours`` nearest."""
    ask(s, p, neighbour(s, p, random_below(s, p, int(s.prm[PR_NEIGHBOURS]))), t)


@kernel
def poll(s, q, t):
    """``q``'s polling thread wakes: after its overhead it answers the queries that have
    arrived (its spare tasks), then the requests for tasks, by requester, while it has tasks
    to spare. Returns the number of messages it consumed; they are listed in ``scratch``."""
    n = take_arrived(s, q, t)
    begin = t + s.prm[PR_POLL_COST]
    process, keep = s.prm[PR_A], int(s.prm[PR_D])
    n_ask = 0
    for i in range(n):
        m = s.scratch[i]
        if s.mi[m, M_KIND] == K_QUERY:
            spare = max(s.pi[q, Q_COUNT] - keep, 0)
            leave = system_work(s, q, begin, process + s.prm[PR_STARTUP])
            send(s, q, s.mi[m, M_SRC], K_REPLY, spare, s.mi[m, M_AUX], s.prm[PR_REQUEST_BYTES],
                 leave, 1.0)  # fmt: skip
            s.gi[G_MESSAGES] += 1
        else:
            n_ask += 1
    # the requests for tasks, by requester (an insertion sort: they are few)
    asks = s.scratch[n : n + n_ask]
    k = 0
    for i in range(n):
        m = s.scratch[i]
        if s.mi[m, M_KIND] == K_ASK:
            j = k
            while j > 0 and s.mi[asks[j - 1], M_SRC] > s.mi[m, M_SRC]:
                asks[j] = asks[j - 1]
                j -= 1
            asks[j] = m
            k += 1
    for i in range(n_ask):
        src = s.mi[asks[i], M_SRC]
        if s.pi[q, Q_COUNT] - keep <= 0 or not give(s, q, src, begin, process):
            leave = system_work(s, q, begin, process + s.prm[PR_STARTUP])
            send(s, q, src, K_REFUSE, 0, 0, s.prm[PR_REQUEST_BYTES], leave, 1.0)
            s.gi[G_MESSAGES] += 1
    return n
