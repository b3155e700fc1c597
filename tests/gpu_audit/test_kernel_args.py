"""Every ``RawKernel`` / ``RawModule`` launch passes what its C parameters expect.

CuPy passes a kernel argument by its own type (a Python ``float`` as a ``double``, an
``int`` as 64 bits, a device array as a pointer) and checks nothing against the C
signature; the wrong bytes are read silently on a GPU (``kernels.cuda_args``). The
counting stand-in for CuPy checks each launch against the signature parsed from the
kernel's source, so every counted scan, send and diffusion run below checks its kernels'
arguments, grids and blocks; the rules themselves are checked against the installed CuPy.
"""

from __future__ import annotations

import numpy as np
import pytest

from diffusion import anisotropic_diffusion
from diffusion import cuda_kernels as pm_src
from diffusion.dense import PMParameters
from kernels import counting
from kernels import cuda_router_source as router_src
from kernels import cuda_scan_source as scan_src
from kernels.counting import cupy as xp
from kernels.counting.records import state as counting_state
from kernels.cuda_args import (
    KernelArgumentError,
    check_launch,
    cupy_scalar_dtype,
    kernel_params,
)
from simd import Machine

SRC = (
    "#define N 64\n#define PAIRS 1\ntypedef float value_t;\ntypedef int idx_t;\n"
    'extern "C" __global__ void __launch_bounds__(N * 2)\n'
    "k(const value_t *__restrict__ x, unsigned char *flags, value_t v, idx_t n,\n"
    "#if PAIRS\n  unsigned long long *count,\n#else\n  int unused,\n#endif\n"
    "  void *scratch, double d) {}\n"
)


def test_signature_is_read_with_defines_conditionals_and_typedefs():
    k = kernel_params(SRC, "k")
    assert k.max_threads == 128
    got = [(p.name, p.ctype, p.pointer, p.dtype and str(p.dtype)) for p in k.params]
    assert got == [
        ("x", "float", True, "float32"),
        ("flags", "unsigned char", True, "uint8"),
        ("v", "float", False, "float32"),
        ("n", "int", False, "int32"),
        ("count", "unsigned long long", True, "uint64"),
        ("scratch", "void", True, None),
        ("d", "double", False, "float64"),
    ]
    without = kernel_params(SRC.replace("PAIRS 1", "PAIRS 0"), "k")
    assert [p.name for p in without.params][4] == "unused"
    with pytest.raises(ValueError, match="no extern"):
        kernel_params(SRC, "other")


def good_args():
    x = xp.zeros(4, dtype=np.float32)
    return [x, x, np.float32(1), np.int32(4), xp.zeros(1, dtype=np.uint64), x, 2.0]


def test_a_correct_launch_passes():
    k = kernel_params(SRC, "k")
    check_launch(k, (3,), (128,), tuple(good_args()), device_array=counting.DeviceArray)
    args = good_args()
    args[1] = None  # a null pointer
    args[5] = np.uint64(0)  # a raw address
    check_launch(k, (3, 2, 1), (64, 2), tuple(args), device_array=counting.DeviceArray)


@pytest.mark.parametrize(
    "index, value, match",
    [
        (2, 1.0, "Python float goes as a 8-byte float64"),
        (2, np.float64(1), "a float64 value, the parameter is float32"),
        (3, 4, "Python int goes as a 8-byte int64"),
        (3, True, "bool"),
        (3, np.int64(4), "int64 value, the parameter is int32"),
        (6, np.float32(2), "float32 value, the parameter is float64"),
        (2, "zero-d", "device array for a scalar parameter"),
        (2, np.zeros(3, np.float32), "host array of shape"),
        (0, np.zeros(3, np.float32), "host array for a device pointer"),
        (0, "int32 device", "device array of int32 for a pointer to float32"),
        (4, 1.5, "for a pointer"),
    ],
)
def test_wrong_arguments_are_refused(index, value, match):
    if isinstance(value, str):
        value = {"zero-d": xp.zeros((), np.float32), "int32 device": xp.zeros(4, np.int32)}[value]
    args = good_args()
    args[index] = value
    with pytest.raises(KernelArgumentError, match=match):
        check_launch(kernel_params(SRC, "k"), (1,), (32,), tuple(args),
                     device_array=counting.DeviceArray)  # fmt: skip


@pytest.mark.parametrize(
    "grid, block, args, match",
    [
        ([1], (32,), None, "grid must be a tuple"),
        ((1,), 32, None, "block must be a tuple"),
        ((0,), (32,), None, r"max\(1, 0\)"),
        ((1, 65536), (32,), None, "exceeds the device limit 65535"),
        ((1,), (256,), None, "256 threads exceeds 128"),
        ((1,), (1, 1, 65), None, "exceeds the device limit 64"),
        ((1,), (1.0,), None, "not 1 to 3 integers"),
        ((1,), (32,), "short", "6 arguments for 7 parameters"),
    ],
)
def test_bad_launch_shapes_are_refused(grid, block, args, match):
    args = tuple(good_args()[:-1]) if args == "short" else tuple(good_args())
    with pytest.raises(KernelArgumentError, match=match):
        check_launch(kernel_params(SRC, "k"), grid, block, args, device_array=counting.DeviceArray)


def test_too_much_dynamic_shared_memory_is_refused():
    with pytest.raises(KernelArgumentError, match="dynamic shared memory"):
        check_launch(kernel_params(SRC, "k"), (1,), (32,), tuple(good_args()),
                     shared_mem=64 * 1024, device_array=counting.DeviceArray)  # fmt: skip


