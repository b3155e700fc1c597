"""A viewer on MPI ranks: rank 0 serves the pages, and every rank renders each frame.

Under ``mpiexec -n N simd-emu view ...`` each rank holds its share of the surface (its
slab of a volume's isosurface, extracted by the ranks together; its range of a mesh's
faces; its slab of a built-in data set), and a frame is rendered sort-last
(:mod:`renderer.ranks.sortlast`): every rank renders its share and the ranks composite,
so every rank must take part in every frame, in the same order. Rank 0 serves; its frame
thread, which makes the frames of every page one at a time, first sends each request to
the other ranks (:func:`leading`), which wait for requests and render their share of each
(:func:`follow`). When rank 0 stops serving, it tells them to return (:func:`stop`).

Ctrl-C is left to rank 0: on it (or on the SIGTERM that ``mpiexec`` sends every rank when
it is interrupted) rank 0 stops serving and tells the other ranks, which ignore both
signals while they follow, so that no rank is ended halfway through a collective.
"""

from __future__ import annotations

import signal
from typing import Any

from renderer.viewer.requests import ViewRequest

__all__ = ["follow", "leading", "stop"]

#: The signals Ctrl-C brings (the terminal's SIGINT; the SIGTERM mpiexec sends its ranks):
#: the ranks that follow leave them to rank 0, which stops serving and then tells them.
_STOPPING = (signal.SIGINT, signal.SIGTERM)


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

    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in _STOPPING}
    frames = 0
    try:
        while (message := comm.bcast(None, root=0)) is not None:
            try:
                maker.render(ViewRequest.parse(message, maker.source.choices))
            except (ValueError, TypeError, OSError, SimdError, CollectiveError):
                pass  # rank 0 raised it too, and says so on the page
            frames += 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return frames


def stop(comm: Any) -> None:
    """Rank 0: tell the other ranks that no frame will follow."""
    comm.bcast(None, root=0)
