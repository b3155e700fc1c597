"""The link resolution as first written (commit ad981d4): the reference for test_links_fast.

A batch whose routes share links is routed one hop level at a time, every level sorted by
(link, ready time, message) and resolved by segmented scans, the link arrays updated by a
router send after every level. :class:`mimd.links.Links` must give bit-identical arrival
times and link statistics; this copy is kept only to check that.
"""

from __future__ import annotations

import numpy as np

from mimd.network import Network

__all__ = ["ReferenceLinks"]


class ReferenceLinks:
    """Occupancy of the directed links of ``net``'s torus, kept on the SIMD machine ``m``.

    Parameters
    ----------
    net : Network
        Topology and costs; with ``net.contention`` False the links are not modelled and
        :meth:`send` returns the uncontended times.
    m : simd.Machine
        The machine whose scans and sends update the link arrays.
    """

    def __init__(self, net: Network, m) -> None:
        self.net = net
        self.m = m
        xp = self.xp = m.xp
        self.free = xp.zeros(net.links)
        self.busy = xp.zeros(net.links)
        self.queued = 0.0  # total time messages waited for busy links
        self.sent = 0  # messages that crossed at least one link

    def send(self, src, dst, nbytes, ready, scale: float = 1.0):
        """Arrival times of messages ``src -> dst`` of ``nbytes`` that enter their first link
        at ``ready`` (the sender's CPU has paid the start-up by then).

        ``scale`` multiplies the per-hop and per-byte times (the farmer's user-level routing).
        A message to its own processor arrives at ``ready``. Arrays of equal shape; with
        contention the links are reserved, in the order described in the module docstring.
        """
        xp, net = self.xp, self.net
        src = xp.asarray(src, dtype=np.int64)
        shape = src.shape
        src = src.reshape(-1)
        dst = xp.broadcast_to(xp.asarray(dst, dtype=np.int64), shape).reshape(-1)
        ready = xp.broadcast_to(xp.asarray(ready, dtype=np.float64), shape).reshape(-1)
        nbytes = xp.broadcast_to(xp.asarray(nbytes, dtype=np.float64), shape).reshape(-1)
        hops = net.hops(src, dst, xp)
        ph = scale * net.per_hop
        pb = scale * net.per_byte * nbytes
        if not net.contention:
            wire = scale * net.wire_time(nbytes, hops, xp)
            return (ready + wire).reshape(shape)
        saf = net.store_and_forward
        hold = ph + pb if saf else pb + xp.zeros_like(ready)
        adv = hold if saf else xp.full_like(ready, ph)  # ready for the next link after
        hmax = int(hops.max()) if hops.size else 0
        if hmax == 0:
            return ready.reshape(shape)
        # every message's links, hop by hop (-1 past its last hop)
        kk = xp.arange(hmax)[None, :]
        on = kk < hops[:, None]
        lk = xp.where(on, net.link(src[:, None], dst[:, None], kk, xp), -1)
        flat = lk[on]
        srt = xp.sort(flat)
        if not bool((srt[1:] == srt[:-1]).any()):
            start = self._disjoint(lk, on, ready, hold, adv)
        else:
            start = self._levels(lk, on, hops, ready, hold, adv)
        last = xp.take_along_axis(start, xp.maximum(hops - 1, 0)[:, None], axis=1)[:, 0]
        self.sent += int((hops > 0).sum())
        # store-and-forward: there when the last link is done; cut-through: the header is
        # there one routing delay after it entered the last link, the tail one body later
        arrive = xp.where(hops > 0, last + (hold if saf else ph + pb), ready)
        return arrive.reshape(shape)

    def _book(self, lk, fin, hold, wait):
        """Write finished reservations back to the link arrays (router sends)."""
        m = self.m
        self.free = m.send(fin, lk, into=self.free, combine="max")
        self.busy = m.send(hold, lk, into=self.busy, combine="add")
        self.queued += float(wait.sum())

    def _disjoint(self, lk, on, ready, hold, adv):
        """No link twice in the batch: each message meets only earlier reservations, and its
        start on hop ``k`` is ``k * adv + max(ready, max_{j <= k}(free_j - j * adv))`` -- a
        max-scan along every route at once."""
        xp, m = self.xp, self.m
        k = xp.arange(lk.shape[1])[None, :]
        f = xp.where(on, m.get(self.free, xp.maximum(lk, 0)), -xp.inf)
        off = k * adv[:, None]
        lead = m.scan(xp.maximum(f - off, ready[:, None]), "max", axis=1)
        start = off + lead
        hk = xp.broadcast_to(hold[:, None], lk.shape)
        ready_k = xp.concatenate([ready[:, None], (start + adv[:, None])[:, :-1]], axis=1)
        self._book(lk[on], (start + hk)[on], hk[on], (start - ready_k)[on])
        return start

    def _levels(self, lk, on, hops, ready, hold, adv):
        """Links shared in the batch: hop level by hop level, a FIFO per link by scans."""
        xp, m = self.xp, self.m
        start = xp.zeros(lk.shape)
        r = ready.copy()  # when each message is ready for its next link
        for k in range(lk.shape[1]):
            act = xp.flatnonzero(on[:, k])
            lk_k = lk[act, k]
            rk = r[act]
            order = xp.lexsort(xp.stack([act.astype(np.float64), rk, lk_k.astype(np.float64)]))
            ls, rs, ss = lk_k[order], rk[order], hold[act][order]
            first = xp.ones(ls.size, dtype=bool)
            first[1:] = ls[1:] != ls[:-1]
            f0 = m.get(self.free, ls)
            if bool(first.all()):
                # every link of this level has one message: no queue inside the batch
                fin = xp.maximum(rs, f0) + ss
            else:
                incl = m.scan(ss, "add", segments=first)
                lead = m.scan(rs - (incl - ss), "max", segments=first)
                fin = incl + xp.maximum(lead, f0)
            st = fin - ss
            self._book(ls, fin, ss, st - rs)
            sk = xp.empty_like(st)
            sk[order] = st
            start[act, k] = sk
            r[act] = sk + adv[act]
        return start
