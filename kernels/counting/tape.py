"""Tapes: a recorded block's device results, to run the block again with the device stubbed.

:func:`recording` keeps what the device gave a block on a :class:`Tape`; :func:`replaying`
runs the block again with every operation answered from the tape (the counted operations
of :mod:`kernels.counting.device_array` read it), so that the host's own time is measured
on warm caches.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from typing import Any

import numpy as np

from kernels.counting.records import state

__all__ = ["ReplayError", "Tape", "host_copy", "recording", "replaying"]


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
    its Python about twice as slow over a 250k frame (the package docstring of
    :mod:`kernels.counting`). Only reads back (synchronising ones and asynchronous
    ``get`` calls into pinned memory) carry recorded data to the host here, so a block
    that reads device data otherwise (``numpy.asarray`` of a device array) cannot be
    replayed faithfully; a
    block that asks for other operations than the recorded ones raises
    :class:`ReplayError`. Record a block that has run once already (the first run of a
    machine's kernels makes their scratch buffers).
    """

    def __init__(self) -> None:
        #: (op, counts for ``State.record``, result) per operation: the shape of an
        #: operation's result (``device_array.spec``), the value of a read back.
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


def host_copy(value: Any) -> Any:
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
    if state.tape is not None:
        raise RuntimeError("a tape is already being recorded or replayed")
    tape = state.tape = Tape()
    try:
        yield tape
    finally:
        state.tape = None


@contextlib.contextmanager
def replaying(tape: Tape) -> Iterator[Tape]:
    """Run the block with the device work stubbed by ``tape`` (see :class:`Tape`); the
    block must ask for the recorded operations in the recorded order, and all of them."""
    if state.tape is not None:
        raise RuntimeError("a tape is already being recorded or replayed")
    tape.position = 0
    state.tape = tape
    state.strict = False
    try:
        yield tape
        if tape.position != len(tape.entries):
            raise ReplayError(
                f"replay ended after {tape.position} of {len(tape.entries)} recorded operations"
            )
    finally:
        state.tape = None
        state.strict = True
        tape.position = None
