"""A block of a machine's work on a GPU captured once as CUDA graphs and replayed.

A frame issues dozens of kernels, each costing the host microseconds to launch, between a
few reads back (a loop's workload figures, an allocation's size, the image). Inside
``with machine.recording() as rec:`` the machine captures its work on a stream of its own
into a CUDA graph (CuPy's stream capture) up to each read back (:meth:`Machine.fetch`,
:meth:`Machine.asnumpy`); there it launches that graph, reads, keeps what it read, and
captures on. ``rec.replay()`` later runs the same work again, one graph launch per stretch
and the same reads, without the host code that issued it.

What makes a replay safe, by construction:

- the graphs use the arrays they were captured with. Those made during the capture come
  from a memory pool that only the machine's captures allocate from, for as long as the
  machine lives; those made before (``pin``: a scene's arrays, its colours; and the scans'
  scratch buffers, which the recording finds itself) are held by the recording, so that
  none is freed or moved while a replay may read it. On the counting stand-in for CuPy
  every graph says which arrays from before its capture it uses, and a recording refuses
  one it does not hold (:class:`UnsafeRecording`);
- a replay reads back what the capture read and compares it: where a read differs (the
  work depended on something that changed), :meth:`Recording.replay` raises
  :class:`StaleRecording` before launching the graphs that would have used it, and the
  caller runs the block again instead;
- what a graph cannot capture fails the capture, not the work: the block raises, and the
  caller runs it as usual (a sync or a copy of pageable host memory inside a capture;
  the counting stand-in refuses those as CUDA does).
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from simd.transfers import clear_checks

__all__ = ["Recording", "StaleRecording", "UnsafeRecording", "recording"]


class StaleRecording(RuntimeError):
    """A replay read back other values than its capture did: run the work again."""


class UnsafeRecording(RuntimeError):
    """A captured graph uses an array that the recording does not keep alive."""


class Recording:
    """The graphs of one captured block and its reads back (see the module's docstring).

    ``segments``: per stretch between reads, ``(graph, arrays read after it, the values
    read)``; the last stretch may read nothing.
    """

    def __init__(self, machine: Any, pin: tuple = ()) -> None:
        self.machine = machine
        self.segments: list[tuple[Any, tuple | None, list | None]] = []
        # what graphs use that was made before: the caller's, the scans' scratch buffers
        # and the table of the machine's deferred address checks
        bounds = [machine._bounds] if machine._bounds is not None else []
        self.pinned = [*pin, *_scratch(machine), *bounds]
        self._stream = _capture_stream(machine)
        self._pool = _graph_pool(machine)
        self._allocator: Any = None
        self._made: dict[int, Any] = {}  # roots of what earlier stretches made (stand-in)
        self._last_read = -1
        self.capturing = False

    # ------------------------------------------------------------------ capturing
    def start(self) -> None:
        """Begin capturing on the recording's stream (the machine's work so far first)."""
        self._before = _ledger(self.machine)
        _order_after_current(self.machine, self._stream)
        self._stream.__enter__()
        if self._pool is not None:
            self._allocator = self.machine.xp.cuda.using_allocator(self._pool.malloc)
            self._allocator.__enter__()
        self._stream.begin_capture()
        self.capturing = True

    def read(self, arrays: tuple, read_now: Any) -> tuple:
        """A read back inside the capture: launch what was captured, read ``arrays`` with
        ``read_now()`` (outside any capture), keep the values and capture on."""
        self._close_stretch(arrays, read_now)
        host = self.segments[-1][2]
        self._stream.begin_capture()
        self.capturing = True
        return tuple(host)

    def finish(self, failed: bool) -> None:
        """End the capture: keep (and run) the last stretch, or drop it if the block failed."""
        try:
            if self.capturing:
                if failed:
                    self.capturing = False
                    with contextlib.suppress(Exception):  # the block's own error is the one
                        self._stream.end_capture()
                else:
                    self._close_stretch(None, None)
            reads = [k for k, segment in enumerate(self.segments) if segment[1] is not None]
            self._last_read = reads[-1] if reads else -1
            self._charges = _charges_since(self.machine, self._before)
        finally:
            if self._allocator is not None:
                self._allocator.__exit__(None, None, None)
                self._allocator = None
            self._stream.__exit__(None, None, None)

    def _close_stretch(self, arrays: tuple | None, read_now: Any) -> None:
        self.capturing = False
        graph = self._stream.end_capture()
        self._check_held(graph)
        graph.launch(self._stream)
        host = None if read_now is None else [np.array(h, copy=True) for h in read_now()]
        self.segments.append((graph, arrays, host))

    def _check_held(self, graph: Any) -> None:
        """On the counting stand-in: refuse a graph using an array made before the capture
        that the recording does not hold (a GPU's graph would read freed memory)."""
        inputs = getattr(graph, "inputs", None)
        if inputs is None:
            return
        held = {id(_root(a)) for a in self.pinned} | set(self._made)
        for a in inputs:
            if id(a) not in held:
                raise UnsafeRecording(
                    f"a captured graph uses a {a.dtype} array of shape {a.shape} made before "
                    "the capture that the recording does not keep alive"
                )
        self._made.update((id(a), a) for a in graph.made)

    # ------------------------------------------------------------------ replaying
    def replay(self) -> tuple:
        """Run the recorded work again: each graph, then its read compared with the
        capture's (:class:`StaleRecording` where one differs). Returns the last read."""
        m = self.machine
        m.check()  # pending checks read first: the graphs fold into the rows of theirs
        _order_after_current(m, self._stream)
        last: tuple = ()
        with self._stream:
            for k, (graph, arrays, values) in enumerate(self.segments):
                graph.launch(self._stream)
                if arrays is None:
                    continue
                last = m.fetch(*arrays)
                # every read but the last (the results) steered the work that follows it
                if k < self._last_read and not all(
                    np.array_equal(a, b) for a, b in zip(last, values, strict=True)
                ):
                    raise StaleRecording(f"read back {k} differs from its capture's")
            # the checks the graphs folded passed at the capture, the reads being the same;
            # their rows are cleared for the checks to come
            clear_checks(m)
        _charge(m, self._charges)
        return last


@contextlib.contextmanager
def recording(machine: Any, pin: tuple = ()):
    """Capture the block's work on ``machine`` (a GPU machine on one process) as a
    :class:`Recording`; ``pin``: device arrays made before the block that it uses."""
    if machine.backend != "cupy" or machine.ranks is not None:
        raise ValueError("a recording captures CUDA graphs: a GPU machine on one process only")
    if machine._recording is not None:
        raise RuntimeError("the machine is recording already")
    rec = Recording(machine, pin)
    machine._recording = rec
    failed = True
    try:
        rec.start()
        yield rec
        failed = False
    finally:
        machine._recording = None
        rec.finish(failed)


def _capture_stream(machine: Any) -> Any:
    """The machine's stream for captures and replays (made once): a capture needs a stream
    of its own, not the legacy default stream."""
    stream = getattr(machine, "_capture_stream", None)
    if stream is None:
        stream = machine._capture_stream = machine.xp.cuda.Stream(non_blocking=True)
    return stream


def _graph_pool(machine: Any) -> Any:
    """The machine's memory pool for the work it captures (made once; None on the counting
    stand-in, which frees nothing a graph holds).

    Only captures allocate from it, so what a graph made during its capture is never given
    to work outside the graphs. The graphs of a machine share it: one replay's temporaries
    may lie where another graph keeps an array between its replays, which is safe because
    replays run one after another on one stream and each graph writes every array it made
    before it reads it. It lives as long as the machine, so that a cache a capture filled
    (a scan's scratch buffer) never outlives its memory."""
    pool = getattr(machine, "_graph_pool", None)
    cuda = machine.xp.cuda
    if pool is None and hasattr(cuda, "MemoryPool"):
        pool = machine._graph_pool = cuda.MemoryPool()
    return pool


def _order_after_current(machine: Any, stream: Any) -> None:
    """Make ``stream`` wait for the work queued so far on the current stream (the capture
    stream does not wait for the legacy one by itself)."""
    current = machine.xp.cuda.get_current_stream()
    if current is not stream and hasattr(stream, "wait_event"):
        stream.wait_event(current.record())


def _scratch(machine: Any) -> list:
    """The scans' scratch buffers of the machine's device, which graphs use."""
    from kernels import cupy_scan

    return cupy_scan.scratch_arrays(machine.xp)


def _ledger(m: Any) -> tuple[dict, float]:
    """What the machine's phases and model clock have been charged so far (no wall time)."""
    phases = {path: (s.entries, dict(s.calls), s.bytes, s.cycles) for path, s in m._phases.items()}
    return phases, m._clock


def _charges_since(m: Any, before: tuple[dict, float]) -> tuple[dict, float]:
    """What the machine was charged since :func:`_ledger` gave ``before``, per phase path."""
    phases, clock = before
    out = {}
    for path, s in m._phases.items():
        entries, calls, nbytes, cycles = phases.get(path, (0, {}, 0, 0.0))
        spent = {k: v - calls.get(k, 0) for k, v in s.calls.items() if v != calls.get(k, 0)}
        if s.entries != entries or spent or s.bytes != nbytes or s.cycles != cycles:
            out[path] = (s.entries - entries, spent, s.bytes - nbytes, s.cycles - cycles)
    return out, m._clock - clock


def _charge(m: Any, charges: tuple[dict, float]) -> None:
    """Charge the machine again what a captured block was charged: a replay is the same
    work on the emulated machine (its wall time is the caller's to report)."""
    from simd.stats import PhaseStats

    phases, clock = charges
    for path, (entries, calls, nbytes, cycles) in phases.items():
        entry = m._phases.get(path)
        if entry is None:
            entry = m._phases[path] = PhaseStats()
        entry.entries += entries
        entry.calls.update(calls)
        entry.bytes += nbytes
        entry.cycles += cycles
    m._clock += clock


def _root(a: Any) -> Any:
    while getattr(a, "base", None) is not None and hasattr(a.base, "shape"):
        a = a.base
    return a
