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
  listed in :data:`_METHOD_MODELS` that do not go through a ufunc) are not counted.
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

The module is long because it is one model: the records, the array subclass, the kernel
emulations and the namespace share one counting state and one set of cost rules, and read
best in one place (its sections are marked).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import math
import time
import types
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernels import cuda_args as _cuda_args
from kernels import cuda_router_source as _router_src
from kernels import cuda_scan_source as _scan_src
from kernels import reference
from kernels.fastpaths import emulates, emulation

__all__ = [
    "pool_host_memory",
    "recording",
    "replaying",
    "ReplayError",
    "Tape",
    "Counts",
    "CountingCuPy",
    "DeviceArray",
    "Measurement",
    "cupy",
    "host_conversions_refused",
    "measure",
]


# --------------------------------------------------------------------------- records


@dataclass
class Counts:
    """What some device work cost, as CuPy on a GPU would spend it."""

    launches: int = 0
    syncs: int = 0
    h2d_bytes: int = 0
    d2h_bytes: int = 0
    h2d_copies: int = 0
    traffic_bytes: int = 0
    device_seconds: float = 0.0
    #: Launches by operation name.
    ops: Counter = field(default_factory=Counter)
    #: Syncs by the operation that caused them.
    sync_ops: Counter = field(default_factory=Counter)
    #: Host arrays mixed into device operations (real CuPy raises on these).
    implicit: Counter = field(default_factory=Counter)

    def add(self, other: Counts) -> None:
        self.launches += other.launches
        self.syncs += other.syncs
        self.h2d_bytes += other.h2d_bytes
        self.d2h_bytes += other.d2h_bytes
        self.h2d_copies += other.h2d_copies
        self.traffic_bytes += other.traffic_bytes
        self.device_seconds += other.device_seconds
        self.ops.update(other.ops)
        self.sync_ops.update(other.sync_ops)
        self.implicit.update(other.implicit)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "launches": self.launches,
            "syncs": self.syncs,
            "h2d_bytes": self.h2d_bytes,
            "d2h_bytes": self.d2h_bytes,
            "h2d_copies": self.h2d_copies,
            "traffic_bytes": self.traffic_bytes,
            "device_seconds": self.device_seconds,
            "sync_ops": dict(self.sync_ops),
            "implicit": dict(self.implicit),
        }


@dataclass
class Measurement:
    """Counts of one measured block, in total and per scope (machine phase path)."""

    total: Counts = field(default_factory=Counts)
    scopes: dict[str, Counts] = field(default_factory=dict)
    wall_seconds: float = 0.0
    #: Calls into the namespace's API made by the block (a call made inside another is
    #: part of it), each costing the caller :func:`call_overhead` more than it would
    #: calling CuPy.
    calls: int = 0

    @property
    def host_seconds(self) -> float:
        """Wall time of the block less the device work done for it (by NumPy here) and
        less the stand-in's own untimed overhead per call (:func:`call_overhead`)."""
        device = self.total.device_seconds + self.calls * call_overhead()
        return max(0.0, self.wall_seconds - device)

    def stage(self, name: str) -> Counts:
        """Counts of scope ``name`` and every scope nested in it."""
        out = Counts()
        for path, c in self.scopes.items():
            if path == name or path.startswith(name + "/"):
                out.add(c)
        return out

    def stages(self) -> dict[str, Counts]:
        """Counts per top-level scope (``""``: outside any scope)."""
        out: dict[str, Counts] = {}
        for path, c in self.scopes.items():
            out.setdefault(path.split("/")[0], Counts()).add(c)
        return out


class _State:
    """The counting device's process-wide state (one device, as CuPy's current one)."""

    def __init__(self) -> None:
        self.depth = 0  # > 0 inside a counted operation: nested work is not counted again
        self.scopes: list[str] = []
        self.meters: list[Measurement] = []
        self.lifetime = Counts()
        self.tape: Tape | None = None  # recording or replaying the device's results
        # Check calls against CuPy's API and kernels' signatures (off while replaying a
        # tape: the recording passed them, and a replay measures the caller's host time)
        self.strict = True
        self.inside = False  # in a call of the namespace's API (timed by _entry)
        #: Seconds spent inside the API so far, and the part of them already given to the
        #: scopes (``settle``).
        self.clock = 0.0
        self.calls = 0  # calls into the API so far (outermost ones: see _entry)
        self.settled = 0.0
        self.settled_path = ""  # the scope path the seconds since then are given to

    def record(
        self,
        op: str,
        *,
        launches: int = 0,
        syncs: int = 0,
        h2d: int = 0,
        d2h: int = 0,
        traffic: int = 0,
        implicit: int = 0,
    ) -> None:
        """Count one operation (its time is counted by the API call that made it, _entry)."""
        path = "/".join(self.scopes)
        if path != self.settled_path:  # the scope changed: the seconds so far were the last
            self.settle(self.settled_path)
            self.settled_path = path
        targets = [self.lifetime]
        for m in self.meters:
            scope = m.scopes.get(path)
            if scope is None:  # a Counts (three Counters) made only for a new scope
                scope = m.scopes[path] = Counts()
            targets += (scope, m.total)
        for c in targets:
            c.launches += launches
            c.syncs += syncs
            c.h2d_bytes += h2d
            c.d2h_bytes += d2h
            c.h2d_copies += 1 if h2d else 0
            c.traffic_bytes += traffic
            if launches:
                c.ops[op] += launches
            if syncs:
                c.sync_ops[op] += syncs
            if implicit:
                c.implicit[op] += implicit

    def settle(self, path: str | None = None) -> None:
        """Give the API seconds since the last settle to scope ``path`` (default: the
        current one). Called when the meters change and by the first operation counted in
        another scope than the last one (so the calls themselves only add to one clock,
        and a scope's seconds are those of its calls up to its last counted operation)."""
        seconds = self.clock - self.settled
        if not seconds:
            return
        self.settled = self.clock
        if path is None:
            path = "/".join(self.scopes)
        self.lifetime.device_seconds += seconds
        for m in self.meters:
            m.total.device_seconds += seconds
            # a scope is listed from its first counted operation on (views alone, which
            # count nothing, leave their seconds to the total only)
            scope = m.scopes.get(path)
            if scope is not None:
                scope.device_seconds += seconds


