"""Compiles said and left out of the times: a compile that takes longer than a second is
announced as it runs, and every reported time can leave the compiles out.

The kernels are compiled on their first use: the CPU loops by Numba (and kept in Numba's
cache), the GPU kernels to cubins (:mod:`kernels.numba_launch`, kept in the cache folder).
The first run of a float64 isosurface compiles for many seconds; a user who sees nothing
happen for that long, and then that time reported as the extraction's, is misled twice.
So:

- :func:`watch` listens to Numba's compile events (once per process; the modules that
  compile call it), and :func:`compiling` wraps a compile the project runs itself. A
  compile still running after :data:`ANNOUNCE_AFTER` seconds is logged once, at INFO, on
  the ``simd_emu.compile`` logger, which ``simd-emu`` prints as one line on stderr (as it
  does the first build of a data set); shorter ones stay quiet.
- :func:`compile_seconds` is the time this process spent compiling so far, and
  :class:`Stopwatch` the wall time of a block with the compiles in it left out, for the
  times a command reports.

Importing this module does not import Numba; :func:`watch` does.

Examples
--------
>>> with Stopwatch() as clock:
...     pass
>>> clock.seconds >= 0.0, clock.compiled
(True, 0.0)
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

__all__ = ["ANNOUNCE_AFTER", "Stopwatch", "compile_seconds", "compiling", "watch"]

log = logging.getLogger("simd_emu.compile")

#: Seconds a compile runs before it is announced.
ANNOUNCE_AFTER = 1.0

#: What the announcement says.
MESSAGE = "compiling kernels for this machine (once: later runs load them from the cache)"


class _Compiles:
    """The outermost compile running (compiles nest: a loop compiles the bodies it
    inlines), its announcement timer, and the seconds of every compile so far."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.depth = 0
        self.started = 0.0
        self.total = 0.0
        self.timer: threading.Timer | None = None

    def start(self) -> None:
        with self.lock:
            self.depth += 1
            if self.depth > 1:
                return
            self.started = time.perf_counter()
            self.timer = threading.Timer(ANNOUNCE_AFTER, log.info, (MESSAGE,))
            self.timer.daemon = True
            self.timer.start()

    def end(self) -> None:
        with self.lock:
            self.depth -= 1
            if self.depth > 0:
                return
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None
            self.total += time.perf_counter() - self.started


_COMPILES = _Compiles()


def compile_seconds() -> float:
    """Seconds this process has spent compiling (the compiles under way included)."""
    with _COMPILES.lock:
        running = time.perf_counter() - _COMPILES.started if _COMPILES.depth else 0.0
        return _COMPILES.total + running


@contextlib.contextmanager
def compiling() -> Iterator[None]:
    """A compile the project runs itself (a GPU kernel's cubin): timed, and announced when
    it runs longer than :data:`ANNOUNCE_AFTER` seconds."""
    _COMPILES.start()
    try:
        yield
    finally:
        _COMPILES.end()


@functools.cache
def watch() -> None:
    """Time and announce Numba's compiles in this process (the first call registers a
    listener of Numba's ``numba:compile`` events; later calls do nothing)."""
    from numba.core import event

    class _Listener(event.Listener):
        def on_start(self, _event: Any) -> None:
            _COMPILES.start()

        def on_end(self, _event: Any) -> None:
            _COMPILES.end()

    event.register("numba:compile", _Listener())


class Stopwatch:
    """The wall seconds of a ``with`` block with the compiles in it left out
    (``seconds``), and the seconds it compiled (``compiled``)."""

    def __enter__(self) -> Stopwatch:
        self.seconds = self.compiled = 0.0
        self._start, self._compiles = time.perf_counter(), compile_seconds()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.compiled = compile_seconds() - self._compiles
        self.seconds = max(0.0, time.perf_counter() - self._start - self.compiled)
