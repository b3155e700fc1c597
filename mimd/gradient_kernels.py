"""The Gradient Model and the Extended Gradient (Muniz & Zaluska 4.1, 4.2, 5 and 6.1) as
event handlers (compiled by Numba): busyness averaged over a window, a pressure surface
updated every interval one hop at a time, a spawn tree placed down it, and the Extended
Gradient's check-and-reserve handshakes. :mod:`mimd.policy_kernels` calls them.
"""

from __future__ import annotations

import math

import numpy as np

from .engine_kernels import (
    CUR,
    EV_STATUS,
    EV_WAKE,
    EXTENDED,
    FLAG,
    G_MESSAGES,
    GF_STATUS,
    HS,
    HSWAIT,
    LIGHT,
    NBDIR,
    NBP,
    P_BTIME,
    P_BUSYNESS,
    P_SYS,
    PLACING,
    PR_A,
    PR_B,
    PR_C,
    PR_COLS,
    PR_D,
    PR_E,
    PR_F,
    PR_POLICY,
    PR_REQUEST_BYTES,
    PR_ROWS,
    PR_STARTUP,
    PRESSURE,
    Q_BUNDLES,
    Q_COUNT,
    TARGET,
    kernel,
    push,
    system_work,
)
from .network_kernels import K_ANSWER, K_CHECK, give, send

#: the neighbour each winning direction of the pressure update points to (from N, S, W, E)
DVEC = np.array([[-1, 0], [1, 0], [0, -1], [0, 1]], dtype=np.int64)


@kernel
def busyness(s, p, t):
    """``p``'s busyness at ``t``: the time it ran tasks, averaged with weights falling off
    as ``exp(-age / window)`` (Muniz & Zaluska section 5)."""
    a = math.exp(-(t - s.pf[p, P_BTIME]) / s.prm[PR_D])
    now = 1.0 if s.pi[p, CUR] >= 0 else 0.0
    return a * s.pf[p, P_BUSYNESS] + (1.0 - a) * now


@kernel
def mark_busyness(s, p, t):
    """``p`` starts or ends a task at ``t``: its average so far."""
    s.pf[p, P_BUSYNESS] = busyness(s, p, t)
    s.pf[p, P_BTIME] = t


@kernel
def pressure_cap(s):
    return int(s.prm[PR_ROWS]) // 2 + int(s.prm[PR_COLS]) // 2 + 1


