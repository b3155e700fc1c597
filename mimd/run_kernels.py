"""The event loop of the simulated message-passing machine (compiled by Numba): events are
taken in time order and handed to the CPUs (:mod:`mimd.engine_kernels`), the network
(:mod:`mimd.network_kernels`) and the policies (:mod:`mimd.policy_kernels`,
:mod:`mimd.gradient_kernels`) until every task has run.

:func:`compiled` gives the loop compiled, kept in Numba's cache under a digest of the
engine's source files (Numba checks a cached function against its own file only, and the
engine's column numbers and codes are constants of the other files).
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from . import gradient_kernels as gk
from . import policy_kernels as pk
from .engine_kernels import (
    CUR,
    ERR_DEADLOCK,
    ERR_EVENTS,
    EV_ALONE,
    EV_ARRIVE,
    EV_COMPONENT,
    EV_JOIN,
    EV_POLL,
    EV_STATUS,
    EV_TASK_END,
    EXTENDED,
    G_DONE,
    G_ERROR,
    G_EVENTS,
    G_HEAPN,
    G_NFIN,
    G_STARTED,
    GF_NOW,
    GRADIENT,
    P_TEND,
    TVER,
    finish_task,
    kernel,
    pop,
    push,
    version,
)
from .flow_kernels import (
    C_VER,
    M_PAYLOAD,
    finish,
)
from .network_kernels import (
    arrived,
    arrived_alone,
    free_message,
    join,
    next_hop,
    send,
)


@kernel
def deliver(s, m, t):
    """Message ``m`` is at its destination: the policy's handler, then its row is free
    (queries and requests keep theirs until the polling thread has answered them)."""
    arrived(s, m, t)
    if pk.deliver(s, m, t):
        free_message(s, m)


@kernel
def task_done(s, p, t):
    pol = pk.policy(s)
    if pol == GRADIENT or pol == EXTENDED:
        gk.mark_busyness(s, p, t)
    finish_task(s, p, t)
    pk.dispatch(s, p, t)


@kernel
def network_event(s, r, t):
    """Component ``r``'s flows that are through: the next hop, or delivered."""
    finish(s, r, t)
    base = s.scratch.size // 2
    for i in range(s.gi[G_NFIN]):
        m = s.scratch[base + i]
        if not next_hop(s, m, t):
            deliver(s, m, t)


def run(s, max_events):
    """Simulate until every task has run, or ``max_events`` events have (then ``run`` goes
    on where it stopped); ``s.gi[G_ERROR]`` says why it stopped early."""
    n = s.ti.shape[0]
    if s.gi[G_STARTED] == 0:
        s.gi[G_STARTED] = 1
        pol = pk.policy(s)
        if pol == GRADIENT or pol == EXTENDED:
            gk.status(s, 0.0)
        for p in range(s.pf.shape[0]):
            pk.dispatch(s, p, 0.0)
    while s.gi[G_DONE] < n and s.gi[G_ERROR] == 0:
        if s.gi[G_HEAPN] == 0:
            s.gi[G_ERROR] = ERR_DEADLOCK
            break
        if s.gi[G_EVENTS] >= max_events:
            s.gi[G_ERROR] = ERR_EVENTS
            break
        t, kind, a, v = pop(s)
        s.gf[GF_NOW] = t
        s.gi[G_EVENTS] += 1
        if kind == EV_TASK_END:
            if v == version(s.pi[a, TVER]) and s.pi[a, CUR] >= 0:
                if s.pf[a, P_TEND] > t:  # system work has put it off since
                    push(s, s.pf[a, P_TEND], EV_TASK_END, a, v)
                else:
                    task_done(s, a, t)
        elif kind == EV_JOIN:
            join(s, a, t)
        elif kind == EV_COMPONENT:
            if v == version(s.ci[a, C_VER]):
                network_event(s, a, t)
        elif kind == EV_ARRIVE:
            deliver(s, a, t)
        elif kind == EV_POLL:
            for i in range(pk.poll(s, a, t)):
                free_message(s, s.scratch[i])
        elif kind == EV_ALONE:
            if arrived_alone(s, a, t, v):
                deliver(s, a, t)
        elif kind == EV_STATUS:
            gk.status(s, t)
        else:
            gk.wake(s, a, t)


def arrivals(s, src, dst, nbytes, leave, out):
    """The network alone: message ``i`` from ``src[i]`` to ``dst[i]`` of ``nbytes[i]``
    enters at ``leave[i]``; its arrival time goes to ``out[i]``."""
    for i in range(src.size):
        m = send(s, src[i], dst[i], 0, i, 0, nbytes[i], leave[i], 1.0)
        if m < 0:
            return
    left = src.size
    while left > 0 and s.gi[G_HEAPN] > 0:
        t, kind, a, v = pop(s)
        s.gf[GF_NOW] = t
        if kind == EV_JOIN:
            join(s, a, t)
        elif kind == EV_ARRIVE or (kind == EV_ALONE and arrived_alone(s, a, t, v)):
            out[s.mi[a, M_PAYLOAD]] = t
            left -= 1
        elif kind == EV_COMPONENT and v == version(s.ci[a, C_VER]):
            finish(s, a, t)
            base = s.scratch.size // 2
            for i in range(s.gi[G_NFIN]):
                m = s.scratch[base + i]
                if not next_hop(s, m, t):
                    out[s.mi[m, M_PAYLOAD]] = t
                    left -= 1


#: The files of the engine: a cached compilation is made again when any of them changes.
SOURCES = ("engine_kernels", "flow_kernels", "network_kernels", "policy_kernels",
           "gradient_kernels", "run_kernels", "policies/base")  # fmt: skip


def source_digest() -> str:
    """A digest of the engine's source files."""
    folder = Path(__file__).parent
    digest = hashlib.sha256()
    for name in SOURCES:
        digest.update((folder / f"{name}.py").read_bytes())
    return digest.hexdigest()[:16]


@functools.cache
def compiled(name):
    """:func:`run` or :func:`arrivals` compiled, cached on disk under :func:`source_digest`."""
    from kernels.rebind import bind

    fn = bind(globals()[name])
    fn.__qualname__ = f"{name}_{source_digest()}"
    try:
        return kernel(fn, cache=True, nogil=True)
    except RuntimeError:  # no cache locator for this file: compile in memory only
        return kernel(fn, nogil=True)


def compiled_run():
    """:func:`run` compiled (:func:`compiled`)."""
    return compiled("run")
