"""CUDA C++ sources of the GPU scan kernels, and the launch plan of a scan.

This module is pure Python (no CuPy import), so the sources can be compiled with NVRTC and
the launch plan can be checked against a NumPy model of the kernel on machines without a
GPU. ``kernels.cupy_scan`` compiles these sources with CuPy and launches them.

Algorithm
---------
Single-pass scan with decoupled look-back (Merrill & Garland, "Single-pass Parallel Prefix
Scan with Decoupled Look-back", NVIDIA NVR-2016-002), built from CUB's block primitives:
``cub::BlockExchange`` (striped <-> blocked), ``cub::BlockScan`` (raking warp scans) and
``cub::TilePrefixCallbackOp`` / ``cub::ScanTileState`` (the look-back over the aggregates and
inclusive prefixes of the preceding tiles; ``cub::ReduceByKeyScanTileState`` for the (flag,
value) pairs, packed as ``cub::KeyValuePair<int, T>``). Every tile descriptor, plain or pair,
is one word of at most 16 bytes ({status, value} or {status, flag, value}), written and polled
with single relaxed accesses: no fences beyond the block's own (checked on the SASS by
``tests/kernels/test_scan_sass.py``). Each thread block takes one tile of
``BLOCK * ITEMS`` consecutive elements *in scan order*; its index is drawn from an atomic
ticket, so every tile's predecessors have already started when it looks back. Data are read
once and written once (about 2 element sizes per element plus the segment flags).

A scan is one launch. The tile states need resetting before every scan; rather than a
launch of its own, each scan resets them for the next: the scratch (per stream, tile-state
layout and size class, ``kernels.cupy_scan``) holds two regions of tile states and a
control word, and a scan runs on one region while its blocks reset the other. The control
word gives each block its ticket and the region in one atomic, and the scan's last block to
finish (counted in the same word) hands the next scan the other region. The state lives on
the device, so a captured CUDA graph replays scans as they ran. A scratch is set up (region
0 reset, the word cleared) by ``INIT_KERNEL``, once when it is made. The kernel source runs
on CPU threads, blocks concurrently, in ``tests/kernels/test_scan_on_cpu.py``.

Segmented scans use Schwartz's (flag, value) pair operator ("Ultracomputers", TOPLAS 1980;
Blelloch, "Prefix sums and their applications", 1990)::

    (fa, a) . (fb, b) = (fa | fb, b if fb else a op b)

which is associative (not commutative) for every associative ``op``; CUB's scans and
look-back keep operand order. A segment head is an element whose flag is set or that starts
a row (scans along an axis are scans of the rows of the array with the axis moved last).

Reverse scans read and write element ``p = n - 1 - q`` for scan position ``q``, so no
reversed copy is made. The segment flags mark the first element of every segment in index
order; in reverse the head of a segment in scan order is its last element in index order,
i.e. scan position ``q`` is a head when ``segments[n - q]`` is set (``q > 0``).

One kernel is compiled per (operator, dtype, pairs): 44 variants. Exclusive, reverse,
segmented and initial are a runtime argument (branches uniform over the grid, free in a
memory-bound kernel), so a program pays the NVRTC compile (about 2 s, CUB's headers) once
per operator and dtype, not once per form.

Floating-point sums are combined in a tree order, not serially: they differ from NumPy's
``cumsum`` in the last bits, and (as in CUB's own scan) may differ between runs, because
the look-back combines a predecessor's inclusive prefix or its aggregates depending on
timing. Integer, max, min, bitwise and copy scans are exact and deterministic. CuPy
compiles with ``-ftz=true``, so float32 denormals are flushed to zero.

Semantics are those of ``kernels.reference.scan`` (C++ ``inclusive_scan`` /
``exclusive_scan`` with an initial value, per segment): ``initial`` is combined in front of
every element's prefix; an exclusive scan gives ``initial`` (default: the identity, 0 for
copy) at each head. A copy scan never combines ``initial`` in (an exclusive copy puts it at
the heads only).
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass

import numpy as np

__all__ = [
    "OPS",
    "DTYPES",
    "ScanPlan",
    "plan_scan",
    "scan_source",
    "tuning",
    "tile_state_bytes",
    "scratch_capacity",
    "INIT_KERNEL",
    "SCAN_KERNEL",
    "INIT_BLOCK",
    "all_variants",
    "scan_fill",
    "cccl_include_dirs",
    "FORM_EXCLUSIVE",
    "FORM_REVERSE",
    "FORM_SEGMENTED",
    "FORM_INITIAL",
]

OPS = ("add", "max", "min", "and", "or", "xor", "copy")
DTYPES = (np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.float32), np.dtype(np.float64))

#: Kernel entry points (extern "C", so the names are not mangled).
INIT_KERNEL = "simd_scan_init"
SCAN_KERNEL = "simd_scan"
#: Threads per block of the tile-state initialisation kernel (at least one warp).
INIT_BLOCK = 128

_CTYPES = {
    np.dtype(np.int32): "int",
    np.dtype(np.int64): "long long",
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
}

# Tuning, kept apart from the algorithm (threads per block, items per thread) by element
# size. Tiles of 1536-2048 elements keep enough loads in flight per SM to saturate HBM, as
# in CUB's scan policies for sm_90; a GPU session should tune these with bench/primitives.py.
_TUNING = {4: (128, 16), 8: (128, 12)}
# Resident blocks per SM asked of ptxas (__launch_bounds__' second argument): it caps the
# registers (65536 / (128 * 8) = 64 for 4-byte values, 85 for 8-byte ones) so that enough
# tiles are in flight; without it ptxas chose 32 registers and spilled for one variant.
_MIN_BLOCKS = {4: 8, 8: 6}


def cccl_include_dirs() -> tuple[str, ...]:
    """Include folders of the CUB / Thrust / libcu++ headers that CuPy bundles.

    Found without importing CuPy (its package folder is located by ``importlib``), so the
    sources can be compiled with NVRTC on a machine without a GPU. Empty when CuPy is not
    installed.
    """
    spec = importlib.util.find_spec("cupy")
    if spec is None or not spec.submodule_search_locations:
        return ()
    root = os.path.join(list(spec.submodule_search_locations)[0], "_core", "include", "cupy")
    dirs = tuple(os.path.join(root, "_cccl", name) for name in ("cub", "thrust", "libcudacxx"))
    return dirs if all(os.path.isdir(d) for d in dirs) else ()


def tuning(dtype) -> tuple[int, int]:
    """(threads per block, items per thread) of the scan kernel for ``dtype``."""
    return _TUNING[np.dtype(dtype).itemsize]


def scratch_capacity(num_tiles: int) -> int:
    """Tiles of the scratch that serves scans of ``num_tiles`` tiles: the next power of two,
    so that a scan's blocks (``BLOCK`` threads each) reset all of the other region, and
    scans of one size class share a scratch.

    >>> [scratch_capacity(t) for t in (1, 2, 3, 1000)]
    [1, 2, 4, 1024]
    """
    return 1 << (max(1, num_tiles) - 1).bit_length()


def tile_state_bytes(num_tiles: int) -> int:
    """Bytes of device memory for the look-back tile states of ``num_tiles`` tiles.

    An upper bound of ``cub::ScanTileState<T>::AllocationSize`` and
    ``cub::ReduceByKeyScanTileState<T, int>::AllocationSize`` for every scan type used
    here (one descriptor of at most 16 bytes per tile; the bound also covers CUB's
    three-array layout: status word and payloads of at most 16 bytes, 32 padding tiles,
    three 256-byte aligned arrays, 255 bytes to align the base).
    """
    per_array = (num_tiles + 32) * 16
    per_array = (per_array + 255) // 256 * 256
    return 3 * per_array + 256


#: Bits of the kernel's runtime ``form`` argument.
FORM_EXCLUSIVE = 1
FORM_REVERSE = 2
FORM_SEGMENTED = 4
FORM_INITIAL = 8


@dataclass(frozen=True)
class ScanPlan:
    """How one scan maps onto the kernel.

    The kernel scans ``n`` elements of a C-contiguous buffer as rows of ``row_len``
    elements. ``key`` names the compiled variant, (operator, dtype, pairs): one module per
    key and device. ``form`` is the runtime argument that selects exclusive, reverse,
    segmented and initial (uniform branches, so they cost next to nothing in a
    memory-bound kernel and need no compilation of their own).
    """

    n: int
    row_len: int
    num_tiles: int
    block: int
    items: int
    form: int
    key: tuple

    @property
    def pairs(self) -> bool:
        """Whether the kernel scans (flag, value) pairs (heads other than position 0)."""
        return self.key[2]


def plan_scan(
    n: int,
    row_len: int,
    dtype,
    op: str,
    *,
    exclusive: bool,
    reverse: bool,
    segmented: bool,
    has_initial: bool,
) -> ScanPlan:
    """Launch plan of a scan of ``n`` elements in rows of ``row_len`` (``n % row_len == 0``).

    Parameters
    ----------
    n, row_len : int
        Number of elements, and length of the rows scanned independently (the scan axis,
        moved last; ``n`` for a scan of the whole array).
    dtype : dtype
        Element type, one of ``DTYPES``.
    op : str
        One of ``OPS``.
    exclusive, reverse, segmented, has_initial : bool
        Scan form; ``segmented``: a flag array is given.

    Returns
    -------
    ScanPlan

    Examples
    --------
    >>> plan = plan_scan(10, 5, "int32", "add", exclusive=True, reverse=False,
    ...                  segmented=False, has_initial=False)
    >>> plan.key, plan.form == FORM_EXCLUSIVE
    (('add', '<i4', True), True)
    """
    dtype = np.dtype(dtype)
    _check(op, dtype)
    if n < 0 or row_len < 1 or n % row_len:
        raise ValueError(f"n={n} is not a whole number of rows of length {row_len}")
    block, items = tuning(dtype)
    tile = block * items
    num_tiles = -(-n // tile)
    if num_tiles >= 2**31:
        raise ValueError(f"scan of {n} elements needs more than 2**31 tiles")
    # Pairs are needed when heads other than position 0 exist: flags, or several rows.
    pairs = bool(segmented) or row_len < n
    # copy never combines initial in (an exclusive copy only puts it at the heads).
    has_initial = bool(has_initial) and op != "copy"
    form = (
        FORM_EXCLUSIVE * bool(exclusive)
        + FORM_REVERSE * bool(reverse)
        + FORM_SEGMENTED * bool(segmented)
        + FORM_INITIAL * has_initial
    )
    return ScanPlan(n, row_len, num_tiles, block, items, form, (op, dtype.str, pairs))


def _check(op: str, dtype: np.dtype) -> None:
    if op not in OPS:
        raise ValueError(f"unknown scan operator {op!r}; expected one of {', '.join(OPS)}")
    if dtype not in _CTYPES:
        raise TypeError(f"scan kernels support int32, int64, float32, float64, not {dtype}")
    if op in ("and", "or", "xor") and dtype.kind == "f":
        raise TypeError(f"scan operator {op!r} needs an integer dtype, not {dtype}")


def scan_fill(op: str, dtype, *, exclusive: bool, initial=None):
    """The scalar the kernel gets as ``initial``, of ``dtype``.

    ``initial`` when given (combined in front of every prefix, and put at the heads of an
    exclusive scan); else the identity of ``op`` for an exclusive scan (0 for copy), and an
    unused 0 for an inclusive one.
    """
    dtype = np.dtype(dtype)
    if exclusive and initial is None:
        from kernels.reference import identity

        # A NumPy scalar of exactly the kernel's value type: CuPy passes a Python int as
        # a 64-bit value, which would misalign the arguments of an int32 kernel.
        return dtype.type(identity(op, dtype))
    return dtype.type(0 if initial is None else initial)


_OP_EXPR = {
    "add": "a + b",
    "and": "a & b",
    "or": "a | b",
    "xor": "a ^ b",
    "copy": "a",
    # NaN propagates as in numpy.maximum/minimum (any NaN operand gives NaN); still
    # associative. For integers the NaN tests fold away.
    "max": "(a != a) ? a : ((b != b) ? b : ((b > a) ? b : a))",
    "min": "(a != a) ? a : ((b != b) ? b : ((b < a) ? b : a))",
}

_TEMPLATE = r"""
// simd scan kernel: op=%(op)s dtype=%(ctype)s pairs=%(pairs)d
#include <cub/block/block_exchange.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/agent/single_pass_scan_operators.cuh>
#include <cub/util_type.cuh>

