"""The fused Perona-Malik kernels of the dense path on a GPU: CUDA source, launches, models.

One launch per iteration reads every point once and writes it once: 8 bytes per point
and iteration, the memory floor of the method. The update is medpy's (forward flux minus
backward flux per axis, zero flux through the border faces, times ``gamma``), as in
:func:`diffusion.update.pm_update`. The source text, launch shapes and arguments are built
without a GPU (the source compiles with NVRTC anywhere); :func:`step_kernel` and
:func:`active_kernel` compile it with CuPy's ``RawKernel`` once per namespace, device and
variant, and on the counting stand-in (:mod:`kernels.counting`) register the kernels'
NumPy models (:func:`model_step`, :func:`model_active`), which its launches run instead.
:mod:`diffusion.fused` runs the iterations.

How the kernel reaches the floor (a plain version issues about 224 instructions per point
and runs at about 2.6x the floor):

- A 2-D or 3-D grid: a thread owns ``VEC`` consecutive points of a row (``VEC`` = 4 with
  ``float4`` loads and stores when the row length is a multiple of 4, else 1) and marches
  along the outermost axis (rows in 2-D, planes in 3-D) through a strip of ``R`` steps.
  No integer division per point (a thread divides once, by the constant ``R``); indices
  are 32-bit unless the volume needs 64 (chosen when the source is built).
- Every face flux is computed once, except at seams: the flux through the face behind a
  point along the marching axis is the one computed a step before (kept in registers;
  the first step of a strip computes it); in 3-D the faces between rows come from the
  thread of the row above through shared memory (its first row computes them); along a
  row, a thread computes the ``VEC + 1`` faces around its points, so the face between two
  threads is computed by both. That costs the same as a shuffle: the lane that would
  compute the seam face alone still takes a whole warp issue slot.
- Reciprocals of ``kappa`` and of the spacings come from the host, so no division is left
  (option 2's ``1 / (1 + q^2)`` is the hardware reciprocal, ``__fdividef``, within 2
  ulp); ``expf`` is kept.

The main loop of option 1 in 2-D is 190 SASS instructions for 4 points (about 48 a
point, against 288 for one point in the first version's loop, which also called the
division subroutines); ``tests/diffusion/test_cuda_source.py`` pins these counts.

With ``EPS`` (``epsilon > 0``) the same kernel applies medpy's step only where
``|update| >= epsilon`` (and, with ``freeze``, only where the point is not frozen,
freezing it otherwise), optionally writes the changed mask, and adds the number of changed
points to a device counter: the activity test stays on the device. :data:`ACTIVE_NAME`
counts the points with a changed point in their neighbourhood (the dilated mask of the
NumPy path) for :class:`diffusion.DiffusionInfo`.

Ghost rows: the step computes and writes only the steps ``lo .. hi - 1`` of the marching
axis (axis 0 of the image), reading the steps just outside as neighbours; the counting
kernel counts only those rows. A block of an image split across MPI ranks
(:mod:`diffusion.blocks`) runs with a ghost row from each neighbour block around it; one
process passes the whole range (the same instructions in the loop).

Agreement: multiplying by a host reciprocal and applying the spacing to the difference of
two fluxes round differently from NumPy's divisions, and ``expf`` is not NumPy's ``exp``:
results agree with the NumPy path to float32 rounding (about ``2e-4`` on 0..255 data after
10 iterations), not bit for bit; with ``epsilon``, a point whose update lies within that
rounding of ``epsilon`` may fall on the other side of the test.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from diffusion.settings import PMParameters
from diffusion.update import dilate
from kernels import fastpaths

__all__ = [
    "ACTIVE_NAME",
    "INDEX32_LIMIT",
    "Tile",
    "active_args",
    "active_kernel",
    "active_launch",
    "active_source",
    "device_id",
    "model_active",
    "model_step",
    "pm_source",
    "shape_args",
    "step_kernel",
    "step_launch",
    "step_name",
    "step_scalars",
]

#: Entry point of the counting kernel (points with a changed point in their neighbourhood).
ACTIVE_NAME = "pm_active"
#: Volumes of at least this many points use 64-bit indices: 32-bit ones keep a margin
#: for the tile overhang past the last point.
INDEX32_LIMIT = 2**31 - 2**24
#: The largest grid extent used along y and z (loops stride over the rest).
_GRID_YZ = 65535


@dataclass(frozen=True)
class Tile:
    """Threads of a block along a row (``tx``), rows of a block (``by``, 3-D only), and
    steps of a strip along the marching axis (``r``)."""

    tx: int
    by: int
    r: int


#: 2-D: 128 threads x 4 points = 512 columns, 16 rows a strip: 8192 blocks at 8192^2, about
#: 5 waves of resident blocks on an H100, so the last, partial wave costs little; the
#: strip's extra row (its first backward faces) adds 1/16 to the vertical fluxes.
TILE_2D = Tile(tx=128, by=1, r=16)
#: 3-D: 32 x 8 threads, 32 planes a strip.
TILE_3D = Tile(tx=32, by=8, r=32)

_TEMPLATE = r"""
#define OPTION {option}
#define NDIM {ndim}
#define EPS {eps}
#define VEC {vec}
#define TX {tx}
#define BY {by}
#define R {r}
typedef {idx} idx_t;

