"""Scan Directed Load Balancing (Biagioni & Prins 1991): worked examples, bounds and invariants.

Oracles: hand-computed runs of Algorithms 1 and 2, the paper's load bounds, and, after
every step, an independent reconstruction of the mapping from where every data point
physically is (its global index travels with it), on which the Locality Constraints,
the Locality Property and conservation are checked.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simd import Machine
from simd.balance.scan_directed import (
    LocalityError,
    TiledGrid,
    balance,
    hierarchical_boundaries,
    locality_violations,
)

# SD_EXAMPLES=600 runs a longer search.
FAST = settings(
    max_examples=int(os.environ.get("SD_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def physical_mapping(grid: TiledGrid) -> tuple[list[np.ndarray], np.ndarray]:
    """mu per axis from the PE coordinates of the slot holding each global index."""
    valid = np.asarray(grid.valid())
    index = np.asarray(grid.channels["index"])[valid]
    coords = np.nonzero(valid)
    n = math.prod(grid.shape)
    counts = np.bincount(index, minlength=n)
    mu = []
    for axis in range(grid.ndim):
        m = np.full(n, -1, dtype=np.int64)
        m[index] = coords[axis]
        mu.append(m.reshape(grid.shape))
    return mu, counts


def assert_sound(grid: TiledGrid, original: np.ndarray) -> None:
    """Conservation, order, buffers and locality, checked from the data themselves."""
    mu, counts = physical_mapping(grid)
    assert np.all(counts == 1), "a data point was lost or duplicated"
    # Data order is preserved (FIFO buffers: no point passes another, Lemma 3).
    np.testing.assert_array_equal(np.asarray(grid.gather("index")), original)
    assert all(int(e.max()) <= grid.buffer for e in grid.extents), "buffer overflow"
    assert locality_violations(mu, grid.pes) == []
    # The Locality Property itself: every pair of grid neighbours is on the same PE or
    # on PEs at Manhattan distance 1.
    for axis in range(grid.ndim):
        a = [np.take(m, range(0, m.shape[axis] - 1), axis=axis) for m in mu]
        b = [np.take(m, range(1, m.shape[axis]), axis=axis) for m in mu]
        dist = sum(np.abs(x - y) for x, y in zip(a, b, strict=True))
        assert int(dist.max(initial=0)) <= 1


def make_grid(active: np.ndarray, pes: tuple[int, ...], buffer: int | None) -> TiledGrid:
    n = active.size
    return TiledGrid.from_arrays(
        {"active": active, "index": np.arange(n).reshape(active.shape)},
        pes,
        buffer=buffer,
        uncharged=("index",),
    )


def half_active(buffer: int) -> tuple[Machine, TiledGrid]:
    """The worked example: 16 points on 4 PEs, the first 8 active."""
    active = np.zeros(16, bool)
    active[:8] = True
    return Machine(pes=4, backend="numpy"), make_grid(active, (4,), buffer)


def boundary_residuals(loads: np.ndarray, alpha: float, extents: np.ndarray) -> np.ndarray:
    """``L'_i - i A-bar'`` at every boundary: how far the (pseudo-)load left of each PE
    boundary ends from its target (Algorithms 1 and 2 stop within half a point of it)."""
    pseudo = loads + alpha * extents
    left = np.concatenate([[0.0], np.cumsum(pseudo)])
    return left - np.arange(left.size) * left[-1] / (left.size - 1)


# ------------------------------------------------------------------ decomposition


@pytest.mark.parametrize("n,p", [(10, 4), (512, 64), (400, 64), (7, 7), (9, 1)])
def test_hierarchical_is_lemma_1(n, p):
    bounds = hierarchical_boundaries(n, p)
    owner = np.searchsorted(bounds[1:], np.arange(n), side="right")
    np.testing.assert_array_equal(owner, (np.arange(n) * p) // n)
    sizes = np.diff(bounds)
    assert set(sizes.tolist()) <= {n // p, -(-n // p)}


@pytest.mark.parametrize("rows", [(0, 2), (1, 3), (2, 2), (0, 3)])
def test_a_block_of_pe_rows_is_the_whole_grids_rows(rows):
    """A rank's grid (PE rows ``rows``) holds exactly those buffers of the whole grid."""
    data = np.arange(10 * 7, dtype=np.float32).reshape(10, 7)
    whole = TiledGrid.from_arrays({"v": data}, (3, 2), buffer=8)
    start, stop = (int(b) for b in whole.boundaries(0)[list(rows)])
    part = TiledGrid.from_arrays(
        {"v": data[start:stop]}, (3, 2), buffer=8, rows=rows, shape=data.shape
    )
    lo, hi = rows
    assert part.data_rows() == (start, stop) and part.local_pes == (hi - lo, 2)
    np.testing.assert_array_equal(part.channels["v"], whole.channels["v"][lo:hi])
    np.testing.assert_array_equal(part.valid(), whole.valid()[lo:hi])
    np.testing.assert_array_equal(part.gather("v"), data[start:stop])
    with pytest.raises(ValueError, match="hold data rows"):
        TiledGrid.from_arrays({"v": data}, (3, 2), rows=(0, 1), shape=data.shape)


