"""Phase records of the machine: calls, bytes moved, model cycles, wall time.

``with machine.phase(name) as record:`` gives a :class:`PhaseRecord` for that one execution
of the phase; the machine also adds every execution into a :class:`PhaseStats` per phase
path, and :attr:`simd.Machine.stats` returns those as :class:`Stats`. Every program reports
its phases with these two types.

Wall time is measured without stopping the device: on the CPU with the host's
performance counter, on a GPU between two CUDA events recorded on the current stream and
read only when someone asks for the number (``record.wall``, ``machine.stats``).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DeviceInterval", "HostInterval", "PhaseRecord", "PhaseStats", "Stats"]


def _counter(items: dict | None = None) -> Counter:
    """A Counter of ``items`` (or empty) made without ``Counter.__init__``'s general
    ``update`` (an ABC check and a Python loop): every phase of every frame makes one
    (0.1-0.2 us here against 0.6-2 us). Counter keeps no state besides the dict's.

    Examples
    --------
    >>> c = _counter({"scan": 2}); c["scan"] += 1
    >>> c, c["get"]
    (Counter({'scan': 3}), 0)
    """
    out = Counter.__new__(Counter)
    if items:
        dict.update(out, items)
    return out


class HostInterval:
    """Wall time on the host's performance counter."""

    __slots__ = ("_start", "_stop")

    def __init__(self) -> None:
        self._start = time.perf_counter()
        self._stop: float | None = None

    def stop(self) -> None:
        self._stop = time.perf_counter()

    @property
    def seconds(self) -> float:
        end = self._stop if self._stop is not None else time.perf_counter()
        return end - self._start


class DeviceInterval:
    """Wall time between two CUDA events on the current stream.

    Recording an event does not wait for the device; reading :attr:`seconds` waits for the
    second event only (once, then the value is kept). ``pool``: a list of spare events to
    take them from (a machine's, refilled by :meth:`release` once the time is read) rather
    than create two per interval.
    """

    __slots__ = ("_cuda", "_pool", "_seconds", "_start", "_stop")

    def __init__(self, cuda: Any, pool: list | None = None) -> None:
        self._cuda, self._pool = cuda, pool
        self._start = pool.pop() if pool else cuda.Event()
        self._start.record()
        self._stop: Any = None
        self._seconds: float | None = None

    def stop(self) -> None:
        pool = self._pool
        self._stop = pool.pop() if pool else self._cuda.Event()
        self._stop.record()

    @property
    def seconds(self) -> float:
        if self._seconds is None:
            if self._stop is None:
                self.stop()
            self._stop.synchronize()
        return self.read_done()

    def read_done(self) -> float:
        """The seconds of an interval whose events the device has already passed (after
        one wait for the whole device, many intervals are read without waiting again)."""
        if self._seconds is None:
            self._seconds = self._cuda.get_elapsed_time(self._start, self._stop) / 1e3
        return self._seconds

    def release(self) -> None:
        """Give the two events back to the pool once the time is read (it is kept)."""
        if self._seconds is not None and self._pool is not None and self._stop is not None:
            self._pool += (self._start, self._stop)
            self._start = self._stop = None


@dataclass(eq=False, slots=True)
class PhaseRecord:
    """One execution of a phase: what the instructions inside the block cost.

    ``calls``, ``bytes`` and ``cycles`` include the instructions of nested phases; ``wall``
    is the block's wall time in seconds (on a GPU, read from CUDA events when asked).

    Examples
    --------
    >>> from simd import Machine
    >>> m = Machine(pes=4, backend="numpy")
    >>> with m.phase("demo") as p:
    ...     _ = m.scan(m.asarray([1, 2, 3]))
    >>> p.name, p.calls["scan"], p.cycles > 0, p.wall >= 0
    ('demo', 1, True, True)
    """

    name: str
    calls: Counter = field(default_factory=_counter)
    bytes: int = 0
    cycles: float = 0.0
    interval: HostInterval | DeviceInterval | None = field(default=None, repr=False)
    #: MPI messages, their bytes and the wall seconds spent in them on this rank (a
    #: machine spread over ranks; zero otherwise).
    messages: int = 0
    message_bytes: int = 0
    comm_wall: float = 0.0

    @property
    def wall(self) -> float:
        """Wall seconds of the block (0 for a record that was not timed)."""
        return self.interval.seconds if self.interval is not None else 0.0

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "name": self.name,
            "calls": dict(self.calls),
            "bytes": self.bytes,
            "cycles": self.cycles,
            "wall_seconds": self.wall,
            "messages": self.messages,
            "message_bytes": self.message_bytes,
            "comm_wall_seconds": self.comm_wall,
        }


