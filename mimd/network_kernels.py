"""Messages on the torus of the simulated machine: links that share their bandwidth
max-min fairly among the messages crossing them, as SimGrid's network models do (compiled
by Numba; the state is :class:`mimd.engine_kernels.State`).

A message is sent once its start-up is paid on the sender's CPU. It then waits for its
latency (``per_hop`` a hop), crosses its dimension-order route
as one flow of ``bytes`` (cut-through: every link of the route at once, as SimGrid's flows
do) or hop after hop (store-and-forward: a flow per hop, each after its hop's latency), and
arrives when its last byte is through.

Sharing: the flows whose routes share links form *components*; within a component the
rates are max-min fair (progressive filling: the link with the smallest share per flow
fixes its flows at that share, and so on), each link carrying ``1 / per_byte`` bytes a
second. A component whose flows all cross one link (the farmer's hand-outs behind its
outgoing links, a store-and-forward hop) has one rate, its link's bandwidth over the flows,
and is kept as a processor-sharing queue: a virtual clock of the bytes each flow has got
and the flows sorted by the clock reading at which they finish, so that a flow joining or
leaving costs a few operations however many are queued. Components are merged (union-find)
when a flow joins several, and forgotten when their last flow leaves. With
``contention=False`` every message takes its uncontended time.
"""

from __future__ import annotations

import math

from .engine_kernels import (
    ERR_MESSAGES,
    EV_ALONE,
    EV_ARRIVE,
    EV_COMPONENT,
    EV_JOIN,
    EV_POLL,
    G_CFREE,
    G_ERROR,
    G_MESSAGES,
    G_MFREE,
    G_MIGRATIONS,
    G_NFIN,
    G_STAMP,
    GF_NOW,
    GF_WAIT,
    INF,
    P_PHASE,
    P_POLL,
    PEND_HEAD,
    PEND_TAIL,
    PR_COLS,
    PR_CONTENTION,
    PR_PACK,
    PR_PER_BYTE,
    PR_PER_HOP,
    PR_QUANTUM,
    PR_REQUEST_BYTES,
    PR_ROWS,
    PR_SAF,
    PR_STARTUP,
    PR_TASK_BYTES,
    T_BSIZE,
    kernel,
    push,
    system_work,
    take_for_migration,
    version,
)

#: message kinds: a farmer's request, a unit of work, Diffusion's query and its reply, a
#: request for a task and its refusal, the Extended Gradient's check and its answer
K_REQUEST, K_TASK, K_QUERY, K_REPLY, K_ASK, K_REFUSE, K_CHECK, K_ANSWER = range(8)
# messages: integers ---------------------------------------------------------------------------
(M_NEXT, M_PREV, M_SRC, M_DST, M_KIND, M_PAYLOAD, M_AUX, M_HOP, M_HOPS, M_DR, M_DC, M_VER,
 M_BOOKED, M_WAITING) = range(14)  # fmt: skip
# messages: floats
F_BYTES, F_REM, F_RATE, F_KEY, F_SENT, F_LATENCY, F_JOIN, F_ARRIVE = range(8)
# links
L_N, L_UF, L_MARK, L_UNF, L_ALONE = range(5)
L_SINCE, L_BUSY, L_CAP = range(3)
# components
C_PARENT, C_N, C_HEAD, C_TAIL, C_COMMON, C_VER, C_FREE, C_NODES, C_LAST = range(9)
C_V, C_RATE, C_T = range(3)


