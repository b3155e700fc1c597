"""The link resolution gives bit-identical results to the one it replaced.

:mod:`tests.mimd.links_reference` keeps the first implementation (a sort, two scans, a get
and two sends per hop level). Random batches, one after another on the same links (so that
earlier reservations matter), on tori and rings, store-and-forward and cut-through: the
farmer's patterns (hand-outs from one processor, requests to it), random traffic, several
messages between the same pair, messages to oneself, ties in ready times, equal and mixed
sizes; both paths (:data:`mimd.links.WIDE`). Arrival times, link occupancy and the
statistics must be equal, not close.
"""

from __future__ import annotations

import numpy as np
import pytest

from mimd import links
from mimd.links import Links
from mimd.network import Network
from simd import Machine

from .links_reference import ReferenceLinks


def batches(net, rng, n_batches):
    p = net.p
    t = 0.0
    for _ in range(n_batches):
        n = int(rng.integers(1, 3 * p))
        kind = rng.integers(5)
        if kind == 0:  # the farmer's hand-outs
            src = np.zeros(n, dtype=np.int64)
            dst = rng.integers(0, p, n)
        elif kind == 1:  # requests to the farmer
            src = rng.integers(0, p, n)
            dst = np.zeros(n, dtype=np.int64)
        elif kind == 2:  # a few pairs, many times
            pairs = rng.integers(0, p, (3, 2))
            src, dst = pairs[rng.integers(0, 3, n)].T
        else:
            src = rng.integers(0, p, n)
            dst = rng.integers(0, p, n)
        if rng.random() < 0.5:  # ties: everyone ready at once
            ready = np.full(n, t)
        elif rng.random() < 0.5:  # ready times on a coarse grid (ties)
            ready = t + rng.integers(0, 4, n) * 1e-4
        else:
            ready = t + rng.random(n) * 1e-3
        nbytes = 4096.0 if rng.random() < 0.5 else rng.integers(0, 8192, n).astype(float)
        scale = 1.0 if rng.random() < 0.7 else 3.0
        yield src, dst, nbytes, ready, scale
        t += float(rng.random() * 2e-3)


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("saf", [False, True])
@pytest.mark.parametrize("shape", [(1, 8), (4, 4), (5, 3), (8, 8)])
def test_same_results_as_the_reference(shape, saf, wide, monkeypatch):
    if wide:  # every contended batch by the level-at-a-time path of wide batches
        monkeypatch.setattr(links, "WIDE", 0)
    base = Network.cluster(64) if not saf else Network.transputer()
    net = base.with_(shape=shape, store_and_forward=saf)
    rng = np.random.default_rng(100 * shape[0] + 2 * shape[1] + saf)
    new = Links(net, Machine(pes=net.shape, backend="numpy"))
    ref = ReferenceLinks(net, Machine(pes=net.shape, backend="numpy"))
    for src, dst, nbytes, ready, scale in batches(net, rng, 40):
        a = new.send(src, dst, nbytes, ready, scale)
        b = ref.send(src, dst, nbytes, ready, scale)
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(new.free, ref.free)
        np.testing.assert_array_equal(new.busy, ref.busy)
        assert new.queued == ref.queued and new.sent == ref.sent
    assert ref.queued > 0  # the batches did queue
