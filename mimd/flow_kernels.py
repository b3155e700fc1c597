"""Flows on the torus of the simulated machine, and how they share the links (compiled by
Numba; the state is :class:`mimd.engine_kernels.State`): the columns of messages, links and
components, the routes, and max-min fair sharing. :mod:`mimd.network_kernels` sends the
messages.

The flows whose routes share links form *components*; within a component the rates are
max-min fair (progressive filling: the link with the smallest share per flow fixes its flows
at that share, and so on), each link carrying ``1 / per_byte`` bytes a second. A component
whose flows all cross one link (the farmer's hand-outs behind its outgoing links, a
store-and-forward hop) has one rate, its link's bandwidth over the flows, and is kept as a
processor-sharing queue: a virtual clock of the bytes each flow has got and the flows sorted
by the clock reading at which they finish, so that a flow joining or leaving costs a few
operations however many are queued. Components are merged (union-find) when a flow joins
several; a component of per-flow rates is split again into its connected parts whenever its
rates are made again (:func:`split`), so that it does not grow by flows that once met, and a
part whose flows share one link is again a processor-sharing queue.
"""

from __future__ import annotations

from .engine_kernels import (
    EV_COMPONENT,
    G_CFREE,
    G_NFIN,
    G_STAMP,
    INF,
    PR_COLS,
    PR_PER_BYTE,
    PR_ROWS,
    PR_SAF,
    kernel,
    push,
)

# messages: integers ---------------------------------------------------------------------------
(M_NEXT, M_PREV, M_SRC, M_DST, M_KIND, M_PAYLOAD, M_AUX, M_HOP, M_HOPS, M_DR, M_DC, M_VER,
 M_BOOKED, M_WAITING, M_GROUP, M_PART) = range(16)  # fmt: skip
# messages: floats
F_BYTES, F_REM, F_RATE, F_KEY, F_SENT, F_LATENCY, F_JOIN, F_ARRIVE = range(8)
# links
L_N, L_UF, L_MARK, L_UNF, L_ALONE = range(5)
L_SINCE, L_BUSY, L_CAP = range(3)
# components
C_PARENT, C_N, C_HEAD, C_TAIL, C_COMMON, C_VER, C_FREE, C_NODES, C_LAST, C_DIRTY = range(10)
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
    s.ci[c, C_DIRTY] = 0
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
        _insert_sorted(s, r, m, s.cf[r, C_V] + s.mf[m, F_BYTES])
        return
    s.mf[m, F_REM] = s.mf[m, F_BYTES]
    _link_after(s, r, m, s.ci[r, C_TAIL])


@kernel
def _insert_sorted(s, r, m, key):
    """Flow ``m`` into ``r``'s members in the order of their keys (after equal ones)."""
    s.mf[m, F_KEY] = key
    after = s.ci[r, C_TAIL]
    while after >= 0 and s.mf[after, F_KEY] > key:
        after = s.mi[after, M_PREV]
    _link_after(s, r, m, after)


@kernel
def _link_after(s, r, m, after):
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
def reschedule(s, r, t):
    """New rates for component ``r`` (its flows brought to ``t``) and the event of its next
    flow to finish; a component of per-flow rates is split into its connected parts first."""
    s.ci[r, C_DIRTY] = 0
    if s.ci[r, C_COMMON] < 0:
        split(s, r, t)
    else:
        _schedule_queue(s, r, t)


@kernel
def _schedule_queue(s, r, t):
    """A processor-sharing component's rate and the event of its first flow to finish."""
    rate = (1.0 / s.prm[PR_PER_BYTE]) / s.ci[r, C_N]
    s.cf[r, C_RATE] = rate
    nxt = t + max(0.0, s.mf[s.ci[r, C_HEAD], F_KEY] - s.cf[r, C_V]) / rate
    s.ci[r, C_VER] += 1
    push(s, nxt, EV_COMPONENT, r, s.ci[r, C_VER])


@kernel
def resolve_soon(s, r, t):
    """Component ``r`` of per-flow rates has changed at ``t``: its rates are made again by
    one event at ``t``, after the other changes of that instant (a burst of flows joining
    at once is solved once, not once a flow). Its rates are stale for no time at all."""
    if s.ci[r, C_DIRTY]:
        return
    s.ci[r, C_DIRTY] = 1
    s.ci[r, C_VER] += 1  # its next finish may change
    push(s, t, EV_COMPONENT, r, s.ci[r, C_VER])


@kernel
def _group(s, m):
    """The first member of ``m``'s part (union-find over the members, path halving)."""
    while s.mi[m, M_GROUP] != m:
        s.mi[m, M_GROUP] = s.mi[s.mi[m, M_GROUP], M_GROUP]
        m = s.mi[m, M_GROUP]
    return m


