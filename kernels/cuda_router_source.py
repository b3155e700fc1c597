"""CUDA C++ sources of the GPU router (``send``) kernels.

Pure Python (no CuPy import), so the sources compile with NVRTC without a GPU;
``kernels.cupy_router`` compiles and launches them.

Algorithm
---------
The router put of the Connection Machine (Hillis, "The Connection Machine", 1985, ch. 4;
Blelloch, "Vector Models for Data-Parallel Computing", 1990, the ``send`` / ``permute``
with combining) done with one thread per message and atomic read-modify-write at the
destination, the way the CM router combined colliding messages in the network:

- ``add``, ``max``, ``min``, ``and``, ``or`` on int32 / int64: one hardware atomic per
  message (exact and order-free: these operators are associative and commutative).
- ``max``, ``min`` on float32 / float64: a compare-and-swap loop that takes the maximum
  (minimum) in the total order ``-inf < ... < -0.0 < +0.0 < ... < +inf`` with NaN absorbing
  (NumPy's NaN rule: a NaN operand gives NaN). That operator is associative and
  commutative, so the result does not depend on the order the messages arrive: ``max`` of
  +0.0 and -0.0 is +0.0 and ``min`` is -0.0, whatever arrives first (IEEE 754-2008
  ``maxNum``/``minNum`` leave that choice open, and ``numpy.maximum`` keeps its first
  operand). Only the sign of a zero can differ from the NumPy backend, which combines in
  sender order: its result compares equal. Of several NaN messages to one address, the one
  that arrives first is kept (every NaN payload is a NaN).
- ``add`` on float32 / float64: one hardware ``atomicAdd`` per message (``red.global.add.f32``
  / ``.f64``): one launch, no sort. The sum at an address is rounded in the order the
  messages arrive, so it can differ between runs and from the NumPy backend (which sums
  in sender order) by the rounding of a reordered sum: for ``k`` messages to one address,
  ``|gpu - numpy| <= 2 (k - 1) eps sum(|v_i|)`` (plus ``|out|``), with ``eps`` the unit
  roundoff of the dtype (Higham, "Accuracy and Stability of Numerical Algorithms", 4.2).
  A deterministic sum needs a sort by destination and a segmented reduction (about
  6 log2(n) launches with the reference's path): not worth it for a combine the NumPy
  backend only defines up to rounding order anyway.
- ``overwrite`` (highest sender index wins, deterministically): a first pass takes the
  atomic maximum of a tag per address, ``epoch << 40 | sender``, a second writes the
  value of the sender whose tag is still there. The tag array is kept between calls (per
  device and stream, grown on demand) and never refilled: each call has a new epoch, so
  the tags of earlier calls always lose; it is zeroed again only when the 24-bit epoch
  wraps.

Every kernel takes the destination's ``size`` and drops messages addressed outside
``[0, size)``: an out-of-range address (which the machine's deferred range check reports
later, ``simd.Machine.check``) never writes out of bounds. A kernel takes the senders'
mask (a byte each, or null): masked-off senders neither send nor count in the check.

The deferred range check is folded into the kernels: each block reduces the least and
greatest address its threads met and folds them, with an atomic minimum and maximum where
they change it, into the machine's row of bounds for this instruction (``bounds``,
``row``; null: no check). No launch of its own, and the addresses are read once.

The router's get (``GET_KERNEL``, :func:`gather_source`) is a gather of words of the
element's size, folding its indices into the check the same way; an index outside the
source is wrapped into it, as CuPy's ``take`` does, so that nothing is read out of bounds
before the check reports it.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "ATOMIC_COMBINES",
    "DTYPES",
    "BLOCK",
    "router_source",
    "all_variants",
    "SEND_KERNEL",
    "WINNER_KERNEL",
    "WRITE_KERNEL",
    "GET_KERNEL",
    "GET_ITEMSIZES",
    "gather_source",
]

DTYPES = (np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.float32), np.dtype(np.float64))
#: Combines done with atomics per dtype kind ("i": integers, "f": floats).
ATOMIC_COMBINES = {"i": ("add", "max", "min", "and", "or"), "f": ("add", "max", "min")}
#: Overwrite tags: ``epoch << SENDER_BITS | sender`` (so at most 2**40 messages per send).
SENDER_BITS = 40
#: Largest epoch before the tag array is zeroed again (tags are unsigned 64-bit words).
MAX_EPOCH = (1 << (64 - SENDER_BITS)) - 1
BLOCK = 256
SEND_KERNEL = "simd_send_combine"
WINNER_KERNEL = "simd_send_winner"
WRITE_KERNEL = "simd_send_write"
GET_KERNEL = "simd_get"
#: Element sizes of the get kernel (it copies words).
GET_ITEMSIZES = (1, 2, 4, 8)

_CTYPES = {
    np.dtype(np.int32): "int",
    np.dtype(np.int64): "long long",
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
}

# One atomic statement per (combine, C type); `a` is the address, `v` the message.
_INT_ATOMIC = {
    ("add", "int"): "atomicAdd(a, v);",
    ("max", "int"): "atomicMax(a, v);",
    ("min", "int"): "atomicMin(a, v);",
    ("and", "int"): "atomicAnd(a, v);",
    ("or", "int"): "atomicOr(a, v);",
    # Two's-complement addition, and, or are the same on unsigned words.
    ("add", "long long"): ("atomicAdd((unsigned long long *)a, (unsigned long long)v);"),
    ("max", "long long"): "atomicMax(a, v);",
    ("min", "long long"): "atomicMin(a, v);",
    ("and", "long long"): "atomicAnd((unsigned long long *)a, (unsigned long long)v);",
    ("or", "long long"): "atomicOr((unsigned long long *)a, (unsigned long long)v);",
    # Rounded in arrival order (see the module docstring).
    ("add", "float"): "atomicAdd(a, v);",
    ("add", "double"): "atomicAdd(a, v);",
}

_FLOAT_CAS = r"""
  // Compare-and-swap loop: max (min) in the order -0.0 < +0.0, NaN absorbing (numpy's NaN
  // rule). Equal values with different words are +0.0 and -0.0: max keeps the smaller
  // word (+0.0, sign bit clear), min the larger (-0.0). Order-free (see the docstring).
  typedef %(word)s word_t;
  word_t *w = (word_t *)a;
  const word_t v_word = %(to_word)s(v);
  word_t old = *w;
  while (true) {
    value_t cur = %(from_word)s(old);
    const bool wins = (v != v) || (v %(cmp)s cur) || (v == cur && v_word %(word_cmp)s old);
    if (cur != cur || !wins) break;  // a NaN in place stays
    word_t seen = atomicCAS(w, old, v_word);
    if (seen == old) break;
    old = seen;
  }