_state = _State()


def _entry(fn: Callable) -> Callable:
    """Time ``fn``, an entry into the namespace's API, as device time: the whole call, from
    entry to return, is what CuPy does for the caller (the device work, done by NumPy
    here, and the stand-in's dispatch and counting, which stand for CuPy's own host time
    per call, not the caller's). Calls made inside another are part of it."""

    @functools.wraps(fn)
    def entry(*args: Any, **kwargs: Any) -> Any:
        state = _state
        if state.inside:
            return fn(*args, **kwargs)
        state.inside = True
        state.calls += 1
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            state.clock += time.perf_counter() - t0
            state.inside = False

    return entry


@functools.cache
def call_overhead() -> float:
    """Seconds a call into the namespace's API costs its caller outside the interval that
    :func:`_entry` times (the wrapper's own entry and exit), beyond a call of a plain
    Python function, which stands for calling CuPy's: harness time, not the caller's.
    Measured once per process (the least of several runs of a few thousand calls, about
    0.2 us here) and taken off :attr:`Measurement.host_seconds` per call.

    Examples
    --------
    >>> call_overhead() >= 0.0
    True
    """

    def plain() -> None:
        return None

    timed = _entry(plain)
    state, n, best = _state, 5000, math.inf
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(n):
            plain()
        bare = time.perf_counter() - t0
        clock = state.clock
        t0 = time.perf_counter()
        for _ in range(n):
            timed()
        wrapped = time.perf_counter() - t0 - (state.clock - clock)
        best = min(best, (wrapped - bare) / n)
    state.calls -= 7 * n  # the calibration's calls are no block's
    return max(0.0, best)


@contextlib.contextmanager
def measure() -> Iterator[Measurement]:
    """Count the device work of the block (nested measurements each count it).

    Examples
    --------
    >>> from kernels.counting import cupy as xp, measure
    >>> with measure() as c:
    ...     total = xp.asarray([1, 2, 3]).sum()   # one upload, one reduction
    ...     n = int(total)                        # one sync
    >>> c.total.launches, c.total.syncs, c.total.h2d_bytes, n
    (1, 1, 24, 6)
    """
    meter = Measurement()
    call_overhead()  # calibrated before the block (once per process)
    _state.settle(_state.settled_path)  # the seconds so far are not this block's
    _state.meters.append(meter)
    calls = _state.calls
    start = time.perf_counter()
    try:
        yield meter
    finally:
        meter.wall_seconds = time.perf_counter() - start
        meter.calls = _state.calls - calls
        _state.settle(_state.settled_path)
        _state.meters.remove(meter)


def pool_host_memory() -> bool:
    """Keep freed memory in the process, as CuPy's memory pool keeps freed device blocks:
    glibc's ``mallopt`` with large blocks on the heap (up to its 32 MiB limit) and no
    trimming. Process-wide and for good; returns False where it cannot (not glibc).
    For benchmarks of host time: freeing an array then costs the caller nothing, as
    returning a block to CuPy's pool costs nearly nothing.
    """
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_top_pad, m_mmap_threshold = -1, -2, -3
    return all(
        mallopt(option, value) == 1
        for option, value in (
            (m_mmap_threshold, 32 << 20),
            (m_trim_threshold, 2**31 - 1),
            (m_top_pad, 256 << 20),
        )
    )


class ReplayError(RuntimeError):
    """A replayed block asked the device for other work than the recorded one did."""


class Tape:
    """What the device gave a recorded block, to run the block again with it stubbed.

    :func:`recording` keeps, per counted operation, its name, its counts and the shape of
    its result, and the values of every read back; :func:`replaying` then runs the same
    block again with each operation answered by an uninitialised array of that shape and
    each read back by the recorded value, so no device work is done. The host does what
    it did, on caches the device work has not flushed (as a GPU would leave them): the
    emulated device work evicts the host's code and data from the CPU caches, which made
    its Python about twice as slow over a 250k frame (the module docstring). Only
    synchronising reads back carry recorded data to the host here, so a block that reads
    device data otherwise (``numpy.asarray`` of a device array, an asynchronous ``get``
    into pinned memory) cannot be replayed faithfully; a block that asks for other
    operations than the recorded ones raises :class:`ReplayError`. Record a block that has
    run once
    already (the first run of a machine's kernels makes their scratch buffers).
    """

    def __init__(self) -> None:
        #: (op, counts for ``_State.record``, result) per operation: the shape of an
        #: operation's result (``_spec``), the value of a read back.
        self.entries: list[tuple[str, dict[str, int], Any]] = []
        self.position: int | None = None  # the next entry while replaying

    def next(self, op: str) -> tuple[dict[str, int], Any]:
        """The recorded counts and result of the next operation, which must be ``op``."""
        k = self.position
        if k is None or k >= len(self.entries) or self.entries[k][0] != op:
            expected = self.entries[k][0] if k is not None and k < len(self.entries) else None
            raise ReplayError(
                f"replay diverged at operation {k}: the block asked for {op!r}, the "
                f"recorded one for {expected!r}"
            )
        self.position = k + 1
        return self.entries[k][1], self.entries[k][2]


def _spec(r: Any) -> Any:
    """The shape of a result, to make a stand-in for it (:func:`_stub`)."""
    if isinstance(r, np.ndarray):
        return ("array", r.shape, r.dtype, isinstance(r, DeviceArray))
    if isinstance(r, tuple | list):
        return (type(r), [_spec(v) for v in r])
    return ("value", r)


def _stub(spec: Any) -> Any:
    kind = spec[0]
    if kind == "array":
        out = np.empty(spec[1], dtype=spec[2])
        return out.view(DeviceArray) if spec[3] else out
    if kind == "value":
        return spec[1]
    return kind(_stub(v) for v in spec[1])


def _host_copy(value: Any) -> Any:
    """A read back's recorded value, fresh for each replay (callers may write into it)."""
    if isinstance(value, np.ndarray | list):
        return copy.deepcopy(value)
    return value


