"""A plain reference of the network model: max-min fair sharing recomputed from scratch at
every event, by the book (progressive filling over all flows), slow and simple. The tests
check the engine's incremental model (:mod:`mimd.network_kernels`) against it."""

from __future__ import annotations

import numpy as np


def max_min(routes: list[list[int]], capacity: float) -> list[float]:
    """Max-min fair rates of flows over links of equal ``capacity`` (progressive filling)."""
    rate = [None] * len(routes)
    cap: dict[int, float] = {}
    for r in routes:
        for link in r:
            cap[link] = capacity
    while any(x is None for x in rate):
        count = {link: 0 for link in cap}
        for i, r in enumerate(routes):
            if rate[i] is None:
                for link in r:
                    count[link] += 1
        share, best = min((cap[link] / n, link) for link, n in count.items() if n)
        for i, r in enumerate(routes):
            if rate[i] is None and best in r:
                rate[i] = share
                for link in r:
                    cap[link] -= share
    return rate


def arrivals(net, src, dst, nbytes, leave) -> np.ndarray:
    """Arrival times of cut-through messages (:meth:`mimd.Network.arrivals`)."""
    n = len(src)
    hops = [int(net.hops(a, b)) for a, b in zip(src, dst, strict=True)]
    routes = [
        [int(net.link(a, b, k)) for k in range(h)] for a, b, h in zip(src, dst, hops, strict=True)
    ]
    join = [leave[i] + hops[i] * net.per_hop for i in range(n)]
    left = [float(nbytes[i]) for i in range(n)]
    out = np.full(n, np.nan)
    for i in range(n):
        if hops[i] == 0:
            out[i] = leave[i]
    t = 0.0
    active: list[int] = []
    while np.isnan(out).any():
        rates = max_min([routes[i] for i in active], 1.0 / net.per_byte) if active else []
        ends = [t + left[i] / r for i, r in zip(active, rates, strict=True)]
        starts = [
            join[i] for i in range(n) if np.isnan(out[i]) and i not in active and join[i] >= t
        ]
        nxt = min(ends + starts)
        for i, r in zip(active, rates, strict=True):
            left[i] -= r * (nxt - t)
        t = nxt
        for i, e in zip(list(active), ends, strict=True):
            if e <= t * (1 + 1e-12):
                out[i] = t
                active.remove(i)
        active += [i for i in range(n) if np.isnan(out[i]) and i not in active and join[i] <= t]
    return out
