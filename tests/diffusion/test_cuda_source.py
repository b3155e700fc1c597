"""The fused Perona-Malik kernels, checked without a GPU (and on one when there is).

- Every variant (2-D / 3-D x option x plain, epsilon, epsilon with freeze x 4 or 1 points
  a thread x 32- or 64-bit indices) compiles for sm_90 with NVRTC and ptxas reports no
  spill.
- The SASS (with a disassembler, see :mod:`tests.kernels.test_scan_sass`) has no division
  left: no call to a division subroutine, no integer-division sequence (``I2F.U32.RP``
  feeding ``MUFU.RCP``), ``MUFU.RCP`` only in option 2 (its ``1 / (1 + q^2)``); and the
  instructions of the main loop per point dropped (pinned below against the first
  version's).
- The kernel text itself runs on the CPU (:mod:`tests.diffusion.cuda_on_cpu`: one OS
  thread per CUDA thread) on odd shapes smaller and larger than a tile, with the default
  tiles and with tiny ones (many seams), through the host loops of
  :mod:`diffusion.fused`, against the NumPy dense path (tolerance below) and against the
  NumPy model the counting stand-in runs.

Tolerance: the kernel multiplies by host reciprocals, applies the spacing to the
difference of two fluxes and uses ``expf``, so it agrees with NumPy (and medpy) to float32
rounding: ``ATOL`` = 2e-4 on 0..255 data after 10 iterations, as the GPU tests demand.
"""

from __future__ import annotations

import collections
import os
import re
import subprocess
import tempfile

import numpy as np
import pytest

from diffusion import anisotropic_diffusion
from diffusion.cuda_kernels import (
    ACTIVE_NAME,
    Tile,
    active_args,
    active_launch,
    active_source,
    model_active,
    model_step,
    pm_source,
    shape_args,
    step_launch,
    step_name,
    step_scalars,
)
from diffusion.dense import DiffusionInfo, Layout, PMParameters, _fused
from diffusion.update import dilate
from tests import gpu_compile
from tests.diffusion.cuda_on_cpu import cpu_cuda, unavailable
from tests.nvrtc_support import compile_sm90, nvrtc_unavailable

ATOL = 2e-4

_why = nvrtc_unavailable()

VARIANTS = [
    (option, ndim, eps, vec, index64)
    for option in (1, 2, 3)
    for ndim in (2, 3)
    for eps in (0, 1, 2)
    for vec in (4, 1)
    for index64 in (False, True)
]


def _compile(source: str) -> tuple[str, str, bytes]:
    if _why is not None:
        pytest.skip(_why)
    # -ftz=true as CuPy compiles (cupy.cuda.compiler adds it to every NVRTC build).
    return compile_sm90(source, "pm.cu", options=("-ftz=true", "--ptxas-options=-v"))


def _assert_no_spills(log: str) -> None:
    spills = re.findall(r"(\d+) bytes spill stores", log)
    assert spills, "ptxas did not report resource usage"
    assert all(int(s) == 0 for s in spills), log


# ------------------------------------------------------------------ NVRTC / ptxas


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: step_name(*v))
def test_every_variant_compiles_without_spills(variant):
    ptx, log, _ = _compile(pm_source(*variant))
    assert f".entry {step_name(*variant)}(" in ptx
    _assert_no_spills(log)


@pytest.mark.parametrize("index64", [False, True])
def test_active_kernel_compiles(index64):
    ptx, log, _ = _compile(active_source(index64))
    assert f".entry {ACTIVE_NAME}(" in ptx
    _assert_no_spills(log)


def test_bad_variants():
    with pytest.raises(ValueError, match="option"):
        pm_source(4, 2)
    with pytest.raises(ValueError, match="ndim"):
        pm_source(1, 4)
    with pytest.raises(ValueError, match="eps"):
        pm_source(1, 2, eps=3)
    with pytest.raises(ValueError, match="vec"):
        pm_source(1, 2, vec=2)