@contextlib.contextmanager
def recording() -> Iterator[Tape]:
    """Record the device's results of the block on a :class:`Tape` (counted as usual).

    Examples
    --------
    >>> from kernels.counting import cupy as xp, recording, replaying, measure
    >>> def block():
    ...     return int((xp.arange(4) * 2).sum())
    >>> with recording() as tape:
    ...     block()
    12
    >>> with measure() as c, replaying(tape):
    ...     block()
    12
    >>> c.total.launches, c.total.syncs
    (3, 1)
    """
    if _state.tape is not None:
        raise RuntimeError("a tape is already being recorded or replayed")
    tape = _state.tape = Tape()
    try:
        yield tape
    finally:
        _state.tape = None


@contextlib.contextmanager
def replaying(tape: Tape) -> Iterator[Tape]:
    """Run the block with the device work stubbed by ``tape`` (see :class:`Tape`); the
    block must ask for the recorded operations in the recorded order, and all of them."""
    if _state.tape is not None:
        raise RuntimeError("a tape is already being recorded or replayed")
    tape.position = 0
    _state.tape = tape
    _state.strict = False
    try:
        yield tape
        if tape.position != len(tape.entries):
            raise ReplayError(
                f"replay ended after {tape.position} of {len(tape.entries)} recorded operations"
            )
    finally:
        _state.tape = None
        _state.strict = True
        tape.position = None


@contextlib.contextmanager
def scope(name: str) -> Iterator[None]:
    """Attribute the counts of the block to scope ``name`` (nested: ``outer/name``)."""
    _state.scopes.append(name)
    try:
        yield
    finally:
        _state.scopes.pop()


# --------------------------------------------------------------------------- the API


def _api() -> dict[str, Any]:
    from kernels import cupy_api

    return cupy_api.load()


#: (name, positional count, keywords) of calls that bind to CuPy's signature: a call of
#: the same shape is not checked again (binding depends on nothing else).
_BOUND: set[tuple] = set()


def _check_call(name: str, params: Any, args: tuple, kwargs: dict) -> None:
    """Raise TypeError where CuPy's ``name`` (signature ``params``, see
    :mod:`kernels.cupy_api`) would not take these arguments."""
    key = (name, len(args), tuple(kwargs))
    if key in _BOUND:
        return
    from kernels import cupy_api

    sig = cupy_api.signature(params)
    if sig is not None:
        try:
            sig.bind(*args, **kwargs)
        except TypeError as err:
            raise TypeError(
                f"cupy {name}{sig} would refuse this call ({err}); the counting stand-in "
                "refuses what CuPy does"
            ) from None
    _BOUND.add(key)


#: NumPy's conversions, as the stand-in itself uses them (never refused, see below).
_to_host, _to_host_copy = np.asarray, np.array
_CONVERSIONS = ("asarray", "array", "asanyarray", "ascontiguousarray", "asfortranarray")


def _holds_device(a: Any) -> bool:
    if isinstance(a, DeviceArray):
        return True
    return isinstance(a, list | tuple) and any(_holds_device(v) for v in a)


@contextlib.contextmanager
def host_conversions_refused() -> Iterator[None]:
    """Make ``numpy.asarray``, ``numpy.array`` and the like refuse device arrays in the
    block, as CuPy's arrays do (``TypeError: Implicit conversion to a NumPy array is not
    allowed``): here a device array is a NumPy array, so NumPy converts it silently. The
    module attributes are patched for the block (process-wide; for tests); NumPy's work
    inside counted operations is not affected.

    Examples
    --------
    >>> import numpy as np
    >>> from kernels.counting import cupy as xp, host_conversions_refused
    >>> with host_conversions_refused():
    ...     try:
    ...         np.asarray(xp.arange(3))
    ...     except TypeError as e:
    ...         print(str(e)[:55])
    Implicit conversion to a NumPy array is not allowed (Cu
    """
    saved = {name: getattr(np, name) for name in _CONVERSIONS}

    def refusing(name: str, convert: Callable) -> Callable:
        def conversion(a: Any, *args: Any, **kwargs: Any) -> Any:
            if not _state.depth and _holds_device(a):
                raise TypeError(
                    "Implicit conversion to a NumPy array is not allowed (CuPy): "
                    f"numpy.{name} of a device array; use .get() or cupy.asnumpy"
                )
            return convert(a, *args, **kwargs)

        return conversion

    try:
        for name, convert in saved.items():
            setattr(np, name, refusing(name, convert))
        yield
    finally:
        for name, convert in saved.items():
            setattr(np, name, convert)


# --------------------------------------------------------------------------- arrays


def _nbytes(a: Any) -> int:
    return int(a.nbytes) if isinstance(a, np.ndarray) else 0


class _Call:
    """Unwraps the device arrays of one operation's arguments; notes host arrays."""

    __slots__ = ("host_bytes", "implicit", "traffic")

    def __init__(self) -> None:
        self.host_bytes = 0
        self.implicit = 0
        self.traffic = 0

    def unwrap(self, a: Any, *, host_ok: bool = False) -> Any:
        if isinstance(a, DeviceArray):
            base = a.view(np.ndarray)
            self.traffic += base.nbytes
            return base
        if type(a) is np.ndarray:
            if a.ndim and not host_ok:
                self.host_bytes += a.nbytes
                self.implicit += 1
            return a
        if isinstance(a, list | tuple):
            items = [self.unwrap(v, host_ok=host_ok) for v in a]
            return type(a)(items) if isinstance(a, tuple) else items
        return a


def _wrap(r: Any) -> Any:
    if isinstance(r, DeviceArray):
        return r
    if isinstance(r, np.ndarray):
        return r.view(DeviceArray)
    if isinstance(r, np.generic):
        return np.asarray(r).view(DeviceArray)
    if isinstance(r, tuple):
        return tuple(_wrap(v) for v in r)
    if isinstance(r, list):
        return [_wrap(v) for v in r]
    return r


def _out_bytes(r: Any) -> int:
    if isinstance(r, np.ndarray):
        return r.nbytes
    if isinstance(r, tuple | list):
        return sum(_out_bytes(v) for v in r)
    return 0