"""

_FLOAT_WORDS = {
    "float": ("unsigned int", "__uint_as_float", "__float_as_uint"),
    "double": (
        "unsigned long long",
        "__longlong_as_double",
        "(unsigned long long)__double_as_longlong",
    ),
}

_BOUNDS = r"""
#define LO_NONE 0x7fffffffffffffffLL         // LLONG_MAX: no address seen
#define HI_NONE (-0x7fffffffffffffffLL - 1)  // LLONG_MIN
// The deferred address check: the least and greatest address of this thread's messages
// (lo, hi), reduced over the block in shared memory, folded into bounds[2 * row] and
// bounds[2 * row + 1] (set to LO_NONE, HI_NONE before the instruction) by one thread
// with an atomic each, only where it changes them. Every thread of the block calls it
// (it has barriers); nothing is done when bounds is null.
__device__ __forceinline__ void fold_bounds(long long lo, long long hi, long long *bounds,
                                            int row) {
  if (bounds == 0) return;
  __shared__ long long s_lo[%(block)d], s_hi[%(block)d];
  s_lo[threadIdx.x] = lo;
  s_hi[threadIdx.x] = hi;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if ((int)threadIdx.x < half) {
      s_lo[threadIdx.x] = min(s_lo[threadIdx.x], s_lo[threadIdx.x + half]);
      s_hi[threadIdx.x] = max(s_hi[threadIdx.x], s_hi[threadIdx.x + half]);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    long long *b = bounds + 2 * (long long)row;
    if (s_lo[0] < b[0]) atomicMin(b, s_lo[0]);
    if (s_hi[0] > b[1]) atomicMax(b + 1, s_hi[0]);
  }
}
"""

_TEMPLATE = r"""
// simd router kernel: combine=%(combine)s dtype=%(ctype)s
typedef %(ctype)s value_t;
%(bounds)s
#if %(combining)d
// mask: null, or a byte per message (0: masked off, neither sent nor checked).
extern "C" __global__ void __launch_bounds__(%(block)d)
simd_send_combine(const value_t *__restrict__ values, const long long *__restrict__ dest,
                  const unsigned char *__restrict__ mask, value_t *out, long long n,
                  long long size, long long *bounds, int row) {
  long long lo = LO_NONE, hi = HI_NONE;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    if (mask != 0 && mask[i] == 0) continue;
    const long long d = dest[i];
    lo = min(lo, d);
    hi = max(hi, d);
    if (d < 0 || d >= size) continue;  // dropped: caught by the range check
    value_t *a = out + d;
    const value_t v = values[i];
    %(atomic)s
  }
  fold_bounds(lo, hi, bounds, row);
}
#else
// Overwrite: the highest sender index per address wins (deterministic). A tag is
// epoch << SENDER_BITS | sender; tags of earlier calls (smaller epochs) always lose, so the
// tag array needs no fill per call.
extern "C" __global__ void __launch_bounds__(%(block)d)
simd_send_winner(const long long *__restrict__ dest, const unsigned char *__restrict__ mask,
                 unsigned long long *winner, unsigned long long epoch_tag, long long n,
                 long long size, long long *bounds, int row) {
  long long lo = LO_NONE, hi = HI_NONE;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    if (mask != 0 && mask[i] == 0) continue;
    const long long d = dest[i];
    lo = min(lo, d);
    hi = max(hi, d);
    if (d >= 0 && d < size) atomicMax(winner + d, epoch_tag | (unsigned long long)i);
  }
  fold_bounds(lo, hi, bounds, row);
}

