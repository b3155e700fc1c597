"""The counting device's records and state: what device work cost, and when it was done.

:class:`Counts` is what some device work cost; :class:`Measurement` the counts of one
measured block, in total and per scope. :data:`state` is the device's process-wide state,
which every counted operation reports to (``State.record``); :func:`entry` times a call
into the namespace's API as device time, and :func:`call_overhead` is what that timing
costs the caller. :func:`measure` and :func:`scope` are the blocks that read the state.
"""

from __future__ import annotations

import contextlib
import functools
import math
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Counts",
    "DEVICE_MEMORY",
    "Measurement",
    "OutOfMemoryError",
    "State",
    "call_overhead",
    "check_allocation",
    "device_memory",
    "entry",
    "measure",
    "scope",
    "state",
]


@dataclass
class Counts:
    """What some device work cost, as CuPy on a GPU would spend it."""

    launches: int = 0
    #: Launches that set up state kept for later calls, once per process (the scan's
    #: look-back scratch), not counted in ``launches``: a call's launches do not depend on
    #: what the process ran before.
    setups: int = 0
    syncs: int = 0
    h2d_bytes: int = 0
    d2h_bytes: int = 0
    h2d_copies: int = 0
    traffic_bytes: int = 0
    device_seconds: float = 0.0
    #: CUDA graphs captured (a stream's ``end_capture``) and launched (``Graph.launch``).
    captures: int = 0
    graph_launches: int = 0
    #: Launches by operation name.
    ops: Counter = field(default_factory=Counter)
    #: Syncs by the operation that caused them.
    sync_ops: Counter = field(default_factory=Counter)
    #: Host arrays mixed into device operations (real CuPy raises on these).
    implicit: Counter = field(default_factory=Counter)

    def add(self, other: Counts) -> None:
        self.launches += other.launches
        self.setups += other.setups
        self.syncs += other.syncs
        self.h2d_bytes += other.h2d_bytes
        self.d2h_bytes += other.d2h_bytes
        self.h2d_copies += other.h2d_copies
        self.traffic_bytes += other.traffic_bytes
        self.device_seconds += other.device_seconds
        self.captures += other.captures
        self.graph_launches += other.graph_launches
        self.ops.update(other.ops)
        self.sync_ops.update(other.sync_ops)
        self.implicit.update(other.implicit)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "launches": self.launches,
            "setups": self.setups,
            "syncs": self.syncs,
            "h2d_bytes": self.h2d_bytes,
            "d2h_bytes": self.d2h_bytes,
            "h2d_copies": self.h2d_copies,
            "traffic_bytes": self.traffic_bytes,
            "device_seconds": self.device_seconds,
            "captures": self.captures,
            "graph_launches": self.graph_launches,
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


#: The stand-in's device memory unless a test sets another (80 GiB, an H100's).
DEVICE_MEMORY = 80 * 2**30


class OutOfMemoryError(MemoryError):
    """``cupy.cuda.memory.OutOfMemoryError``: an allocation the device cannot hold."""

    def __init__(self, size: int, total: int) -> None:
        super().__init__(
            f"Out of memory allocating {size:,} bytes (allocated so far: {total:,} bytes)."
        )
        self.size, self.total = size, total


def check_allocation(nbytes: int) -> None:
    """Raise :class:`OutOfMemoryError` for an allocation larger than the device's memory."""
    if nbytes > state.memory:
        raise OutOfMemoryError(nbytes, 0)


@contextlib.contextmanager
def device_memory(nbytes: int) -> Iterator[None]:
    """Within the block, the stand-in's device holds ``nbytes``: a larger allocation raises
    CuPy's out-of-memory error, and ``memGetInfo`` reports that much free.

    Examples
    --------
    >>> from kernels.counting import cupy as xp, device_memory
    >>> with device_memory(1024):
    ...     try:
    ...         xp.zeros(1000)
    ...     except MemoryError as err:
    ...         print(type(err).__name__)
    OutOfMemoryError
    """
    saved, state.memory = state.memory, int(nbytes)
    try:
        yield
    finally:
        state.memory = saved