@_entry
def _run(
    op: str,
    fn: Callable,
    args: tuple,
    kwargs: dict,
    *,
    launches: int | Callable[[Any], int] = 1,
    syncs: int = 0,
    host_ok: bool = False,
    wrap: bool = True,
    h2d: int = 0,
) -> Any:
    """Run ``fn`` on the unwrapped arguments and count it as ``op``."""
    if _state.depth:
        return fn(*args, **kwargs)
    tape = _state.tape
    if tape is not None and tape.position is not None:  # replaying: no device work
        counts, spec = tape.next(op)
        out = _stub(spec)
        _state.record(op, **counts)
        return out
    call = _Call()
    args = call.unwrap(args, host_ok=host_ok)
    kwargs = {k: call.unwrap(v, host_ok=host_ok) for k, v in kwargs.items()}
    _state.depth += 1
    try:
        result = fn(*args, **kwargs)
    finally:
        _state.depth -= 1
    n = launches(result) if callable(launches) else launches
    out = _wrap(result) if wrap else result
    counts = {
        "launches": n,
        "syncs": syncs,
        "h2d": call.host_bytes + h2d,
        "d2h": 8 * syncs,
        "traffic": (call.traffic + _out_bytes(result)) if n else 0,
        "implicit": call.implicit,
    }
    if tape is not None:
        tape.entries.append((op, counts, _spec(out)))
    _state.record(op, **counts)
    return out


@_entry
def _sync(op: str, nbytes: int, fn: Callable, *args: Any) -> Any:
    """A device-to-host read of ``nbytes``: one sync."""
    if _state.depth:
        return fn(*args)
    tape = _state.tape
    if tape is not None and tape.position is not None:  # replaying: the recorded value
        result = _host_copy(tape.next(op)[1])
        _state.record(op, syncs=1, d2h=nbytes)
        return result
    _state.depth += 1
    try:
        result = fn(*args)
    finally:
        _state.depth -= 1
    if tape is not None:
        tape.entries.append((op, {}, _host_copy(result)))
    _state.record(op, syncs=1, d2h=nbytes)
    return result


def _index_kind(key: Any) -> tuple[str, int]:
    """('basic' | 'gather' | 'mask', host bytes of host index arrays) of an index."""
    parts = key if isinstance(key, tuple) else (key,)
    kind, host = "basic", 0
    for k in parts:
        if isinstance(k, np.ndarray) or (isinstance(k, list) and k):
            arr = _to_host(k)
            if type(k) is not DeviceArray:
                host += arr.nbytes
            if arr.dtype == np.bool_:
                return "mask", host
            kind = "gather"
    return kind, host


def _slice_syncs(key: Any) -> int:
    parts = key if isinstance(key, tuple) else (key,)
    n = 0
    for k in parts:
        if isinstance(k, slice):
            n += sum(isinstance(v, DeviceArray) for v in (k.start, k.stop, k.step))
    return n


class DeviceArray(np.ndarray):
    """An array on the counting device (plays ``cupy.ndarray``; NumPy holds the data)."""

    __array_priority__ = 100.0

    @_entry
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return _ufunc(ufunc, method, inputs, kwargs)

    @_entry
    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        name = func.__name__
        if _state.strict and not _state.depth and name not in _api()["names"]:
            if getattr(np, name, None) is func:  # a NumPy function CuPy lacks
                raise TypeError(
                    f"no implementation found for 'numpy.{name}' on cupy.ndarray (CuPy "
                    f"{_api()['version']} has no {name}; the counting stand-in refuses it)"
                )
        return _function(name, func, args, kwargs)

    # ---- reads to the host: one sync each
    @_entry
    def get(
        self, stream: Any = None, order: str = "C", out: Any = None, blocking: bool = True
    ) -> np.ndarray:
        """A host copy (one sync; with ``out`` and ``blocking=False`` an asynchronous copy
        into ``out``, pinned host memory: no sync, the bytes counted)."""
        if out is not None and (out.dtype != self.dtype or out.shape != self.shape):
            # CuPy raises (TypeError for the dtype, ValueError for the shape); NumPy would
            # cast and broadcast
            error = TypeError if out.dtype != self.dtype else ValueError
            raise error(f"get: out of {out.dtype} {out.shape} for {self.dtype} {self.shape}")
        if out is not None and not blocking:
            _state.record("get[async]", d2h=self.nbytes)
            out[...] = self.view(np.ndarray)
            return out
        host = _sync("get", self.nbytes, np.array, self.view(np.ndarray))
        if out is not None:
            out[...] = host
            return out
        return host

    @_entry
    def set(self, arr: np.ndarray, stream: Any = None) -> None:
        """Copy the host array ``arr`` (same shape and dtype) in: asynchronous, no sync."""
        if arr.shape != self.shape or arr.dtype != self.dtype:
            raise ValueError(f"set: {arr.dtype} {arr.shape} into {self.dtype} {self.shape}")
        _state.record("set", h2d=arr.nbytes)
        self.view(np.ndarray)[...] = arr

    @_entry
    def item(self) -> Any:  # CuPy's takes no index (NumPy's does)
        return _sync("item", self.itemsize, self.view(np.ndarray).item)

    @_entry
    def tolist(self) -> Any:
        return _sync("tolist", self.nbytes, self.view(np.ndarray).tolist)

    @_entry
    def __int__(self) -> int:
        return _sync("int", self.itemsize, int, self.view(np.ndarray))

    @_entry
    def __float__(self) -> float:
        return _sync("float", self.itemsize, float, self.view(np.ndarray))

    @_entry
    def __complex__(self) -> complex:
        return _sync("complex", self.itemsize, complex, self.view(np.ndarray))

    @_entry
    def __bool__(self) -> bool:
        return _sync("bool", self.itemsize, bool, self.view(np.ndarray))

    @_entry
    def __index__(self) -> int:
        return _sync("index", self.itemsize, self.view(np.ndarray).__index__)

    def __repr__(self) -> str:
        _state.depth += 1  # printing is for people, not counted
        try:
            return repr(self.view(np.ndarray)).replace("array(", "device_array(", 1)
        finally:
            _state.depth -= 1

    __str__ = __repr__

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self[i]

    def __reduce__(self) -> Any:
        return (np.asarray, (self.view(np.ndarray),))

    # ---- indexing
    @_entry
    def __getitem__(self, key: Any) -> Any:
        base = self.view(np.ndarray)
        if _state.depth:
            return base[key]
        if type(key) is DeviceArray:  # the common case, classified without the loops below
            kind, host, syncs = ("mask" if key.dtype == np.bool_ else "gather"), 0, 0
        else:
            kind, host = _index_kind(key)
            syncs = _slice_syncs(key)
        if kind == "mask":
            return _run(
                "getitem[mask]", base.__getitem__, (key,), {}, launches=2, syncs=1 + syncs,
                host_ok=True, h2d=host,
            )  # fmt: skip
        if kind == "gather":
            return _run(
                "getitem[gather]", base.__getitem__, (key,), {}, launches=1, syncs=syncs,
                host_ok=True, h2d=host,
            )  # fmt: skip
        # a view: no kernel (a 0-d view for a single element, as CuPy gives)
        if syncs:
            _state.record("getitem[slice bound]", syncs=syncs, d2h=8 * syncs)
        out = base[key]
        if isinstance(out, np.generic):
            return np.asarray(out).view(DeviceArray)
        return out.view(DeviceArray)

    @_entry
    def __setitem__(self, key: Any, value: Any) -> None:
        base = self.view(np.ndarray)
        if _state.depth:
            base[key] = value
            return
        kind, host = _index_kind(key)
        scalar = not isinstance(value, np.ndarray) or value.ndim == 0
        if type(value) is np.ndarray and value.ndim:
            host += value.nbytes  # CuPy uploads a host value first
        launches, syncs = 1, _slice_syncs(key)
        if kind == "mask" and not scalar:
            launches, syncs = 3, syncs + 1  # the mask's true positions are counted first
        elif kind == "gather" and not scalar:
            launches = 1
        _run(
            "setitem[mask]" if kind == "mask" else f"setitem[{kind}]",
            _scatter if kind == "gather" and not scalar else base.__setitem__,
            (base, key, value) if kind == "gather" and not scalar else (key, value),
            {},
            launches=launches,
            syncs=syncs,
            wrap=False,
            host_ok=True,
            h2d=host,
        )
        return None


