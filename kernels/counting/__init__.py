"""A counting stand-in for CuPy: the CuPy code path run on NumPy, its GPU costs counted.

``kernels.counting.cupy`` is an array namespace shaped like the ``cupy`` module. Arrays it
makes are :class:`DeviceArray` (a NumPy subclass that plays a ``cupy.ndarray``); every
operation on them computes with NumPy and is counted as CuPy would execute it on a GPU:

- **kernel launches**: a ufunc call or ufunc method (``reduce``, ``accumulate``, ``at``)
  is one launch; ``a.sum()``, ``a.max()``, ``a.any()`` are one (a reduction) and give a
  0-d device array, not a host number; copies, fills, ``astype``, ``take``, ``where``,
  ``concatenate`` (one per input array), sorts and scans are one each; views (``reshape``
  of a contiguous array, slicing, ``transpose``, ``broadcast_to``) and ``empty`` are none.
- **device-to-host synchronisations**: ``int()``, ``float()``, ``bool()``,
  ``operator.index`` (a device scalar as a slice bound), ``.item()``, ``.tolist()``,
  ``.get()``, ``cupy.asnumpy``; ``nonzero`` / ``flatnonzero`` / ``argwhere`` /
  one-argument ``where``; boolean-mask indexing (``a[mask]``) and other data-dependent
  output shapes (``unique``, ``compress``, ``extract``, ``bincount``, ``repeat`` with an
  array of counts, assigning an array to ``a[mask]``); a stream's or an event's
  ``synchronize``. Each sync also counts the bytes it brings back (8 for the size of a
  data-dependent shape).
- **asynchronous copies** (no sync, bytes counted): ``a.get(out=host, blocking=False)``
  into pinned host memory, ``a.set(host)``; ``cuda.alloc_pinned_memory`` gives plain host
  memory (a ``bytearray``) for the pinned buffers of the MPI staging (``simd.staging``).
- **host-to-device bytes**: ``cupy.asarray`` / ``cupy.array`` of host data, host arrays
  used as indices or assigned into device arrays, and host arrays mixed into a ufunc
  (which real CuPy refuses with a ``TypeError``: such calls are also listed in
  ``Counts.implicit`` so that tests can demand there are none).
- **device traffic**: the bytes a launch reads and writes (array inputs plus outputs).
- **time**: the seconds spent inside the namespace's API, each call from entry to return
  (the device work, done here by NumPy, and the stand-in's own dispatch and counting,
  which stand for CuPy's host time per call), are kept apart, so that a measurement's
  ``host_seconds`` is the caller's own Python time with the device work stubbed out.

The CuPy backend's own kernels run too: ``RawModule`` / ``RawKernel`` give fake kernels
that count one launch and compute their result with the reference implementations
(``kernels.reference``), identified by kernel name (and, for the modules of
``kernels.cupy_scan`` and ``kernels.cupy_router``, by their generated source);
``kernels.numba_shift`` hands its launches to :meth:`CountingCuPy.launch_emulated`. Kernels
that later code adds register a NumPy emulation with :func:`kernels.fastpaths.emulates`.

``cuda.Event`` records host times; reading an elapsed time costs one sync (the event's
``synchronize``) and nothing before, as on a GPU.

The device has a memory (80 GiB unless :func:`device_memory` says otherwise), which
``cuda.runtime.memGetInfo`` reports free: an allocation larger than it raises CuPy's
``cuda.memory.OutOfMemoryError``, so that the out-of-memory paths run without a GPU. Only
single allocations are checked, not the sum of the live ones.

Use it through ``simd.Machine(backend="counting")`` (``backend == "cupy"``, ``xp`` this
namespace) and :func:`measure`::

    with counting.measure() as c:
        renderer.render(mesh, machine=m)
    c.total.syncs, c.total.launches, c.scopes["z-buffer"].launches, c.host_seconds

Where it is approximate
-----------------------
- Library calls that are several kernels in CuPy count as one: sorts (Thrust/CUB radix sort,
  a few launches), ``cumsum`` (CuPy's scan is one CUB call or a few kernels), ``unique``
  and ``nonzero`` (modelled as a fixed 4 and 3 launches), boolean-mask indexing (2
  launches: a scan of the mask and a scatter), ``mean`` / ``var`` (one reduction).
- Array creation from a Python scalar in a ufunc is free (CuPy passes it as a kernel
  argument); a 0-d host NumPy array is treated as such a scalar.
- ``numpy.asarray(device_array)`` silently gives the host the data here (the subclass is
  an ndarray); real CuPy raises. Other NumPy-level escapes (``ndarray`` methods not
  listed in :data:`~kernels.counting.op_costs.METHOD_MODELS` that do not go through a
  ufunc) are not counted.
- CuPy's host overhead per launch (a few microseconds of Python and driver time) is not
  in ``host_seconds``; multiply ``launches`` by a per-launch cost to estimate it. Nor is
  the stand-in's own (its Python per call was 1-1.5 us of a 0.4 ms frame's host time
  before calls were timed from entry), nor the timing wrapper's own entry and exit
  beyond a plain call (:func:`call_overhead`, about 0.2 us a call, calibrated per
  process and taken off per call). What stays in: NumPy's dispatch into
  :class:`DeviceArray`'s overrides and the freeing of results, 0.1-0.7 us a call (about
  190 calls in an expand frame), which CuPy's own dispatch and freeing also cost.
- Memory traffic counts whole arrays; strides, caches and fusion are not modelled.
- ``a[index] = values`` with an index naming a destination twice keeps the first value
  written there, not NumPy's last: on CuPy the winner is undefined, and taking the other
  end from NumPy makes a program that depends on it differ between the two backends.
- The device work runs on the host's CPU and flushes its caches: the caller's Python after
  each operation starts cold, which a GPU's host does not (about twice the host time of a
  250k frame; 1 us of bookkeeping became 10-20 us after a 32 MB operation, on another core
  too). A :class:`Tape` replays a recorded block with the device work stubbed, giving the
  host time on warm caches.
- Freeing: when a large NumPy array dies, glibc gives its pages back to the system
  (``munmap``), in the caller's code and so in ``host_seconds`` (about 1.5 ms of a 250k
  frame); CuPy's memory pool keeps freed device blocks instead. :func:`pool_host_memory`
  makes the process keep freed memory likewise (``bench/gpu_budget.py`` calls it).

The modules
-----------
One counting state and one set of cost rules, a module for each part:

- :mod:`~kernels.counting.records`: :class:`Counts`, :class:`Measurement`, the device's
  state that every operation reports to, the timing of API calls, :func:`measure`,
  :func:`scope`;
- :mod:`~kernels.counting.tape`: :class:`Tape`, :func:`recording`, :func:`replaying`;
- :mod:`~kernels.counting.api_checks`: calls checked against CuPy's API
  (:mod:`kernels.cupy_api`);
- :mod:`~kernels.counting.op_costs`: what NumPy functions and ndarray methods cost;
- :mod:`~kernels.counting.device_array`: :class:`DeviceArray` and the counted operations
  it runs on;
- :mod:`~kernels.counting.host`: :func:`host_conversions_refused`,
  :func:`pool_host_memory`;
- :mod:`~kernels.counting.emulations`: the NumPy emulations of the backend's own kernels;
- :mod:`~kernels.counting.raw_kernels`: ``RawModule``, ``RawKernel``,
  ``ElementwiseKernel``, the emulated launches;
- :mod:`~kernels.counting.events`: ``cuda`` (events, the stream, the device);
- :mod:`~kernels.counting.namespace`: :class:`CountingCuPy` and its one instance,
  :data:`cupy`.
"""

from __future__ import annotations

from kernels.counting.device_array import DeviceArray
from kernels.counting.host import host_conversions_refused, pool_host_memory
from kernels.counting.namespace import CountingCuPy, cupy
from kernels.counting.raw_kernels import (
    ElementwiseKernel,
    RawKernel,
    RawModule,
    checked_launches,
    launch,
    numba_launches,
    numba_signature,
)
from kernels.counting.records import (
    Counts,
    Measurement,
    OutOfMemoryError,
    call_overhead,
    device_memory,
    measure,
    scope,
)
from kernels.counting.tape import ReplayError, Tape, recording, replaying

__all__ = [
    "pool_host_memory",
    "recording",
    "replaying",
    "ReplayError",
    "Tape",
    "Counts",
    "CountingCuPy",
    "OutOfMemoryError",
    "device_memory",
    "DeviceArray",
    "Measurement",
    "cupy",
    "host_conversions_refused",
    "measure",
    "scope",
    "call_overhead",
    "checked_launches",
    "numba_launches",
    "numba_signature",
    "launch",
    "RawModule",
    "RawKernel",
    "ElementwiseKernel",
]
