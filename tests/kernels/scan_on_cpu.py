"""The scan kernel's CUDA source run on CPU threads, its CUB primitives replaced by plain ones.

``kernels.cuda_scan_source`` builds the scan from CUB's block primitives and look-back,
which do not compile for the CPU. :data:`CUB_ON_CPU` declares the same names with the same
interfaces, written plainly after CUB's documented behaviour: ``BlockExchange`` through
shared memory, ``BlockScan`` as a serial scan of the threads' aggregates (a prefix
callback called by thread 0 with the block's aggregate; the outputs CUB leaves undefined
filled with a poison pattern), ``ScanTileState`` / ``ReduceByKeyScanTileState`` as one
{status, value} descriptor per tile after 32 padding slots, with CUB's statuses and
``InitializeStatus`` covering the tiles ``blockIdx.x * blockDim.x + threadIdx.x``, and
``TilePrefixCallbackOp`` as the decoupled look-back (publish the aggregate, wait for each
predecessor in turn, combine aggregates until an inclusive prefix, publish the inclusive
prefix). A block waits before it publishes its aggregate, the longer the earlier its tile
(in runs of 8), so that its successors look back before it has. Everything else is the
kernel's own text: the tickets, the region of the scratch and its reset, the loads, heads
and epilogue.

:func:`namespace` gives an array namespace shaped like ``cupy`` for
:func:`kernels.cupy_scan.scan`: NumPy arrays in memory shared between processes, and a
``RawModule`` whose kernels run on the CPU with every block in a process of its own
(:mod:`tests.diffusion.cuda_on_cpu`), all at once, as a GPU runs the blocks that fit.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np

from tests.diffusion.cuda_on_cpu import _RawKernel, shared_empty, unavailable

__all__ = ["CUB_ON_CPU", "namespace", "unavailable", "without_cub_includes"]

CUB_ON_CPU = r"""
#include <chrono>
#include <cstdio>
#include <cstring>
enum cudaError_t { cudaSuccess = 0, cudaErrorInvalidValue = 1 };
namespace cub {
enum BlockScanAlgorithm { BLOCK_SCAN_WARP_SCANS };
enum ScanTileStatus { SCAN_TILE_OOB = 0, SCAN_TILE_PARTIAL = 1, SCAN_TILE_INCLUSIVE = 2,
                      SCAN_TILE_INVALID = 99 };
template <class K, class V> struct KeyValuePair { K key; V value; };

template <class T> static inline T poison() {  // what CUB leaves undefined
    T t;
    std::memset(&t, 0x5a, sizeof t);
    return t;
}

template <class T, int BLOCK, int ITEMS> struct BlockExchange {
    struct TempStorage { T items[BLOCK * ITEMS]; };
    TempStorage &s;
    explicit BlockExchange(TempStorage &s) : s(s) {}
    void StripedToBlocked(T (&in)[ITEMS], T (&out)[ITEMS]) {
        for (int i = 0; i < ITEMS; ++i) s.items[i * BLOCK + threadIdx.x] = in[i];
        __syncthreads();
        for (int i = 0; i < ITEMS; ++i) out[i] = s.items[threadIdx.x * ITEMS + i];
        __syncthreads();
    }
    void BlockedToStriped(T (&in)[ITEMS], T (&out)[ITEMS]) {
        for (int i = 0; i < ITEMS; ++i) s.items[threadIdx.x * ITEMS + i] = in[i];
        __syncthreads();
        for (int i = 0; i < ITEMS; ++i) out[i] = s.items[i * BLOCK + threadIdx.x];
        __syncthreads();
    }
};

template <class T, int BLOCK, BlockScanAlgorithm A> struct BlockScan {
    struct TempStorage { T partial[BLOCK]; T aggregate; T prefix; bool has_prefix; };
    TempStorage &s;
    explicit BlockScan(TempStorage &s) : s(s) {}

    struct NoPrefix {};
    template <class Op> static T call_prefix(NoPrefix &, T, bool &has) { has = false; return T(); }
    template <class Op, class P> static T call_prefix(P &prefix, T aggregate, bool &has) {
        has = true;
        return prefix(aggregate);
    }

    template <int ITEMS, class Op, class P>
    T run(T (&in)[ITEMS], T (&out)[ITEMS], Op op, bool inclusive, P &prefix) {
        T own = in[0];
        for (int i = 1; i < ITEMS; ++i) own = op(own, in[i]);
        s.partial[threadIdx.x] = own;
        __syncthreads();
        if (threadIdx.x == 0) {
            T total = s.partial[0];
            for (int t = 1; t < BLOCK; ++t) total = op(total, s.partial[t]);
            s.aggregate = total;
            bool has = false;
            s.prefix = call_prefix<Op>(prefix, total, has);
            s.has_prefix = has;
        }
        __syncthreads();
        bool have = s.has_prefix;
        T running = have ? s.prefix : poison<T>();
        for (unsigned t = 0; t < threadIdx.x; ++t) {
            running = have ? op(running, s.partial[t]) : s.partial[t];
            have = true;
        }
        for (int i = 0; i < ITEMS; ++i) {
            const T item = in[i];
            if (inclusive) {
                out[i] = have ? op(running, item) : item;
                running = out[i];
            } else {
                out[i] = running;  // poison for the first item of thread 0 without a prefix
                running = have ? op(running, item) : item;
            }
            have = true;
        }
        const T aggregate = s.aggregate;
        __syncthreads();
        return aggregate;
    }

    template <int ITEMS, class Op>
    void InclusiveScan(T (&in)[ITEMS], T (&out)[ITEMS], Op op, T &aggregate) {
        NoPrefix none;
        aggregate = run(in, out, op, true, none);
    }
    template <int ITEMS, class Op>
    void ExclusiveScan(T (&in)[ITEMS], T (&out)[ITEMS], Op op, T &aggregate) {
        NoPrefix none;
        aggregate = run(in, out, op, false, none);
    }
    template <int ITEMS, class Op, class P>
    void InclusiveScan(T (&in)[ITEMS], T (&out)[ITEMS], Op op, P &prefix) {
        run(in, out, op, true, prefix);
    }
    template <int ITEMS, class Op, class P>
    void ExclusiveScan(T (&in)[ITEMS], T (&out)[ITEMS], Op op, P &prefix) {
        run(in, out, op, false, prefix);
    }
};

template <class T> struct ScanTileState {
    struct Descriptor { int status; T value; };
    Descriptor *d = nullptr;
    cudaError_t Init(int num_tiles, void *mem, size_t bytes) {
        d = static_cast<Descriptor *>(mem);
        return sizeof(Descriptor) * (num_tiles + 32) <= bytes ? cudaSuccess
                                                               : cudaErrorInvalidValue;
    }
    void InitializeStatus(int num_tiles) {  // as CUB: tiles blockIdx.x * blockDim.x + t
        const int tile = blockIdx.x * blockDim.x + threadIdx.x;
        if (tile < num_tiles) __atomic_store_n(&d[32 + tile].status, (int)SCAN_TILE_INVALID,
                                               __ATOMIC_RELAXED);
        if (blockIdx.x == 0 && threadIdx.x < 32)
            __atomic_store_n(&d[threadIdx.x].status, (int)SCAN_TILE_OOB, __ATOMIC_RELAXED);
    }
    void publish(int tile, int status, T value) {
        d[32 + tile].value = value;
        __atomic_store_n(&d[32 + tile].status, status, __ATOMIC_RELEASE);
    }
    void SetPartial(int tile, T value) { publish(tile, SCAN_TILE_PARTIAL, value); }
    void SetInclusive(int tile, T value) { publish(tile, SCAN_TILE_INCLUSIVE, value); }
    int Wait(int tile, T &value) {
        for (long spins = 0;; ++spins) {
            const int status = __atomic_load_n(&d[32 + tile].status, __ATOMIC_ACQUIRE);
            if (status != SCAN_TILE_INVALID) {
                value = d[32 + tile].value;
                return status;
            }
            sched_yield();
            if (spins > 50000000L) {
                std::fprintf(stderr, "look-back: tile %d never published\n", tile);
                std::abort();
            }
        }
    }
};
template <class V, class K> struct ReduceByKeyScanTileState : ScanTileState<KeyValuePair<K, V>> {};

static inline void delay(int us) { std::this_thread::sleep_for(std::chrono::microseconds(us)); }

template <class T, class Op, class State> struct TilePrefixCallbackOp {
    struct TempStorage { int unused; };
    State &state;
    Op op;
    int tile;
    TilePrefixCallbackOp(State &state, TempStorage &, Op op, int tile)
        : state(state), op(op), tile(tile) {}
    T operator()(T aggregate) {
        delay(2000 * (8 - tile % 8));  // later tiles publish sooner: their successors wait
        state.SetPartial(tile, aggregate);
        T exclusive = T(), value;
        bool have = false;
        for (int p = tile - 1;; --p) {
            if (p < 0) {
                std::fprintf(stderr, "look-back of tile %d passed tile 0\n", tile);
                std::abort();
            }
            const int status = state.Wait(p, value);
            if (status == SCAN_TILE_OOB) {
                std::fprintf(stderr, "look-back of tile %d met padding at %d\n", tile, p);
                std::abort();
            }
            exclusive = have ? op(value, exclusive) : value;
            have = true;
            if (status == SCAN_TILE_INCLUSIVE) break;
        }
        delay(300 * (tile % 3));
        state.SetInclusive(tile, op(exclusive, aggregate));
        return exclusive;
    }
};
}  // namespace cub
"""


def without_cub_includes(source: str) -> str:
    """``source`` without its ``#include <cub/...>`` lines (:data:`CUB_ON_CPU` stands in)."""
    return "\n".join(line for line in source.splitlines() if not line.startswith("#include <cub/"))


