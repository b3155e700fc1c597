"""The torus links of the simulated MIMD machine as resources, data-parallel.

Every directed link carries one message at a time, first come first served: a message that
finds its link busy waits at the node until the link is free (a FIFO queue per link). We
chose exclusive FCFS links over a fair share of the bandwidth because that is what the
machines of the papers do: a transputer link (Muniz & Zaluska) is a DMA engine that moves one
message, or one VCR packet, at a time, and an ethernet port (Barker & Chrisochoides) one frame
at a time; fair sharing is the fluid limit of packet interleaving, which gives a bottleneck link the
same throughput (both are work-conserving) but needs rates recomputed at every arrival and
departure, an event-driven computation that does not fit a per-batch scan. Throughput, the
point of Muniz & Zaluska's farmer bottleneck, is the same under both; individual latencies differ.

State: ``free[l]``, the time at which link ``l`` ends its last reservation (one float per
directed link, ``4 P`` of them) and ``busy[l]``, its total occupancy. A batch of messages
(every message the simulator sends in one step of its SIMD program) whose routes share no
link meets only earlier reservations: the start on hop ``k`` is
``k a + max(ready, max_{j <= k}(free_j - j a))`` (``a`` the time from entering one link to
being ready for the next), one max-scan along every route at once. A batch whose routes
share links is routed hop level by hop level, all messages of a level at once: sorted by
(link, ready time), the FIFO of each link is the max-plus recurrence
``finish_i = max(ready_i, finish_{i-1}) + hold_i`` with ``finish_0 = free[l]``, whose
closed form is a segmented add-scan of the holds ``S`` and a segmented max-scan:
``finish_i = S_i + max(free[l], max_{j <= i}(ready_j - S_{j-1}))``.
The new ``free`` goes back to the link array by a router send (combine max).

Speed of the contended path (:meth:`Links._levels`). Each level needs the previous one's
start times, so the levels stay a loop (up to 64 on a 64x64 torus, and the farmer's
hand-outs, all leaving processor 0, queue at most of them), but a level costs a few array
operations, not a sort, a get, two scans and two sends: the bookings of the batch are laid
out once (level, link, message); the link array is read once (a router get) and written
once (two router sends, in the order of the per-level sends, so the same sums); the rows
(messages) are ranked by hop count, so a level without a queue is ``max(ready, free) +
hold`` on a prefix of rows; a level with queues sorts them by ready time and scans each as
a row of a padded matrix (NumPy's accumulate is serial, the machine's scan kernel's
additions in the same order), charged to the model clock as the machine's two scans. A
link booked at two levels of a batch is read from a local copy updated level by level.
Wide batches (more than :data:`WIDE` bookings, such as Diffusion's 16,384 queries of up to
30 hops) keep the level-at-a-time path (:meth:`Links._levels_wide`: sort, get, scans and
sends per level), where the arrays, not the number of operations, take the time.
Every operation on a time is the one the per-level resolution did, in the same order, so
arrival times, ``free``, ``busy`` and ``queued`` are bit-identical to it
(``tests/mimd/test_links_fast.py`` checks this against the old code, kept in
``tests/mimd/links_reference.py``). A whole-route formulation (one max-plus scan per route
for the messages a queue does not touch) would take fewer operations but round
differently, and an ulp can swap two messages ready "at once" in a queue.

What this leaves out (the remaining error of the link model):

* links are reserved in the order the simulator sends: batch after batch, and within a
  batch level after level. A message never fills an idle gap left before an earlier
  reservation on its link, so a message sent later in the program but ready earlier (a
  longer route reaching a link at hop 3 before a short one is sent at hop 0) may wait for
  it. Both err late, never early, and only when a link is loaded;
* nodes have unbounded buffers (no back-pressure, no deadlock), and processors' injection
  and ejection are not separate resources (the sender's CPU already pays the start-up).
"""

from __future__ import annotations

import numpy as np

from .network import Network

__all__ = ["Links"]

#: Queues (bookings of one link at one hop level) up to this many places after the first are
#: scanned as rows of a padded matrix (:meth:`Links._queue_scans`); longer ones too unless
#: the padding would more than quadruple the level, else by the machine's scan instruction.
SHORT = 8

#: Batches with more bookings (messages x hops) than this are routed by
#: :meth:`Links._levels_wide`: there the work of a level is in its arrays, not in the number
#: of operations, and laying the whole batch out at once costs more than it saves.
WIDE = 20_000


