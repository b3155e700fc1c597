"""The router's float max/min compare-and-swap loop is order-free, +0.0 / -0.0 included.

A NumPy model of the CAS loop in ``kernels.cuda_router_source`` (the same decision,
on the same words) is run over every arrival order of a set of messages, and over every
interleaving of the loads and compare-and-swaps of concurrent threads: every schedule
must leave the same word. The rule: ``max`` prefers +0.0 and ``min`` prefers -0.0 (IEEE
``maxNum``/``minNum`` leave it open; ``numpy.maximum`` keeps its first operand), a NaN
operand gives NaN. With ``-ftz=true`` (as CuPy compiles) float32 denormals compare as
zeros; the rule on words keeps the result order-free there too.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from kernels import cuda_router_source as router_src

_WORD = {np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}


def _word(x, dtype) -> int:
    return int(np.asarray(x, dtype=dtype).view(_WORD[np.dtype(dtype)]))


def _value(word: int, dtype):
    return np.asarray(word, dtype=_WORD[np.dtype(dtype)]).view(dtype)[()]


def _flush(x, dtype, ftz: bool):
    """The value a comparison sees: float32 denormals read as signed zeros under -ftz."""
    if ftz and np.dtype(dtype) == np.float32 and x != 0 and abs(x) < np.finfo(np.float32).tiny:
        return np.copysign(np.float32(0), x)
    return x


def _take(old: int, v_word: int, combine: str, dtype, ftz: bool) -> bool:
    """The kernel's ``take``: whether the message replaces the word ``old``.

    ``!(cur != cur) && ((v != v) || (v CMP cur) || (v == cur && v_word WORD_CMP old))``
    with CMP ``>`` and WORD_CMP ``<`` for max, ``<`` and ``>`` for min.
    """
    cur = _flush(_value(old, dtype), dtype, ftz)
    v = _flush(_value(v_word, dtype), dtype, ftz)
    with np.errstate(invalid="ignore"):
        if cur != cur:
            return False
        if v != v:
            return True
        if combine == "max":
            return bool(v > cur or (v == cur and v_word < old))
        return bool(v < cur or (v == cur and v_word > old))


def _sequential(initial: int, words, combine, dtype, ftz) -> int:
    """Messages arriving one after another: each loop reads the current word."""
    mem = initial
    for w in words:
        if _take(mem, w, combine, dtype, ftz):
            mem = w
    return mem


def _interleavings(initial: int, words, combine, dtype, ftz) -> set[int]:
    """Final words over every interleaving of the threads' loads and CAS attempts.

    A thread: ``old = *w``; loop { if not take(old): done; seen = CAS(w, old, v);
    if seen == old: done; old = seen }. Only the load and the CAS touch memory.
    """
    results: set[int] = set()

    def run(mem: int, threads: tuple) -> None:
        # thread: (state, old) with state "load", "cas" or "done"
        live = [i for i, t in enumerate(threads) if t[0] != "done"]
        if not live:
            results.add(mem)
            return
        for i in live:
            state, old = threads[i]
            v = words[i]
            if state == "load":
                old = mem
                nxt = ("cas", old) if _take(old, v, combine, dtype, ftz) else ("done", old)
                run(mem, threads[:i] + (nxt,) + threads[i + 1 :])
            else:  # the CAS: atomic compare and swap
                if mem == old:
                    run(v, threads[:i] + (("done", old),) + threads[i + 1 :])
                else:
                    old = mem
                    nxt = ("cas", old) if _take(old, v, combine, dtype, ftz) else ("done", old)
                    run(mem, threads[:i] + (nxt,) + threads[i + 1 :])

    run(initial, tuple(("load", None) for _ in words))
    return results


def _expected(values, combine):
    """max (min) in the order -0.0 < +0.0, a NaN operand giving NaN."""
    values = np.asarray(values)
    if np.isnan(values).any():
        return np.nan
    best = values.max() if combine == "max" else values.min()
    if best == 0:
        signs = np.signbit(values[values == 0])
        return values.dtype.type(
            -0.0 if (signs.all() if combine == "max" else signs.any()) else 0.0
        )
    return best


DTYPES = (np.float32, np.float64)
MESSAGES = [
    (0.0, -0.0, -0.0),
    (-0.0, 0.0, 0.0, -0.0),
    (-0.0, -1.0, 0.0),
    (1.5, -0.0, 1.5, 0.0),
    (-2.0, -0.0, np.inf, -np.inf),
    (0.0, np.nan, -0.0),
    (-0.0, 3.0, -3.0, 0.0),
]
INITIALS = (0.0, -0.0, -np.inf, np.inf, 2.0)


@pytest.mark.parametrize("combine", ["max", "min"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_arrival_order_gives_the_same_word(combine, dtype):
    for msgs, init in itertools.product(MESSAGES, INITIALS):
        words = [_word(m, dtype) for m in msgs]
        initial = _word(init, dtype)
        finals = {
            _sequential(initial, order, combine, dtype, False)
            for order in itertools.permutations(words)
        }
        assert len(finals) == 1, (msgs, init, [_value(w, dtype) for w in finals])
        got = _value(finals.pop(), dtype)
        want = _expected(np.array((init, *msgs), dtype=dtype), combine)
        if np.isnan(want):
            assert np.isnan(got)
        else:
            assert got == want and np.signbit(got) == np.signbit(want), (msgs, init, got)


@pytest.mark.parametrize("combine", ["max", "min"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_interleaving_of_the_cas_loop_gives_the_same_word(combine, dtype):
    cases = [(0.0, -0.0, -0.0), (-0.0, 0.0, 1.0), (0.0, -0.0, np.nan), (-1.0, -0.0, 0.0)]
    for msgs, init in itertools.product(cases, (-0.0, 0.0, -np.inf)):
        words = [_word(m, dtype) for m in msgs]
        finals = _interleavings(_word(init, dtype), words, combine, dtype, False)
        assert len(finals) == 1, (msgs, init)
        seq = _sequential(_word(init, dtype), words, combine, dtype, False)
        assert finals == {seq}


@pytest.mark.parametrize("combine", ["max", "min"])
def test_flush_to_zero_denormals_stay_order_free(combine):
    tiny = np.finfo(np.float32).smallest_subnormal
    msgs = (np.float32(tiny), np.float32(-tiny), np.float32(3 * tiny), 0.0, -0.0)
    words = [_word(m, np.float32) for m in msgs]
    for init in (0.0, -0.0, -1.0, 1.0):
        finals = {
            _sequential(_word(init, np.float32), order, combine, np.float32, True)
            for order in itertools.permutations(words)
        }
        assert len(finals) == 1, init


@pytest.mark.parametrize("combine", ["max", "min"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_the_model_is_the_kernel_source(combine, dtype):
    src = router_src.router_source(combine, dtype)
    cmp, word_cmp = (">", "<") if combine == "max" else ("<", ">")
    rule = f"wins = (v != v) || (v {cmp} cur) || (v == cur && v_word {word_cmp} old);"
    assert rule in src
    assert "atomicCAS(w, old, v_word)" in src and "if (cur != cur || !wins) break;" in src


def test_float_add_is_an_atomic_add():
    for dtype in DTYPES:
        assert "atomicAdd(a, v);" in router_src.router_source("add", dtype)
    assert ("add", np.dtype(np.float32)) in set(router_src.all_variants())