// c(d) * d through one face, the spacing left out: options 1 (exponential), 2
// (rational), 3 (Tukey; ik is 1 / (kappa sqrt 2) there and kt is kappa sqrt 2).
__device__ __forceinline__ float pm_flux(float d, float ik, float kt) {{
    float q = d * ik;
#if OPTION == 1
    return expf(-(q * q)) * d;
#elif OPTION == 2
    return __fdividef(1.0f, 1.0f + q * q) * d;  // a reciprocal (MUFU.RCP), 2 ulp
#else
    float r = 1.0f - q * q;
    return (fabsf(d) <= kt ? 0.5f * (r * r) : 0.0f) * d;
#endif
}}

// VEC consecutive floats (one float4 load when VEC is 4; the row length is then a
// multiple of 4, so every thread's first point is 16-byte aligned).
__device__ __forceinline__ void load_row(const float* __restrict__ p, float* v) {{
#if VEC == 4
    float4 t = *reinterpret_cast<const float4*>(p);
    v[0] = t.x; v[1] = t.y; v[2] = t.z; v[3] = t.w;
#else
    v[0] = p[0];
#endif
}}

// Global memory only (st.global).
__device__ __forceinline__ void store_row(float* __restrict__ p, const float* v) {{
#if VEC == 4
    // __stwb (a plain store, written as one st.global.v4): NVVM splits a float4
    // assignment into four stores in the 64-bit-index variant.
    __stwb(reinterpret_cast<float4*>(p), make_float4(v[0], v[1], v[2], v[3]));
#else
    p[0] = v[0];
#endif
}}

// VEC flags as bytes (one 4-byte access when VEC is 4).
__device__ __forceinline__ void load_flags(const unsigned char* p, bool* f) {{
#if VEC == 4
    uchar4 t = *reinterpret_cast<const uchar4*>(p);
    f[0] = t.x; f[1] = t.y; f[2] = t.z; f[3] = t.w;
#else
    f[0] = p[0];
#endif
}}

__device__ __forceinline__ void store_flags(unsigned char* p, const bool* f) {{
#if VEC == 4
    *reinterpret_cast<uchar4*>(p) = make_uchar4(f[0], f[1], f[2], f[3]);
#else
    p[0] = f[0];
#endif
}}