def test_launch_shapes():
    # 32-bit indices up to the limit, 64-bit past it; 4 points a thread on rows of 4k.
    assert step_launch((8192, 8192))[2:] == (4, False)
    assert step_launch((3, 46341, 46341))[3] is True
    assert step_launch((9, 10))[2] == 1
    grid, block, _, _ = step_launch((5, 40, 64))
    assert grid == (1, 5, 1) and block == (32, 8)


# ------------------------------------------------------------------ SASS

#: Instructions of the main loop per point in the first version (a grid-stride loop with
#: 64-bit div/mod decoding and 8 divisions; one point an iteration), by (option, ndim).
OLD_LOOP = {(1, 2): 288, (1, 3): 422, (2, 2): 298, (2, 3): 436, (3, 2): 246, (3, 3): 363}
#: Upper bounds now (4 points a thread and iteration; measured 48, 87, 28, 51, 33, 60).
NEW_LOOP = {(1, 2): 52, (1, 3): 95, (2, 2): 32, (2, 3): 56, (3, 2): 36, (3, 3): 65}

_INS = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);")
_LABEL = re.compile(r"^\s*(\.L_x_\d+):")


def _sass(cubin: bytes) -> str:
    from tests.kernels.test_scan_sass import _disassembler

    tool = _disassembler()
    if tool is None:
        gpu_compile.skip(f"no nvdisasm / cuobjdump found for the SASS check ({gpu_compile.EXTRA})")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "pm.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        return subprocess.run([*tool, path], capture_output=True, text=True, check=True).stdout


def _main_loop_length(sass: str) -> int:
    """Instructions of the shortest backward branch's range that holds the global store."""
    labels, pending, ins = {}, [], []
    for line in sass.splitlines():
        label = _LABEL.match(line)
        if label:
            pending.append(label.group(1))
            continue
        m = _INS.search(line)
        if m:
            addr = int(m.group(1), 16)
            labels.update((p, addr) for p in pending)
            pending = []
            ins.append((addr, m.group(2), m.group(3)))
    stores = [a for a, op, _ in ins if op.startswith("STG")]
    best = None
    for addr, op, rest in ins:
        target = re.search(r"(\.L_x_\d+)", rest) if op.startswith("BRA") else None
        lo = labels.get(target.group(1)) if target else None
        if lo is not None and lo < addr and any(lo <= s <= addr for s in stores):
            n = (addr - lo) // 16 + 1
            best = n if best is None else min(best, n)
    assert best is not None, "no loop around the store found"
    return best


@pytest.mark.parametrize("option", [1, 2, 3])
@pytest.mark.parametrize("ndim", [2, 3])
def test_sass_has_no_division_and_fewer_instructions(option, ndim):
    _, _, cubin = _compile(pm_source(option, ndim))
    sass = _sass(cubin)
    ops = collections.Counter(m.group(2) for m in _INS.finditer(sass))
    assert not [op for op in ops if op.startswith("CALL")], ops  # no division subroutine
    assert not [op for op in ops if op.startswith(("I2F", "F2I"))], ops  # no integer division
    rcp = sum(n for op, n in ops.items() if op.startswith("MUFU.RCP"))
    assert (rcp > 0) == (option == 2), ops  # option 2's reciprocal only
    per_point = _main_loop_length(sass) / 4
    old = OLD_LOOP[option, ndim]
    print(f"option {option} {ndim}-D: {per_point} instructions a point (was {old})")
    assert per_point <= NEW_LOOP[option, ndim]
    assert per_point < old / 4  # at least 4 times fewer


# ------------------------------------------------------------------ the kernel text on the CPU

_cpu_why = unavailable()
cpu = pytest.mark.skipif(_cpu_why is not None, reason=_cpu_why or "")


def _image(shape, seed=5):
    return (np.random.default_rng(seed).random(shape) * 255).astype(np.float32)


