"""Run CUDA C kernel sources on the CPU, one OS thread per CUDA thread (for tests).

The kernels of :mod:`diffusion.cuda_kernels` use only thread and block indices, shared
memory, ``__syncthreads``, atomics and a few intrinsics, so their text compiles as C++
with a small prelude: the threads of one block are OS threads, which run the blocks one
after the other; ``__shared__`` variables become function statics and ``__syncthreads`` a
``std::barrier`` of the block's threads. The
tiling, halo and seam logic then runs for real on NumPy arrays, without a GPU; the
arithmetic is the host's (no fused multiply-add, glibc's ``expf``).

:data:`cpu_cuda` is an array namespace shaped like ``cupy`` for the host loops of
:mod:`diffusion.fused`: NumPy arrays, and ``RawKernel`` compiling with ``g++``.
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import types
from typing import Any

import numpy as np

__all__ = ["cpu_cuda", "unavailable"]

_PRELUDE = r"""
#include <barrier>
#include <cmath>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>
struct dim3 { unsigned x, y, z; };
struct float4 { float x, y, z, w; };
static inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
struct uchar4 { unsigned char x, y, z, w; };
static inline uchar4 make_uchar4(unsigned char a, unsigned char b, unsigned char c,
                                 unsigned char d) {
    return {a, b, c, d};
}
static thread_local dim3 threadIdx, blockIdx;
static dim3 blockDim, gridDim;
static std::barrier<>* block_barrier;
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
static inline void __syncthreads() { block_barrier->arrive_and_wait(); }
static inline float __fdividef(float a, float b) { return a / b; }
static inline void __stwb(float4* p, float4 v) { *p = v; }
template <class T> static inline T atomicAdd(T* p, T v) {
    return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
"""

_LAUNCHER = r"""
template <class... P, std::size_t... I>
static void call_with(void (*k)(P...), void** argv, std::index_sequence<I...>) {
    k(*static_cast<std::remove_cv_t<std::remove_reference_t<P>>*>(argv[I])...);
}

extern "C" void simd_run(void** argv, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                         unsigned by, unsigned bz) {
    gridDim = {gx, gy, gz};
    blockDim = {bx, by, bz};
    const unsigned nt = bx * by * bz;
    std::barrier<> bar(nt);
    block_barrier = &bar;
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < nt; ++t)
        threads.emplace_back([=, &bar] {
            threadIdx = {t % bx, (t / bx) % by, t / (bx * by)};
            for (unsigned z = 0; z < gz; ++z)
                for (unsigned y = 0; y < gy; ++y)
                    for (unsigned x = 0; x < gx; ++x) {
                        blockIdx = {x, y, z};
                        call_with(&KERNEL, argv, std::make_index_sequence<NARGS>());
                        bar.arrive_and_wait();  // the block's shared memory is free again
                    }
        });
    for (auto& th : threads) th.join();
}
"""


def unavailable() -> str | None:
    """Why kernels cannot run on the CPU here (no C++20 compiler), or None."""
    if shutil.which("g++") is None:
        return "no g++ to compile the CUDA sources as C++"
    return None


@functools.cache
def _build_dir() -> str:
    """The folder of this process's compiled kernels, removed when the process ends."""
    folder = tempfile.mkdtemp(prefix="cuda_on_cpu_")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


@functools.cache
def _library(source: str, name: str, nargs: int) -> ctypes.CDLL:
    text = _PRELUDE + source + _LAUNCHER.replace("KERNEL", name).replace("NARGS", str(nargs))
    digest = hashlib.sha1(text.encode()).hexdigest()[:16]
    cpp = os.path.join(_build_dir(), f"{digest}.cpp")
    lib = os.path.join(_build_dir(), f"{digest}.so")
    with open(cpp, "w") as f:
        f.write(text)
    cmd = ["g++", "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", cpp, "-o", lib]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"g++ failed on {cpp}:\n{done.stderr[-4000:]}")
    return ctypes.CDLL(lib)


def _ctype(a: Any) -> Any:
    if isinstance(a, np.ndarray):
        return ctypes.c_void_p(a.ctypes.data)
    kinds = {
        np.dtype(np.float32): ctypes.c_float,
        np.dtype(np.int32): ctypes.c_int32,
        np.dtype(np.int64): ctypes.c_int64,
        np.dtype(np.uint64): ctypes.c_void_p,  # a pointer given as an integer (null)
    }
    return kinds[np.dtype(type(a))](a.item())


class _RawKernel:
    """``cupy.RawKernel`` on the CPU: ``kernel(grid, block, args)`` runs the threads."""

    def __init__(self, code: str, name: str, options: tuple = ()) -> None:
        self.code, self.name = code, name

    def __call__(self, grid: tuple, block: tuple, args: tuple) -> None:
        lib = _library(self.code, self.name, len(args))
        values = [_ctype(a) for a in args]
        argv = (ctypes.c_void_p * len(values))(*(ctypes.addressof(v) for v in values))
        grid = tuple(grid) + (1,) * (3 - len(grid))
        block = tuple(block) + (1,) * (3 - len(block))
        lib.simd_run(argv, *(ctypes.c_uint(int(d)) for d in grid + block))


class _CpuCuda(types.ModuleType):
    """NumPy with ``RawKernel`` and ``cuda.Device`` (the parts the host loops use)."""

    RawKernel = _RawKernel
    cuda = types.SimpleNamespace(Device=lambda: types.SimpleNamespace(id=0))

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)

    @staticmethod
    def asnumpy(a: Any) -> np.ndarray:
        return np.array(a)


#: The CPU namespace.
cpu_cuda = _CpuCuda("cpu_cuda")
