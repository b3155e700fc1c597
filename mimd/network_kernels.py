"""Messages on the torus of the simulated machine: links that share their bandwidth
max-min fairly among the messages crossing them, as SimGrid's network models do (compiled
by Numba; the state is :class:`mimd.engine_kernels.State`).

A message is sent once its start-up is paid on the sender's CPU. It then waits for its
latency (``per_hop`` a hop), crosses its dimension-order route
as one flow of ``bytes`` (cut-through: every link of the route at once, as SimGrid's flows
do) or hop after hop (store-and-forward: a flow per hop, each after its hop's latency), and
arrives when its last byte is through.

Sharing (:mod:`mimd.flow_kernels`): the flows crossing a link share its bandwidth max-min
fairly. A message that finds its route's links free of other flows and bookings when it is
sent is booked alone, with one event (its arrival); a flow that meets it later makes it an
ordinary flow. With ``contention=False`` every message takes its uncontended time.
"""

from __future__ import annotations

import math

from .engine_kernels import (
    ERR_MESSAGES,
    EV_ALONE,
    EV_ARRIVE,
    EV_JOIN,
    EV_POLL,
    G_ERROR,
    G_MESSAGES,
    G_MFREE,
    G_MIGRATIONS,
    GF_NOW,
    GF_WAIT,
    INF,
    P_PHASE,
    P_POLL,
    PEND_HEAD,
    PEND_TAIL,
    PR_CONTENTION,
    PR_PACK,
    PR_PER_BYTE,
    PR_PER_HOP,
    PR_QUANTUM,
    PR_REQUEST_BYTES,
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
from .flow_kernels import (
    C_COMMON,
    F_ARRIVE,
    F_BYTES,
    F_JOIN,
    F_KEY,
    F_LATENCY,
    F_SENT,
    L_ALONE,
    L_BUSY,
    L_N,
    L_SINCE,
    L_UF,
    M_AUX,
    M_BOOKED,
    M_DC,
    M_DR,
    M_DST,
    M_HOP,
    M_HOPS,
    M_KIND,
    M_NEXT,
    M_PAYLOAD,
    M_SRC,
    M_VER,
    M_WAITING,
    advance,
    crosses,
    displacement,
    find,
    insert_member,
    link_of,
    make_general,
    n_links,
    new_component,
    reschedule,
    resolve_soon,
    union,
)

#: message kinds: a farmer's request, a unit of work, Diffusion's query and its reply, a
#: request for a task and its refusal, the Extended Gradient's check and its answer
K_REQUEST, K_TASK, K_QUERY, K_REPLY, K_ASK, K_REFUSE, K_CHECK, K_ANSWER = range(8)


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
    if s.ci[root, C_COMMON] >= 0:
        reschedule(s, root, t)
    else:
        resolve_soon(s, root, t)


@kernel
def next_hop(s, m, t):
    """After a store-and-forward hop: the next hop's flow after its latency; True if the
    message has more hops to go."""
    if s.prm[PR_SAF] <= 0 or s.mi[m, M_HOP] + 1 >= s.mi[m, M_HOPS]:
        return False
    s.mi[m, M_HOP] += 1
    push(s, t + s.mf[m, F_LATENCY], EV_JOIN, m, 0)
    return True