extern "C" __global__ void {name}(
    const float* __restrict__ in, float* __restrict__ out, idx_t n0, idx_t n1, idx_t n2,
    idx_t lo, idx_t hi, float ik, float kt, float gamma, float is0, float is1, float is2
#if EPS
    , float eps, unsigned char* __restrict__ frozen, unsigned char* __restrict__ mask,
    unsigned long long* __restrict__ count
#endif
) {{
    // The marching axis (rows in 2-D, planes in 3-D): nm steps of stride sm, of which
    // lo .. hi - 1 are computed and written (the others are ghosts, only read).
#if NDIM == 3
    const idx_t nm = n0, sm = n1 * n2;
    const idx_t y = (idx_t)blockIdx.y * BY + threadIdx.y;
    const idx_t nstrips = (hi - lo + R - 1) / R, first = blockIdx.z, step = gridDim.z;
    __shared__ __align__(16) float yflux[2][BY][TX * VEC];  // faces between rows, 2 buffers
#else
    const idx_t nm = n1, sm = n2;
    const idx_t y = 0;
    const idx_t nstrips = (hi - lo + R - 1) / R, first = blockIdx.y, step = gridDim.y;
#endif
    const idx_t x0 = ((idx_t)blockIdx.x * TX + threadIdx.x) * VEC;
    const bool ok = x0 < n2 && y < n1;  // 2-D: n1 is the row count and y is 0
    const idx_t base = y * n2 + x0;     // offset within a plane (3-D) or row (2-D)
    const bool has_left = x0 > 0, has_right = x0 + VEC < n2;
#if EPS
    unsigned int changed = 0;
#endif
    // Strips are block-uniform (every thread runs the same steps: the barriers hold).
    for (idx_t strip = first; strip < nstrips; strip += step) {{
        const idx_t m0 = lo + strip * R;
        const idx_t m1 = (m0 + R < hi) ? m0 + R : hi;
        float cur[VEC], nxt[VEC], up[VEC];
#pragma unroll
        for (int j = 0; j < VEC; ++j) {{ cur[j] = 0.0f; nxt[j] = 0.0f; up[j] = 0.0f; }}
        if (ok) {{
            load_row(in + m0 * sm + base, cur);
            if (m0 + 1 < nm) load_row(in + (m0 + 1) * sm + base, nxt);
            if (m0 > 0) {{  // the face behind the strip's first step
                float prev[VEC];
                load_row(in + (m0 - 1) * sm + base, prev);
#pragma unroll
                for (int j = 0; j < VEC; ++j) up[j] = pm_flux(cur[j] - prev[j], ik, kt);
            }}
        }}
        for (idx_t m = m0; m < m1; ++m) {{
            const idx_t at = m * sm + base;
            float after[VEC];  // prefetch of step m + 2
#pragma unroll
            for (int j = 0; j < VEC; ++j) after[j] = 0.0f;
            if (ok && m + 2 < nm) load_row(in + at + 2 * sm, after);
            // Faces along the row: VEC + 1 around this thread's points.
            float fx[VEC + 1];
            fx[0] = (ok && has_left) ? pm_flux(cur[0] - in[at - 1], ik, kt) : 0.0f;
#pragma unroll
            for (int j = 1; j < VEC; ++j) fx[j] = pm_flux(cur[j] - cur[j - 1], ik, kt);
            fx[VEC] = (ok && has_right) ? pm_flux(in[at + VEC] - cur[VEC - 1], ik, kt) : 0.0f;
            // Faces ahead along the marching axis (the ones behind are in up).
            float down[VEC];
            const bool more = m + 1 < nm;
#pragma unroll
            for (int j = 0; j < VEC; ++j) down[j] = more ? pm_flux(nxt[j] - cur[j], ik, kt) : 0.0f;
            float acc[VEC];
#pragma unroll
            for (int j = 0; j < VEC; ++j) acc[j] = (down[j] - up[j]) * is0;
#if NDIM == 3
            // Faces between rows: this thread's lower face; the upper one from the row
            // above through shared memory, computed here only on a block's first row.
            const int buf = (int)((m - m0) & 1);
            float below[VEC], yd[VEC], yu[VEC];
#pragma unroll
            for (int j = 0; j < VEC; ++j) below[j] = cur[j];
            if (ok && y + 1 < n1) load_row(in + at + n2, below);
#pragma unroll
            for (int j = 0; j < VEC; ++j) yd[j] = pm_flux(below[j] - cur[j], ik, kt);  // 0 at end
#pragma unroll
            for (int j = 0; j < VEC; ++j) yflux[buf][threadIdx.y][threadIdx.x * VEC + j] = yd[j];
            __syncthreads();
            if (threadIdx.y > 0) {{
                load_row(&yflux[buf][threadIdx.y - 1][threadIdx.x * VEC], yu);
            }} else {{
                float above[VEC];
#pragma unroll
                for (int j = 0; j < VEC; ++j) above[j] = cur[j];
                if (ok && y > 0) load_row(in + at - n2, above);
#pragma unroll
                for (int j = 0; j < VEC; ++j) yu[j] = pm_flux(cur[j] - above[j], ik, kt);
            }}
#pragma unroll
            for (int j = 0; j < VEC; ++j) acc[j] += (yd[j] - yu[j]) * is1;
#endif
            float res[VEC];
#if EPS
            bool frz[VEC], chg[VEC];
#pragma unroll
            for (int j = 0; j < VEC; ++j) frz[j] = false;
#if EPS == 2
            if (ok) load_flags(frozen + at, frz);
#endif
#endif
#pragma unroll
            for (int j = 0; j < VEC; ++j) {{
                acc[j] += (fx[j + 1] - fx[j]) * is2;
#if EPS
                const float u = gamma * acc[j];
                chg[j] = fabsf(u) >= eps && !frz[j];
                frz[j] = !chg[j];  // with freeze: frozen for good once below epsilon
                res[j] = chg[j] ? cur[j] + u : cur[j];
                changed += (ok && chg[j]) ? 1u : 0u;
#else
                res[j] = cur[j] + gamma * acc[j];
#endif
            }}
#if EPS
            if (ok) {{
#if EPS == 2
                store_flags(frozen + at, frz);
#endif
                if (mask) store_flags(mask + at, chg);
            }}
#endif
            if (ok) store_row(out + at, res);
#pragma unroll
            for (int j = 0; j < VEC; ++j) {{ up[j] = down[j]; cur[j] = nxt[j]; nxt[j] = after[j]; }}
        }}
    }}
#if EPS
    // One global atomic per block: the threads add into shared memory first.
    __shared__ unsigned int block_changed;
    if (threadIdx.x == 0 && threadIdx.y == 0) block_changed = 0;
    __syncthreads();
    if (changed) atomicAdd(&block_changed, changed);
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0 && block_changed)
        atomicAdd(count, (unsigned long long)block_changed);
#endif
}}
"""

_ACTIVE_TEMPLATE = r"""
typedef {idx} idx_t;

