"""Cases for the Numba shift / halo kernels in Numba's CUDA simulator (run as a script).

``tests/kernels/test_numba_shift_cudasim.py`` runs this file in a subprocess with
``NUMBA_ENABLE_CUDASIM=1``: the simulator is chosen when ``numba.cuda`` is first imported,
so it cannot share a process with tests that need the real ``numba.cuda`` (PTX compilation,
GPU runs). Importing this module (to list the case names) does not import ``numba.cuda``.

Every kernel result is compared with two oracles: ``kernels.reference`` (the NumPy path
the machine uses) and an independent one built here from ``numpy.pad`` / ``numpy.roll``.
Run by hand: ``NUMBA_ENABLE_CUDASIM=1 PYTHONPATH=. python tests/kernels/numba_shift_sim_cases.py``;
it prints one JSON line ``{case: null | "error message"}``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import sys
import traceback
import warnings
from collections.abc import Callable

import numpy as np

BOUNDARIES = ("wrap", "zero", "edge", "const")
#: The 8 X-Net directions as per-axis offsets (plus the null move).
XNET_MOVES = [m for m in itertools.product((-1, 0, 1), repeat=2) if m != (0, 0)]
DTYPES = ("int32", "int64", "float32", "float64", "bool", "uint8", "int16")

_CONST = {
    "int32": -7,
    "int64": 2**40 + 3,
    "float32": -3.5,
    "float64": np.nan,
    "bool": True,
    "uint8": 200,
    "int16": -300,
}


def _boundary(name: str, dtype: str):
    return _CONST[dtype] if name == "const" else name


def _sample(shape: tuple[int, ...], dtype: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith("float"):
        a = rng.standard_normal(shape).astype(dtype)
        if a.size > 2:  # bit patterns that a value copy could lose
            a.flat[0] = -0.0
            a.flat[1] = np.nan
        return a
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


def _same(got: np.ndarray, exp: np.ndarray, what: str) -> None:
    if not isinstance(got, np.ndarray):
        raise AssertionError(f"{what}: got {type(got).__name__}, expected numpy.ndarray")
    if got.shape != exp.shape or got.dtype != exp.dtype:
        raise AssertionError(f"{what}: got {got.dtype}{got.shape}, expected {exp.dtype}{exp.shape}")
    if exp.dtype == np.bool_:
        equal = np.array_equal(got, exp)
    else:  # bitwise, so NaN and -0.0 count
        bits = np.dtype(f"u{exp.dtype.itemsize}")
        equal = np.array_equal(got.view(bits), exp.view(bits))
    if not equal:
        raise AssertionError(f"{what}: mismatch\n got {got!r}\n expected {exp!r}")


# ---------------------------------------------------------------------- independent oracles


def oracle_shift(x: np.ndarray, offsets, boundary) -> np.ndarray:
    """Per-axis ``numpy.roll`` (wrap) or ``numpy.pad`` and slice (zero, edge, constant)."""
    out = x
    for axis, k in enumerate(offsets):
        n = x.shape[axis]
        if k == 0 or n == 0:
            continue
        if boundary == "wrap":
            out = np.roll(out, k, axis=axis)
            continue
        k = max(-n, min(n, k))
        pad = [(0, 0)] * x.ndim
        pad[axis] = (k, 0) if k > 0 else (0, -k)
        if boundary == "edge":
            padded = np.pad(out, pad, mode="edge")
        else:
            fill = 0 if boundary == "zero" else boundary
            padded = np.pad(
                out, pad, mode="constant", constant_values=np.asarray(fill, dtype=x.dtype)
            )
        start = 0 if k > 0 else -k
        out = np.take(padded, np.arange(start, start + n), axis=axis)
    return np.array(out, copy=True)


def oracle_halo(tiles, heights, widths, width, boundary) -> np.ndarray:
    """Assemble the global grid, pad it with ``numpy.pad``, cut each PE's window."""
    n_r, n_c, bh, bw = tiles.shape
    image = np.concatenate(
        [
            np.concatenate([tiles[r, c, : heights[r], : widths[c]] for c in range(n_c)], axis=1)
            for r in range(n_r)
        ],
        axis=0,
    )
    w = width
    if boundary == "edge":
        padded = np.pad(image, w, mode="edge")
    elif boundary == "wrap":
        padded = np.pad(image, w, mode="wrap")
    else:
        fill = 0 if boundary == "zero" else boundary
        padded = np.pad(
            image, w, mode="constant", constant_values=np.asarray(fill, dtype=tiles.dtype)
        )
    out = np.zeros((n_r, n_c, bh + 2 * w, bw + 2 * w), dtype=tiles.dtype)
    row_off = np.concatenate([[0], np.cumsum(heights)])
    col_off = np.concatenate([[0], np.cumsum(widths)])
    for r, c in itertools.product(range(n_r), range(n_c)):
        h, wd = heights[r], widths[c]
        out[r, c, : h + 2 * w, : wd + 2 * w] = padded[
            row_off[r] : row_off[r] + h + 2 * w, col_off[c] : col_off[c] + wd + 2 * w
        ]
    return out