extern "C" __global__ void __launch_bounds__(%(block)d)
simd_send_write(const value_t *__restrict__ values, const long long *__restrict__ dest,
                const unsigned char *__restrict__ mask,
                const unsigned long long *__restrict__ winner, unsigned long long epoch_tag,
                value_t *out, long long n, long long size) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    if (mask != 0 && mask[i] == 0) continue;
    const long long d = dest[i];
    if (d >= 0 && d < size && winner[d] == (epoch_tag | (unsigned long long)i)) {
      out[d] = values[i];
    }
  }
}
#endif
"""

_GATHER = r"""
// simd router get: words of %(word_bytes)d bytes
typedef %(word)s word_t;
%(bounds)s
// out[i] = source[index[i]], an index outside [0, size) wrapped into it as CuPy's take does
// (the range check reports it); fill where mask (null, or a byte per reader) is 0.
// source and out: elements of any type of the word's size.
extern "C" __global__ void __launch_bounds__(%(block)d)
simd_get(const void *__restrict__ source_, const long long *__restrict__ index,
         const unsigned char *__restrict__ mask, word_t fill, void *__restrict__ out_,
         long long n, long long size, long long *bounds, int row) {
  const word_t *__restrict__ source = (const word_t *)source_;
  word_t *__restrict__ out = (word_t *)out_;
  long long lo = LO_NONE, hi = HI_NONE;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    if (mask != 0 && mask[i] == 0) {
      out[i] = fill;
      continue;
    }
    const long long k = index[i];
    lo = min(lo, k);
    hi = max(hi, k);
    long long j = k %% size;
    if (j < 0) j += size;
    out[i] = source[j];
  }
  fold_bounds(lo, hi, bounds, row);
}
"""

_WORDS = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}


def gather_source(itemsize: int) -> str:
    """CUDA source of ``GET_KERNEL`` for elements of ``itemsize`` bytes (1, 2, 4 or 8): a
    get copies words, whatever their type.

    Examples
    --------
    >>> "unsigned short" in gather_source(2)
    True
    """
    if itemsize not in _WORDS:
        raise TypeError(f"the get kernel copies 1, 2, 4 or 8-byte elements, not {itemsize}")
    return _GATHER % {
        "word": _WORDS[itemsize],
        "word_bytes": itemsize,
        "block": BLOCK,
        "bounds": _BOUNDS % {"block": BLOCK},
    }


def router_source(combine: str, dtype) -> str:
    """CUDA source of the send kernel(s) for ``combine`` on ``dtype``.

    ``combine`` "overwrite" gives ``WINNER_KERNEL`` and ``WRITE_KERNEL``; the atomic
    combines give ``SEND_KERNEL``.

    Examples
    --------
    >>> "atomicOr" in router_source("or", "int64")
    True
    """
    dtype = np.dtype(dtype)
    if dtype not in _CTYPES:
        raise TypeError(f"router kernels support int32, int64, float32, float64, not {dtype}")
    ctype = _CTYPES[dtype]
    if combine == "overwrite":
        atomic = ""
    elif combine in ATOMIC_COMBINES[dtype.kind]:
        if dtype.kind == "i" or combine == "add":
            atomic = _INT_ATOMIC[(combine, ctype)]
        else:
            word, from_word, to_word = _FLOAT_WORDS[ctype]
            atomic = _FLOAT_CAS % {
                "word": word,
                "from_word": from_word,
                "to_word": to_word,
                "cmp": ">" if combine == "max" else "<",
                # Between +0.0 and -0.0: max takes the smaller word, min the larger.
                "word_cmp": "<" if combine == "max" else ">",
            }
    else:
        raise ValueError(f"no atomic send kernel for combine {combine!r} on {dtype}")
    return _TEMPLATE % {
        "combine": combine,
        "ctype": ctype,
        "combining": int(combine != "overwrite"),
        "atomic": atomic,
        "block": BLOCK,
        "bounds": _BOUNDS % {"block": BLOCK},
    }


def all_variants():
    """Every (combine, dtype) with a kernel."""
    for dtype in DTYPES:
        yield "overwrite", dtype
        for combine in ATOMIC_COMBINES[dtype.kind]:
            yield combine, dtype