#define BLOCK %(block)d
#define ITEMS %(items)d
#define TILE (BLOCK * ITEMS)
#define MIN_BLOCKS %(min_blocks)d
#define PAIRS %(pairs)d
#define FORM_EXCLUSIVE %(form_exclusive)d
#define FORM_REVERSE %(form_reverse)d
#define FORM_SEGMENTED %(form_segmented)d
#define FORM_INITIAL %(form_initial)d

typedef %(ctype)s value_t;

struct ValueOp {
  __device__ __forceinline__ value_t operator()(const value_t &a, const value_t &b) const {
    return %(expr)s;
  }
};

#if PAIRS
// Schwartz's segmented operator on (head flag, value) pairs, packed as a
// cub::KeyValuePair<int, value_t> (key: head flag) so that the look-back runs on
// cub::ReduceByKeyScanTileState, whose tile descriptor {status, flag, value} is one
// 16-byte word read and written with single relaxed accesses (as the plain scan's
// ScanTileState<value_t>). A plain struct would make cub::ScanTileState fall back to
// three arrays (status, partial, inclusive) guarded by full fences.
typedef cub::KeyValuePair<int, value_t> scan_t;
struct ScanOp {
  __device__ __forceinline__ scan_t operator()(const scan_t &a, const scan_t &b) const {
    scan_t r;
    r.value = b.key ? b.value : ValueOp()(a.value, b.value);
    r.key = a.key | b.key;
    return r;
  }
};
__device__ __forceinline__ value_t value_of(const scan_t &s) { return s.value; }
__device__ __forceinline__ scan_t make_item(value_t v, int f) {
  scan_t s;
  s.value = v;
  s.key = f;
  return s;
}
typedef cub::ReduceByKeyScanTileState<value_t, int> TileState;
#else
typedef value_t scan_t;
typedef ValueOp ScanOp;
__device__ __forceinline__ value_t value_of(const value_t &s) { return s; }
__device__ __forceinline__ scan_t make_item(value_t v, int) { return v; }
typedef cub::ScanTileState<scan_t> TileState;
#endif

