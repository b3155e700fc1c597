"""A Scene's frames on a GPU, captured once as CUDA graphs and replayed.

A frame of a prepared :class:`~renderer.Scene` issues dozens of kernels between a few reads
back; its host code, not the GPU, sets its pace (tens of microseconds a launch). The second
time a scene renders a frame of the same kind (the same settings, view, light, colours and
machine), the frame is captured (:meth:`simd.Machine.recording`): one CUDA graph per
stretch between two reads back. From the third time on, the frame is replayed: the graphs
launched, the reads compared with the capture's, the image read back, no stage's host code
run at all. Where a read differs, the frame runs as usual and its recording is dropped;
where the capture itself fails (something in the frame a graph cannot hold), the frame runs
as usual and that kind of frame is never captured again.

What decides a frame's work is its key (:func:`frame_key`): everything but the scene is in
it, so a frame of another view, size, loop form, colour or machine never replays a stale
graph; the scene holds its own replays. The sizes of a frame's arrays follow from its
reads (clipped triangles, spans, a loop's decisions), which a replay checks; that is why a
new view is captured anew rather than replayed with other sizes. A scene keeps the
recordings of its last :data:`KEPT` kinds of frame (each holds its frame's device memory).
``SIMD_GRAPHS=0`` turns replays off; frames balanced by the wall clock (``clock="wall"``)
and frames that keep their workloads are never recorded (their work is not fixed by the
key).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections import OrderedDict
from dataclasses import replace
from typing import Any

from renderer.driver import frame_of, frame_results, read_back, run_stages
from renderer.steps import FrameState
from simd.graphs import StaleRecording
from simd.stats import PhaseRecord

__all__ = ["KEPT", "FrameReplays", "frame_key", "replays_on"]

#: Kinds of frame a scene keeps recorded.
KEPT = 4


def replays_on(state: FrameState, progress: Any) -> bool:
    """Whether this frame may be recorded and replayed: a Scene on a GPU machine of one
    process, its work fixed by its key, no progress bar (a replay has no stages to show),
    and ``SIMD_GRAPHS`` not 0."""
    m, opt = state.machine, state.settings
    return (
        state.scene is not None
        and m.backend == "cupy"
        and m.ranks is None
        and opt.clock != "wall"
        and not opt.keep_workloads
        and progress in (None, False)
        and os.environ.get("SIMD_GRAPHS", "1") != "0"
    )


def frame_key(state: FrameState) -> bytes:
    """What decides a frame's work besides its scene: the settings, the matrix, the light,
    the surface colours and the machine's cost model."""
    h = hashlib.blake2b(digest_size=16)
    for part in (repr(state.settings), repr(state.machine.cost), repr(state.machine.pes)):
        h.update(part.encode())
    for array in (state.mvp, state.light):
        h.update(array.tobytes())
    if state.base is not None:
        h.update(repr((state.base.shape, str(state.base.dtype))).encode())
        h.update(state.base.tobytes())
    return h.digest()


class FrameReplays:
    """The recorded frames of one scene, by :func:`frame_key` (see the module docstring)."""

    def __init__(self) -> None:
        self._recorded: OrderedDict[bytes, tuple] = OrderedDict()
        self._seen: OrderedDict[bytes, bool] = OrderedDict()  # False: never to capture
        self._refused: set[bytes] = set()

    def render(self, state: FrameState, stages: tuple, cam: Any) -> Any:
        """The frame of ``state``: replayed, captured while it runs, or run as usual."""
        key = frame_key(state)
        found = self._recorded.get(key)
        if found is not None:
            self._recorded.move_to_end(key)
            frame = _replayed(*found)
            if frame is not None:
                return frame
            del self._recorded[key]  # stale: run the frame and record it again
        if key in self._seen and key not in self._refused:
            return self._capture(key, state, stages, cam)
        self._seen[key] = True
        while len(self._seen) > 8 * KEPT:
            self._seen.popitem(last=False)
        return _run(state, stages, cam)

    def _capture(self, key: bytes, state: FrameState, stages: tuple, cam: Any) -> Any:
        m, scene = state.machine, state.scene
        t_start = time.perf_counter()
        pin = (scene.vertices, scene.faces, scene.normals, *_colours(state))
        try:
            with m.recording(pin=pin) as recording:
                run_stages(state, stages)
                results = frame_results(state)
                host = m.fetch(*results)
        except Exception:  # noqa: BLE001 (a capture's failure is no failure of the frame)
            # the same frame ran before: what failed is its capture; run it as usual
            self._refused.add(key)
            state = FrameState(state.settings, m, state.mesh, scene, state.mvp, state.light,
                               base=state.base, on_device=state.on_device)  # fmt: skip
            return _run(state, stages, cam)
        self._recorded[key] = (recording, state, cam)
        while len(self._recorded) > KEPT:
            self._recorded.popitem(last=False)
        return frame_of(state, host, cam, t_start)


def _run(state: FrameState, stages: tuple, cam: Any) -> Any:
    t_start = time.perf_counter()
    run_stages(state, stages)
    return read_back(state, cam, t_start)


def _replayed(recording: Any, state: FrameState, cam: Any) -> Any:
    """The frame replayed from ``recording``, or None where a read differs (stale)."""
    t_start = time.perf_counter()
    try:
        host = recording.replay()
    except StaleRecording:
        return None
    frame = frame_of(state, host, cam, t_start)
    # run as graphs, the stages were not timed one by one: their records without a wall
    untimed = {name: _untimed(r) for name, r in frame.stats.stages.items()}
    frame.stats = replace(frame.stats, stages=untimed, replayed=True)
    return frame


def _untimed(record: PhaseRecord) -> PhaseRecord:
    return PhaseRecord(record.name, calls=record.calls, bytes=record.bytes, cycles=record.cycles,
                       messages=record.messages, message_bytes=record.message_bytes)  # fmt: skip


def _colours(state: FrameState) -> tuple:
    """The scene's device colours this frame lights its vertices with (kept by the scene
    from an earlier frame of the same light, which a graph then uses)."""
    opt = state.settings
    colours = state.scene.colours(state.light, opt.shading, base=state.base,
                                  crease_angle=opt.crease_angle)  # fmt: skip
    return (colours,)
