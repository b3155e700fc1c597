"""The load-balancing search fused into one kernel: a scalar per-task body written once.

:func:`search_one` gives task ``t = start + p`` its datum and its index within that datum
by a binary search of the data's first tasks (moderngpu's load-balancing search [1]_: the
datum of task ``t`` is the last one whose first task is at most ``t``; data without tasks
share their first task with the next datum and are never the last). It gives the items
and tasks of :func:`simd.balance.cost_effective.search.load_balancing_search` (a
masked send, a max-scan and a get) in one pass, without their intermediate arrays.

It is compiled twice from the same function:

- for the CPU with ``numba.njit`` (:func:`search_cpu`, one loop over the tasks, which also
  counts the data that have tasks in the range: the senders of the array form's send);
- for the GPU with ``numba.cuda.jit`` (:func:`search_device`, one thread per task in a
  grid-stride loop, each searching from its block's first datum, launched on CuPy's stream by
  :func:`kernels.numba_launch.launch_on_stream`). The tests also run it in Numba's CUDA
  simulator and compile it to PTX for sm_90.

On the counting stand-in for CuPy (:mod:`kernels.counting`) a launch counts one and its
emulation is the same search in array form (``numpy.searchsorted``).

Importing this module imports neither Numba nor ``numba.cuda``; the first call does.

References
----------
.. [1] S. Baxter, moderngpu 2.0, "transform_lbs" / load-balancing search.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from kernels import fastpaths
from kernels.numba_cuda import cuda_module
from kernels.rebind import bind

__all__ = [
    "KERNEL_NAME",
    "kernel_function",
    "search_cpu",
    "search_device",
    "search_kernel",
    "search_one",
]

#: The kernel's name on the counting stand-in for CuPy.
KERNEL_NAME = "simd.load_balancing_search"

_THREADS = 256
_MAX_GRID = 2**31 - 1


def search_one(offsets, start, p, lo, items, tasks):
    """Write the datum ``items[p]`` and task index ``tasks[p]`` of task ``start + p``;
    returns the datum.

    ``offsets`` is the exclusive add-scan of the workload (``offsets[0] == 0``, not
    decreasing), ``start + p`` lies below the total, and the datum is known to be ``lo`` or
    later (0 when nothing is known). The search gallops from ``lo`` (1, 2, 4, ... data on)
    and then halves the last step: a loop over tasks in order that passes the previous
    datum makes one or two comparisons per task; from ``lo = 0`` it takes about twice the
    steps of a plain binary search.
    """
    t = start + p
    n = offsets.shape[0]
    step = 1
    hi = lo + 1
    while hi < n and offsets[hi] <= t:  # offsets[lo] <= t throughout
        lo = hi
        step *= 2
        hi = lo + step
    if hi > n:
        hi = n
    while hi - lo > 1:  # the datum lies in [lo, hi): offsets[hi] > t (or hi == n)
        mid = (lo + hi) >> 1
        if offsets[mid] <= t:
            lo = mid
        else:
            hi = mid
    items[p] = lo
    tasks[p] = t - offsets[lo]
    return lo


def _search_rows(offsets, start, items, tasks):
    """Every task in order (the CPU's loop), each search starting from the previous datum;
    returns the number of data met."""
    senders = 0
    datum = 0
    for p in range(items.shape[0]):
        found = body(offsets, start, p, datum, items, tasks)
        if p == 0 or found != datum:
            senders += 1
        datum = found
    return senders


def search_kernel(offsets, start, items, tasks):
    """Tasks ``p = grid position + k * grid size`` (the GPU's kernel), a block's tasks
    consecutive: per round its thread 0 searches the block's first task from the first
    datum and shares that datum (shared memory); the other threads gallop from it, their
    datum being that one or a few after (one or two comparisons for most, against about
    twice a binary search's from datum 0 for every task)."""
    block_datum = cuda.shared.array(1, np.int64)
    n = items.shape[0]
    base = cuda.blockIdx.x * cuda.blockDim.x  # the same for the block's threads
    stride = cuda.gridsize(1)
    while base < n:
        if cuda.threadIdx.x == 0:
            block_datum[0] = body(offsets, start, base, 0, items, tasks)
        cuda.syncthreads()
        p = base + cuda.threadIdx.x
        if cuda.threadIdx.x > 0 and p < n:
            body(offsets, start, p, block_datum[0], items, tasks)
        cuda.syncthreads()  # the next round rewrites block_datum
        base += stride


#: Bound to the target's compiled search_one and to ``numba.cuda`` in the targets' copies.
body: Any = None
cuda: Any = None


@functools.cache
def _cpu_kernel() -> Any:
    import numba

    from kernels.compiles import watch

    watch()  # its compiles timed and, past a second, announced
    rows = bind(_search_rows, body=numba.njit(inline="always")(search_one))
    try:  # cached on disk where a cache folder can be used, as the renderer's kernels
        return numba.njit(cache=True, nogil=True)(rows)
    except RuntimeError:  # no cache locator for this file: compile in memory only
        return numba.njit(nogil=True)(rows)


def search_cpu(
    offsets: np.ndarray, start: int, stop: int, dtype: Any = np.int64
) -> tuple[np.ndarray, np.ndarray, int]:
    """The fused search on the CPU: ``items, tasks`` (``dtype``: int64, or int32 where the
    data and tasks are fewer than 2**31) of tasks ``start .. stop - 1`` and the number of
    data they belong to.

    Examples
    --------
    >>> items, tasks, senders = search_cpu(np.array([0, 3, 3]), 0, 4)
    >>> items.tolist(), tasks.tolist(), senders
    ([0, 0, 0, 2], [0, 1, 2, 0], 2)
    """
    n = stop - start
    items = np.empty(n, dtype=dtype)
    tasks = np.empty(n, dtype=dtype)
    senders = _cpu_kernel()(offsets, np.int64(start), items, tasks) if n else 0
    return items, tasks, int(senders)


@functools.cache
def kernel_function() -> Any:
    """The kernel's Python function for ``numba.cuda.jit``, its search bound (imports
    ``numba.cuda``: the simulator's under ``NUMBA_ENABLE_CUDASIM=1``)."""
    from numba import config

    cuda = cuda_module()

    one = search_one if config.ENABLE_CUDASIM else cuda.jit(device=True)(search_one)
    return bind(search_kernel, cuda=cuda, body=one)


@functools.cache
def _build_kernel() -> Any:
    return cuda_module().jit(kernel_function())


def search_device(
    xp: Any, offsets: Any, start: int, stop: int, dtype: Any = np.int64
) -> tuple[Any, Any]:
    """The fused search on ``xp``'s device: ``items, tasks`` (``dtype``, as
    :func:`search_cpu`) of tasks ``start .. stop - 1``; one launch, nothing read back."""
    n = stop - start
    items = xp.empty(n, dtype=dtype)
    tasks = xp.empty(n, dtype=dtype)
    if n:
        grid = max(1, min(_MAX_GRID, -(-n // _THREADS)))
        args = (offsets, np.int64(start), items, tasks)
        fastpaths.launch(xp, KERNEL_NAME, _build_kernel, grid, _THREADS, args)
    return items, tasks


@fastpaths.emulates(KERNEL_NAME)
def _search(variant: Any, args: tuple) -> None:
    """The search as the array code computes it, for each launch on the counting stand-in."""
    offsets, start, items, tasks = args
    t = np.arange(int(start), int(start) + items.shape[0], dtype=np.int64)
    found = np.searchsorted(offsets, t, side="right") - 1
    items[...] = found
    tasks[...] = t - offsets[found]