def test_mesh_larger_than_data_is_refused():
    with pytest.raises(ValueError, match="larger than the data grid"):
        TiledGrid.from_arrays({"v": np.zeros((3, 8))}, (4, 4))
    with pytest.raises(ValueError, match="buffer"):
        TiledGrid.from_arrays({"v": np.zeros(16)}, 4, buffer=3)


def test_check_catches_broken_constraints():
    g = make_grid(np.ones(8, bool), (4,), 4)
    g.extents[0] = np.array([0, 4, 2, 2])
    with pytest.raises(LocalityError, match="Constraint 3"):
        g.check()
    g.extents[0] = np.array([1, 5, 1, 1])
    with pytest.raises(LocalityError, match="buffer"):
        g.check()
    mu = [np.array([0, 1, 0, 1])]
    assert any("constraint 1" in p for p in locality_violations(mu, (2,)))
    mu = [np.array([[0, 0], [1, 0]]), np.array([[0, 1], [0, 1]])]
    assert any("constraint 2" in p for p in locality_violations(mu, (2, 2)))


# ------------------------------------------------------------------ worked examples


def test_algorithm_1_hand_example():
    # 16 points on 4 PEs, the first 8 active: A = [4, 4, 0, 0], A-bar = 2,
    # L = [0, 4, 8, 8], F = [0, -2, -4, -2]. All flows are negative, so the get phase
    # moves boundary 1 left over points 3, 2 (active: F -2 -> 0), boundary 2 over
    # 7, 6, 5, 4 and boundary 3 over 11..8 (inactive, F unchanged) then 7, 6.
    m, g = half_active(buffer=16)
    (rep,) = balance(g, machine=m, limited=False)
    assert rep.aborted is None and rep.alpha == 0
    np.testing.assert_allclose(rep.flows, [0, -2, -4, -2])
    assert g.extents[0].tolist() == [2, 2, 2, 10]
    assert g.loads("active").tolist() == [2, 2, 2, 2]
    assert rep.cycles == 6 and rep.moved == 2 + 4 + 6 and rep.blocked == 0
    assert_sound(g, np.arange(16))


def test_algorithm_2_hand_example():
    # Same data, buffers of b = 8: alpha = A-bar / (b - D-bar) = 2 / (8 - 4) = 0.5,
    # A' = A + alpha D = [6, 6, 2, 2], A-bar' = 4, L' = [0, 6, 12, 14], F = [0, -2, -4, -2],
    # threshold (1 + alpha)/2 = 0.75, an active point moves 1.5 of flow, an inactive 0.5:
    # boundary 1 takes point 3 (F -0.5), boundary 2 points 7, 6, 5 (F +0.5), boundary 3
    # points 11, 10, 9 (F -0.5). PE 3 ends with 7 points, within its buffer of 8.
    m, g = half_active(buffer=8)
    (rep,) = balance(g, machine=m, limited=True)
    assert rep.alpha == pytest.approx(0.5)
    np.testing.assert_allclose(rep.flows, [0, -2, -4, -2])
    assert g.extents[0].tolist() == [3, 2, 4, 7]
    assert g.loads("active").tolist() == [3, 2, 3, 0]
    assert rep.blocked == 0
    assert_sound(g, np.arange(16))