# ---------------------------------------------------------------------- the cases


def _check_shift(x, offsets, boundary) -> None:
    from kernels import numba_shift, reference

    exp = reference.shift(np, x, tuple(offsets), boundary)
    _same(exp, oracle_shift(x, offsets, boundary), "reference vs oracle")
    got = numba_shift.shift(np, x, tuple(offsets), boundary)
    _same(got, exp, f"kernel shift {x.dtype}{x.shape} by {offsets} ({boundary!r})")


@contextlib.contextmanager
def _machine_on_kernels(pes=(4, 4)):
    """A NumPy machine whose table lookups return what the "cupy" backend registered.

    So the machine's own argument handling (offset / axis forms, offset normalisation, bool
    as uint8, halo checks) runs in front of this module's kernels.
    """
    import simd.machine
    from kernels import registry
    from simd import Machine

    for primitive in ("shift", "halo_exchange"):
        fn = registry.lookup(primitive, "cupy")
        if fn.__module__ != "kernels.numba_shift":
            raise AssertionError(f"cupy {primitive} is {fn.__module__}.{fn.__name__}")
    saved = simd.machine.lookup
    simd.machine.lookup = lambda primitive, backend: registry.lookup(primitive, "cupy")
    try:
        yield Machine(pes=pes, backend="numpy")
    finally:
        simd.machine.lookup = saved


def _check_machine_shift(x, offsets, boundary, offset, axis=None) -> None:
    """``Machine.shift(x, offset, axis)`` on the kernels equals the shift by ``offsets``."""
    from kernels import reference

    exp = reference.shift(np, x, tuple(offsets), boundary)
    _same(exp, oracle_shift(x, offsets, boundary), "reference vs oracle")
    # a PE mesh of x's dimensions (a shift refuses fewer dimensions than the mesh's)
    with _machine_on_kernels(pes=(4,) * x.ndim) as m:
        got = m.shift(x, offset, axis, boundary=boundary)
    _same(got, exp, f"machine shift {x.dtype}{x.shape} by {offset}, axis {axis} ({boundary!r})")


def _check_halo(tiles, heights, widths, width, boundary) -> None:
    from kernels import numba_shift, reference

    exp = oracle_halo(tiles, heights, widths, width, boundary)
    if tiles.shape[2] == tiles.shape[3]:  # the reference assumes square buffers
        _same(
            reference.halo_exchange(np, tiles, heights, widths, width, boundary),
            exp,
            "reference vs oracle",
        )
    got = numba_shift.halo_exchange(np, tiles, heights, widths, width, boundary)
    _same(
        got, exp, f"kernel halo {tiles.shape} h={heights} w={widths} width={width} ({boundary!r})"
    )


def _small_grids(fn: Callable[[], None]) -> Callable[[], None]:
    """Run ``fn`` with 1-block grids, so every grid-stride loop of the kernels iterates."""

    def run() -> None:
        from tests.kernels.numba_shift_support import simulator_launch_shape

        with simulator_launch_shape(max_grid=1):
            fn()

    return run