class Links:
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
            last = xp.take_along_axis(start, xp.maximum(hops - 1, 0)[:, None], axis=1)[:, 0]
        elif flat.size > WIDE:
            start = self._levels_wide(lk, on, ready, hold, adv)
            last = xp.take_along_axis(start, xp.maximum(hops - 1, 0)[:, None], axis=1)[:, 0]
        else:
            last = self._levels(lk, on, hops, ready, hold, adv)
        self.sent += int((hops > 0).sum())
        # store-and-forward: there when the last link is done; cut-through: the header is
        # there one routing delay after it entered the last link, the tail one body later
        arrive = xp.where(hops > 0, last + (hold if saf else ph + pb), ready)
        return arrive.reshape(shape)

    def _book(self, lk, fin, hold, wait, bounds=None):
        """Write finished reservations back to the link arrays (router sends).

        ``bounds``: the bookings are levels ``bounds[k]:bounds[k + 1]``, whose waits are
        summed level by level, as a send per level did.
        """
        m = self.m
        self.free = m.send(fin, lk, into=self.free, combine="max")
        self.busy = m.send(hold, lk, into=self.busy, combine="add")
        if bounds is None:
            self.queued += float(wait.sum())
            return
        for k in range(len(bounds) - 1):
            self.queued += float(wait[bounds[k] : bounds[k + 1]].sum())

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

    def _queue_scans(self, hold, ready, seg, pos, longest):
        """The two segmented scans of a level with queues: ``incl``, the add-scan of
        ``hold``, and ``lead``, the max-scan of ``ready - (incl - hold)``, each queue (``seg``
        0, 1, ..., places ``pos`` 0 to ``longest``) its own segment.

        On NumPy, with queues up to :data:`SHORT` places or few queues, every queue is a
        row of a padded matrix accumulated along its rows: the same additions in the same
        order as the machine's serial scan, so the same bits, without an instruction's fixed
        cost; charged to the model clock as two scans. Otherwise the machine's scans.
        """
        xp, m = self.xp, self.m
        rows = int(seg[-1]) + 1
        if xp is not np or (longest > SHORT and rows * (longest + 1) > 4 * hold.size):
            first = pos == 0
            incl = m.scan(hold, "add", segments=first)
            lead = m.scan(ready - (incl - hold), "max", segments=first)
            return incl, lead
        pad = np.zeros((rows, longest + 1))
        pad[seg, pos] = hold
        incl = np.cumsum(pad, axis=1)[seg, pos]
        pad[...] = -np.inf
        pad[seg, pos] = ready - (incl - hold)
        lead = np.maximum.accumulate(pad, axis=1)[seg, pos]
        m.charge("scan", hold.size)
        m.charge("scan", hold.size)
        return incl, lead

    def _levels(self, lk, on, hops, ready, hold, adv):
        """Links shared in the batch: hop level by hop level, a FIFO per link by scans.

        Returns every message's start on its last link. The messages are ranked by hop
        count, longest first, so that those still on their way at level ``k`` are the first
        rows of every per-level array; a level where no link has two messages is then
        ``max(ready, free) + hold`` on a prefix of rows, four array operations. A level with
        queues sorts its bookings by (link, ready time, message) and scans. The link arrays
        are read once and written once for the whole batch, with the same values and the
        same order of combination as a read and a write per level (the reads of a link that
        a lower level of this batch booked see a local copy).
        """
        xp, m = self.xp, self.m
        f64 = np.float64
        nmsg, hmax = lk.shape
        # rows: messages by hop count, longest first (then by message)
        rows = xp.argsort((hmax - hops) * nmsg + xp.arange(nmsg))
        ready_r, hold_r, adv_r, hops_r = ready[rows], hold[rows], adv[rows], hops[rows]
        lev_links = lk[rows].T.copy()  # (level, row): the link, -1 past the last hop
        # every booking, as level * nmsg + row, in the order the bookings are made: level,
        # link, message (and ready time inside a queue, set below)
        flat = xp.flatnonzero(lev_links.reshape(-1) >= 0)
        lev = flat // nmsg
        lnk = lev_links.reshape(-1)[flat]
        nl = self.net.links
        srt = xp.argsort((lev * nl + lnk) * nmsg + rows[flat % nmsg])  # unique keys
        flat, lev, lnk = flat[srt], lev[srt], lnk[srt]
        n = int(flat.size)
        new = xp.ones(n, dtype=bool)  # first booking of its (level, link)
        new[1:] = (lnk[1:] != lnk[:-1]) | (lev[1:] != lev[:-1])
        last = xp.ones(n, dtype=bool)  # last booking of its (level, link)
        last[:-1] = new[1:]
        active = xp.bincount(lev, minlength=hmax)
        bounds = [0, *xp.cumsum(active).tolist()]
        active = active.tolist()
        # place of every booking in its link's queue at its level, and the longest queue
        idx = xp.arange(n)
        pos = idx - m.scan(xp.where(new, idx, 0), "max")
        seg = xp.cumsum(new) - 1  # number of the (level, link) queue ...
        seg = seg - seg[xp.asarray(bounds[:-1])][lev]  # ... inside its level
        row = flat % nmsg  # the row of every booking (reordered inside queues below)
        longest = np.maximum.reduceat(m.asnumpy(pos), bounds[:-1]).tolist()
        # a link booked at two levels: the later level reads what the earlier one booked
        by_link = xp.argsort(lnk * hmax + lev)  # groups each link's levels
        ll, lv = lnk[by_link], lev[by_link]
        again = bool(((ll[1:] == ll[:-1]) & (lv[1:] != lv[:-1])).any())
        free = self.free.copy() if again else None
        f_b = m.get(self.free, lnk)  # in booking order
        f_lr = xp.empty(hmax * nmsg)
        f_lr[flat] = f_b
        f_lr = f_lr.reshape(hmax, nmsg)  # by (level, row)
        fin_lr = xp.empty((hmax, nmsg))
        start_lr = xp.zeros((hmax, nmsg))  # zeros: the rows past a last hop are added too
        r = ready_r.copy()  # when each row is ready for its next link
        for k in range(hmax):
            na = active[k]
            if not longest[k]:
                # every link of this level has one message: no queue inside the batch
                fin = fin_lr[k, :na]
                st = start_lr[k, :na]
                if again:
                    ls = lev_links[k, :na]
                    xp.maximum(r[:na], free[ls], out=fin)
                else:
                    xp.maximum(r[:na], f_lr[k, :na], out=fin)
                fin += hold_r[:na]
                xp.subtract(fin, hold_r[:na], out=st)
                if again:
                    free[ls] = fin
                xp.add(st, adv_r[:na], out=r[:na])
                continue
            a, b = bounds[k], bounds[k + 1]
            rw = row[a:b]  # rows in (link, message) order
            rs = r[rw]
            ls = lnk[a:b]
            if xp is np:  # a stable sort: equal ready times stay in message order
                order = np.lexsort((rs, ls))
            else:
                order = xp.lexsort(xp.stack([rows[rw].astype(f64), rs, ls.astype(f64)]))
            rw, rs = rw[order], rs[order]  # links stay in place: same link, new order
            row[a:b] = rw
            ss = hold_r[rw]
            f0 = free[ls] if again else f_b[a:b]
            incl, lead = self._queue_scans(ss, rs, seg[a:b], pos[a:b], longest[k])
            fin = incl + xp.maximum(lead, f0)
            st = fin - ss
            fin_lr[k, rw] = fin
            start_lr[k, rw] = st
            r[rw] = st + adv_r[rw]
            if again:
                lst = last[a:b]
                free[ls[lst]] = fin[lst]  # a FIFO's last finish is its latest
        flat = lev * nmsg + row
        # the ready time of every booking, as the loop computed it
        ready_lr = xp.concatenate([ready_r[None, :], start_lr[:-1] + adv_r[None, :]])
        wait = start_lr.reshape(-1)[flat] - ready_lr.reshape(-1)[flat]
        self._book(lnk, fin_lr.reshape(-1)[flat], hold_r[row], wait, bounds)
        out = xp.empty(nmsg)
        out[rows] = start_lr[xp.maximum(hops_r - 1, 0), xp.arange(nmsg)]
        return out

    def _levels_wide(self, lk, on, ready, hold, adv):
        """:meth:`_levels` for wide batches, one level at a time: sort, get, scans, sends.

        Returns every message's start on every link (the same values as :meth:`_levels`).
        """
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