def test_flow_equal_to_its_threshold_does_not_move():
    # 7 points on 5 PEs, buffers of 2: A = [2, 1, 0, 1, 1], A-bar = 1, D-bar = 7/5,
    # alpha = 1 / (2 - 7/5) = 5/3, A' = [16/3, 8/3, 10/3, 8/3, 8/3], A-bar' = 10/3,
    # F = [0, -2, -4/3, -4/3, -2/3] and the threshold (1 + alpha)/2 = 4/3. Boundaries 2
    # and 3 sit exactly on it: in exact arithmetic they do not move (the test is strict),
    # and rounding noise must not move them either (it used to, and then the moves had to
    # wait for lack of room). Only boundary 1 moves, over one active point.
    m = Machine(pes=5, backend="numpy")
    active = np.array([1, 1, 1, 0, 0, 1, 1], bool)
    g = make_grid(active, (5,), 2)
    (rep,) = balance(g, machine=m, limited=True)
    assert rep.alpha == pytest.approx(5 / 3)
    np.testing.assert_allclose(rep.flows, [0, -2, -4 / 3, -4 / 3, -2 / 3])
    assert rep.blocked == 0 and rep.moved == 1
    assert g.extents[0].tolist() == [1, 2, 2, 1, 1]
    assert_sound(g, np.arange(7))


def test_algorithm_1_would_overflow_small_buffers_and_waits():
    # Algorithm 1 wants 10 points on the last PE; with buffers of 8 those moves wait.
    m, g = half_active(buffer=8)
    (rep,) = balance(g, machine=m, limited=False)
    assert rep.blocked > 0
    assert int(g.extents[0].max()) <= 8
    assert_sound(g, np.arange(16))


def test_underflow_aborts_and_leaves_data_alone():
    m = Machine(pes=4, backend="numpy")
    active = np.zeros(16, bool)
    active[:3] = True  # A-bar = 3/4 < 1
    g = make_grid(active, (4,), 8)
    before = [e.copy() for e in g.extents]
    (rep,) = balance(g, machine=m)
    assert rep.aborted == "underflow" and rep.cycles == 0
    assert [e.tolist() for e in g.extents] == [e.tolist() for e in before]
    # 2-D: the average row load must reach the heaviest data row (Algorithm 3).
    m2 = Machine(pes=(2, 2), backend="numpy")
    active = np.zeros((8, 8), bool)
    active[0, :] = True  # one data row of load 4 per PE; A-bar = 4/2 = 2 < 4
    g = make_grid(active, (2, 2), 8)
    rep0, rep1 = balance(g, machine=m2)
    assert rep0.aborted == "underflow"
    assert_sound(g, np.arange(64).reshape(8, 8))


def test_no_room_aborts_limited_buffers():
    m = Machine(pes=4, backend="numpy")
    g = make_grid(np.ones(16, bool), (4,), 4)  # b == D-bar: nowhere to put anything
    (rep,) = balance(g, machine=m, limited=True)
    assert rep.aborted == "no-room"


def test_diagonal_worst_case_computes_zero_flows():
    # Biagioni & Prins (1991), section 4: load evenly on one diagonal of the mesh cannot be improved
    # by orthogonal shifts, and the flows come out zero.
    m = Machine(pes=(4, 4), backend="numpy")
    active = np.zeros((16, 16), bool)
    for i in range(4):
        active[4 * i : 4 * i + 4, 4 * i : 4 * i + 4] = True
    g = make_grid(active, (4, 4), 8)
    reports = balance(g, machine=m, limited=False)
    for rep in reports:
        assert rep.aborted is None
        np.testing.assert_allclose(rep.flows, 0)
        assert rep.moved == 0
    assert_sound(g, np.arange(256).reshape(16, 16))