@kernel
def status(s, t):
    """The periodic status update: each processor classifies itself with the two
    thresholds and takes one more than its neighbours' smallest pressure, the id of the
    nearest light processor travelling with it; then
    the Gradient Model's over-loaded processors send work downhill, and the Extended
    Gradient's refused sources may ask again."""
    rows, cols = int(s.prm[PR_ROWS]), int(s.prm[PR_COLS])
    n = rows * cols
    pmax = pressure_cap(s)
    low, high = s.prm[PR_B], s.prm[PR_C]
    new_p = s.scratch[:n]
    new_id = s.scratch[n : 2 * n]
    for p in range(n):
        best_p, best_id, best_dir = pmax, -1, -1
        for k in range(4):
            if (k < 2 and rows == 1) or (k >= 2 and cols == 1):
                continue  # a ring: that axis wraps onto the processor itself
            r = (p // cols + DVEC[k, 0]) % rows
            c = (p % cols + DVEC[k, 1]) % cols
            sp, si = s.pi[r * cols + c, PRESSURE], s.pi[r * cols + c, LIGHT]
            if sp < best_p or (sp == best_p and si >= 0 and (si < best_id or best_id < 0)):
                best_p, best_id, best_dir = sp, si, k
        b = busyness(s, p, t)
        light = b < low and s.pi[p, FLAG] == 0 and s.pi[p, Q_COUNT] == 0
        new_p[p] = 0 if light else min(best_p + 1, pmax)
        new_id[p] = p if light else (best_id if new_p[p] < pmax else -1)
        s.pi[p, NBP] = best_p
        s.pi[p, NBDIR] = best_dir
    for p in range(n):
        s.pi[p, PRESSURE] = new_p[p]
        s.pi[p, LIGHT] = new_id[p]
    extended = int(s.prm[PR_POLICY]) == EXTENDED
    for p in range(n):
        if extended:
            s.pi[p, HSWAIT] = 0
            ask(s, p, t)
            continue
        heavy = busyness(s, p, t) > high and s.pi[p, Q_COUNT] > 0
        if heavy and s.pi[p, NBP] < s.pi[p, PRESSURE] and s.pi[p, NBP] < pmax:
            give(s, p, downhill(s, p), t, s.prm[PR_E])
        place(s, p, t)
    s.gf[GF_STATUS] = t + s.prm[PR_A]
    push(s, t + s.prm[PR_A], EV_STATUS, 0, 0)


@kernel
def downhill(s, p):
    rows, cols = int(s.prm[PR_ROWS]), int(s.prm[PR_COLS])
    k = s.pi[p, NBDIR]
    return ((p // cols + DVEC[k, 0]) % rows) * cols + (p % cols + DVEC[k, 1]) % cols


@kernel
def changed(s, p, t):
    """``p`` started a task or received work: the Gradient Model places its bundles, the
    Extended Gradient asks for a light processor."""
    if int(s.prm[PR_POLICY]) == EXTENDED:
        ask(s, p, t)
    else:
        place(s, p, t)


@kernel
def place(s, p, t):
    """The Gradient Model's spawn tree: a busy processor holding a bundle places half of it
    downhill, ``spawn`` seconds of its CPU each, one placement after the other, with no
    check that the target is still light."""
    if s.pi[p, PLACING] or s.pi[p, CUR] < 0 or s.pi[p, Q_BUNDLES] == 0:
        return
    if s.pi[p, NBP] >= pressure_cap(s) or s.pi[p, NBDIR] < 0:
        return
    if give(s, p, downhill(s, p), t, s.prm[PR_E]):
        s.pi[p, PLACING] = 1
        push(s, s.pf[p, P_SYS], EV_WAKE, p, 0)


@kernel
def wake(s, p, t):
    """``p``'s last placement is done: the next one (or the next handshake)."""
    s.pi[p, PLACING] = 0
    changed(s, p, t)


@kernel
def ask(s, p, t):
    """A busy processor holding a bundle, or over-loaded, asks the nearest light processor
    to check it is still light and reserve itself."""
    if s.pi[p, CUR] < 0 or s.pi[p, HS] != 0 or s.pi[p, HSWAIT] != 0:
        return
    tg = s.pi[p, LIGHT]
    if tg < 0 or tg == p:
        return
    heavy = busyness(s, p, t) > s.prm[PR_C] and s.pi[p, Q_COUNT] > 0
    if s.pi[p, Q_BUNDLES] == 0 and not heavy:
        return
    s.pi[p, HS] = 1
    s.pi[p, TARGET] = tg
    leave = system_work(s, p, t, s.prm[PR_STARTUP])
    send(s, p, tg, K_CHECK, 0, 0, s.prm[PR_REQUEST_BYTES], leave, 1.0)
    s.gi[G_MESSAGES] += 1


@kernel
def check(s, q, src, t):
    """``q`` answers a check: yes, and reserved, if it is idle with nothing queued and not
    reserved already."""
    ok = s.pi[q, CUR] < 0 and s.pi[q, Q_COUNT] == 0 and s.pi[q, FLAG] == 0
    if ok:
        s.pi[q, FLAG] = 1
    leave = system_work(s, q, t, s.prm[PR_F] + s.prm[PR_STARTUP])
    send(s, q, src, K_ANSWER, 1 if ok else 0, 0, s.prm[PR_REQUEST_BYTES], leave, 1.0)
    s.gi[G_MESSAGES] += 1


@kernel
def answer(s, p, ok, t):
    """The answer reaches ``p``: on yes it sends work straight to the target (releasing it
    if it has none left); on no it waits for the next status update."""
    s.pi[p, HS] = 0
    tg = s.pi[p, TARGET]
    if ok == 0:
        s.pi[p, HSWAIT] = 1
        return
    if not give(s, p, tg, t, 0.0):
        s.pi[tg, FLAG] = 0
    ask(s, p, t)