CPU_CASES = [
    # (shape, spacing, option, epsilon, freeze): odd and multiple-of-4 rows, 2-D strips (16
    # rows) and 3-D strips (32 planes) and blocks (8 rows) crossed.
    ((37, 44), (1.0, 1.5), 1, 0.0, False),
    ((70, 45), None, 2, 0.0, False),
    ((33, 20), None, 3, 0.0, False),
    ((40, 36), None, 1, 0.5, False),
    ((35, 41), (1.0, 0.8), 2, 0.5, True),
    ((9, 11, 13), (1.0, 2.0, 0.7), 1, 0.0, False),
    ((34, 10, 8), None, 3, 0.3, False),
    ((6, 17, 12), None, 2, 0.3, True),
]


@cpu
@pytest.mark.parametrize("case", CPU_CASES, ids=lambda c: f"{c[0]}-o{c[2]}-e{c[3]}-f{c[4]:d}")
def test_kernel_text_on_cpu_matches_numpy_path(case):
    shape, spacing, option, epsilon, freeze = case
    img = _image(shape)
    kw = dict(kappa=30, gamma=0.08, voxelspacing=spacing, option=option)
    ref, ref_info = anisotropic_diffusion(
        img, niter=10, epsilon=epsilon, freeze=freeze, return_info=True, **kw
    )
    info = DiffusionInfo()
    sp = spacing or (1.0,) * len(shape)
    p = PMParameters.check(len(shape), 10, 30, 0.08, sp, option, epsilon=epsilon, freeze=freeze)
    out = _fused(cpu_cuda, img.copy(), Layout(shape), p, info, True)
    np.testing.assert_allclose(out, ref, rtol=0, atol=ATOL)
    if epsilon == 0:  # and medpy's, which the NumPy path equals bit for bit
        medpy = pytest.importorskip("medpy.filter.smoothing")
        medpy_kw = dict(kw, voxelspacing=spacing or (1.0,) * len(shape))
        want = medpy.anisotropic_diffusion(img, niter=10, **medpy_kw)
        np.testing.assert_allclose(out, want, rtol=0, atol=ATOL)
    assert info.iterations == ref_info.iterations
    assert info.converged == ref_info.converged
    np.testing.assert_allclose(info.active_fraction, ref_info.active_fraction, atol=1e-3)
    np.testing.assert_allclose(info.updated_fraction, ref_info.updated_fraction, atol=1e-3)


@cpu
@pytest.mark.parametrize("freeze", [False, True])
def test_convergence_on_cpu_matches_numpy_path(freeze):
    # Stops before niter: the counts read back every CHECK_EVERY iterations say where.
    img = _image((24, 28), seed=2)
    kw = dict(niter=60, kappa=20, gamma=0.2, epsilon=2.0, freeze=freeze)
    ref, ref_info = anisotropic_diffusion(img, return_info=True, **kw)
    assert ref_info.converged and ref_info.iterations % 8 != 0
    info = DiffusionInfo()
    p = PMParameters.check(2, 60, 20, 0.2, option=1, epsilon=2.0, freeze=freeze)
    out = _fused(cpu_cuda, img.copy(), Layout(img.shape), p, info, True)
    np.testing.assert_allclose(out, ref, rtol=0, atol=ATOL)
    assert (info.iterations, info.converged) == (ref_info.iterations, True)
    np.testing.assert_allclose(info.active_fraction, ref_info.active_fraction, atol=1e-3)


TINY = Tile(tx=2, by=2, r=3)  # many block, strip and row seams on small images


