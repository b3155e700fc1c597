"""Every instruction counted, charged to the model clock and timed, in the phase it runs in.

These are methods of :class:`simd.Machine` (its class body binds them), written as
functions of the machine ``self``: :meth:`~simd.Machine.phase`,
:meth:`~simd.Machine.vp_set`, :meth:`~simd.Machine.charge`, :attr:`~simd.Machine.stats`,
:meth:`~simd.Machine.reset_stats`, and the two every instruction calls: ``account`` (one
instruction's calls, bytes and model cycles into the current phase and every open record)
and ``communicated`` (one MPI collective's messages, bytes and time).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from simd.cost import CostModel
from simd.stats import DeviceInterval, HostInterval, PhaseRecord, PhaseStats, Stats

__all__ = [
    "OUTSIDE",
    "account",
    "charge",
    "communicated",
    "phase",
    "reset_stats",
    "stats",
    "vp_set",
]

#: The phase path of the instructions outside any phase.
OUTSIDE = "(no phase)"
#: At most this many spare CUDA events kept per machine (Machine.stats releases them).
_EVENT_POOL = 256


def stats(self) -> Stats:
    """A snapshot of the per-phase statistics.

    Nested phases are named by their path, e.g. ``"z-buffer/redistribution"``.
    Instructions outside any phase are listed under ``"(no phase)"``. On a GPU, reading
    this waits for the phases timed so far to finish on the device (unless a read
    back, :meth:`fetch` or :meth:`asnumpy`, has waited for them since).
    """
    if self._unread:
        if len(self._unread) > self._settled:
            self.sync()  # one wait for every phase timed so far, not one per event
        for entry, record in self._unread:
            entry.wall += record.interval.read_done()
            if len(self._events) < _EVENT_POOL:
                record.interval.release()  # its events serve later phases
        self._unread.clear()
        self._settled = 0
    phases = {path: entry.copy() for path, entry in self._phases.items()}
    return Stats(phases=phases, machine=self.cost.name, clock_hz=self.cost.clock_hz)


def reset_stats(self) -> None:
    """Forget all statistics and set the model clock to zero."""
    self._phases.clear()
    self._unread.clear()
    self._settled = 0
    self._clock = 0.0


def phase(self, name: str, *, sync: bool = False) -> AbstractContextManager[PhaseRecord]:
    """Account the instructions and wall time inside the block to phase ``name``.

    ``with m.phase(name) as record:`` gives the :class:`~simd.stats.PhaseRecord` of this
    execution: its calls, bytes and model cycles (nested phases included) and its wall
    time. The device is not stopped: on a GPU the wall time lies between two CUDA events
    and is read when asked for. ``sync=True`` waits for the device at both ends instead
    and times on the host.
    """
    if not isinstance(name, str) or not name or "/" in name:
        raise ValueError(f"a phase name must be a non-empty string without '/', got {name!r}")
    return _Phase(self, name, sync)


def vp_set(self, n: int, *, live: Any = None) -> AbstractContextManager[None]:
    """Charge every instruction in the block for a VP set of ``n`` elements.

    A SIMD machine steps all the VPs of the current VP set (the CM's ``with shape``),
    the idle ones masked off. Programs that compute on packed arrays of only the live
    elements declare the VP set here so that the model clock still charges for all.
    ``live``, optionally, holds the positions (in ``range(n)``) of the live elements:
    cost models with per-active terms (``CostModel.cm5_calibrated``) then charge the
    busiest node's live count, the VP set laid out in contiguous blocks per node
    (without it, the live elements count as spread evenly). Other models ignore it.
    """
    n = int(n)
    if n < 0:
        raise ValueError(f"a VP set cannot have a negative size, got {n}")
    return _VPSet(self._vp_stack, (n, live))


def charge(
    self, kind: str, n: int, *, ops: float = 1.0, label: str | None = None, nbytes: int = 0
) -> float:
    """Charge work done outside the instructions to the model clock; returns cycles.

    ``kind`` is "elementwise" or "local" (``ops`` operations on each of ``n`` VPs), or
    any cost kind of :meth:`CostModel.cycles`. ``n`` is overridden by an enclosing
    :meth:`vp_set`. ``label`` and ``nbytes`` name the call and the bytes it moved in
    the phase statistics (default: the kind, no bytes), for a program that does an
    instruction's work itself and charges it as the instruction would be.
    """
    return self._account(kind, int(n), nbytes, ops=ops, label=label or kind)


def account(
    self,
    kind: str,
    n: int,
    nbytes: int,
    *,
    ops: float = 1.0,
    label: str,
    distance: int = 1,
    senders: Any = None,
) -> float:
    """Count one instruction (``label``) of ``kind`` on ``n`` VPs moving ``nbytes``, charge
    its model cycles (``distance``: a shift's mesh steps; ``senders``: a masked send's
    mask, for cost models that charge the busiest node), and return the cycles."""
    cost = self.cost
    if cost is not self._cycles_of:  # a CostModel is frozen: its memo holds while it does
        self._cycles.clear()
        self._cycles_of = cost
        self._per_active = cost.per_active
    busiest = None  # only cost models with per-active terms count the working elements
    if self._per_active and kind in ("scan", "reduce", "router"):
        if self._vp_stack:
            n_set, live = self._vp_stack[-1]
            busiest = _busiest(cost, n_set, n, live, self.xp)
        elif kind == "router":
            busiest = _busiest_senders(cost, n, senders, self.xp)
    if self._vp_stack:
        n = self._vp_stack[-1][0]
    key = (kind, n, ops, distance, busiest)
    cycles = self._cycles.get(key)
    if cycles is None:
        cycles = self._cycles[key] = cost.cycles(
            kind, n, ops=ops, distance=distance, busiest=busiest
        )
    entry = self._phases.get(self._path)
    if entry is None:
        entry = self._phases[self._path] = PhaseStats()
    nbytes = int(nbytes)
    # calls.get rather than Counter's += (whose first use of a label calls __missing__)
    calls = entry.calls
    calls[label] = calls.get(label, 0) + 1
    entry.bytes += nbytes
    entry.cycles += cycles
    for record in self._open:
        calls = record.calls
        calls[label] = calls.get(label, 0) + 1
        record.bytes += nbytes
        record.cycles += cycles
    self._clock += cycles
    return cycles


def communicated(self, messages: int, nbytes: int, seconds: float) -> None:
    """Account one collective of the MPI layer to the current phase."""
    entry = self._phases.get(self._path)
    if entry is None:
        entry = self._phases[self._path] = PhaseStats()
    for target in (entry, *self._open):
        target.messages += messages
        target.message_bytes += nbytes
        target.comm_wall += seconds


def _busiest(cost: CostModel, n_set: int, active: int, live: Any, xp: Any) -> int:
    """Live elements on the busiest node of a VP set of ``n_set`` laid out in contiguous
    blocks of ``vp_ratio`` VPs per node: counted from the positions ``live`` when given (one
    small read back on a GPU), else ``active`` spread evenly, ``ceil(active / P)``."""
    if live is None or n_set == 0:
        return -(-max(0, int(active)) // cost.pes)
    if int(live.size) == 0:
        return 0
    return int(xp.bincount(live // cost.vp_ratio(n_set)).max())


def _busiest_senders(cost: CostModel, n: int, senders: Any, xp: Any) -> int:
    """Elements the busiest node works on outside a declared VP set: all its VPs, or
    with a ``senders`` mask (a masked send) its senders, the ``n`` VPs laid out in
    contiguous blocks per node (one small read back on a GPU)."""
    vpr = cost.vp_ratio(n)
    if senders is None or n == 0:
        return vpr if n else 0
    flags = xp.zeros(vpr * cost.pes, dtype=np.int64)
    flags[:n] = senders
    return int(flags.reshape(cost.pes, vpr).sum(axis=1).max())


class _VPSet:
    """A declared VP set while its block runs (Machine.vp_set)."""

    __slots__ = ("entry", "stack")

    def __init__(self, stack: list, entry: tuple[int, Any]) -> None:
        self.stack, self.entry = stack, entry

    def __enter__(self) -> None:
        self.stack.append(self.entry)

    def __exit__(self, *exc: object) -> None:
        self.stack.pop()


class _Phase:
    """One execution of a phase: opened by ``with``, it yields its record (Machine.phase)."""

    __slots__ = ("entry", "machine", "name", "on_device", "record", "sync")

    def __init__(self, machine: Any, name: str, sync: bool) -> None:
        self.machine, self.name, self.sync = machine, name, sync

    def __enter__(self) -> PhaseRecord:
        m = self.machine
        stack = m._phase_stack
        path = m._path = f"{stack[-1]}/{self.name}" if stack else self.name
        stack.append(path)
        self.entry = m._phases.get(path)
        if self.entry is None:
            self.entry = m._phases[path] = PhaseStats()
        self.entry.entries += 1
        if m._scope_names is not None:
            m._scope_names.append(self.name)
        if self.sync:
            m.sync()
        # timed on the host while the work is captured into a graph (no events in it)
        self.on_device = m.backend == "cupy" and not self.sync and m._recording is None
        interval = DeviceInterval(m.xp.cuda, m._events) if self.on_device else HostInterval()
        self.record = PhaseRecord(path, interval=interval)
        m._open.append(self.record)
        return self.record

    def __exit__(self, *exc: object) -> None:
        m, record = self.machine, self.record
        if self.sync:
            m.sync()
        record.interval.stop()
        m._open.pop()
        stack = m._phase_stack
        stack.pop()
        m._path = stack[-1] if stack else OUTSIDE
        if m._scope_names is not None:
            m._scope_names.pop()
        if self.on_device:
            m._unread.append((self.entry, record))
        else:
            self.entry.wall += record.wall