typedef cub::TilePrefixCallbackOp<scan_t, ScanOp, TileState> PrefixOp;
typedef cub::BlockScan<scan_t, BLOCK, cub::BLOCK_SCAN_WARP_SCANS> BlockScanT;
typedef cub::BlockExchange<value_t, BLOCK, ITEMS> ExchangeValues;
typedef cub::BlockExchange<unsigned char, BLOCK, ITEMS> ExchangeFlags;

// The look-back's scratch is two regions of tile states and one control word:
//   bit 63: which region the next scan uses (its parity),
//   bits 32-62: how many blocks of the running scan have finished,
//   bits 0-31: how many tile tickets the running scan has drawn.
// A scan draws its tickets and reads the parity from the control word with one atomic per
// block, resets the other region for the next scan, and its last block to finish flips
// the parity and clears the counts. The state lives on the device, so a scan needs no
// launch before it, and a captured graph replays it as it ran. This kernel runs once per
// scratch: region 0 clean (INVALID for every tile, OOB for the 32 padding slots), parity 0.
extern "C" __global__ void __launch_bounds__(%(init_block)d)
simd_scan_init(void *tile_mem, unsigned long long region_bytes, int capacity,
               unsigned long long *control) {
  TileState state;
  // Init fails (and leaves the state's pointers unset) when region_bytes is smaller than
  // CUB's AllocationSize: stop with a launch error rather than scribble over memory.
  if (state.Init(capacity, tile_mem, (size_t)region_bytes) != cudaSuccess) {
    __trap();
  }
  state.InitializeStatus(capacity);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    *control = 0ull;
  }
}

