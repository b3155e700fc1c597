"""Links shared max-min fairly: hand-computed cases, a reference recomputed from scratch at
every event, the start-up counted once, exact event times."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mimd import Diffusion, Farmer, ModelParams, Network, predict, simulate, workload

from .fluid_reference import arrivals as reference_arrivals
from .fluid_reference import max_min

# 1 ms on the wire for a 1000-byte message, 10 us per hop
RING = Network(shape=(1, 4), startup=1e-4, per_byte=1e-6, per_hop=1e-5)


def test_route_is_dimension_order_the_short_way_round():
    net = Network(shape=(4, 4))
    # 0 -> 5: one row down (link 0*4+0), then one column right from processor 4 (4*4+2)
    assert [int(net.link(0, 5, k)) for k in range(2)] == [0, 18]
    # 0 -> 3 on a ring of 4 columns: one hop back (west), not three forward
    assert int(net.hops(0, 3)) == 1 and int(net.link(0, 3, 0)) == 3
    # half a ring is a tie: the positive way (0 -> 2 goes east through 1)
    assert [int(net.link(0, 2, k)) for k in range(2)] == [2, 6]
    # every hop of every route starts where the previous one ended
    src, dst = np.meshgrid(np.arange(16), np.arange(16))
    src, dst = src.ravel(), dst.ravel()
    here = src.copy()
    for k in range(net.diameter):
        on = net.hops(src, dst) > k
        lk = net.link(src, dst, k)
        assert np.all(lk[on] // 4 == here[on])
        step = np.array([(1, 0), (-1, 0), (0, 1), (0, -1)])[lk % 4]
        here = np.where(on, net.neighbour(here, step), here)
    assert np.all(here == dst)


@pytest.mark.parametrize("shape", [(1, 5), (4, 4), (3, 6), (6, 2)])
def test_the_engine_routes_as_the_network_says(shape):
    # a message alone crosses the links of Network.link: hop by hop (store-and-forward)
    # each hop takes its latency and its bytes, so the arrival counts the hops
    net = Network(shape=shape, per_byte=1e-6, per_hop=1e-4, store_and_forward=True)
    src, dst = (x.ravel() for x in np.meshgrid(np.arange(net.p), np.arange(net.p)))
    want = net.hops(src, dst) * (1e-4 + 1e-3)
    for a, b, w in zip(src, dst, want, strict=True):
        assert net.arrivals(a, b, 1000, 0.0) == pytest.approx(w, rel=1e-12)


@pytest.mark.parametrize("saf", [False, True])
def test_two_messages_on_one_link_share_it(saf):
    net = RING.with_(store_and_forward=saf)
    # both 0 -> 1 at t = 0: each gets half the link, both arrive after twice the bytes
    a = net.arrivals([0, 0], [1, 1], 1000, [0.0, 0.0])
    assert a.tolist() == pytest.approx([1e-5 + 2e-3] * 2, rel=1e-12)
    # the second 0.5 ms later: alone, shared (0.5 ms of its bytes each), alone again
    a = net.arrivals([0, 0], [1, 1], 1000, [0.0, 5e-4])
    assert a.tolist() == pytest.approx([1e-5 + 1.5e-3, 5e-4 + 1e-5 + 1.5e-3], rel=1e-12)
    # a 16-byte request crossing a hand-out's link gets half the link for 32 us: it does
    # not wait for the hand-out, which is 16 us late
    a = net.arrivals([0, 0], [1, 1], [1000, 16], [0.0, 2e-4])
    assert a.tolist() == pytest.approx([1e-5 + 1.016e-3, 2e-4 + 1e-5 + 3.2e-5], rel=1e-12)
    # without contention every message takes its time alone
    a = net.with_(contention=False).arrivals([0, 0], [1, 1], 1000, [0.0, 0.0])
    assert a.tolist() == pytest.approx([1.01e-3] * 2, rel=1e-12)


def test_max_min_across_links_of_different_load():
    # 0 -> 1, 0 -> 2 (east through 1) and 1 -> 2: link 0->1 carries the first two, link 1->2
    # the last two, so each flow gets half; 0 -> 3 goes west alone at the full rate
    net = Network(shape=(1, 4), per_byte=1e-6, per_hop=0.0)
    a = net.arrivals([0, 0, 1, 0], [1, 2, 2, 3], 1000, 0.0)
    assert a.tolist() == pytest.approx([2e-3, 2e-3, 2e-3, 1e-3], rel=1e-12)
    # three flows on link 0->1, one of them (0 -> 2) also with 1 -> 2 on link 1->2: the
    # three get a third each; 1 -> 2 takes the rest of its link, two thirds
    a = net.arrivals([0, 0, 0, 1], [1, 1, 2, 2], 1000, 0.0)
    rates = max_min([[2], [2], [2, 6], [6]], 1.0)
    assert rates == pytest.approx([1 / 3, 1 / 3, 1 / 3, 2 / 3])
    # 1 -> 2 done at 1.5 ms (2/3 rate); then all three finish together at 3 ms
    assert a.tolist() == pytest.approx([3e-3, 3e-3, 3e-3, 1.5e-3], rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    shape=st.sampled_from([(1, 5), (2, 3), (4, 4), (3, 5)]),
    seed=st.integers(0, 2**16),
    n=st.integers(1, 30),
    per_hop=st.sampled_from([0.0, 1e-5]),
)
def test_same_arrivals_as_a_reference_recomputed_at_every_event(shape, seed, n, per_hop):
    net = Network(shape=shape, per_byte=8e-8, per_hop=per_hop)
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, net.p, n), rng.integers(0, net.p, n)
    nbytes = rng.choice([64, 1000, 8192], n)
    leave = np.round(rng.uniform(0, 2e-3, n), 6)
    want = reference_arrivals(net, src, dst, nbytes, leave)
    np.testing.assert_allclose(net.arrivals(src, dst, nbytes, leave), want, rtol=1e-9, atol=1e-15)


def fine_farm(contention):
    # a ring of 9: the farmer (0) and 8 workers, 4 east (1-4 hops) and 4 west; a hand-out
    # takes 1 ms alone on a link (1000 B at 1 us/B), requests and the farmer's CPU nothing
    return Network(
        shape=(1, 9),
        startup=0.0,
        per_byte=1e-6,
        per_hop=0.0,
        task_bytes=1000,
        request_bytes=0,
        pack=0.0,
        unpack=0.0,
        contention=contention,
    )


def test_farmer_with_fine_tasks_is_limited_by_its_links():
    # 400 tasks of 10 us: every hand-out leaves processor 0 through one of its two links,
    # which carry 1000 B a ms each, so by hand at most 2 hand-outs a ms: 200 ms for 400
    # tasks whatever the sharing (it wastes no bandwidth), plus the last task
    n, task = 400, 1e-5
    farmer = Farmer(serve=0.0, farmer_works=False)
    r = simulate(np.full(n, task), farmer, network=fine_farm(True))
    assert r.runs.tolist() == [1] * n
    assert 0.2 <= r.makespan <= 0.2 + 4e-3
    # the farmer's two links were busy the whole time
    assert r.extra["link_busy_max"] == pytest.approx(0.2, rel=0.02)
    free = simulate(np.full(n, task), farmer, network=fine_farm(False))
    # without contention: 8 workers, each one hand-out and one task per cycle
    assert n / free.makespan == pytest.approx(8 / (1e-3 + task), rel=0.05)
    assert free.makespan < 0.55 * r.makespan


def test_farmer_request_and_hand_out_pay_the_start_up_once():
    # one worker next to the farmer, one task: request, service, hand-out, task, each
    # message's start-up once, the hand-out's on the farmer's CPU after its service
    net = Network(shape=(1, 2), startup=1e-3, per_byte=1e-5, per_hop=2e-4)
    serve, cost = 3e-3, 0.33
    r = simulate([cost], Farmer(serve=serve, farmer_works=False), network=net)
    req = float(net.message_time(net.request_bytes, 1))
    out = float(net.message_time(net.task_bytes, 1))
    assert r.makespan == pytest.approx(req + serve + out + cost, rel=1e-12)
    # CPU: the farmer paid its service and the hand-out's start-up; the worker its two
    # requests' start-ups (the second asks, after the task, of an empty pool)
    assert r.overhead.tolist() == pytest.approx([serve + net.startup, 2 * net.startup])


def test_event_times_are_exact():
    # a single worker's tasks run back to back with exactly one request and one hand-out
    # between them, as by hand
    net = Network(shape=(1, 2), startup=1e-3, per_byte=1e-6, per_hop=1e-5)
    costs = [0.33, 0.21, 0.47]
    r = simulate(costs, Farmer(serve=5e-4, farmer_works=False), network=net)
    cycle = float(net.message_time(net.request_bytes, 1) + net.message_time(net.task_bytes, 1))
    assert r.makespan == pytest.approx(sum(costs) + 3 * (cycle + 5e-4), rel=1e-12)


def test_contention_switch_keeps_the_link_free_model_comparable():
    costs = workload("step", 16, 4)
    for pol in (Farmer(), Diffusion()):
        on = simulate(costs, pol, network=Network.cluster(16), placement="block")
        off = simulate(costs, pol, network=Network.cluster(16, contention=False), placement="block")
        assert on.extra["contention"] and not off.extra["contention"]
        assert off.extra["link_wait"] == 0.0 and on.extra["link_wait"] >= 0.0


def test_model_counts_each_start_up_once():
    net = Network.cluster(32)
    pol = Diffusion()
    prm = ModelParams.from_sim(net, pol)
    d = predict(workload("step", 32, 4), prm).detail
    req = float(net.message_time(net.request_bytes, 1))
    assert prm.hops == 1.0
    # migration request: one message, the target's poll (half a quantum), processing
    assert d["migrate"] == pytest.approx(req + pol.quantum / 2 + pol.process)
    k = prm.neighbours
    wait = pol.quantum * k / (k + 1)
    want = (k - 1) * net.startup + req + wait + pol.process + req
    assert d["query"] == pytest.approx(want + k * pol.process_reply + pol.decision)