def _scatter(base: np.ndarray, key: Any, value: Any) -> None:
    """``base[key] = value`` with integer index arrays where, of duplicate destinations, the
    first write wins: NumPy keeps the last, CuPy's scatter an undefined one (whichever
    thread writes last), so the stand-in takes the other end from NumPy. A program that
    reads a destination written twice with different values then differs between the
    NumPy machine and this one (the tests compare them); one that never reads it (a spare
    slot taking the writes to drop) does not."""
    parts = key if isinstance(key, tuple) else (key,)
    if all(isinstance(k, np.ndarray) and k.dtype.kind in "iu" for k in parts) and parts:
        shape = base.shape[: len(parts)]
        idx = np.broadcast_arrays(*parts)
        flat = np.ravel_multi_index(
            tuple(np.where(k < 0, k + n, k) for k, n in zip(idx, shape, strict=True)), shape
        ).reshape(-1)
        _, first = np.unique(flat, return_index=True)
        if first.size < flat.size:  # duplicates: write each destination's first value
            rest = base.shape[len(parts) :]
            rows = np.broadcast_to(value, idx[0].shape + rest).reshape(flat.size, *rest)
            base[tuple(k.reshape(-1)[first] for k in idx)] = rows[first]
            return
    base[key] = value


@_entry
def _ufunc(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    out = kwargs.get("out")
    fn = getattr(ufunc, method)
    name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
    result = _run(name, fn, inputs, kwargs, wrap=out is None)
    if method == "at":
        return None
    if out is not None:
        outs = out if isinstance(out, tuple) else (out,)
        return outs[0] if len(outs) == 1 else outs
    return result


# Launches and syncs of NumPy functions (also the ndarray methods of the same name) where
# they differ from the default (one launch, no sync).
_VIEWS = {
    "reshape",
    "transpose",
    "moveaxis",
    "swapaxes",
    "rollaxis",
    "broadcast_to",
    "broadcast_arrays",
    "expand_dims",
    "squeeze",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "shape",
    "ndim",
    "size",
    "result_type",
    "can_cast",
    "min_scalar_type",
    "iscomplexobj",
    "isrealobj",
    "isscalar",
    "empty",
    "empty_like",
    "may_share_memory",
    "shares_memory",
    "split",
    "array_split",
    "hsplit",
    "vsplit",
    "diagonal",
    "flip",
    "fliplr",
    "flipud",
    "real",
}
#: (launches, syncs) of data-dependent shapes.
_SYNCING = {
    "nonzero": (3, 1),
    "flatnonzero": (3, 1),
    "argwhere": (3, 1),
    "unique": (4, 1),
    "compress": (3, 1),
    "extract": (3, 1),
    "bincount": (3, 1),
}


def _copies_if_needed(result: Any, inputs: tuple) -> int:
    """One launch if the result does not share memory with the first input (a copy)."""
    first = inputs[0] if inputs else None
    if isinstance(result, np.ndarray) and isinstance(first, np.ndarray):
        shared = np.shares_memory(result.view(np.ndarray), first.view(np.ndarray))
        return 0 if shared else 1
    return 1


#: Every name :func:`_function` counts otherwise than as one plain launch.
_SPECIAL = (
    _VIEWS
    | set(_SYNCING)
    | {"ravel", "ascontiguousarray", "asfortranarray", "where", "repeat"}
    | {"concatenate", "stack", "hstack", "vstack", "column_stack", "dstack"}
)


@_entry
def _function(name: str, func: Callable, args: tuple, kwargs: dict) -> Any:
    if name not in _SPECIAL:  # the common case, one lookup
        return _run(name, func, args, kwargs)
    if name in _VIEWS:
        return _run(name, func, args, kwargs, launches=0)
    if name in ("ravel", "ascontiguousarray", "asfortranarray"):
        return _run(name, func, args, kwargs, launches=lambda r: _copies_if_needed(r, args))
    if name in _SYNCING:
        launches, syncs = _SYNCING[name]
        return _run(name, func, args, kwargs, launches=launches, syncs=syncs)
    if name == "where" and len(args) + len(kwargs) == 1:
        return _run("where(nonzero)", func, args, kwargs, launches=3, syncs=1)
    if name == "repeat":
        repeats = args[1] if len(args) > 1 else kwargs.get("repeats")
        if isinstance(repeats, np.ndarray) and repeats.size > 1:
            return _run(name, func, args, kwargs, launches=2, syncs=1)
    if name in ("concatenate", "stack", "hstack", "vstack", "column_stack", "dstack"):
        arrays = args[0] if args else kwargs.get("arrays", ())
        return _run(name, func, args, kwargs, launches=max(1, len(arrays)))
    return _run(name, func, args, kwargs)


# ndarray methods that do not go through a ufunc: counted as the function of that name.
_METHOD_MODELS = (
    "all",
    "any",
    "sum",
    "max",
    "min",
    "prod",
    "mean",
    "std",
    "var",
    "argmax",
    "argmin",
    "cumsum",
    "cumprod",
    "take",
    "argsort",
    "repeat",
    "searchsorted",
    "dot",
    "round",
    "clip",
    "flatten",
    "ravel",
    "put",
    "compress",
    "nonzero",
    "copy",
    "fill",
    "sort",
    "conj",
    "trace",
)


def _method(name: str) -> Callable:
    params = _api()["methods"].get(name, "unknown")

    @_entry
    def method(self: DeviceArray, *args: Any, **kwargs: Any) -> Any:
        if _state.strict and not _state.depth:
            _check_call(f"ndarray.{name}", params, args, kwargs)
        base_method = getattr(np.ndarray, name)
        wrap = name not in ("sort", "fill", "put")
        return (
            _function(name, base_method, (self, *args), kwargs)
            if wrap
            else _run(name, base_method, (self, *args), kwargs, wrap=False)
        )

    method.__name__ = name
    return method


for _name in _METHOD_MODELS:
    setattr(DeviceArray, _name, _method(_name))


def _lacking(name: str) -> property:
    def refuse(self: DeviceArray) -> Any:
        raise AttributeError(
            f"'cupy.ndarray' object has no attribute {name!r} (CuPy {_api()['version']}; "
            "the counting stand-in offers only what CuPy has: kernels.cupy_api)"
        )

    return property(refuse)


# The public attributes of NumPy's arrays that CuPy's lack (resize, setflags, ctypes, ...).
for _name in dir(np.ndarray):
    if not _name.startswith("_") and _name not in _api()["ndarray_names"]:
        setattr(DeviceArray, _name, _lacking(_name))


@_entry
def _astype(self: DeviceArray, dtype: Any, order: str = "K", casting: str = "unsafe",
            subok: bool = True, copy: bool = True) -> Any:  # fmt: skip
    if not copy and np.dtype(dtype) == self.dtype:
        return self
    return _run("astype", np.ndarray.astype, (self, dtype), {"order": order, "casting": casting})


DeviceArray.astype = _astype  # type: ignore[method-assign]


# --------------------------------------------------------------------------- kernels


#: NumPy emulations of device kernels, by kernel name: fn(variant, args) computes in place.
@functools.cache
def _variant_of_source(code: str) -> Any:
    for op, dtype, pairs in _scan_src.all_variants():
        if _scan_src.scan_source(op, dtype, pairs=pairs) == code:
            return ("scan", op, np.dtype(dtype), pairs)
    for combine, dtype in _router_src.all_variants():
        if _router_src.router_source(combine, dtype) == code:
            return ("router", combine, np.dtype(dtype))
    return None


#: Launches of ``RawKernel`` / ``RawModule`` kernels whose arguments, grid and block were
#: checked against the kernel's C signature (:mod:`kernels.cuda_args`), by kernel name.
checked_launches: Counter = Counter()


class _Kernel:
    """A compiled kernel on the counting device: a launch checks its arguments against
    the kernel's C parameters as CuPy would pass them (:func:`kernels.cuda_args.check_launch`:
    a wrong type or count raises, as it would silently misread on a GPU), counts one and
    emulates it."""

    def __init__(self, name: str, variant: Any = None, code: str = "") -> None:
        self.name, self.variant, self.code = name, variant, code
        self.params: Any = None  # read from the source at the first launch, as CuPy compiles

    @_entry
    def __call__(
        self,
        grid: Any,
        block: Any,
        args: tuple,
        *,
        shared_mem: int = 0,
        stream: Any = None,
        enable_cooperative_groups: bool = False,
    ) -> None:
        if _state.strict:
            if self.params is None:
                self.params = _cuda_args.kernel_params(self.code, self.name)
            _cuda_args.check_launch(
                self.params, grid, block, args, shared_mem=shared_mem, device_array=DeviceArray
            )
            checked_launches[self.name] += 1
        launch(self.name, args, self.variant)


@_entry
def launch(name: str, args: tuple, variant: Any = None) -> None:
    """Count one launch of kernel ``name`` and run its NumPy emulation on ``args``."""
    emulate = emulation(name)
    if emulate is None:
        raise NotImplementedError(
            f"kernel {name!r} has no NumPy emulation on the counting device; register "
            "one with kernels.fastpaths.emulates"
        )
    _run(f"kernel:{name}", lambda *a: emulate(variant, a), tuple(args), {}, wrap=False)


class RawModule:
    """``cupy.RawModule`` on the counting device (the source is kept, never compiled)."""

    def __init__(self, code: str | None = None, *, options: tuple = (), **kwargs: Any) -> None:
        self.code = code or ""
        self.options = options

    def get_function(self, name: str) -> _Kernel:
        return _Kernel(name, _variant_of_source(self.code), self.code)


class RawKernel(_Kernel):
    """``cupy.RawKernel(code, name)`` on the counting device."""

    def __init__(self, code: str, name: str, options: tuple = (), **kwargs: Any) -> None:
        super().__init__(name, None, code)


class ElementwiseKernel:
    """``cupy.ElementwiseKernel`` on the counting device: an emulation registered by name."""

    def __init__(self, in_params: str, out_params: str, operation: str, name: str = "kernel",
                 **kwargs: Any) -> None:  # fmt: skip
        self.name = name

    @_entry
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        emulate = emulation(self.name)
        if emulate is None:
            raise NotImplementedError(f"elementwise kernel {self.name!r} has no emulation")
        return _run(f"kernel:{self.name}", lambda *a: emulate(None, a), args, kwargs)


# The CuPy backend's kernels (kernels.cupy_scan, kernels.cupy_router, kernels.numba_shift).


@emulates(_scan_src.INIT_KERNEL)
def _scan_init(variant: Any, args: tuple) -> None:
    pass  # resets the look-back tile states: nothing to emulate


@emulates(_scan_src.SCAN_KERNEL)
def _scan(variant: Any, args: tuple) -> None:
    buf, flags, out, n, row_len, fill, form = args[:7]
    _, op, dtype, _pairs = variant
    # One row is the whole buffer: scanned as it is (axis=None), without moving axes.
    one_row = int(row_len) == buf.size
    rows = buf if one_row else buf.reshape(-1, int(row_len))
    segments = None
    if form & _scan_src.FORM_SEGMENTED:
        segments = flags.reshape(rows.shape).astype(bool)
    exclusive = bool(form & _scan_src.FORM_EXCLUSIVE)
    result = reference.scan(
        np,
        rows,
        op,
        exclusive=exclusive,
        reverse=bool(form & _scan_src.FORM_REVERSE),
        segments=segments,
        axis=None if one_row else 1,
        # The kernel puts `fill` at the heads of an exclusive scan even without
        # FORM_INITIAL (an exclusive copy's initial; otherwise the identity).
        initial=fill if form & _scan_src.FORM_INITIAL or exclusive else None,
    )
    out[...] = result.reshape(out.shape)


def _inside(dest: np.ndarray, size: Any) -> np.ndarray:
    """The messages the router kernels deliver (the others are dropped)."""
    return (dest >= 0) & (dest < int(size))


@emulates(_router_src.SEND_KERNEL)
def _router_send(variant: Any, args: tuple) -> None:
    values, dest, flat, n, size = args
    keep = _inside(dest, size)
    combine = variant[1]
    if flat.dtype.kind in "iu" and combine in _INT_AT:
        # Integer combines are exact in any order: one ufunc.at, as the atomics do it.
        _INT_AT[combine].at(flat, dest[keep], values[keep])
        return
    flat[...] = reference.send(np, values[keep], dest[keep], flat.copy(), combine)


_INT_AT = {
    "add": np.add,
    "max": np.maximum,
    "min": np.minimum,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
}


@emulates(_router_src.WINNER_KERNEL)
def _router_winner(variant: Any, args: tuple) -> None:
    dest, winner, tag, n, size = args
    keep = _inside(dest, size)
    tags = np.uint64(tag) | np.arange(int(n), dtype=np.uint64)
    np.maximum.at(winner, dest[keep], tags[keep])


@emulates(_router_src.WRITE_KERNEL)
def _router_write(variant: Any, args: tuple) -> None:
    values, dest, winner, tag, flat, n, size = args
    keep = _inside(dest, size)
    tags = np.uint64(tag) | np.arange(int(n), dtype=np.uint64)
    won = np.zeros(dest.shape, dtype=bool)
    won[keep] = winner[dest[keep]] == tags[keep]
    flat[dest[won]] = values[won]


_SHIFT_MODES = {0: "wrap", 2: "edge"}  # kernels.numba_shift's _WRAP, _EDGE; 1 is a fill


@emulates("numba_shift.shift3")
def _shift3(variant: Any, args: tuple) -> None:
    src, out, inner, d_c, mid, d_r, mode, fill = args
    outer, rows, length = src.shape
    grid = src.reshape(outer, rows // mid, mid, length // inner, inner)
    boundary = _SHIFT_MODES.get(int(mode), fill)
    moved = reference.shift(np, grid, (0, int(d_r), 0, int(d_c), 0), boundary)
    out[...] = moved.reshape(out.shape)


@emulates("numba_shift.halo")
def _halo(variant: Any, args: tuple) -> None:
    tiles, heights, widths, out, width, mode, fill = args
    boundary = _SHIFT_MODES.get(int(mode), fill)
    out[...] = reference.halo_exchange(np, tiles, heights, widths, int(width), boundary)


#: Launches of the Numba kernels (``CountingCuPy.launch_emulated``) by (kernel name,
#: :func:`numba_signature` of the arguments): the specialisations a GPU run would compile.
numba_launches: Counter = Counter()


def numba_signature(args: tuple) -> tuple:
    """The argument types Numba's CUDA dispatcher would compile a launch for, as plain data:
    ``("array", dtype, ndim, layout)`` for a device array (layout "C", "F" or "A", as Numba
    reads it from the strides of a CuPy array), ``("host_array", ...)`` for a host array
    (Numba would copy it to the device and back), ``("scalar", dtype)`` for a number (a
    Python int is an int64, a float a float64, as Numba types them), ``("tuple", items)``.
    """
    return tuple(_numba_type(a) for a in args)


def _numba_type(a: Any) -> tuple:
    if isinstance(a, np.ndarray):
        layout = "C" if a.flags.c_contiguous else "F" if a.flags.f_contiguous else "A"
        kind = "array" if isinstance(a, DeviceArray) else "host_array"
        return (kind, a.dtype.name, a.ndim, layout)
    if isinstance(a, np.generic):
        return ("scalar", a.dtype.name)
    if isinstance(a, bool):
        return ("scalar", "bool")
    if isinstance(a, int):
        return ("scalar", "int64")
    if isinstance(a, float):
        return ("scalar", "float64")
    if isinstance(a, tuple):
        return ("tuple", tuple(_numba_type(v) for v in a))
    raise TypeError(f"Numba kernels take no {type(a).__name__} argument")


# --------------------------------------------------------------------------- cuda


class _Event:
    @_entry
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.time: float | None = None

    @_entry
    def record(self, stream: Any = None) -> None:
        self.time = time.perf_counter()

    @_entry
    def synchronize(self) -> None:
        _state.record("Event.synchronize", syncs=1)

    @property
    def done(self) -> bool:
        return True


class _Stream:
    ptr = 0

    @_entry
    def synchronize(self) -> None:
        _state.record("Stream.synchronize", syncs=1)


_STREAM = _Stream()  # the one stream of the counting device (it holds no state)


class _Device:
    def __init__(self, device: int = 0) -> None:
        self.id = int(device)

    @_entry
    def synchronize(self) -> None:
        _state.record("Device.synchronize", syncs=1)


@_entry
def _elapsed_ms(start: _Event, stop: _Event) -> float:
    return 1e3 * ((stop.time or 0.0) - (start.time or 0.0))


_cuda = types.SimpleNamespace(
    Event=_Event,
    Device=_Device,
    Stream=_Stream,
    get_current_stream=lambda *a: _STREAM,
    get_elapsed_time=_elapsed_ms,
    runtime=types.SimpleNamespace(
        getDeviceCount=lambda: 1,
        getDeviceProperties=lambda device: {"name": b"counting stand-in"},
    ),
    # Page-locked host memory is plain host memory here (the copies are counted).
    alloc_pinned_memory=bytearray,
)


# --------------------------------------------------------------------------- namespace


class _Ufunc:
    """A ufunc of the counting namespace: calls are device launches whatever the inputs."""

    def __init__(self, ufunc: np.ufunc) -> None:
        self._ufunc = ufunc
        self.__name__ = ufunc.__name__

    @_entry
    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._ufunc, name)
        if name in ("reduce", "accumulate", "at", "outer", "reduceat"):

            def method(*a: Any, **k: Any) -> Any:
                if _state.strict:
                    _check_call(f"{self.__name__}.{name}", _api()["ufunc_methods"][name], a, k)
                return _ufunc(self._ufunc, name, a, k)

            return method
        return attr

    @_entry
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _state.strict:
            _check_ufunc_call(self.__name__, args, kwargs)
        return _ufunc(self._ufunc, "__call__", args, kwargs)


def _check_ufunc_call(name: str, args: tuple, kwargs: dict) -> None:
    """Raise TypeError where CuPy's ufunc ``name`` would refuse the call."""
    if kwargs and not kwargs.keys() <= _api()["ufunc_keywords"]:
        bad = sorted(set(kwargs) - _api()["ufunc_keywords"])
        raise TypeError(
            f"cupy.{name}() takes no keyword {', '.join(bad)} (CuPy's ufuncs take out, "
            "dtype and casting; the counting stand-in refuses what CuPy does)"
        )
    for a in args:
        if isinstance(a, list | tuple):
            raise TypeError(
                f"cupy.{name}(): CuPy's ufuncs take arrays and scalars, not a "
                f"{type(a).__name__} (Unsupported type)"
            )


def _namespace_function(name: str, func: Callable) -> Callable:
    params = _api()["functions"].get(name)

    @_entry
    def call(*args: Any, **kwargs: Any) -> Any:
        if params is not None and _state.strict and not _state.depth:
            _check_call(name, params, args, kwargs)
        return _function(name, func, args, kwargs)

    call.__name__ = name
    return call


class CountingCuPy(types.ModuleType):
    """The ``cupy`` module as the counting device sees it (see the module docstring)."""

    ndarray = DeviceArray
    cuda = _cuda
    RawModule = RawModule
    RawKernel = RawKernel
    ElementwiseKernel = ElementwiseKernel
    #: What ``simd.Machine`` shows as its device.
    device_name = "counting (NumPy stand-in for CuPy)"

    def __init__(self) -> None:
        super().__init__("cupy_counting")
        self._cache: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        try:
            return self._cache[name]
        except KeyError:
            pass
        if name not in _api()["names"]:
            raise AttributeError(
                f"module 'cupy' has no attribute {name!r} (CuPy {_api()['version']}; the "
                "counting stand-in offers only what CuPy has: kernels.cupy_api)"
            )
        attr = getattr(np, name)  # AttributeError as the real module would
        if isinstance(attr, np.ufunc):
            attr = _Ufunc(attr)
        elif (
            callable(attr) and not isinstance(attr, type) and not isinstance(attr, types.ModuleType)
        ):
            attr = _namespace_function(name, attr)
        self._cache[name] = attr
        # Kept in the module's dict too: later reads are plain lookups, as on the cupy
        # module, not a failed lookup (an AttributeError made and caught) and this call.
        self.__dict__[name] = attr
        return attr

    # ---- transfers
    @_entry
    def asarray(self, a: Any, dtype: Any = None, order: Any = None) -> DeviceArray:
        if isinstance(a, DeviceArray):
            if dtype is None or np.dtype(dtype) == a.dtype:
                return a
            return a.astype(dtype)
        host = _to_host_copy(a, dtype=dtype, copy=True, order=order or "K")
        _state.record("asarray", h2d=host.nbytes)
        return host.view(DeviceArray)

    @_entry
    def array(self, a: Any, dtype: Any = None, copy: bool = True, order: str = "K",
              **kwargs: Any) -> DeviceArray:  # fmt: skip
        if isinstance(a, DeviceArray):
            if not copy and (dtype is None or np.dtype(dtype) == a.dtype):
                return a
            return _run("array", np.array, (a,), {"dtype": dtype, "copy": True, "order": order})
        return self.asarray(a, dtype=dtype, order=order)

    @_entry
    def asnumpy(self, a: Any, stream: Any = None, order: str = "C") -> np.ndarray:
        if isinstance(a, DeviceArray):
            return a.get(order=order)
        return np.asarray(a, order=order)

    @_entry
    def get_array_module(self, *args: Any) -> Any:
        return self if any(isinstance(a, DeviceArray) for a in args) else np

    # ---- kernels not compiled but emulated
    @_entry
    def launch_emulated(self, name: str, args: tuple) -> None:
        """Launch kernel ``name`` (one count) with its registered NumPy emulation; the
        argument types Numba would compile it for are noted in :data:`numba_launches`."""
        if _state.strict:
            numba_launches[(name, numba_signature(args))] += 1
        launch(name, args)

    # ---- counting
    measure = staticmethod(measure)
    scope = staticmethod(scope)

    def push_scope(self, name: str) -> None:
        _state.scopes.append(name)

    def pop_scope(self) -> None:
        _state.scopes.pop()

    @property
    def scope_names(self) -> list[str]:
        """The open scopes, outermost first: the list itself, for a caller that opens and
        closes them often (``simd.Machine``'s phases) to append to and pop from. Counting
        bookkeeping that CuPy has no part in, so a plain list operation."""
        return _state.scopes


#: The counting namespace (one device per process, as CuPy's current device).
cupy = CountingCuPy()
