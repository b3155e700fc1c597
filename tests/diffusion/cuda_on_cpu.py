"""Run CUDA C kernel sources on the CPU, one OS thread per CUDA thread (for tests).

The kernels of :mod:`diffusion.cuda_kernels` use only thread and block indices, shared
memory, ``__syncthreads``, atomics and a few intrinsics, so their text compiles as C++
with a small prelude: the threads of one block are OS threads, which run the blocks one
after the other; ``__shared__`` variables become function statics and ``__syncthreads`` a
``std::barrier`` of the block's threads. The
tiling, halo and seam logic then runs for real on NumPy arrays, without a GPU; the
arithmetic is the host's (no fused multiply-add, glibc's ``expf``).

``RawKernel(..., concurrent=True)`` runs the blocks at the same time instead, each in a
process of its own (forked, so each has its own statics: its shared memory), for kernels
whose blocks wait on one another (a scan's look-back); their global memory must then be
shared between processes (:func:`shared_empty`). ``prelude`` adds declarations the source
needs ahead of it (stand-ins for library headers).

:data:`cpu_cuda` is an array namespace shaped like ``cupy`` for the host loops of
:mod:`diffusion.fused`: NumPy arrays, and ``RawKernel`` compiling with ``g++``.
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import hashlib
import mmap
import os
import shutil
import subprocess
import tempfile
import types
from typing import Any

import numpy as np

__all__ = ["cpu_cuda", "shared_empty", "unavailable"]

_PRELUDE = r"""
#include <barrier>
#include <cmath>
#include <cstdlib>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
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
#define __launch_bounds__(...)
static inline void __trap() { std::abort(); }
static inline void __syncthreads() { block_barrier->arrive_and_wait(); }
static inline float __fdividef(float a, float b) { return a / b; }
static inline void __stwb(float4* p, float4 v) { *p = v; }
template <class T> static inline T atomicAdd(T* p, T v) {
    return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
template <class T> static inline T atomicExch(T* p, T v) {
    return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
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

// The blocks at once, one forked process each (its own statics: its shared memory); the
// number of blocks that failed (a trap, a crash).
extern "C" int simd_run_concurrently(void** argv, unsigned gx, unsigned gy, unsigned gz,
                                     unsigned bx, unsigned by, unsigned bz) {
    gridDim = {gx, gy, gz};
    blockDim = {bx, by, bz};
    const unsigned nt = bx * by * bz;
    // Every block waits until all are forked, so that they really run at the same time.
    int* go = static_cast<int*>(
        mmap(nullptr, sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    if (go == MAP_FAILED) return -1;
    *go = 0;
    std::vector<pid_t> children;
    for (unsigned b = 0; b < gx * gy * gz; ++b) {
        const pid_t pid = fork();
        if (pid == 0) {
            while (!__atomic_load_n(go, __ATOMIC_ACQUIRE)) sched_yield();
            std::barrier<> bar(nt);
            block_barrier = &bar;
            const dim3 block = {b % gx, (b / gx) % gy, b / (gx * gy)};
            std::vector<std::thread> threads;
            for (unsigned t = 0; t < nt; ++t)
                threads.emplace_back([=] {
                    threadIdx = {t % bx, (t / bx) % by, t / (bx * by)};
                    blockIdx = block;
                    call_with(&KERNEL, argv, std::make_index_sequence<NARGS>());
                });
            for (auto& th : threads) th.join();
            _exit(0);
        }
        if (pid < 0) break;
        children.push_back(pid);
    }
    __atomic_store_n(go, 1, __ATOMIC_RELEASE);
    int failed = children.size() == gx * gy * gz ? 0 : 1;
    for (const pid_t pid : children) {
        int status = 0;
        waitpid(pid, &status, 0);
        failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    munmap(go, sizeof(int));
    return failed;
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
def _library(source: str, name: str, nargs: int, prelude: str = "") -> ctypes.CDLL:
    launcher = _LAUNCHER.replace("KERNEL", name).replace("NARGS", str(nargs))
    text = _PRELUDE + prelude + source + launcher
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
    if a is None:  # a null pointer, as CuPy passes None
        return ctypes.c_void_p(0)
    kinds = {
        np.dtype(np.float32): ctypes.c_float,
        np.dtype(np.int32): ctypes.c_int32,
        np.dtype(np.int64): ctypes.c_int64,
        np.dtype(np.float64): ctypes.c_double,
        np.dtype(np.uint8): ctypes.c_uint8,
        np.dtype(np.uint16): ctypes.c_uint16,
        np.dtype(np.uint32): ctypes.c_uint32,
        np.dtype(np.uint64): ctypes.c_uint64,  # a value, or a pointer given as an integer
    }
    return kinds[np.dtype(type(a))](a.item())


class _RawKernel:
    """``cupy.RawKernel`` on the CPU: ``kernel(grid, block, args)`` runs the threads."""

    def __init__(self, code: str, name: str, options: tuple = (), *, prelude: str = "",
                 concurrent: bool = False) -> None:  # fmt: skip
        self.code, self.name, self.prelude, self.concurrent = code, name, prelude, concurrent

    def __call__(self, grid: tuple, block: tuple, args: tuple) -> None:
        lib = _library(self.code, self.name, len(args), self.prelude)
        values = [_ctype(a) for a in args]
        argv = (ctypes.c_void_p * len(values))(*(ctypes.addressof(v) for v in values))
        grid = tuple(grid) + (1,) * (3 - len(grid))
        block = tuple(block) + (1,) * (3 - len(block))
        dims = [ctypes.c_uint(int(d)) for d in grid + block]
        if not self.concurrent:
            lib.simd_run(argv, *dims)
            return
        failed = lib.simd_run_concurrently(argv, *dims)
        if failed:
            raise RuntimeError(f"{self.name}: {failed} block(s) failed on the CPU")


def shared_empty(shape: Any, dtype: Any) -> np.ndarray:
    """An uninitialised NumPy array in memory shared with forked processes (the global
    memory of a kernel whose blocks run concurrently)."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    buffer = mmap.mmap(-1, max(1, count * dtype.itemsize))
    return np.frombuffer(buffer, dtype=dtype, count=count).reshape(shape)


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
