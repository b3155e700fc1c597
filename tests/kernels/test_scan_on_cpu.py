"""The GPU scan's CUDA source, run on CPU threads through its host wrapper, against the
reference.

``kernels.cupy_scan.scan`` runs as on a GPU, on a namespace whose kernels are the
generated CUDA source compiled as C++ with CUB's block primitives and look-back replaced
by plain ones (:mod:`tests.kernels.scan_on_cpu`); every block runs in a process of its
own, all at once, so tiles look back at predecessors still working. Small tiles (4
threads of 3 items, 2 of 5 for 8-byte values) make small arrays many tiles. What runs is
the kernel's own text: tickets, the scratch's two regions and their reset, loads, heads,
segments, reverse order and the epilogue; and the wrapper's: plans, the scratch set up
once per size class, the arguments.
"""

from __future__ import annotations

import numpy as np
import pytest

from kernels import cuda_scan_source as scan_src
from kernels import cupy_scan, reference
from tests.kernels import scan_on_cpu

_why = scan_on_cpu.unavailable()
pytestmark = pytest.mark.skipif(_why is not None, reason=_why or "")

SMALL_TUNING = {4: (4, 3), 8: (2, 5)}


@pytest.fixture
def small_tiles(monkeypatch):
    monkeypatch.setattr(scan_src, "_TUNING", SMALL_TUNING)
    cupy_scan._launch.cache_clear()
    cupy_scan._module.cache_clear()
    yield
    cupy_scan._launch.cache_clear()
    cupy_scan._module.cache_clear()


def _values(rng, n, dtype):
    # integral values, so that float sums are exact in any order
    return rng.integers(-20, 20, n).astype(dtype)


def _check(ns, x, op, **kw):
    segments = kw.get("segments")
    want = reference.scan(np, x, op, **kw)
    if segments is not None:
        kw["segments"] = scan_on_cpu.on_cpu(ns, segments)
    got = cupy_scan.scan(ns, scan_on_cpu.on_cpu(ns, x), op, **kw)
    np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"{op} {x.dtype} {kw}")


# Every operator and dtype, plain and pair variants (the look-back's two tile states); the
# default run compiles four (about 2 s each), the others are slow.
CASES = [
    ("add", "int32", {}),
    ("min", "float64", {"segmented": True}),
    ("or", "int64", {"axis": 1}),
    ("copy", "float64", {"segmented": True, "exclusive": True, "initial": 7}),
    pytest.param(("add", "int64", {"exclusive": True, "initial": 3}), marks=pytest.mark.slow),
    pytest.param(("max", "float32", {"reverse": True}), marks=pytest.mark.slow),
    pytest.param(
        ("xor", "int32", {"segmented": True, "reverse": True, "exclusive": True}),
        marks=pytest.mark.slow,
    ),
    pytest.param(("and", "int32", {"axis": 0, "exclusive": True}), marks=pytest.mark.slow),
    pytest.param(("copy", "int32", {"reverse": True, "segmented": True}), marks=pytest.mark.slow),
]


def _case_id(case):
    op, dtype, form = case
    return "-".join([op, dtype, *form])


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_the_kernel_source_scans_as_the_reference(small_tiles, case):
    op, dtype, form = case
    ns = scan_on_cpu.namespace()
    rng = np.random.default_rng(len(op) * 31 + len(form))
    for n in (1, 11, 12, 50):
        kw = dict(form)
        shape = (5, n) if "axis" in kw else (n,)
        x = _values(rng, int(np.prod(shape)), dtype).reshape(shape)
        if kw.pop("segmented", False):
            kw["segments"] = rng.random(shape) < 0.2
        _check(ns, x, op, **kw)


def test_one_scratch_serves_a_size_class_and_its_regions_take_turns(small_tiles):
    """Scans of one size class share a scratch, set up once: each scan runs on the region
    the last one left clean and cleans the other; the control word is left with no
    tickets drawn and no blocks counted, its parity flipped."""
    ns = scan_on_cpu.namespace()
    rng = np.random.default_rng(5)
    sizes = [37, 25, 48, 30, 41, 26] * 2  # 12 int32 a tile: 3 or 4 tiles, capacity 4
    for i, n in enumerate(sizes):
        _check(ns, _values(rng, n, np.int32), "add", exclusive=bool(i % 2))
        scratches = [v for k, v in cupy_scan._SCRATCH.items() if k[0] == id(ns)]
        assert len(scratches) == 1
        control = int(scratches[0][3][0])
        assert control == ((i + 1) % 2) << 63, hex(control)


def test_without_the_reset_a_scan_reads_a_stale_tile(small_tiles, monkeypatch):
    """The test's power: with the other region's reset taken out of the kernel, a scan
    that follows another of its size class looks back at tiles it did not write (the
    scan before's, or the garbage of fresh memory): a wrong result, or a look-back that
    runs past tile 0 (the stand-in's blocks stop there)."""
    source = scan_src.scan_source
    reset = "next.InitializeStatus(capacity);"
    assert reset in source("add", "int32", pairs=False)
    monkeypatch.setattr(scan_src, "scan_source", lambda *a, **k: source(*a, **k).replace(reset, ""))
    ns = scan_on_cpu.namespace()
    wrong = 0
    for i in range(8):
        x = np.arange(48, dtype=np.int32) * (i + 1)  # each scan's tiles hold other sums
        try:
            got = np.asarray(cupy_scan.scan(ns, scan_on_cpu.on_cpu(ns, x), "add"))
        except RuntimeError:  # a block stopped
            wrong += 1
            continue
        wrong += not np.array_equal(got, np.cumsum(x, dtype=np.int32))
    print(f"{wrong} of 8 scans read a tile they did not write")
    assert wrong >= 2, wrong