@kernel
def split(s, r, t):
    """Component ``r`` of per-flow rates in its connected parts (flows that share no link,
    not even through others, are solved apart), each a processor-sharing queue if its flows
    all cross one link, else of per-flow rates by :func:`max_min_rates`; each part's event."""
    stamp = s.gi[G_STAMP] + 1
    s.gi[G_STAMP] = stamp
    m = s.ci[r, C_HEAD]
    while m >= 0:  # the parts: members that share a link, by union-find
        s.mi[m, M_GROUP] = m
        s.mi[m, M_PART] = -1
        for j in range(n_links(s, m)):
            link = link_of(s, m, j)
            if s.li[link, L_MARK] != stamp:
                s.li[link, L_MARK] = stamp
                s.li[link, L_UNF] = m
            else:
                a, b = _group(s, m), _group(s, s.li[link, L_UNF])
                s.mi[max(a, b), M_GROUP] = min(a, b)
        m = s.mi[m, M_NEXT]
    node = s.ci[r, C_NODES]  # the merged components' nodes go back to the free list
    s.ci[r, C_NODES] = -1
    if node >= 0:
        free_component(s, node)
    m = s.ci[r, C_HEAD]
    s.ci[r, C_HEAD] = s.ci[r, C_TAIL] = -1
    s.ci[r, C_N] = 0
    s.ci[r, C_LAST] = r
    parts = -1
    while m >= 0:  # each member to its part's component, in order
        nxt = s.mi[m, M_NEXT]
        g = _group(s, m)
        c = s.mi[g, M_PART]
        if c < 0:
            c = r if parts < 0 else new_component(s, t)
            s.ci[c, C_COMMON] = -1
            s.ci[c, C_FREE] = parts  # the parts, chained
            parts = c
            s.mi[g, M_PART] = c
        _append(s, c, m)
        for j in range(n_links(s, m)):
            s.li[link_of(s, m, j), L_UF] = c
        m = nxt
    while parts >= 0:
        c = parts
        parts = s.ci[c, C_FREE]
        _settle(s, c, t)


@kernel
def _append(s, c, m):
    tail = s.ci[c, C_TAIL]
    s.mi[m, M_PREV], s.mi[m, M_NEXT] = tail, -1
    if tail >= 0:
        s.mi[tail, M_NEXT] = m
    else:
        s.ci[c, C_HEAD] = m
    s.ci[c, C_TAIL] = m
    s.ci[c, C_N] += 1


@kernel
def _settle(s, c, t):
    """A part of a split component: a processor-sharing queue if a link is crossed by all
    its flows (they are sorted by the bytes they have left), else per-flow rates."""
    stamp = s.gi[G_STAMP] + 1
    s.gi[G_STAMP] = stamp
    m = s.ci[c, C_HEAD]
    while m >= 0:
        for j in range(n_links(s, m)):
            link = link_of(s, m, j)
            if s.li[link, L_MARK] != stamp:
                s.li[link, L_MARK] = stamp
                s.li[link, L_UNF] = 0
            s.li[link, L_UNF] += 1
        m = s.mi[m, M_NEXT]
    first = s.ci[c, C_HEAD]
    common = -1
    for j in range(n_links(s, first)):
        link = link_of(s, first, j)
        if s.li[link, L_UNF] == s.ci[c, C_N]:
            common = link
            break
    s.cf[c, C_T] = t
    if common < 0:
        bandwidth = 1.0 / s.prm[PR_PER_BYTE]
        max_min_rates(s, c, bandwidth)
        nxt = INF
        m = s.ci[c, C_HEAD]
        while m >= 0:
            nxt = min(nxt, t + max(0.0, s.mf[m, F_REM]) / s.mf[m, F_RATE])
            m = s.mi[m, M_NEXT]
        s.ci[c, C_VER] += 1
        push(s, nxt, EV_COMPONENT, c, s.ci[c, C_VER])
        return
    m = s.ci[c, C_HEAD]  # a queue: each flow keyed by what it has left, in that order
    s.ci[c, C_HEAD] = s.ci[c, C_TAIL] = -1
    s.ci[c, C_N] = 0
    s.ci[c, C_COMMON] = common
    s.cf[c, C_V] = 0.0
    while m >= 0:
        nxt = s.mi[m, M_NEXT]
        s.ci[c, C_N] += 1
        _insert_sorted(s, c, m, s.mf[m, F_REM])
        m = nxt
    _schedule_queue(s, c, t)  # not reschedule: the engine's functions do not recurse


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
    if s.ci[r, C_DIRTY]:
        s.gi[G_NFIN] = 0
        reschedule(s, r, t)
        return
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