class State:
    """The counting device's process-wide state (one device, as CuPy's current one)."""

    def __init__(self) -> None:
        self.depth = 0  # > 0 inside a counted operation: nested work is not counted again
        self.scopes: list[str] = []
        self.meters: list[Measurement] = []
        self.lifetime = Counts()
        #: The device's memory in bytes as the stand-in reports it (``memGetInfo``); an
        #: allocation larger than it raises CuPy's out-of-memory error
        #: (:func:`kernels.counting.device_memory`).
        self.memory = DEVICE_MEMORY
        #: The stream capture in progress (``kernels.counting.graphs.Capture``), if any.
        self.capture: Any = None
        #: The ``kernels.counting.tape.Tape`` being recorded or replayed, if any.
        self.tape: Any = None
        # Check calls against CuPy's API and kernels' signatures (off while replaying a
        # tape: the recording passed them, and a replay measures the caller's host time)
        self.strict = True
        self.inside = False  # in a call of the namespace's API (timed by entry)
        #: Seconds spent inside the API so far, and the part of them already given to the
        #: scopes (``settle``).
        self.clock = 0.0
        self.calls = 0  # calls into the API so far (outermost ones: see entry)
        self.settled = 0.0
        self.settled_path = ""  # the scope path the seconds since then are given to
        #: The device's array namespace (``kernels.counting.cupy``), set when it is made:
        #: what its arrays' ``__array_namespace__`` gives.
        self.namespace: Any = None

    def record(  # noqa: PLR0913 (every count of one operation, by keyword)
        self,
        op: str,
        *,
        launches: int = 0,
        setups: int = 0,
        syncs: int = 0,
        h2d: int = 0,
        d2h: int = 0,
        traffic: int = 0,
        implicit: int = 0,
        captures: int = 0,
        graph_launches: int = 0,
    ) -> None:
        """Count one operation (its time is counted by the API call that made it, entry)."""
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
            c.setups += setups
            c.syncs += syncs
            c.h2d_bytes += h2d
            c.d2h_bytes += d2h
            c.h2d_copies += 1 if h2d else 0
            c.traffic_bytes += traffic
            c.captures += captures
            c.graph_launches += graph_launches
            if launches or setups:
                c.ops[op] += launches + setups
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


#: The counting device's state (one device per process).
state = State()


def entry(fn: Callable) -> Callable:
    """Time ``fn``, an entry into the namespace's API, as device time: the whole call, from
    entry to return, is what CuPy does for the caller (the device work, done by NumPy
    here, and the stand-in's dispatch and counting, which stand for CuPy's own host time
    per call, not the caller's). Calls made inside another are part of it."""

    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        device = state
        if device.inside:
            return fn(*args, **kwargs)
        device.inside = True
        device.calls += 1
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            device.clock += time.perf_counter() - t0
            device.inside = False

    return timed


@functools.cache
def call_overhead() -> float:
    """Seconds a call into the namespace's API costs its caller outside the interval that
    :func:`entry` times (the wrapper's own entry and exit), beyond a call of a plain
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

    timed = entry(plain)
    device, n, best = state, 5000, math.inf
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(n):
            plain()
        bare = time.perf_counter() - t0
        clock = device.clock
        t0 = time.perf_counter()
        for _ in range(n):
            timed()
        wrapped = time.perf_counter() - t0 - (device.clock - clock)
        best = min(best, (wrapped - bare) / n)
    device.calls -= 7 * n  # the calibration's calls are no block's
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
    state.settle(state.settled_path)  # the seconds so far are not this block's
    state.meters.append(meter)
    calls = state.calls
    start = time.perf_counter()
    try:
        yield meter
    finally:
        meter.wall_seconds = time.perf_counter() - start
        meter.calls = state.calls - calls
        state.settle(state.settled_path)
        state.meters.remove(meter)


@contextlib.contextmanager
def scope(name: str) -> Iterator[None]:
    """Attribute the counts of the block to scope ``name`` (nested: ``outer/name``).

    Examples
    --------
    >>> from kernels.counting import cupy as xp, measure, scope
    >>> with measure() as c, scope("outer"), scope("inner"):
    ...     _ = xp.zeros(4)
    >>> c.scopes["outer/inner"].launches
    1
    """
    state.scopes.append(name)
    try:
        yield
    finally:
        state.scopes.pop()
