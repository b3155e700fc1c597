"""Links as resources: hand-computed queues, start-up counted once, exact event times."""

from __future__ import annotations

import numpy as np
import pytest

from mimd import Diffusion, Farmer, ModelParams, Network, predict, simulate, workload
from mimd.links import Links
from simd import Machine

# 1 ms on the wire for a 1000-byte message, 10 us per hop
RING = Network(shape=(1, 4), startup=1e-4, per_byte=1e-6, per_hop=1e-5)


def arrivals(net, src, dst, ready, nbytes=1000):
    links = Links(net, Machine(pes=net.shape, backend="numpy"))
    with links.m.phase("links"):
        return links.send(np.asarray(src), np.asarray(dst), nbytes, np.asarray(ready, float))


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


@pytest.mark.parametrize("saf", [False, True])
def test_two_messages_on_one_link_queue(saf):
    net = RING.with_(store_and_forward=saf)
    # both 0 -> 1 at t = 0: the link carries one at a time, the second waits 1 ms
    hold = 1e-3 + (1e-5 if saf else 0.0)  # store-and-forward also holds the hop time
    first = 1e-3 + 1e-5  # uncontended wire time of one hop either way
    a = arrivals(net, [0, 0], [1, 1], [0.0, 0.0])
    assert a.tolist() == pytest.approx([first, first + hold])
    # the one ready later is the one that waits, whatever its place in the batch
    a = arrivals(net, [0, 0], [1, 1], [5e-4, 0.0])
    assert a.tolist() == pytest.approx([first + hold, first])
    # without contention the old times: both one message time less the start-up
    a = arrivals(net.with_(contention=False), [0, 0], [1, 1], [0.0, 0.0])
    assert a.tolist() == pytest.approx([first, first])


def test_queue_on_the_first_link_only_store_and_forward():
    # 0 -> 1 and 0 -> 2 share link 0->1; 0 -> 2 then has link 1->2 to itself
    net = RING.with_(store_and_forward=True)
    h = 1e-3 + 1e-5
    a = arrivals(net, [0, 0], [1, 2], [0.0, 0.0])
    assert a.tolist() == pytest.approx([h, 3 * h])  # waits h, then two hops of h
    # cut-through: the second waits the 1 ms the first holds the link, then streams
    a = arrivals(RING, [0, 0], [1, 2], [0.0, 0.0])
    assert a.tolist() == pytest.approx([1e-3 + 1e-5, 1e-3 + (1e-3 + 2e-5)])


@pytest.mark.parametrize("saf", [False, True])
def test_two_messages_on_disjoint_links_do_not_queue(saf):
    net = RING.with_(store_and_forward=saf)
    one = float(net.wire_time(1000, 1))
    # 0 -> 1 goes east, 0 -> 3 west (the short way round), 2 -> 1 west into 1: no sharing
    a = arrivals(net, [0, 0, 2], [1, 3, 1], [0.0, 0.0, 0.0])
    assert a.tolist() == pytest.approx([one] * 3)
    # opposite directions of one wire are two links: 0 -> 1 and 1 -> 0 at once
    a = arrivals(net, [0, 1], [1, 0], [0.0, 0.0])
    assert a.tolist() == pytest.approx([one, one])


def test_a_link_stays_busy_across_batches():
    net = RING
    links = Links(net, Machine(pes=net.shape, backend="numpy"))
    with links.m.phase("links"):
        a = links.send(np.array([0]), np.array([1]), 1000, np.array([0.0]))
        # sent later in the program but ready before the first left the link: it waits
        b = links.send(np.array([0]), np.array([1]), 1000, np.array([2e-4]))
        c = links.send(np.array([1]), np.array([2]), 1000, np.array([2e-4]))  # other link
    assert float(a[0]) == pytest.approx(1.01e-3)
    assert float(b[0]) == pytest.approx(2.01e-3)
    assert float(c[0]) == pytest.approx(2e-4 + 1.01e-3)
    assert float(links.busy[0 * 4 + 2]) == pytest.approx(2e-3)