def _cases() -> dict[str, Callable[[], None]]:
    cases: dict[str, Callable[[], None]] = {}

    # The 8 X-Net directions on a 2-D mesh, every boundary, plus long and null moves.
    for b in BOUNDARIES:

        def xnet(b=b):
            x = _sample((5, 7), "float32", seed=1)
            for move in [*XNET_MOVES, (0, 0), (3, -9), (-5, 7), (12, 1)]:
                _check_shift(x, move, _boundary(b, "float32"))

        cases[f"shift-xnet-{b}"] = xnet

    # Every element type (bool through its uint8 view, as the kernels see it).
    for dt in DTYPES:

        def dtypes(dt=dt):
            x = _sample((4, 6), dt, seed=2)
            for b in BOUNDARIES:
                for move in [(1, 0), (0, -2), (-1, 1)]:
                    _check_shift(x, move, _boundary(b, dt))

        cases[f"shift-dtype-{dt}"] = dtypes

    # 1-D meshes: offsets from -n-2 to n+2, the int-offset / axis forms.
    def one_d():
        x = _sample((9,), "int64", seed=3)
        for b in BOUNDARIES:
            for k in range(-11, 12, 2):
                _check_shift(x, (k,), _boundary(b, "int64"))
                _check_machine_shift(x, (k,), _boundary(b, "int64"), k)
                _check_machine_shift(x, (k,), _boundary(b, "int64"), k, axis=0)

    cases["shift-1d"] = one_d

    # k-D VP sets: one axis at a time, two at once (one kernel), three and four (chained).
    def k_d(b):
        x = _sample((3, 4, 2, 5), "int32", seed=4)
        moves = [
            (1, 0, 0, 0),
            (0, -1, 0, 0),
            (0, 0, 1, 0),
            (0, 0, 0, -2),
            (1, 0, 0, 1),
            (0, 2, -1, 0),
            (-1, 0, 1, 0),
            (1, -1, 1, 0),
            (2, 1, -1, 3),
        ]
        for move in moves:
            _check_shift(x, move, _boundary(b, "int32"))

    for b in BOUNDARIES:
        cases[f"shift-kd-{b}"] = lambda b=b: k_d(b)

    def axis_forms():
        x = _sample((3, 4, 5), "float64", seed=5)
        _check_machine_shift(x, (0, 0, -2), "edge", -2, axis=-1)
        _check_machine_shift(x, (0, 3, 0), "wrap", 3, axis=1)
        _check_machine_shift(x, (1, 0, 2), "zero", (1, 0, 2))
        _check_shift(x, (3, 0, 0), "wrap")

    cases["shift-axis-forms"] = axis_forms

    def non_contiguous():
        x = _sample((6, 5), "float32", seed=6).T
        for b in BOUNDARIES:
            _check_shift(x, (1, -1), _boundary(b, "float32"))
        _check_shift(_sample((8, 6), "int64", seed=7)[::2, 1::2], (-1, 1), "edge")

    cases["shift-non-contiguous"] = non_contiguous

    def empty():
        for shape in [(0,), (0, 3), (3, 0), (2, 0, 4)]:
            x = np.zeros(shape, dtype=np.float32)
            for b in BOUNDARIES:
                _check_shift(x, (1,) * len(shape), _boundary(b, "float32"))
        _check_shift(np.ones((1, 1), np.int32), (1, -1), "edge")
        _check_shift(np.ones((1,), np.int32), (5,), "zero")

    cases["shift-empty-and-single"] = empty

    def strides():
        x = _sample((6, 37, 3), "int32", seed=8)
        for b in BOUNDARIES:
            for move in [(0, 0, 1), (1, 0, 0), (0, -2, 0), (1, 0, -1), (-2, 3, 0)]:
                _check_shift(x, move, _boundary(b, "int32"))

    cases["shift-grid-stride-loops"] = _small_grids(strides)

    # Halo exchange: uneven tiles, widths 1 and 2, every boundary, square and oblong buffers.
    halo_layouts = {
        "3x4-w1": ((5, 5), [2, 5, 3], [4, 1, 3, 2], 1),
        "3x4-w2": ((5, 6), [2, 5, 3], [2, 4, 6, 2], 2),
        "1x1-w1": ((4, 4), [3], [4], 1),
        "1x3-w1": ((3, 3), [3], [1, 3, 2], 1),
        "4x1-w3": ((4, 3), [3, 4, 3, 4], [3], 3),
    }
    for name, (buf, hs, ws, w) in halo_layouts.items():
        for b in BOUNDARIES:

            def halo(buf=buf, hs=hs, ws=ws, w=w, b=b):
                for seed, dt in enumerate(("float32", "int64")):
                    tiles = _sample((len(hs), len(ws), *buf), dt, seed=10 + seed)
                    _check_halo(tiles, hs, ws, w, _boundary(b, dt))

            cases[f"halo-{name}-{b}"] = halo

    def halo_bool():
        tiles = _sample((2, 3, 4, 4), "bool", seed=12)
        for b in BOUNDARIES:
            _check_halo(tiles, [4, 2], [1, 4, 3], 1, _boundary(b, "bool"))

    cases["halo-bool"] = halo_bool

    def halo_strides():
        tiles = _sample((3, 5, 3, 4), "float64", seed=13)
        for b in BOUNDARIES:
            _check_halo(tiles, [2, 3, 2], [4, 2, 3, 2, 4], 2, _boundary(b, "float64"))

    cases["halo-grid-stride-loops"] = _small_grids(halo_strides)

    def machine_route():
        # The machine's own argument handling (offset/axis forms, bool as uint8, halo
        # checks) in front of the kernels, against a NumPy machine on the reference.
        from simd import Machine

        ref = Machine(pes=(4, 4), backend="numpy")
        with _machine_on_kernels() as kern:
            for dt in ("float32", "bool", "int64"):
                x = _sample((4, 6), dt, seed=20)
                for b in ("wrap", "zero", "edge", 1):
                    for offset, axis in [(1, 0), (-2, 1), ((1, -1), None), ((-1, -1), None)]:
                        exp = ref.shift(x, offset, axis, boundary=b)
                        got = kern.shift(x, offset, axis, boundary=b)
                        _same(got, exp, f"machine shift {dt} {offset} {axis} {b!r}")
            tiles = _sample((2, 3, 4, 4), "float64", seed=21)
            for b in ("edge", "zero", "wrap", 2.5):
                exp = ref.halo_exchange(tiles, [4, 3], [2, 4, 3], width=2, boundary=b)
                got = kern.halo_exchange(tiles, [4, 3], [2, 4, 3], width=2, boundary=b)
                _same(got, exp, f"machine halo {b!r}")

    cases["machine-route-through-kernels"] = machine_route

    cases["hypothesis-shift"] = _hypothesis_shift
    cases["hypothesis-halo"] = _hypothesis_halo
    return cases


