"""A viewer on MPI ranks: rank 0 serves the pages, and every rank renders each frame.

Under ``mpiexec -n N simd-emu view ...`` each rank holds its share of the surface (its
slab of a volume's isosurface, extracted by the ranks together; its range of a mesh's
faces; its slab of a built-in data set), and a frame is rendered sort-last
(:mod:`renderer.ranks.sortlast`): every rank renders its share and the ranks composite,
so every rank must take part in every frame, in the same order. Rank 0 serves; its frame
thread, which makes the frames of every page one at a time, first sends each request to
the other ranks (:func:`leading`), which wait for requests and render their share of each
(:func:`follow`). When rank 0 stops serving, it tells them to return (:func:`stop`).

Ctrl-C on the other ranks is left to rank 0: they ignore SIGINT while they follow, and
return when rank 0, having stopped its server, says so.
"""

from __future__ import annotations

import signal
from typing import Any

from renderer.viewer.requests import ViewRequest

__all__ = ["follow", "leading", "stop"]


def leading(maker: Any, comm: Any) -> Any:
    """Rank 0's way of making a frame's message: send the request to every rank, then
    render rank 0's share with them."""

    def make(request: ViewRequest) -> bytes:
        comm.bcast(request.to_dict(), root=0)
        return maker.message(request)

    return make


def follow(maker: Any, comm: Any) -> int:
    """On the other ranks: render this rank's share of every request rank 0 sends, until
    it says stop; returns the number of frames. A frame that fails fails on every rank
    alike (rank 0 tells its page), and the ranks go on to the next."""
    from simd import SimdError
    from simd.ranks import CollectiveError

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    frames = 0
    try:
        while (message := comm.bcast(None, root=0)) is not None:
            try:
                maker.render(ViewRequest.parse(message, maker.source.choices))
            except (ValueError, TypeError, OSError, SimdError, CollectiveError):
                pass  # rank 0 raised it too, and says so on the page
            frames += 1
    finally:
        signal.signal(signal.SIGINT, previous)
    return frames


def stop(comm: Any) -> None:
    """Rank 0: tell the other ranks that no frame will follow."""
    comm.bcast(None, root=0)