def fine_farm(contention, saf):
    # a ring of 9: the farmer (0) and 8 workers, 4 east (1-4 hops) and 4 west; a hand-out
    # holds a link 1 ms (1000 B at 1 us/B), requests and the farmer's CPU cost nothing
    return Network(
        shape=(1, 9),
        startup=0.0,
        per_byte=1e-6,
        per_hop=0.0,
        store_and_forward=saf,
        task_bytes=1000,
        request_bytes=0,
        pack=0.0,
        unpack=0.0,
        contention=contention,
    )


@pytest.mark.parametrize("saf", [False, True])
def test_farmer_with_fine_tasks_is_limited_by_its_links(saf):
    # 400 tasks of 10 us: the workers would take 8 tasks per 1.01 ms (cut-through) or
    # 2 * (1 + 1/2 + 1/3 + 1/4) per ms (store-and-forward, 1-4 hops each way); but every
    # hand-out leaves processor 0 through one of its two links, 1 ms each, so by hand at
    # most 2 hand-outs per ms: 200 ms for 400 tasks, plus the last task (10 us) and, with
    # store-and-forward, the last hand-out's further hops (2 ms: it went 3 hops)
    n, task = 400, 1e-5
    r = simulate(
        np.full(n, task), Farmer(serve=0.0, farmer_works=False), network=fine_farm(True, saf)
    )
    assert r.runs.tolist() == [1] * n
    assert r.makespan == pytest.approx(n / 2 * 1e-3 + task + (2e-3 if saf else 0.0), rel=1e-9)
    # the farmer's two links were busy the whole time (200 ms each)
    assert r.extra["link_busy_max"] == pytest.approx(0.2 + (1e-3 if saf else 0.0))
    free = simulate(
        np.full(n, task), Farmer(serve=0.0, farmer_works=False), network=fine_farm(False, saf)
    )
    # without contention: 8 workers each one hand-out + one task per cycle (cut-through);
    # store-and-forward: a worker h hops away waits h ms per task
    rate = 8 / (1e-3 + task) if not saf else 2 * sum(1 / (h * 1e-3 + task) for h in (1, 2, 3, 4))
    assert n / free.makespan == pytest.approx(rate, rel=0.05)
    assert free.makespan < 0.55 * r.makespan


def test_farmer_request_and_hand_out_pay_the_start_up_once():
    # one worker next to the farmer, one task: request, service, hand-out, task, each
    # message's start-up once, the hand-out's on the farmer's CPU after its service
    net = Network(shape=(1, 2), startup=1e-3, per_byte=1e-5, per_hop=2e-4, tick=0.05)
    serve, cost = 3e-3, 0.33
    r = simulate([cost], Farmer(serve=serve, farmer_works=False), network=net)
    req = float(net.message_time(net.request_bytes, 1))
    out = float(net.message_time(net.task_bytes, 1))
    assert r.makespan == pytest.approx(req + serve + out + cost, rel=1e-12)
    # CPU: the farmer paid its service and the hand-out's start-up; the worker its two
    # requests' start-ups (the second asks, after the task, of an empty pool)
    assert r.overhead.tolist() == pytest.approx([serve + net.startup, 2 * net.startup])


def test_event_times_are_not_rounded_to_the_tick():
    # a coarse tick (50 ms) against messages of about 2 ms: the single worker's tasks run
    # back to back with exactly one request and one hand-out between them, as by hand
    net = Network(shape=(1, 2), startup=1e-3, per_byte=1e-6, per_hop=1e-5, tick=0.05)
    costs = [0.33, 0.21, 0.47]
    r = simulate(costs, Farmer(serve=5e-4, farmer_works=False), network=net)
    cycle = float(net.message_time(net.request_bytes, 1) + net.message_time(net.task_bytes, 1))
    assert r.makespan == pytest.approx(sum(costs) + 3 * (cycle + 5e-4), rel=1e-12)


def test_contention_switch_keeps_the_old_behaviour_comparable():
    costs = workload("step", 16, 4)
    for pol in (Farmer(), Diffusion()):
        on = simulate(costs, pol, network=Network.cluster(16), placement="block")
        off = simulate(costs, pol, network=Network.cluster(16, contention=False), placement="block")
        assert on.extra["contention"] and not off.extra["contention"]
        assert off.extra["link_wait"] == 0.0
        # contention only delays messages
        assert on.makespan >= off.makespan - 1e-9


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