// form: FORM_* bits (exclusive, reverse, segmented, initial), the same for every thread.
extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
simd_scan(const value_t *__restrict__ x, const unsigned char *__restrict__ seg,
          value_t *__restrict__ out, long long n, long long row_len, value_t initial,
          int form, void *tile_mem, unsigned long long region_bytes, int num_tiles,
          int capacity, unsigned long long *control) {
  __shared__ struct {
    typename PrefixOp::TempStorage prefix;
    union {
      typename ExchangeValues::TempStorage values;
      typename ExchangeFlags::TempStorage flags;
      typename BlockScanT::TempStorage scan;
    } u;
    unsigned long long control;
  } smem;

  const bool exclusive = (form & FORM_EXCLUSIVE) != 0;
  const bool reverse = (form & FORM_REVERSE) != 0;
  const bool has_initial = (form & FORM_INITIAL) != 0;
#if PAIRS
  const bool segmented = (form & FORM_SEGMENTED) != 0;
#endif

  // Tiles are numbered in the order their blocks start, so that a tile only ever waits on
  // tiles whose blocks are already resident (forward progress of the look-back). The same
  // atomic gives the region of this scan (see simd_scan_init).
  if (threadIdx.x == 0) {
    smem.control = atomicAdd(control, 1ull);
  }
  __syncthreads();
  const int tile = (int)(smem.control & 0xffffffffull);
  const unsigned parity = (unsigned)(smem.control >> 63);
  char *const regions = (char *)tile_mem;
  TileState state;
  state.Init(num_tiles, regions + parity * region_bytes, (size_t)region_bytes);
  {
    // The other region, unused by this scan, made clean for the next one: tiles
    // blockIdx.x * BLOCK + threadIdx.x below capacity (capacity <= BLOCK * num_tiles).
    TileState next;
    next.Init(capacity, regions + (parity ^ 1u) * region_bytes, (size_t)region_bytes);
    next.InitializeStatus(capacity);
  }
  const long long base = (long long)tile * TILE;

  // Striped, coalesced loads of the tile in scan order (position q -> element p).
  value_t v[ITEMS];
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const long long q = base + threadIdx.x + (long long)i * BLOCK;
    v[i] = value_t(0);
    if (q < n) {
      v[i] = x[reverse ? n - 1 - q : q];
    }
  }
  ExchangeValues(smem.u.values).StripedToBlocked(v, v);
  __syncthreads();