@cpu
@pytest.mark.parametrize(
    "shape,eps,vec,index64",
    [
        ((13, 16), 0, 4, False),
        ((11, 13), 1, 1, False),
        ((10, 24), 2, 4, True),
        ((7, 9, 16), 0, 4, False),
        ((8, 7, 11), 2, 1, False),
        ((5, 6, 8), 1, 4, True),
    ],
)
def test_tiny_tiles_on_cpu_match_the_model(shape, eps, vec, index64):
    """One launch with tiny tiles against the NumPy model
    (:func:`diffusion.cuda_kernels.model_step`, what the counting stand-in runs): same
    values to float32 rounding, same flags and count."""
    ndim = len(shape)
    if shape[-1] % 4:
        assert vec == 1
    img = _image(shape, seed=11)
    grid, block, _, _ = step_launch(shape, TINY)
    kernel = cpu_cuda.RawKernel(pm_source(1, ndim, eps, vec, index64, TINY), "")
    kernel.name = step_name(1, ndim, eps, vec, index64)
    p = PMParameters(spacing=(1.0, 1.3, 0.9)[:ndim], kappa=25.0, option=1)
    args = shape_args(shape, index64) + step_scalars(p)
    outs = []
    for _ in range(2):  # the kernel, then the model
        out = np.zeros(shape, np.float32)
        frozen = (np.random.default_rng(3).random(shape) < 0.2).astype(np.uint8)
        mask = np.zeros(shape, np.uint8)
        count = np.zeros(1, np.uint64)
        extra = (np.float32(0.4), frozen, mask, count) if eps else ()
        outs.append((out, frozen, mask, count, (img, out, *args, *extra)))
    kernel(grid, block, outs[0][4])
    model_step(1, ndim, eps, None, outs[1][4])
    (a, fa, ma, ca, _), (b, fb, mb, cb, _) = outs
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-4)
    if eps:
        assert ca[0] == cb[0] > 0
        np.testing.assert_array_equal(ma, mb)
        if eps == 2:
            np.testing.assert_array_equal(fa, fb)


@cpu
@pytest.mark.parametrize(
    "shape,eps,vec,lo,hi",
    [
        ((13, 16), 0, 4, 1, 12),
        ((11, 13), 1, 1, 0, 6),
        ((10, 24), 2, 4, 4, 10),
        ((7, 9, 16), 1, 4, 1, 6),
        ((8, 7, 11), 2, 1, 3, 4),
    ],
)
def test_ghost_rows_are_read_not_written(shape, eps, vec, lo, hi):
    """The rows ``lo .. hi - 1`` of one launch over an image are those of the launch over
    the whole image, bit for bit (the same kernel text), with the same count; the rows
    outside, the ghosts of a rank's block, are read but neither written nor counted."""
    ndim = len(shape)
    img = _image(shape, seed=7)
    grid, block, _, _ = step_launch(shape, TINY)
    kernel = cpu_cuda.RawKernel(pm_source(2, ndim, eps, vec, False, TINY), "")
    kernel.name = step_name(2, ndim, eps, vec, False)
    scalars = step_scalars(PMParameters(spacing=(1.0, 1.3, 0.9)[:ndim], kappa=25.0, option=2))
    runs = []
    for rows in ((0, shape[0]), (lo, hi)):
        out = np.full(shape, -1.0, np.float32)
        frozen = (np.random.default_rng(3).random(shape) < 0.2).astype(np.uint8)
        mask = np.full(shape, 7, np.uint8)
        count = np.zeros(1, np.uint64)
        extra = (np.float32(0.4), frozen, mask, count) if eps else ()
        kernel(grid, block, (img, out, *shape_args(shape, False, *rows), *scalars, *extra))
        runs.append((out, frozen, mask, count))
    (a, fa, ma, _), (b, fb, mb, cb) = runs
    own = slice(lo, hi)
    assert a[own].tobytes() == b[own].tobytes()
    ghosts = np.ones(shape[0], bool)
    ghosts[own] = False
    assert (b[ghosts] == -1).all()
    if eps:
        assert (mb[ghosts] == 7).all() and np.array_equal(ma[own], mb[own])
        assert cb[0] == np.count_nonzero(ma[own])
        if eps == 2:
            np.testing.assert_array_equal(fa[own], fb[own])