def _hypothesis_settings():
    from hypothesis import HealthCheck, settings

    # Derandomized: the same examples on every run, so CI cannot flake on a rare draw.
    return settings(
        max_examples=40,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


def _hypothesis_shift() -> None:
    from hypothesis import given
    from hypothesis import strategies as st

    @_hypothesis_settings()
    @given(data=st.data())
    def prop(data):
        ndim = data.draw(st.integers(1, 4), label="ndim")
        shape = tuple(
            data.draw(st.lists(st.integers(0, 5), min_size=ndim, max_size=ndim), label="shape")
        )
        dt = data.draw(st.sampled_from(DTYPES), label="dtype")
        offsets = tuple(
            data.draw(st.lists(st.integers(-7, 7), min_size=ndim, max_size=ndim), label="offsets")
        )
        b = data.draw(st.sampled_from(BOUNDARIES), label="boundary")
        x = _sample(shape, dt, seed=data.draw(st.integers(0, 2**16), label="seed"))
        _check_shift(x, offsets, _boundary(b, dt))

    prop()


def _hypothesis_halo() -> None:
    from hypothesis import given
    from hypothesis import strategies as st

    @_hypothesis_settings()
    @given(data=st.data())
    def prop(data):
        w = data.draw(st.integers(1, 2), label="width")
        bh = data.draw(st.integers(w, 4), label="BH")
        bw = data.draw(st.integers(w, 4), label="BW")
        hs = data.draw(st.lists(st.integers(w, bh), min_size=1, max_size=3), label="heights")
        ws = data.draw(st.lists(st.integers(w, bw), min_size=1, max_size=3), label="widths")
        dt = data.draw(st.sampled_from(DTYPES), label="dtype")
        b = data.draw(st.sampled_from(BOUNDARIES), label="boundary")
        tiles = _sample((len(hs), len(ws), bh, bw), dt, seed=data.draw(st.integers(0, 99)))
        _check_halo(tiles, hs, ws, w, _boundary(b, dt))

    prop()


def case_names() -> list[str]:
    """Names of all cases (no ``numba.cuda`` import)."""
    return list(_cases())


def main() -> int:
    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        print("set NUMBA_ENABLE_CUDASIM=1 before running this file", file=sys.stderr)
        return 2
    from numba import config

    assert config.ENABLE_CUDASIM, "numba.cuda was not put in simulator mode"
    warnings.simplefilter("error")  # as strict as the pytest configuration
    # ... with the same exception for numba-cuda's own import under NumPy >= 2.5.
    warnings.filterwarnings("ignore", "The 'generic' unit for NumPy timedelta", DeprecationWarning)
    from tests.kernels.numba_shift_support import simulator_launch_shape

    results: dict[str, str | None] = {}
    for name, case in _cases().items():
        try:
            with simulator_launch_shape():
                case()
            results[name] = None
        except Exception:
            results[name] = traceback.format_exc(limit=6)[-3000:]
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