#if PAIRS
  unsigned char f[ITEMS];
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    f[i] = 0;
  }
  if (segmented) {
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const long long q = base + threadIdx.x + (long long)i * BLOCK;
      if (q < n) {
        // In reverse the head of a segment is its last element in index order: the
        // element just after it (index n - q) starts the next segment.
        f[i] = reverse ? (q > 0 ? seg[n - q] : (unsigned char)1) : seg[q];
      }
    }
    ExchangeFlags(smem.u.flags).StripedToBlocked(f, f);
    __syncthreads();
  }
#endif

  // Thread t now holds scan positions q0 .. q0 + ITEMS - 1.
  const long long q0 = base + (long long)threadIdx.x * ITEMS;
  scan_t items[ITEMS];
  int head[ITEMS];
#if PAIRS
  long long r = q0 %% row_len;  // position within the row, advanced item by item
#endif
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
#if PAIRS
    head[i] = (r == 0) | (f[i] != 0);
    r += 1;
    if (r == row_len) r = 0;
#else
    head[i] = (q0 + i == 0);
#endif
    items[i] = make_item(v[i], head[i]);
  }

  ScanOp op;
  if (tile == 0) {
    scan_t aggregate;
    if (exclusive) {
      // Position 0 is a head, so its undefined exclusive value is never used.
      BlockScanT(smem.u.scan).ExclusiveScan(items, items, op, aggregate);
    } else {
      BlockScanT(smem.u.scan).InclusiveScan(items, items, op, aggregate);
    }
    if (threadIdx.x == 0) {
      state.SetInclusive(0, aggregate);
    }
  } else {
    PrefixOp prefix(state, smem.prefix, op, tile);
    if (exclusive) {
      BlockScanT(smem.u.scan).ExclusiveScan(items, items, op, prefix);
    } else {
      BlockScanT(smem.u.scan).InclusiveScan(items, items, op, prefix);
    }
  }
  __syncthreads();

#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    value_t s = value_of(items[i]);
    if (has_initial) {
      s = ValueOp()(initial, s);
    }
    v[i] = (exclusive && head[i]) ? initial : s;
  }
  ExchangeValues(smem.u.values).BlockedToStriped(v, v);

#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const long long q = base + threadIdx.x + (long long)i * BLOCK;
    if (q < n) {
      out[reverse ? n - 1 - q : q] = v[i];
    }
  }

  // The block has finished. Its two atomics on the control word are ordered (one thread,
  // one address), so the last to finish comes after every ticket of this scan: no block
  // of it reads the parity again, and the next scan starts on the region reset above.
  if (threadIdx.x == 0) {
    const unsigned long long before = atomicAdd(control, 1ull << 32);
    if (((before >> 32) & 0x7fffffffull) == (unsigned long long)(num_tiles - 1)) {
      atomicExch(control, (unsigned long long)(parity ^ 1u) << 63);
    }
  }
}
"""


def scan_source(op: str, dtype, *, pairs: bool) -> str:
    """CUDA C++ source of one scan kernel variant (entry points ``INIT_KERNEL``, ``SCAN_KERNEL``).

    ``pairs``: scan (head flag, value) pairs, for segmented scans and scans of several
    rows; otherwise plain values (heads only at position 0).

    Examples
    --------
    >>> src = scan_source("max", "float32", pairs=True)
    >>> "simd_scan(" in src and "#define PAIRS 1" in src
    True
    """
    dtype = np.dtype(dtype)
    _check(op, dtype)
    block, items = tuning(dtype)
    return _TEMPLATE % {
        "op": op,
        "ctype": _CTYPES[dtype],
        "expr": _OP_EXPR[op],
        "block": block,
        "items": items,
        "min_blocks": _MIN_BLOCKS[dtype.itemsize],
        "pairs": int(bool(pairs)),
        "form_exclusive": FORM_EXCLUSIVE,
        "form_reverse": FORM_REVERSE,
        "form_segmented": FORM_SEGMENTED,
        "form_initial": FORM_INITIAL,
        "init_block": INIT_BLOCK,
    }


def all_variants():
    """Every compiled kernel variant: (op, dtype, pairs)."""
    for op in OPS:
        for dtype in DTYPES:
            if op in ("and", "or", "xor") and dtype.kind == "f":
                continue
            for pairs in (False, True):
                yield (op, dtype, pairs)
