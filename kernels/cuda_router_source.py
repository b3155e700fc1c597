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
- ``max``, ``min`` on float32 / float64: a compare-and-swap loop with NumPy's NaN rule
  (a NaN operand gives NaN), which is still commutative, so the result does not depend on
  the order the messages arrive.
- ``overwrite`` (highest sender index wins, deterministically): a first pass takes the
  atomic maximum of the sender index per address, a second writes the winner's value.

Every kernel takes the destination's ``size`` and drops messages addressed outside
``[0, size)``: masked-off senders send to -1, and an out-of-range address (which the
machine's deferred range check reports later, ``simd.Machine.check``) never writes out of
bounds.

A float ``add`` is not order-free (rounding), so the reference's sort-based combine in
sender order is used for it instead (``kernels.cupy_router``).
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
]

DTYPES = (np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.float32), np.dtype(np.float64))
#: Combines done with atomics per dtype kind ("i": integers, "f": floats).
ATOMIC_COMBINES = {"i": ("add", "max", "min", "and", "or"), "f": ("max", "min")}
BLOCK = 256
SEND_KERNEL = "simd_send_combine"
WINNER_KERNEL = "simd_send_winner"
WRITE_KERNEL = "simd_send_write"

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
}

_FLOAT_CAS = r"""
  // Compare-and-swap loop with numpy.maximum/minimum's NaN rule.
  typedef %(word)s word_t;
  word_t *w = (word_t *)a;
  word_t old = *w;
  while (true) {
    value_t cur = %(from_word)s(old);
    value_t next = (cur != cur) ? cur : ((v != v) ? v : ((v %(cmp)s cur) ? v : cur));
    word_t next_word = %(to_word)s(next);
    if (next_word == old) break;
    word_t seen = atomicCAS(w, old, next_word);
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

_TEMPLATE = r"""
// simd router kernel: combine=%(combine)s dtype=%(ctype)s
typedef %(ctype)s value_t;

#if %(combining)d
extern "C" __global__ void __launch_bounds__(%(block)d)
simd_send_combine(const value_t *__restrict__ values, const long long *__restrict__ dest,
                  value_t *out, long long n, long long size) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const long long d = dest[i];
    if (d < 0 || d >= size) continue;  // dropped: masked off, or caught by the range check
    value_t *a = out + d;
    const value_t v = values[i];
    %(atomic)s
  }
}
#else
// Overwrite: the highest sender index per address wins (deterministic).
extern "C" __global__ void __launch_bounds__(%(block)d)
simd_send_winner(const long long *__restrict__ dest, long long *winner, long long n,
                 long long size) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const long long d = dest[i];
    if (d >= 0 && d < size) atomicMax(winner + d, i);
  }
}

extern "C" __global__ void __launch_bounds__(%(block)d)
simd_send_write(const value_t *__restrict__ values, const long long *__restrict__ dest,
                const long long *__restrict__ winner, value_t *out, long long n,
                long long size) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const long long d = dest[i];
    if (d >= 0 && d < size && winner[d] == i) out[d] = values[i];
  }
}
#endif
"""


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
        if dtype.kind == "i":
            atomic = _INT_ATOMIC[(combine, ctype)]
        else:
            word, from_word, to_word = _FLOAT_WORDS[ctype]
            atomic = _FLOAT_CAS % {
                "word": word,
                "from_word": from_word,
                "to_word": to_word,
                "cmp": ">" if combine == "max" else "<",
            }
    else:
        raise ValueError(f"no atomic send kernel for combine {combine!r} on {dtype}")
    return _TEMPLATE % {
        "combine": combine,
        "ctype": ctype,
        "combining": int(combine != "overwrite"),
        "atomic": atomic,
        "block": BLOCK,
    }


def all_variants():
    """Every (combine, dtype) with a kernel."""
    for dtype in DTYPES:
        yield "overwrite", dtype
        for combine in ATOMIC_COMBINES[dtype.kind]:
            yield combine, dtype