@cpu
@pytest.mark.parametrize("shape", [(13, 17), (5, 9, 11)])
def test_active_kernel_on_cpu_matches_dilate(shape):
    mask = (np.random.default_rng(1).random(shape) < 0.05).astype(np.uint8)
    grid, block, index64 = active_launch(shape)
    got, want = np.zeros(1, np.uint64), np.zeros(1, np.uint64)
    args = active_args(shape, index64, 0, shape[0])
    cpu_cuda.RawKernel(active_source(index64), ACTIVE_NAME)(grid, block, (mask, *args, got))
    model_active(None, (mask, *args, want))
    assert got[0] == want[0] > mask.sum()
    # Rows 2 .. n - 2 only (in 3-D the planes): the rows outside are ghosts, only read.
    lo, hi = 2, shape[0] - 1
    got, want = np.zeros(1, np.uint64), np.zeros(1, np.uint64)
    args = active_args(shape, index64, lo, hi)
    cpu_cuda.RawKernel(active_source(index64), ACTIVE_NAME)(grid, block, (mask, *args, got))
    full = dilate(np, mask.astype(bool))
    assert got[0] == full[lo:hi].sum()
    model_active(None, (mask, *args, want))
    assert want[0] == got[0]


# ------------------------------------------------------------------ on a GPU


@pytest.mark.gpu
@pytest.mark.parametrize("option", [1, 2, 3])
@pytest.mark.parametrize("kw", [{}, {"epsilon": 0.5}, {"epsilon": 0.5, "freeze": True}])
def test_fused_kernel_matches_numpy(option, kw):
    cupy = pytest.importorskip("cupy")

    rng = np.random.default_rng(5)
    cases = (((67, 93), (1.0, 1.5)), ((64, 96), None), ((9, 11, 13), (1.0, 2.0, 0.7)))
    for shape, spacing in cases:
        img = (rng.random(shape) * 255).astype(np.float32)
        args = dict(niter=10, kappa=30, gamma=0.08, voxelspacing=spacing, option=option, **kw)
        ours, info = anisotropic_diffusion(cupy.asarray(img), return_info=True, **args)
        assert isinstance(ours, cupy.ndarray)
        ref, ref_info = anisotropic_diffusion(img, return_info=True, **args)
        np.testing.assert_allclose(cupy.asnumpy(ours), ref, atol=ATOL)
        assert info.iterations == ref_info.iterations


@pytest.mark.gpu
@pytest.mark.parametrize("option", [1, 2, 3])
@pytest.mark.parametrize("eps", [0, 1, 2])
def test_ghost_rows_on_the_gpu_give_the_same_bits(option, eps):
    """What makes a rank's block equal the one-rank result bit for bit on a GPU: the rows
    ``lo .. hi - 1`` of a launch computing only them equal those of the launch over the
    whole image, though the strips start one row later (the first step of a strip computes
    the face behind it instead of carrying it), and the ghost rows are not written."""
    cupy = pytest.importorskip("cupy")
    from diffusion.cuda_kernels import device_id, step_kernel

    for shape in ((70, 96), (67, 93), (40, 9, 12)):
        img = cupy.asarray(_image(shape, seed=option))
        grid, block, vec, index64 = step_launch(shape)
        kernel = step_kernel(cupy, option, len(shape), eps, vec, index64, device_id(cupy))
        scalars = step_scalars(
            PMParameters(spacing=(1.0, 1.3, 0.9)[: len(shape)], kappa=25.0, option=option)
        )
        runs = []
        for rows in ((0, shape[0]), (1, shape[0] - 1)):
            out = cupy.full(shape, -1.0, cupy.float32)
            mask = cupy.full(shape, 7, cupy.uint8)
            count = cupy.zeros(1, cupy.uint64)
            frozen = cupy.zeros(shape, cupy.uint8)
            extra = (np.float32(0.4), frozen, mask, count) if eps else ()
            kernel(grid, block, (img, out, *shape_args(shape, index64, *rows), *scalars, *extra))
            runs.append((cupy.asnumpy(out), cupy.asnumpy(mask), int(count[0])))
        (a, ma, _), (b, mb, cb) = runs
        assert a[1:-1].tobytes() == b[1:-1].tobytes(), shape
        assert (b[[0, -1]] == -1).all()
        if eps:
            assert np.array_equal(ma[1:-1], mb[1:-1]) and (mb[[0, -1]] == 7).all()
            assert cb == np.count_nonzero(ma[1:-1])