def test_scans_and_shifts_are_charged():
    m = Machine(pes=(4, 4), backend="numpy")
    active = np.zeros((16, 16), bool)
    active[:6, :6] = True
    g = make_grid(active, (4, 4), 8)
    with m.phase("balancing"):
        reports = balance(g, machine=m)
    calls = m.stats["balancing"].calls
    assert calls["scan"] >= 8  # max- and copy-scans for W, add- and copy-scans for L
    # One charged channel ("active"; the global index is bookkeeping): one shift a cycle.
    assert calls["shift"] == sum(r.cycles for r in reports) > 0
    assert m.clock > 0


def test_machine_must_match():
    g = make_grid(np.ones(16, bool), (4,), 8)
    with pytest.raises(ValueError, match="mesh"):
        balance(g, machine=Machine(pes=8, backend="numpy"))
    with pytest.raises(KeyError):
        balance(g, machine=Machine(pes=4, backend="numpy"), load="nope")
    with pytest.raises(ValueError, match="axis"):
        balance(g, machine=Machine(pes=4, backend="numpy"), axes=(1,))


# ------------------------------------------------------------------ properties


@st.composite
def one_d_case(draw):
    p = draw(st.integers(2, 8))
    n = draw(st.integers(p, 6 * p))
    active = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    return p, active


@FAST
@given(one_d_case())
def test_algorithm_1_balances_to_floor_ceil(case):
    # Unlimited buffers (b = n): the paper's bound floor(A-bar) <= A_i <= ceil(A-bar).
    p, active = case
    n = active.size
    m = Machine(pes=p, backend="numpy")
    g = make_grid(active, (p,), n)
    (rep,) = balance(g, machine=m, limited=False)
    average = active.sum() / p
    if average < 1:
        assert rep.aborted == "underflow"
    else:
        assert rep.aborted is None and rep.blocked == 0
        loads = np.asarray(g.loads("active"))
        assert loads.min() >= math.floor(average) and loads.max() <= math.ceil(average)
        # Every boundary ends within 1/2 of its target i A-bar (the loops' stop rule).
        assert np.all(np.abs(boundary_residuals(loads, 0.0, g.extents[0])) <= 0.5 + 1e-9)
    assert_sound(g, np.arange(n))