@dataclass
class PhaseStats:
    """What the executions of one phase cost together.

    In :class:`Stats` (the machine's table) ``cycles``, ``bytes`` and ``calls`` count only the
    instructions charged to this phase itself (the innermost open phase) and ``wall`` is
    inclusive of nested phases; :meth:`of` sums whole :class:`PhaseRecord` s instead.
    """

    calls: Counter = field(default_factory=_counter)
    bytes: int = 0
    cycles: float = 0.0
    wall: float = 0.0
    entries: int = 0
    #: MPI messages, bytes and wall seconds in them (see :class:`PhaseRecord`).
    messages: int = 0
    message_bytes: int = 0
    comm_wall: float = 0.0

    def copy(self) -> PhaseStats:
        """An independent copy (its own ``calls``).

        Examples
        --------
        >>> a = PhaseStats(cycles=2.0)
        >>> b = a.copy(); b.calls["scan"] += 1
        >>> dict(a.calls), b.cycles
        ({}, 2.0)
        """
        # Every field but ``calls`` is a number: one dict copy of the instance (the
        # machine's table is copied at the end of every frame, phase by phase).
        out = object.__new__(PhaseStats)
        out.__dict__.update(self.__dict__)
        out.calls = _counter(self.calls)
        return out

    def add(self, other: PhaseStats) -> None:
        self.calls.update(other.calls)
        self.bytes += other.bytes
        self.cycles += other.cycles
        self.wall += other.wall
        self.entries += other.entries
        self.messages += other.messages
        self.message_bytes += other.message_bytes
        self.comm_wall += other.comm_wall

    @classmethod
    def of(cls, records: Iterable[PhaseRecord]) -> PhaseStats:
        """The sum of some phase records (one entry each).

        Examples
        --------
        >>> a, b = PhaseRecord("x", cycles=3.0), PhaseRecord("x", cycles=4.0)
        >>> total = PhaseStats.of([a, b])
        >>> total.cycles, total.entries
        (7.0, 2)
        """
        total = cls()
        for r in records:
            total.calls.update(r.calls)
            total.bytes += r.bytes
            total.cycles += r.cycles
            total.wall += r.wall
            total.entries += 1
            total.messages += r.messages
            total.message_bytes += r.message_bytes
            total.comm_wall += r.comm_wall
        return total

    def to_dict(self, clock_hz: float = 0.0) -> dict[str, Any]:
        """Plain data for JSON (with emulated seconds when the clock rate is given)."""
        return {
            "calls": dict(self.calls),
            "bytes": self.bytes,
            "cycles": self.cycles,
            "model_seconds": self.cycles / clock_hz if clock_hz else None,
            "wall_seconds": self.wall,
            "entries": self.entries,
            "messages": self.messages,
            "message_bytes": self.message_bytes,
            "comm_wall_seconds": self.comm_wall,
        }


@dataclass
class Stats:
    """Statistics of a machine, per phase name (a snapshot; see ``Machine.stats``).

    Printing it gives a table in the form of Table 4 of Ahrens & Hansen: one row per
    phase with model cycles (and emulated seconds), wall seconds, bytes moved and calls.
    Nested phases are listed by path (``outer/inner``); ``total`` sums the cycles and bytes
    of every phase and the wall time of the top-level ones (nested wall time is included
    in its parent's).
    """

    phases: dict[str, PhaseStats]
    machine: str = ""
    clock_hz: float = 0.0

    @property
    def total(self) -> PhaseStats:
        """All phases together (wall time of the top-level phases only)."""
        total = PhaseStats()
        for name, phase in self.phases.items():
            total.calls.update(phase.calls)
            total.bytes += phase.bytes
            total.cycles += phase.cycles
            total.messages += phase.messages
            total.message_bytes += phase.message_bytes
            if "/" not in name:
                total.wall += phase.wall
                total.comm_wall += phase.comm_wall
        return total

    def __getitem__(self, name: str) -> PhaseStats:
        return self.phases[name]

    def to_dict(self) -> dict:
        """Plain data for JSON."""
        return {
            "machine": self.machine,
            "phases": {name: p.to_dict(self.clock_hz) for name, p in self.phases.items()},
        }

    def __str__(self) -> str:
        rows = list(self.phases.items()) + [("total", self.total)]
        name_width = max([5] + [len(n) for n, _ in rows])
        header = (
            f"{'phase':<{name_width}}  {'model cycles':>14}  {'model s':>10}  {'wall s':>9}"
            f"  {'MB moved':>9}  calls"
        )
        mpi = any(p.messages for _, p in rows)
        if mpi:
            header += "  (MPI: messages, MB, wall s)"
        lines = [f"machine: {self.machine}", header, "-" * len(header)]
        for name, p in rows:
            model_s = p.cycles / self.clock_hz if self.clock_hz else float("nan")
            calls = ", ".join(f"{k} {v}" for k, v in sorted(p.calls.items()))
            lines.append(
                f"{name:<{name_width}}  {p.cycles:>14.0f}  {model_s:>10.6f}  {p.wall:>9.4f}"
                f"  {p.bytes / 1e6:>9.2f}  {calls}"
                + (
                    f"  (MPI: {p.messages}, {p.message_bytes / 1e6:.2f}, {p.comm_wall:.4f})"
                    if mpi
                    else ""
                )
            )
        return "\n".join(lines)