// Points with a changed point among themselves and their 2k orthogonal neighbours (the
// NumPy path's dilate), added to *count. A 2-D image is one plane (n0 = 1). Only rows
// lo .. hi - 1 (row z * n1 + y) are counted: the others are ghosts, only read.
extern "C" __global__ void {name}(const unsigned char* __restrict__ mask, idx_t n0,
                                  idx_t n1, idx_t n2, idx_t lo, idx_t hi,
                                  unsigned long long* __restrict__ count) {{
    const idx_t x = (idx_t)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int active = 0;
    for (idx_t z = blockIdx.z; z < n0; z += gridDim.z) {{
        for (idx_t y = (idx_t)blockIdx.y * blockDim.y + threadIdx.y; y < n1;
             y += (idx_t)gridDim.y * blockDim.y) {{
            const idx_t row = z * n1 + y;
            if (x >= n2 || row < lo || row >= hi) continue;
            const idx_t i = row * n2 + x;
            bool a = mask[i];
            a = a || (x > 0 && mask[i - 1]) || (x + 1 < n2 && mask[i + 1]);
            a = a || (y > 0 && mask[i - n2]) || (y + 1 < n1 && mask[i + n2]);
            a = a || (z > 0 && mask[i - n1 * n2]) || (z + 1 < n0 && mask[i + n1 * n2]);
            active += a ? 1u : 0u;
        }}
    }}
    __shared__ unsigned int block_active;
    if (threadIdx.x == 0 && threadIdx.y == 0) block_active = 0;
    __syncthreads();
    if (active) atomicAdd(&block_active, active);
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0 && block_active)
        atomicAdd(count, (unsigned long long)block_active);
}}
"""

#: Block of the counting kernel.
_ACTIVE_BLOCK = (32, 8)


def _check(option: int, ndim: int, eps: int) -> None:
    if option not in (1, 2, 3):
        raise ValueError(f"option must be 1, 2 or 3, got {option!r}")
    if ndim not in (2, 3):
        raise ValueError(f"ndim must be 2 or 3, got {ndim!r}")
    if eps not in (0, 1, 2):
        raise ValueError(f"eps must be 0 (plain), 1 (epsilon) or 2 (with freeze), got {eps!r}")


def step_name(option: int, ndim: int, eps: int, vec: int, index64: bool) -> str:
    """Entry point of one variant (every variant has its own, so profiles tell them apart).

    Examples
    --------
    >>> step_name(1, 2, 0, 4, False)
    'pm_step_o1_2d_e0_v4_i32'
    """
    return f"pm_step_o{option}_{ndim}d_e{eps}_v{vec}_i{64 if index64 else 32}"


def pm_source(
    option: int,
    ndim: int,
    eps: int = 0,
    vec: int = 4,
    index64: bool = False,
    tile: Tile | None = None,
) -> str:
    """CUDA source of the fused step: conduction ``option``, ``ndim`` (2 or 3), ``eps`` 0
    (plain), 1 (with epsilon) or 2 (with epsilon and freeze), ``vec`` points per thread (4
    or 1), 64-bit indices or 32-bit ones, and the block ``tile`` (the default for
    ``ndim``). The entry point is :func:`step_name`.

    Examples
    --------
    >>> src = pm_source(1, 2)
    >>> "expf" in src, "typedef int idx_t" in src, "NDIM 3" in pm_source(2, 3, eps=2)
    (True, True, True)
    """
    _check(option, ndim, eps)
    if vec not in (1, 4):
        raise ValueError(f"vec must be 1 or 4, got {vec!r}")
    tile = tile or (TILE_3D if ndim == 3 else TILE_2D)
    return _TEMPLATE.format(
        option=int(option),
        ndim=int(ndim),
        eps=int(eps),
        vec=int(vec),
        tx=tile.tx,
        by=tile.by if ndim == 3 else 1,
        r=tile.r,
        idx="long long" if index64 else "int",
        name=step_name(option, ndim, eps, vec, index64),
    )


def step_launch(
    shape: tuple[int, ...], tile: Tile | None = None
) -> tuple[tuple[int, int, int], tuple[int, int], int, bool]:
    """``(grid, block, vec, index64)`` of the step for an image of ``shape``.

    Examples
    --------
    >>> step_launch((8192, 8192))
    ((16, 512, 1), (128, 1), 4, False)
    >>> step_launch((9, 10, 11))
    ((1, 2, 1), (32, 8), 1, False)
    """
    ndim = len(shape)
    tile = tile or (TILE_3D if ndim == 3 else TILE_2D)
    size = 1
    for n in shape:
        size *= int(n)
    vec = 4 if shape[-1] % 4 == 0 else 1
    gx = -(-shape[-1] // (tile.tx * vec))
    strips = min(-(-shape[0] // tile.r), _GRID_YZ)
    if ndim == 3:
        gy = -(-shape[1] // tile.by)
        if gy > _GRID_YZ:
            raise ValueError(f"axis 1 of {shape} is too long for the fused kernel")
        return (gx, gy, strips), (tile.tx, tile.by), vec, size >= INDEX32_LIMIT
    return (gx, strips, 1), (tile.tx, 1), vec, size >= INDEX32_LIMIT


def active_source(index64: bool = False) -> str:
    """CUDA source of :data:`ACTIVE_NAME` (32- or 64-bit indices).

    Examples
    --------
    >>> "pm_active" in active_source()
    True
    """
    return _ACTIVE_TEMPLATE.format(idx="long long" if index64 else "int", name=ACTIVE_NAME)


def active_launch(shape: tuple[int, ...]) -> tuple[tuple[int, int, int], tuple[int, int], bool]:
    """``(grid, block, index64)`` of the counting kernel for an image of ``shape``.

    Examples
    --------
    >>> active_launch((100, 70))
    ((3, 13, 1), (32, 8), False)
    """
    planes, rows, cols = (1,) * (3 - len(shape)) + tuple(int(n) for n in shape)
    bx, by = _ACTIVE_BLOCK
    grid = (-(-cols // bx), min(-(-rows // by), _GRID_YZ), min(planes, _GRID_YZ))
    return grid, _ACTIVE_BLOCK, planes * rows * cols >= INDEX32_LIMIT


# ------------------------------------------------------------------ launch arguments


def step_scalars(p: PMParameters) -> tuple:
    """``ik, kt, gamma, is0, is1, is2`` of ``p`` in float32: reciprocals of the float32
    values NumPy divides by (``kappa``, ``kappa sqrt 2`` for option 3, the spacings)."""
    k = np.float32(p.kappa * (2**0.5) if p.option == 3 else p.kappa)
    inv = [np.float32(1.0 / float(np.float32(s))) for s in p.spacing]
    if len(inv) == 2:
        inv = [inv[0], np.float32(1.0), inv[1]]  # is1 (the middle axis) is 3-D only
    return (np.float32(1.0 / float(k)), k, np.float32(p.gamma), *inv)


def shape_args(shape: tuple[int, ...], index64: bool, lo: int = 0, hi: int | None = None) -> tuple:
    """``n0, n1, n2, lo, hi``: the shape as three axes, and the rows (along axis 0) that the
    step computes (all by default; the others are ghost rows, only read)."""
    n = (1,) * (3 - len(shape)) + tuple(int(s) for s in shape)
    t = np.int64 if index64 else np.int32
    return tuple(t(s) for s in n) + (t(lo), t(shape[0] if hi is None else hi))


def active_args(shape: tuple[int, ...], index64: bool, lo: int, hi: int) -> tuple:
    """``n0, n1, n2, lo, hi`` of the counting kernel: its rows are ``z * n1 + y``, so in
    3-D the range of planes becomes one of rows."""
    n0, n1, n2, _, _ = shape_args(shape, index64)
    per = int(n1) if len(shape) == 3 else 1
    t = np.int64 if index64 else np.int32
    return (n0, n1, n2, t(lo * per), t(hi * per))


# ----------------------------------------------------------------- compiled kernels


@functools.cache
def step_kernel(
    xp: Any, option: int, ndim: int, eps: int, vec: int, index64: bool, device: int
) -> Any:
    """The step kernel of one variant (see :func:`pm_source`) as ``xp.RawKernel``, made
    once per namespace, ``device`` and variant (the arguments of the cache)."""
    name = step_name(option, ndim, eps, vec, index64)
    # its NumPy model, which the counting stand-in runs for a launch
    fastpaths.emulates(name)(functools.partial(model_step, option, ndim, eps))
    source = pm_source(option, ndim, eps, vec, index64)
    return xp.RawKernel(source, name, options=("-std=c++17",))


@functools.cache
def active_kernel(xp: Any, index64: bool, device: int) -> Any:
    """The counting kernel (:data:`ACTIVE_NAME`) as ``xp.RawKernel``, made once per
    namespace, ``device`` and index width."""
    fastpaths.emulates(ACTIVE_NAME)(model_active)
    return xp.RawKernel(active_source(index64), ACTIVE_NAME, options=("-std=c++17",))


def device_id(xp: Any) -> int:
    """The current device of ``xp`` (a key of the kernels' cache)."""
    return int(xp.cuda.Device().id)


# ---------------------------------------------------------- models for the stand-in


def _model_flux(d: np.ndarray, ik: np.float32, kt: np.float32, option: int) -> np.ndarray:
    q = d * ik
    if option == 1:
        return np.exp(-(q * q)) * d
    if option == 2:
        return (np.float32(1.0) / (np.float32(1.0) + q * q)) * d
    r = np.float32(1.0) - q * q
    return np.where(np.abs(d) <= kt, np.float32(0.5) * (r * r), np.float32(0.0)) * d


def model_step(option: int, ndim: int, eps: int, variant: Any, args: tuple) -> None:
    """NumPy model of one launch of the step kernel (its float32 arithmetic, without the
    tiling and without fused multiply-adds)."""
    src, dst, n0, n1, n2, lo, hi, ik, kt, gamma, is0, is1, is2 = args[:13]
    shape = (int(n0), int(n1), int(n2))[3 - ndim :]
    v = np.asarray(src).reshape(shape)
    rows = slice(int(lo), int(hi))  # the rows computed; the others are ghosts
    inv = (is0, is1, is2) if ndim == 3 else (is0, is2)
    acc = np.zeros(shape, np.float32)
    for axis in range(ndim):
        f = _model_flux(np.diff(v, axis=axis), ik, kt, option)
        pad = [(0, 0)] * ndim
        pad[axis] = (1, 1)  # no flux through the border faces
        f = np.pad(f, pad)
        hi = tuple(slice(1, None) if a == axis else slice(None) for a in range(ndim))
        lo = tuple(slice(None, -1) if a == axis else slice(None) for a in range(ndim))
        acc += (f[hi] - f[lo]) * inv[axis]
    v, acc = v[rows], acc[rows]
    res = dst.reshape(shape)[rows]
    if eps == 0:
        res[...] = v + gamma * acc
        return
    epsilon, frozen, mask, count = args[13:]
    u = gamma * acc
    ch = np.abs(u) >= epsilon
    if eps == 2:
        ch &= frozen.reshape(shape)[rows] == 0
        frozen.reshape(shape)[rows] = ~ch
    res[...] = np.where(ch, v + u, v)
    if isinstance(mask, np.ndarray):
        mask.reshape(shape)[rows] = ch
    count[0] += np.uint64(ch.sum())


def model_active(variant: Any, args: tuple) -> None:
    """NumPy model of one launch of the counting kernel (the NumPy path's dilation)."""
    mask, n0, n1, n2, lo, hi, count = args
    m = np.asarray(mask).reshape(int(n0) * int(n1), int(n2)).astype(bool)
    a = dilate(np, m.reshape(int(n0), int(n1), int(n2))).reshape(m.shape)
    count[0] += np.uint64(a[int(lo) : int(hi)].sum())