@FAST
@given(one_d_case(), st.integers(0, 6))
def test_algorithm_2_respects_buffers(case, extra):
    p, active = case
    n = active.size
    b = -(-n // p) + extra
    m = Machine(pes=p, backend="numpy")
    g = make_grid(active, (p,), b)
    (rep,) = balance(
        g, machine=m, limited=True, on_cycle=lambda grid: assert_sound(grid, np.arange(n))
    )
    assert_sound(g, np.arange(n))
    if rep.aborted is None:
        # Biagioni & Prins (1991): the pseudo-load alone keeps every buffer within b, no move has to
        # wait.
        assert rep.blocked == 0
        # Every boundary ends within (1 + alpha)/2 of its target, so every PE's pseudo-load
        # is within 1 + alpha of A-bar'.
        alpha = rep.alpha
        loads = np.asarray(g.loads("active"))
        residuals = boundary_residuals(loads, alpha, g.extents[0])
        assert np.all(np.abs(residuals) <= (1 + alpha) / 2 + 1e-9)
        pseudo = loads + alpha * g.extents[0]
        target = active.sum() / p + alpha * n / p
        assert np.all(np.abs(pseudo - target) <= 1 + alpha + 1e-9)


@st.composite
def two_d_case(draw):
    R = draw(st.integers(1, 4))
    C = draw(st.integers(1, 4))
    H = draw(st.integers(R, 3 * R + 2))
    W = draw(st.integers(C, 3 * C + 2))
    seed = draw(st.integers(0, 2**31))
    density = draw(st.floats(0.0, 1.0))
    rng = np.random.default_rng(seed)
    # Clustered activity: a random rectangle plus sparse noise.
    active = rng.random((H, W)) < density * 0.3
    r0, c0 = rng.integers(0, H), rng.integers(0, W)
    active[r0 : r0 + rng.integers(1, H + 1), c0 : c0 + rng.integers(1, W + 1)] = True
    extra = draw(st.integers(0, 4))
    axes = draw(st.sampled_from([(0, 1), (1, 0), (0,), (1,)]))
    limited = draw(st.booleans())
    steps = draw(st.integers(1, 3))
    return (R, C), active, extra, axes, limited, steps, seed


@FAST
@given(two_d_case())
def test_multi_dimensional_steps_keep_locality(case):
    pes, active, extra, axes, limited, steps, seed = case
    H, W = active.shape
    b = max(-(-H // pes[0]), -(-W // pes[1])) + extra
    m = Machine(pes=pes, backend="numpy")
    g = make_grid(active, pes, b)
    rng = np.random.default_rng(seed)
    original = np.arange(H * W).reshape(H, W)
    for _ in range(steps):
        # Checked after every put/get cycle, not only at the end of the step.
        balance(
            g,
            machine=m,
            axes=axes,
            limited=limited,
            on_cycle=lambda grid: assert_sound(grid, original),
        )
        assert_sound(g, original)
        # The activity changes between steps, as in the diffusion.
        flip = rng.random(g.channels["active"].shape) < 0.2
        g.channels["active"] ^= flip


@FAST
@given(two_d_case())
def test_multi_dimensional_flows_stop_within_half_a_hyperplane(case):
    # Algorithms 3 and 4 stop a boundary when its flow F_i lies within half the
    # (pseudo-)load of the data hyperplanes on either side of it: F_i <= W(first of i)/2
    # after the put loop, F_i >= -W(last of i - 1)/2 after the get loop. Checked right
    # after each axis (balancing another axis changes the hyperplane loads W).
    pes, active, extra, axes, limited, _, _ = case
    H, W = active.shape
    b = max(-(-H // pes[0]), -(-W // pes[1])) + extra
    m = Machine(pes=pes, backend="numpy")
    g = make_grid(active, pes, b)
    for axis in axes:
        (rep,) = balance(g, machine=m, axes=(axis,), limited=limited)
        p = pes[axis]
        if rep.aborted is not None or rep.blocked or p < 2:
            continue
        # W(i, g): the largest active count of local data hyperplane g over PE hyperplane i.
        act = np.where(np.asarray(g.valid()), np.asarray(g.channels["active"]), 0)
        other = 1 - axis
        w = act.sum(axis=2 + other).max(axis=other)  # (p, b)
        ext = g.extents[axis]
        flows = -boundary_residuals(rep.loads_after, rep.alpha, ext)
        for i in range(1, p):
            assert flows[i] <= (w[i, 0] + rep.alpha) / 2 + 1e-9
            assert flows[i] >= -(w[i - 1, ext[i - 1] - 1] + rep.alpha) / 2 - 1e-9


def test_two_d_balancing_reduces_the_max_load():
    m = Machine(pes=(8, 8), backend="numpy")
    active = np.zeros((64, 64), bool)
    active[:24, :24] = True  # all activity in one corner
    g = make_grid(active, (8, 8), 16)
    before = int(np.asarray(g.loads("active")).max())
    for _ in range(3):
        balance(g, machine=m)
    after = int(np.asarray(g.loads("active")).max())
    assert after < before / 2
    assert_sound(g, np.arange(64 * 64).reshape(64, 64))


@FAST
@given(st.integers(0, 2**31), st.booleans(), st.integers(0, 3))
def test_three_dimensional_balancing_keeps_locality(seed, limited, extra):
    # Algorithms 3 and 4 in k = 3: planes of data move between planes of PEs.
    rng = np.random.default_rng(seed)
    shape = tuple(int(s) for s in rng.integers(2, 7, size=3))
    pes = tuple(int(rng.integers(1, s + 1)) for s in shape)
    active = rng.random(shape) < 0.15
    lo = [int(rng.integers(0, s)) for s in shape]
    active[lo[0] :, lo[1] :, lo[2] :] = True
    b = max(-(-n // p) for n, p in zip(shape, pes, strict=True)) + extra
    m = Machine(pes=pes, backend="numpy")
    g = make_grid(active, pes, b)
    for _ in range(2):
        balance(g, machine=m, limited=limited)
        assert_sound(g, np.arange(active.size).reshape(shape))