class _Module:
    """``cupy.RawModule`` whose kernels run on CPU threads, blocks concurrently."""

    def __init__(self, code: str, options: tuple = (), **kwargs: Any) -> None:
        self.code = without_cub_includes(code)

    def get_function(self, name: str) -> _RawKernel:
        return _RawKernel(self.code, name, prelude=CUB_ON_CPU, concurrent=True)


def _empty(shape: Any, dtype: Any = np.float64) -> np.ndarray:
    """Shared memory holding garbage, as a device's fresh memory may."""
    out = shared_empty(shape, dtype)
    out.view(np.uint8)[...] = 0x5A
    return out


def _empty_like(a: np.ndarray, dtype: Any = None) -> np.ndarray:
    return _empty(a.shape, a.dtype if dtype is None else dtype)


def _ascontiguousarray(a: Any, dtype: Any = None) -> np.ndarray:
    a = np.asarray(a, dtype=dtype)
    out = shared_empty(a.shape, a.dtype)
    out[...] = a
    return out


def namespace() -> types.ModuleType:
    """A ``cupy``-shaped namespace (a new one per call: its own scratch in
    ``kernels.cupy_scan``) whose arrays are shared with the blocks' processes."""
    stream = types.SimpleNamespace(ptr=0)
    ns = types.ModuleType("cuda_on_cpu_scan")
    for name in ("uint8", "uint64", "bool_", "moveaxis"):
        setattr(ns, name, getattr(np, name))
    ns.RawModule = _Module
    ns.empty, ns.empty_like, ns.ascontiguousarray = _empty, _empty_like, _ascontiguousarray
    ns.cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(getDevice=lambda: 0),
        get_current_stream=lambda: stream,
    )
    return ns


def on_cpu(ns: types.ModuleType, a: Any) -> np.ndarray:
    """``a`` copied into the namespace's shared memory."""
    return _ascontiguousarray(a)