# --------------------------------------------------------------------------------------------
# routes
# --------------------------------------------------------------------------------------------
@kernel
def displacement(s, src, dst):
    """The signed rows and columns of the dimension-order route ``src -> dst``: the shorter
    way round, half a ring the positive way (as :meth:`mimd.Network.route`)."""
    rows, cols = int(s.prm[PR_ROWS]), int(s.prm[PR_COLS])
    dr = (dst // cols - src // cols) % rows
    dc = (dst % cols - src % cols) % cols
    if dr > rows // 2:
        dr -= rows
    if dc > cols // 2:
        dc -= cols
    return dr, dc


@kernel
def link_on(s, src, dr, dc, k):
    """Directed link of hop ``k`` of the route from ``src`` moving ``dr`` rows, then ``dc``
    columns: link ``4 q + d`` leaves processor ``q`` down (0), up (1), right (2) or left
    (3) (as :meth:`mimd.Network.link`)."""
    rows, cols = int(s.prm[PR_ROWS]), int(s.prm[PR_COLS])
    r0, c0 = src // cols, src % cols
    if k < abs(dr):
        r = r0 + (k if dr > 0 else -k)
        r += rows if r < 0 else (-rows if r >= rows else 0)
        return (r * cols + c0) * 4 + (0 if dr > 0 else 1)
    r = r0 + dr
    r += rows if r < 0 else (-rows if r >= rows else 0)
    c = c0 + (k - abs(dr) if dc > 0 else abs(dr) - k)
    c += cols if c < 0 else (-cols if c >= cols else 0)
    return (r * cols + c) * 4 + (2 if dc > 0 else 3)


@kernel
def n_links(s, m):
    """Links message ``m``'s flow crosses at once: its route, or its hop (store-and-forward)."""
    return 1 if s.prm[PR_SAF] > 0 else s.mi[m, M_HOPS]


@kernel
def link_of(s, m, j):
    """The ``j``-th link of message ``m``'s flow."""
    k = s.mi[m, M_HOP] if s.prm[PR_SAF] > 0 else j
    return link_on(s, s.mi[m, M_SRC], s.mi[m, M_DR], s.mi[m, M_DC], k)


@kernel
def crosses(s, m, link):
    for j in range(n_links(s, m)):
        if link_of(s, m, j) == link:
            return True
    return False


# --------------------------------------------------------------------------------------------
# sending
# --------------------------------------------------------------------------------------------
@kernel
def send(s, src, dst, kind, payload, aux, nbytes, leave, scale):
    """A message of ``kind`` from ``src`` to ``dst`` that enters the network at ``leave``
    (its start-up paid); ``scale`` multiplies its per-hop and per-byte times. Returns its
    row, -1 (and an error) when the message rows are used up."""
    m = s.gi[G_MFREE]
    if m < 0:
        s.gi[G_ERROR] = ERR_MESSAGES
        return -1
    s.gi[G_MFREE] = s.mi[m, M_NEXT]
    dr, dc = displacement(s, src, dst)
    s.mi[m, M_DR], s.mi[m, M_DC] = dr, dc
    h = abs(dr) + abs(dc)
    s.mi[m, M_SRC], s.mi[m, M_DST], s.mi[m, M_KIND] = src, dst, kind
    s.mi[m, M_PAYLOAD], s.mi[m, M_AUX], s.mi[m, M_HOP], s.mi[m, M_HOPS] = payload, aux, 0, h
    s.mf[m, F_BYTES] = nbytes * scale
    s.mf[m, F_LATENCY] = s.prm[PR_PER_HOP] * scale
    s.mf[m, F_SENT] = leave
    s.mf[m, F_ARRIVE] = 0.0
    s.mi[m, M_BOOKED] = 0
    saf = s.prm[PR_SAF] > 0
    if h == 0:
        push(s, leave, EV_ARRIVE, m, 0)
    elif s.prm[PR_CONTENTION] <= 0 or s.prm[PR_PER_BYTE] <= 0:
        push(s, leave + uncontended(s, m), EV_ARRIVE, m, 0)
    else:
        t_join = leave + s.mf[m, F_LATENCY] * (1 if saf else h)
        s.mf[m, F_JOIN] = t_join
        if saf or not book_alone(s, m, t_join):
            push(s, t_join, EV_JOIN, m, 0)
    return m


@kernel
def book_alone(s, m, t_join):
    """Book cut-through message ``m`` alone on its route if no flow is on its links and none
    is booked there: one event, its arrival. A flow that meets it later makes it an
    ordinary flow (:func:`meet`). False (nothing booked) otherwise."""
    now = s.gf[GF_NOW]
    for j in range(s.mi[m, M_HOPS]):
        link = link_of(s, m, j)
        other = s.li[link, L_ALONE]
        if s.li[link, L_N] > 0 or (other >= 0 and s.mf[other, F_KEY] > now):
            return False
    end = t_join + s.mf[m, F_BYTES] * s.prm[PR_PER_BYTE]
    s.mf[m, F_KEY] = end
    for j in range(s.mi[m, M_HOPS]):
        s.li[link_of(s, m, j), L_ALONE] = m
    s.mi[m, M_VER] += 1
    s.mi[m, M_BOOKED] = 1
    if waits_for_poll(s.mi[m, M_KIND]):
        wait_for_poll(s, s.mi[m, M_DST], m, end)  # no arrival event: it waits anyway
    else:
        push(s, end, EV_ALONE, m, s.mi[m, M_VER])
    return True


@kernel
def meet(s, m, t):
    """A flow joins the links of message ``m``, booked alone (:func:`book_alone`), at ``t``
    while ``m`` is booked: ``m`` becomes an ordinary flow, with the bytes it has left if it
    has started, else joining when it was to."""
    s.mi[m, M_VER] += 1  # its booked arrival is void
    s.mi[m, M_BOOKED] = 0
    if waits_for_poll(s.mi[m, M_KIND]):
        s.mf[m, F_ARRIVE] = INF  # still listed at its destination, arrival unknown
    for j in range(s.mi[m, M_HOPS]):
        link = link_of(s, m, j)
        if s.li[link, L_ALONE] == m:
            s.li[link, L_ALONE] = -1
    start = s.mf[m, F_JOIN]
    if start > t:
        push(s, start, EV_JOIN, m, 0)
        return
    root = new_component(s, t)
    s.ci[root, C_COMMON] = link_of(s, m, 0)
    insert_member(s, root, m, t)
    s.mf[m, F_KEY] -= (t - start) / s.prm[PR_PER_BYTE]  # the bytes it got alone
    for j in range(s.mi[m, M_HOPS]):
        link = link_of(s, m, j)
        s.lf[link, L_SINCE] = start
        s.li[link, L_N] = 1
        s.li[link, L_UF] = root
    reschedule(s, root, t)


@kernel
def arrived_alone(s, m, t, v):
    """Message ``m``'s booked arrival at ``t``: True if it stands (its links are free)."""
    if v != version(s.mi[m, M_VER]):
        return False
    unbook(s, m)
    return True


@kernel
def unbook(s, m):
    """Message ``m``, booked alone, is through: its links are free, and were busy."""
    if s.mi[m, M_BOOKED] == 0:
        return
    s.mi[m, M_BOOKED] = 0
    for j in range(s.mi[m, M_HOPS]):
        link = link_of(s, m, j)
        s.lf[link, L_BUSY] += s.mf[m, F_KEY] - s.mf[m, F_JOIN]
        if s.li[link, L_ALONE] == m:
            s.li[link, L_ALONE] = -1


# --------------------------------------------------------------------------------------------
# messages that wait for the destination's polling thread
# --------------------------------------------------------------------------------------------
@kernel
def waits_for_poll(kind):
    """Queries and requests for tasks are answered by the target's polling thread."""
    return kind == K_QUERY or kind == K_ASK


@kernel
def next_poll(s, p, t):
    """``p``'s first polling-thread wake-up at or after ``t``."""
    q, ph = s.prm[PR_QUANTUM], s.pf[p, P_PHASE]
    return ph + math.ceil((t - ph) / q - 1e-12) * q


@kernel
def wait_for_poll(s, q, m, t):
    """Message ``m`` reaches ``q`` at ``t`` (or will: booked alone) and waits for ``q``'s
    polling thread, whose next wake-up after ``t`` is made due."""
    if s.mf[m, F_ARRIVE] != INF:  # not listed yet
        tail = s.pi[q, PEND_TAIL]
        s.mi[m, M_WAITING] = -1
        if tail >= 0:
            s.mi[tail, M_WAITING] = m
        else:
            s.pi[q, PEND_HEAD] = m
        s.pi[q, PEND_TAIL] = m
    s.mf[m, F_ARRIVE] = t
    due = next_poll(s, q, t)
    if due < s.pf[q, P_POLL]:
        s.pf[q, P_POLL] = due
        push(s, due, EV_POLL, q, 0)


@kernel
def take_arrived(s, q, t):
    """The messages waiting at ``q`` that have arrived by ``t``, out of its list, into
    ``scratch`` in order of arrival (then of message row); returns how many. The next
    wake-up is made due for those still on their way."""
    if t >= s.pf[q, P_POLL]:
        s.pf[q, P_POLL] = INF
    n = 0
    head, tail = -1, -1
    soonest = INF
    m = s.pi[q, PEND_HEAD]
    while m >= 0:
        nxt = s.mi[m, M_WAITING]
        at = s.mf[m, F_ARRIVE]
        if at <= t:
            j = n  # insertion in arrival order
            while j > 0 and (
                s.mf[s.scratch[j - 1], F_ARRIVE] > at
                or (s.mf[s.scratch[j - 1], F_ARRIVE] == at and s.scratch[j - 1] > m)
            ):
                s.scratch[j] = s.scratch[j - 1]
                j -= 1
            s.scratch[j] = m
            n += 1
            unbook(s, m)
        else:
            soonest = min(soonest, at)
            s.mi[m, M_WAITING] = -1
            if tail >= 0:
                s.mi[tail, M_WAITING] = m
            else:
                head = m
            tail = m
        m = nxt
    s.pi[q, PEND_HEAD], s.pi[q, PEND_TAIL] = head, tail
    if soonest < INF:
        due = next_poll(s, q, soonest)
        if due < s.pf[q, P_POLL]:
            s.pf[q, P_POLL] = due
            push(s, due, EV_POLL, q, 0)
    return n


@kernel
def control(s, p, dst, kind, payload, aux, t, scale):
    """``p`` sends a control message after its start-up, from ``t`` on its CPU."""
    leave = system_work(s, p, t, s.prm[PR_STARTUP])
    send(s, p, dst, kind, payload, aux, s.prm[PR_REQUEST_BYTES], leave, scale)
    s.gi[G_MESSAGES] += 1


@kernel
def give(s, p, dst, t, before):
    """``p`` sends a unit of its work to ``dst`` (:func:`take_for_migration`): ``before``
    (processing, placement), then uninstalling and packing it and the start-up, on its CPU.
    False if it had none."""
    g = take_for_migration(s, p)
    if g < 0:
        return False
    leave = system_work(s, p, t, before + s.prm[PR_PACK] + s.prm[PR_STARTUP])
    send(s, p, dst, K_TASK, g, 0, s.prm[PR_TASK_BYTES] * s.ti[g, T_BSIZE], leave, 1.0)
    s.gi[G_MIGRATIONS] += 1
    return True


@kernel
def uncontended(s, m):
    """The network time of message ``m`` alone on its route."""
    h, lat, wire = s.mi[m, M_HOPS], s.mf[m, F_LATENCY], s.mf[m, F_BYTES] * s.prm[PR_PER_BYTE]
    if s.prm[PR_SAF] > 0:
        return h * (lat + wire)
    return h * lat + wire


@kernel
def arrived(s, m, t):
    """Message ``m`` arrived at ``t``: its wait for links beyond its uncontended time."""
    if s.mi[m, M_HOPS] > 0 and s.prm[PR_CONTENTION] > 0:
        s.gf[GF_WAIT] += max(0.0, t - s.mf[m, F_SENT] - uncontended(s, m))


@kernel
def free_message(s, m):
    s.mi[m, M_NEXT] = s.gi[G_MFREE]
    s.gi[G_MFREE] = m


# --------------------------------------------------------------------------------------------
# components
# --------------------------------------------------------------------------------------------
@kernel
def find(s, x):
    """The root of component node ``x`` (with path compression)."""
    root = x
    while s.ci[root, C_PARENT] != root:
        root = s.ci[root, C_PARENT]
    while s.ci[x, C_PARENT] != root:
        nxt = s.ci[x, C_PARENT]
        s.ci[x, C_PARENT] = root
        x = nxt
    return root


@kernel
def new_component(s, t):
    c = s.gi[G_CFREE]
    s.gi[G_CFREE] = s.ci[c, C_FREE]
    s.ci[c, C_PARENT] = c
    s.ci[c, C_N] = 0
    s.ci[c, C_HEAD] = s.ci[c, C_TAIL] = -1
    s.ci[c, C_NODES] = -1
    s.ci[c, C_LAST] = c
    s.cf[c, C_V] = 0.0
    s.cf[c, C_RATE] = 0.0
    s.cf[c, C_T] = t
    return c


@kernel
def free_component(s, root):
    """Every node of the (empty) component back to the free list."""
    node = root
    while node >= 0:
        nxt = s.ci[node, C_NODES]
        s.ci[node, C_FREE] = s.gi[G_CFREE]
        s.gi[G_CFREE] = node
        node = nxt


@kernel
def advance(s, r, t):
    """Bring component ``r``'s flows to time ``t`` at their current rates."""
    dt = t - s.cf[r, C_T]
    if dt <= 0.0:
        return
    s.cf[r, C_T] = t
    if s.ci[r, C_COMMON] >= 0:
        s.cf[r, C_V] += dt * s.cf[r, C_RATE]
        return
    m = s.ci[r, C_HEAD]
    while m >= 0:
        s.mf[m, F_REM] -= dt * s.mf[m, F_RATE]
        m = s.mi[m, M_NEXT]


@kernel
def make_general(s, r):
    """A processor-sharing component becomes one of per-flow rates."""
    if s.ci[r, C_COMMON] < 0:
        return
    m = s.ci[r, C_HEAD]
    while m >= 0:
        s.mf[m, F_REM] = s.mf[m, F_KEY] - s.cf[r, C_V]
        m = s.mi[m, M_NEXT]
    s.ci[r, C_COMMON] = -1


@kernel
def union(s, a, b):
    """Merge component ``b`` into ``a`` (both brought to now); the result has per-flow rates."""
    make_general(s, a)
    make_general(s, b)
    s.ci[b, C_PARENT] = a
    s.ci[b, C_VER] += 1  # its pending event is stale
    if s.ci[b, C_HEAD] >= 0:
        if s.ci[a, C_TAIL] >= 0:
            s.mi[s.ci[a, C_TAIL], M_NEXT] = s.ci[b, C_HEAD]
            s.mi[s.ci[b, C_HEAD], M_PREV] = s.ci[a, C_TAIL]
        else:
            s.ci[a, C_HEAD] = s.ci[b, C_HEAD]
        s.ci[a, C_TAIL] = s.ci[b, C_TAIL]
    s.ci[a, C_N] += s.ci[b, C_N]
    s.ci[s.ci[a, C_LAST], C_NODES] = b
    s.ci[a, C_LAST] = s.ci[b, C_LAST]
    return a


@kernel
def insert_member(s, r, m, t):
    """Flow ``m`` joins component ``r``: in finishing order (processor sharing), else last."""
    s.ci[r, C_N] += 1
    if s.ci[r, C_COMMON] >= 0:
        key = s.cf[r, C_V] + s.mf[m, F_BYTES]
        s.mf[m, F_KEY] = key
        after = s.ci[r, C_TAIL]
        while after >= 0 and s.mf[after, F_KEY] > key:
            after = s.mi[after, M_PREV]
    else:
        s.mf[m, F_REM] = s.mf[m, F_BYTES]
        after = s.ci[r, C_TAIL]
    before = s.ci[r, C_HEAD] if after < 0 else s.mi[after, M_NEXT]
    s.mi[m, M_PREV], s.mi[m, M_NEXT] = after, before
    if after >= 0:
        s.mi[after, M_NEXT] = m
    else:
        s.ci[r, C_HEAD] = m
    if before >= 0:
        s.mi[before, M_PREV] = m
    else:
        s.ci[r, C_TAIL] = m


@kernel
def remove_member(s, r, m, t):
    nxt, prv = s.mi[m, M_NEXT], s.mi[m, M_PREV]
    if prv >= 0:
        s.mi[prv, M_NEXT] = nxt
    else:
        s.ci[r, C_HEAD] = nxt
    if nxt >= 0:
        s.mi[nxt, M_PREV] = prv
    else:
        s.ci[r, C_TAIL] = prv
    s.ci[r, C_N] -= 1
    for j in range(n_links(s, m)):
        link = link_of(s, m, j)
        s.li[link, L_N] -= 1
        if s.li[link, L_N] == 0:
            s.lf[link, L_BUSY] += t - s.lf[link, L_SINCE]


@kernel
def join(s, m, t):
    """Message ``m``'s flow (its route, or its current hop) starts taking bandwidth at ``t``."""
    for j in range(n_links(s, m)):
        other = s.li[link_of(s, m, j), L_ALONE]
        if other >= 0 and other != m and s.mf[other, F_KEY] > t:
            meet(s, other, t)
    root = -1
    for j in range(n_links(s, m)):
        link = link_of(s, m, j)
        if s.li[link, L_N] > 0:
            r = find(s, s.li[link, L_UF])
            if r == root:
                continue
            advance(s, r, t)
            root = r if root < 0 else union(s, root, r)
    if root < 0:
        root = new_component(s, t)
        s.ci[root, C_COMMON] = link_of(s, m, 0)
    elif s.ci[root, C_COMMON] >= 0 and not crosses(s, m, s.ci[root, C_COMMON]):
        make_general(s, root)
    insert_member(s, root, m, t)
    for j in range(n_links(s, m)):
        link = link_of(s, m, j)
        if s.li[link, L_N] == 0:
            s.lf[link, L_SINCE] = t
        s.li[link, L_N] += 1
        s.li[link, L_UF] = root
    reschedule(s, root, t)


@kernel
def reschedule(s, r, t):
    """New rates for component ``r`` and the event of its next flow to finish."""
    bandwidth = 1.0 / s.prm[PR_PER_BYTE]
    if s.ci[r, C_COMMON] >= 0:
        rate = bandwidth / s.ci[r, C_N]
        s.cf[r, C_RATE] = rate
        nxt = t + max(0.0, s.mf[s.ci[r, C_HEAD], F_KEY] - s.cf[r, C_V]) / rate
    else:
        max_min_rates(s, r, bandwidth)
        nxt = INF
        m = s.ci[r, C_HEAD]
        while m >= 0:
            nxt = min(nxt, t + max(0.0, s.mf[m, F_REM]) / s.mf[m, F_RATE])
            m = s.mi[m, M_NEXT]
    s.ci[r, C_VER] += 1
    push(s, nxt, EV_COMPONENT, r, s.ci[r, C_VER])


@kernel
def max_min_rates(s, r, bandwidth):
    """Progressive filling over component ``r``: the link of the smallest share a flow fixes
    the rate of its flows, whose use is taken off their other links; and again."""
    stamp = s.gi[G_STAMP] + 1
    s.gi[G_STAMP] = stamp
    touched = 0
    m = s.ci[r, C_HEAD]
    while m >= 0:
        s.mf[m, F_RATE] = -1.0  # not fixed yet
        for j in range(n_links(s, m)):
            link = link_of(s, m, j)
            if s.li[link, L_MARK] != stamp:
                s.li[link, L_MARK] = stamp
                s.lf[link, L_CAP] = bandwidth
                s.li[link, L_UNF] = 0
                s.scratch[touched] = link
                touched += 1
            s.li[link, L_UNF] += 1
        m = s.mi[m, M_NEXT]
    left = s.ci[r, C_N]
    while left > 0:
        best, share = -1, INF
        for i in range(touched):
            link = s.scratch[i]
            if s.li[link, L_UNF] > 0:
                x = max(s.lf[link, L_CAP], 0.0) / s.li[link, L_UNF]
                if x < share:
                    best, share = link, x
        share = max(share, bandwidth * 1e-12)
        m = s.ci[r, C_HEAD]
        while m >= 0:
            if s.mf[m, F_RATE] < 0.0 and crosses(s, m, best):
                s.mf[m, F_RATE] = share
                left -= 1
                for j in range(n_links(s, m)):
                    link = link_of(s, m, j)
                    s.lf[link, L_CAP] -= share
                    s.li[link, L_UNF] -= 1
            m = s.mi[m, M_NEXT]


@kernel
def finish(s, r, t):
    """Component ``r``'s event at ``t``: the flows whose last byte is through leave it;
    their messages are listed in ``scratch`` after the links (``G_NFIN`` of them)."""
    advance(s, r, t)
    base = s.scratch.size // 2
    room = s.scratch.size - base
    ps = s.ci[r, C_COMMON] >= 0
    # the flow the event was made for finishes whatever rounding left of its bytes
    due = s.ci[r, C_HEAD] if ps else _soonest(s, r)
    n = 0
    m = s.ci[r, C_HEAD]
    while m >= 0 and n < room:
        nxt = s.mi[m, M_NEXT]
        left = s.mf[m, F_KEY] - s.cf[r, C_V] if ps else s.mf[m, F_REM]
        if m == due or left <= 1e-9 * s.mf[m, F_BYTES] + 1e-9:
            remove_member(s, r, m, t)
            s.scratch[base + n] = m
            n += 1
        elif ps:
            break  # in finishing order: the rest finish later
        m = nxt
    s.gi[G_NFIN] = n
    if s.ci[r, C_N] == 0:
        free_component(s, r)
    else:
        reschedule(s, r, t)


@kernel
def _soonest(s, r):
    """The flow of a general component ``r`` that finishes first."""
    best, when = -1, INF
    m = s.ci[r, C_HEAD]
    while m >= 0:
        x = s.mf[m, F_REM] / s.mf[m, F_RATE]
        if x < when:
            best, when = m, x
        m = s.mi[m, M_NEXT]
    return best


@kernel
def next_hop(s, m, t):
    """After a store-and-forward hop: the next hop's flow after its latency; True if the
    message has more hops to go."""
    if s.prm[PR_SAF] <= 0 or s.mi[m, M_HOP] + 1 >= s.mi[m, M_HOPS]:
        return False
    s.mi[m, M_HOP] += 1
    push(s, t + s.mf[m, F_LATENCY], EV_JOIN, m, 0)
    return True