def test_scalar_rules_are_cupys():
    cupy_scalar = pytest.importorskip("cupy._core._scalar")
    for value in (True, False, 0, -1, 2**62, 2**63, 1.5, 1j, np.float32(1), np.int32(-3),
                  np.uint64(0), np.int8(1), np.bool_(True), np.float16(1)):  # fmt: skip
        assert cupy_scalar_dtype(value) == cupy_scalar.CScalar(value).dtype, repr(value)


# ------------------------------------------------------- the project's kernels' signatures


def test_scan_kernels_take_their_value_type_and_32_bit_form():
    for op, dtype, pairs in scan_src.all_variants():
        src = scan_src.scan_source(op, dtype, pairs=pairs)
        scan = kernel_params(src, scan_src.SCAN_KERNEL)
        types = {p.name: (p.pointer, p.dtype) for p in scan.params}
        assert types["initial"] == (False, dtype) and types["x"] == (True, dtype)
        assert types["form"] == (False, np.dtype(np.int32))
        assert scan.max_threads == scan_src.tuning(dtype)[0]
        init = kernel_params(src, scan_src.INIT_KERNEL)
        assert init.max_threads == scan_src.INIT_BLOCK


def test_router_kernels_parse():
    for combine, dtype in router_src.all_variants():
        src = router_src.router_source(combine, dtype)
        names = (
            (router_src.WINNER_KERNEL, router_src.WRITE_KERNEL)
            if combine == "overwrite"
            else (router_src.SEND_KERNEL,)
        )
        for name in names:
            assert kernel_params(src, name).params


@pytest.mark.parametrize("index64", [False, True])
@pytest.mark.parametrize("ndim", [2, 3])
@pytest.mark.parametrize("eps", [0, 1, 2])
def test_diffusion_argument_builders_match_the_step_kernel(index64, ndim, eps):
    """The host-side argument tuples (both index widths, also the 64-bit one no test can
    run at its size) against the kernel's parameters."""
    shape = (6, 5, 8) if ndim == 3 else (6, 8)
    for option in (1, 2, 3):
        src = pm_src.pm_source(option, ndim, eps, 4, index64)
        k = kernel_params(src, pm_src.step_name(option, ndim, eps, 4, index64))
        img = xp.zeros(shape, dtype=np.float32)
        args = (img, img, *pm_src.shape_args(shape, index64, 1, 5))
        args += pm_src.step_scalars(PMParameters(spacing=(1.0,) * ndim, kappa=1.5, option=option))
        if eps:
            args += (np.float32(1e-3), np.uint64(0), np.uint64(0), xp.zeros(2, np.uint64)[0:])
        grid, block, _, _ = pm_src.step_launch(shape)
        check_launch(k, grid, block, args, device_array=counting.DeviceArray)
    active = kernel_params(pm_src.active_source(index64), pm_src.ACTIVE_NAME)
    grid, block, _ = pm_src.active_launch(shape)
    mask = xp.zeros(shape, dtype=np.uint8)
    a_args = (mask, *pm_src.active_args(shape, index64, 1, 5), xp.zeros(1, np.uint64))
    check_launch(active, grid, block, a_args, device_array=counting.DeviceArray)


# ------------------------------------------- counted runs: every launch checked as it goes


def _launched(fn):
    before = dict(counting.checked_launches)
    fn()
    return {k: v - before.get(k, 0) for k, v in counting.checked_launches.items()
            if v > before.get(k, 0)}  # fmt: skip


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
def test_counted_scans_and_sends_check_every_launch(dtype):
    m = Machine(pes=16, backend="counting")
    x = m.asarray(np.arange(40, dtype=dtype) % 7)
    seg = m.asarray(np.arange(40) % 5 == 0)

    def run():
        for op in ("add", "max", "min", "copy"):
            m.scan(x, op, exclusive=True, reverse=True, segments=seg)
            m.scan(x, op, initial=3, exclusive=op == "copy")
            m.scan(x.reshape(5, 8), op, axis=0)
        for combine in ("add", "max", "min", "overwrite"):
            m.send(x, m.asarray(np.arange(40) % 9), 9, combine=combine)

    launched = _launched(run)
    assert {scan_src.SCAN_KERNEL, router_src.WRITE_KERNEL} <= set(launched)
    # the scratch's set-up, once per size class in a process (this run's, or an earlier's)
    assert counting.checked_launches[scan_src.INIT_KERNEL] >= 1


@pytest.mark.parametrize("shape", [(12, 16), (12, 10), (5, 6, 8)])
@pytest.mark.parametrize(
    "kw", [{}, {"epsilon": 1e-4, "return_info": True}, {"epsilon": 1e-4, "freeze": True}]
)
def test_counted_diffusion_checks_every_launch(shape, kw):
    img = (np.random.default_rng(1).random(shape) * 100).astype(np.float32)
    launched = _launched(lambda: anisotropic_diffusion(xp.asarray(img), niter=3, **kw))
    assert launched and all(name.startswith("pm_") for name in launched), launched


def test_replays_skip_the_checks():
    """A replay (the host time of a recorded block) repeats no check: the recording
    passed them, and their cost is not the caller's."""
    m = Machine(pes=16, backend="counting")
    x = m.asarray(np.arange(40, dtype=np.int32))

    def block():
        return int(m.scan(x, "max")[-1]) + int(xp.where(x > 3, x, 0).sum())

    block()
    with counting.recording() as tape:
        block()
    before = dict(counting.checked_launches)
    with counting.replaying(tape):
        block()
    assert dict(counting.checked_launches) == before
    assert counting_state.strict
