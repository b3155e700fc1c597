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

from kernels.counting.records import entry, state

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
    """``cupy.cuda.Stream``: the device's one stream, which holds no state."""

    ptr = 0

    @entry
    def synchronize(self) -> None:
        state.record("Stream.synchronize", syncs=1)


_STREAM = Stream()  # the one stream of the counting device


class Device:
    """``cupy.cuda.Device``."""

    def __init__(self, device: int = 0) -> None:
        self.id = int(device)

    @entry
    def synchronize(self) -> None:
        state.record("Device.synchronize", syncs=1)


@entry
def _elapsed_ms(start: Event, stop: Event) -> float:
    return 1e3 * ((stop.time or 0.0) - (start.time or 0.0))


#: The ``cuda`` attribute of the counting namespace.
cuda = types.SimpleNamespace(
    Event=Event,
    Device=Device,
    Stream=Stream,
    get_current_stream=lambda *a: _STREAM,
    get_elapsed_time=_elapsed_ms,
    runtime=types.SimpleNamespace(
        getDevice=lambda: 0,
        getDeviceCount=lambda: 1,
        getDeviceProperties=lambda device: {"name": b"counting stand-in"},
    ),
    # Page-locked host memory is plain host memory here (the copies are counted).
    alloc_pinned_memory=bytearray,
)
