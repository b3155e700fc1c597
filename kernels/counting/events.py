"""``cupy.cuda`` on the counting device: events, the stream, the device, pinned memory.

An :class:`Event` records host times; reading an elapsed time costs one sync (the
event's ``synchronize``) and nothing before, as on a GPU. A stream's and the device's
``synchronize`` are one sync each. Page-locked host memory is plain host memory
(``bytearray``; the copies into it are counted by the device array).
"""

from __future__ import annotations

import time
import types
from typing import Any

from kernels.counting.graphs import Capture, Graph
from kernels.counting.records import OutOfMemoryError, entry, state

__all__ = ["Device", "Event", "Stream", "cuda"]


class Event:
    """``cupy.cuda.Event``: the host time of its ``record``."""

    @entry
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.time: float | None = None

    @entry
    def record(self, stream: Any = None) -> None:
        self.time = time.perf_counter()

    @entry
    def synchronize(self) -> None:
        state.record("Event.synchronize", syncs=1)

    @property
    def done(self) -> bool:
        return True


class Stream:
    """``cupy.cuda.Stream``: the legacy default stream (``ptr`` 0), or a stream of its own
    that can capture its work into a CUDA graph (:mod:`kernels.counting.graphs`). The
    device runs one operation at a time, so streams order nothing here; ``with stream:``
    makes it the current one."""

    _made = 0

    def __init__(self, null: bool = False, non_blocking: bool = False, ptds: bool = False):
        if null:
            self.ptr = 0
        else:
            Stream._made += 1
            self.ptr = Stream._made
        self._capturing = False

    def __enter__(self) -> Stream:
        _CURRENT.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _CURRENT.remove(self)

    @entry
    def synchronize(self) -> None:
        if state.capture is not None:
            state.capture.refuse("Stream.synchronize")
        state.record("Stream.synchronize", syncs=1)

    def begin_capture(self, mode: Any = None) -> None:
        """Capture the stream's work into a graph until :meth:`end_capture`."""
        if self.ptr == 0:
            raise RuntimeError("cannot capture on the default (legacy) stream")
        if state.capture is not None:
            raise RuntimeError("a stream is capturing already")
        state.capture = Capture()
        self._capturing = True

    def end_capture(self) -> Graph:
        """The graph of the work captured since :meth:`begin_capture` (counted as one)."""
        if not self._capturing:
            raise RuntimeError("the stream is not capturing")
        capture, state.capture = state.capture, None
        self._capturing = False
        state.record("Stream.end_capture", captures=1)
        return capture.graph()

    def is_capturing(self) -> bool:
        return self._capturing


_STREAM = Stream(null=True)  # the legacy default stream of the counting device
_CURRENT: list[Stream] = []  # the streams made current by ``with``, innermost last


class Device:
    """``cupy.cuda.Device``."""

    def __init__(self, device: int = 0) -> None:
        self.id = int(device)

    @entry
    def synchronize(self) -> None:
        if state.capture is not None:
            state.capture.refuse("Device.synchronize")
        state.record("Device.synchronize", syncs=1)


@entry
def _elapsed_ms(start: Event, stop: Event) -> float:
    return 1e3 * ((stop.time or 0.0) - (start.time or 0.0))


#: The ``cuda`` attribute of the counting namespace.
cuda = types.SimpleNamespace(
    Event=Event,
    Device=Device,
    Stream=Stream,
    get_current_stream=lambda *a: _CURRENT[-1] if _CURRENT else _STREAM,
    get_elapsed_time=_elapsed_ms,
    runtime=types.SimpleNamespace(
        getDevice=lambda: 0,
        getDeviceCount=lambda: 1,
        getDeviceProperties=lambda device: {"name": b"counting stand-in"},
        # (free, total) bytes: the whole device free (kernels.counting.device_memory)
        memGetInfo=lambda: (state.memory, state.memory),
    ),
    memory=types.SimpleNamespace(OutOfMemoryError=OutOfMemoryError),
    # Page-locked host memory is plain host memory here (the copies are counted).
    alloc_pinned_memory=bytearray,
)
