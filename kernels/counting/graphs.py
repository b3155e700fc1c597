"""CUDA graphs on the counting device: a stream's work captured, and replayed.

A stream that captures (``cupy.cuda.Stream.begin_capture``) runs nothing on a GPU: its
work becomes a graph, which ``end_capture`` gives and ``Graph.launch`` runs again, on the
same arrays, with the arguments it was captured with. The stand-in does the work as it is
captured (so that the block's host code sees its results, as a GPU does once the graph is
launched: the graph's first launch then has nothing left to do) and keeps every
operation's function, arguments and result; a later launch runs them again in order,
writing each result into the array the capture made, one counted launch in all
(:attr:`~kernels.counting.records.Counts.graph_launches`).

What CUDA refuses during a capture, the stand-in refuses too, with a
:class:`CaptureError`: a read back that waits for the device (a sync), and a copy of
pageable host memory to the device; so a block that captures here captures on a GPU.
:attr:`Graph.inputs` names the arrays the graph uses that were made before the capture:
they must outlive the graph and keep their place (a caller that keeps them alive can check
it covers these).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from kernels.counting.records import entry, state

__all__ = ["Capture", "CaptureError", "Graph", "root"]


class CaptureError(RuntimeError):
    """Work a CUDA stream cannot capture into a graph (a sync, a pageable copy)."""


def root(a: np.ndarray) -> np.ndarray:
    """The array owning ``a``'s memory (following views to their base)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


class Capture:
    """The operations of one stream capture, in order."""

    def __init__(self) -> None:
        self.steps: list[tuple[Callable, tuple, dict, Any]] = []
        self._made: dict[int, np.ndarray] = {}  # roots of the results, by id
        self._used: dict[int, np.ndarray] = {}  # roots of the arguments made before

    def refuse(self, what: str) -> None:
        """Raise :class:`CaptureError` for ``what`` (a sync or a pageable copy)."""
        raise CaptureError(f"{what} while a stream captures a CUDA graph (CUDA refuses it)")

    def add(self, fn: Callable, args: tuple, kwargs: dict, result: Any) -> None:
        """Keep one operation (unwrapped arguments, as it was run) and its result."""
        for a in _arrays((args, kwargs)):
            r = root(a)
            if id(r) not in self._made:
                self._used.setdefault(id(r), r)
        for a in _arrays(result):
            self._made.setdefault(id(root(a)), root(a))
        self.steps.append((fn, args, kwargs, result))

    def graph(self) -> Graph:
        return Graph(self.steps, list(self._used.values()), list(self._made.values()))


class Graph:
    """``cupy.cuda.graph.Graph`` on the counting device: the captured operations."""

    def __init__(self, steps: list, inputs: list[np.ndarray], made: list[np.ndarray]) -> None:
        self._steps = steps
        #: Arrays made before the capture that the graph reads or writes (their roots).
        self.inputs = inputs
        #: Arrays the captured work made (their roots).
        self.made = made
        self._fresh = True  # the captured work is done: the first launch has none to do

    @entry
    def launch(self, stream: Any = None) -> None:
        """One graph launch (counted as one), its operations run again (not counted). The
        first launch runs nothing: the stand-in did the work as it was captured, which a GPU
        does at this launch."""
        state.record("graph.launch", graph_launches=1)
        if self._fresh:
            self._fresh = False
            return
        state.depth += 1
        try:
            self.replay()
        finally:
            state.depth -= 1

    def replay(self) -> None:
        """Run the captured operations again, each result into its captured array."""
        for fn, args, kwargs, result in self._steps:
            again = fn(*args, **kwargs)
            for old, new in zip(_arrays(result), _arrays(again, scalars=True), strict=False):
                if new is not old:  # plain views: no device array's counted operation
                    np.copyto(old.view(np.ndarray), new.view(np.ndarray), casting="unsafe")


def _arrays(x: Any, *, scalars: bool = False) -> list[np.ndarray]:
    """The arrays in ``x`` (an array, or tuples, lists and dicts of them; ``scalars``: a
    NumPy scalar too, as the 0-d array the device gives for it)."""
    if isinstance(x, np.ndarray):
        return [x]
    if scalars and isinstance(x, np.generic):
        return [np.asarray(x)]
    if isinstance(x, tuple | list):
        return [a for v in x for a in _arrays(v, scalars=scalars)]
    if isinstance(x, dict):
        return [a for v in x.values() for a in _arrays(v, scalars=scalars)]
    return []
