"""A viewer's state while it serves: the frames made on one thread, and one session per
open page.

Frames are made one at a time on a thread of their own (:class:`Viewer`): the machine
runs one program at a time, and on MPI ranks every frame is a collective step the ranks
take in the same order. Each open page is a :class:`Session` that holds at most one view
waiting to be rendered: a newer request replaces it (the newest request wins, no queue
grows), and the page asks for its next view only once the last frame arrived, so frames
are made no faster than the page takes them. A page that closes ends its session, and
nothing of it is kept.

This module imports no web package: the server (:mod:`renderer.viewer.app`) and the
benchmark's scripted clients drive it alike.
"""

from __future__ import annotations

import asyncio
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from renderer.viewer.requests import ViewRequest

__all__ = ["Session", "Viewer"]


class Viewer:
    """What a running viewer serves: its frame maker, the first view, the open sessions.

    Parameters
    ----------
    maker : FrameMaker
        Renders the views (of its source, on its machine).
    initial : ViewRequest
        The view a page opens with (the command's options), and the fields a request
        leaves out.
    make : callable(ViewRequest) -> bytes, optional
        Makes a frame's message on the frame thread; default ``maker.message`` (on MPI
        ranks, one that first sends the request to the other ranks).
    """

    def __init__(self, maker: Any, initial: ViewRequest, make: Any = None) -> None:
        self.maker = maker
        self.initial = initial
        self.make = make or maker.message
        self.sessions: set[Session] = set()
        self.frames = 0
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="simd-emu-frames")

    @property
    def choices(self) -> Any:
        """What the page may choose (:class:`~renderer.viewer.requests.Choices`)."""
        return self.maker.source.choices

    def hello(self) -> dict[str, Any]:
        """The first message of a session: what is shown, on what, and the choices."""
        source = self.maker.source
        machine = source.machine
        ranks = source.ranks
        return {
            "type": "hello",
            "name": source.name,
            "size": list(self.maker.size),
            "backend": machine.backend,
            "pes": machine.npes,
            "ranks": 1 if ranks is None else ranks.size,
            "choices": self.choices.to_dict(),
            "initial": self.initial.to_dict(),
        }

    def parse(self, text: str) -> ViewRequest:
        """A request from the page's JSON ``text``, checked (a one-line ValueError)."""
        try:
            message = json.loads(text)
        except ValueError as err:
            raise ValueError(f"a view must be JSON: {err}") from None
        return ViewRequest.parse(message, self.choices, self.initial)

    async def frame(self, request: ViewRequest) -> bytes:
        """The message of ``request``'s frame, made on the frame thread."""
        loop = asyncio.get_running_loop()
        data = await loop.run_in_executor(self._thread, self.make, request)
        self.frames += 1
        return data

    def close(self) -> None:
        """Wait for the frame being made, if any, and end the frame thread."""
        self._thread.shutdown(wait=True)


class Session:
    """One open page: the newest view it asked for that is not rendered yet.

    Examples
    --------
    >>> session = Session()
    >>> for azimuth in (10, 20, 30):
    ...     session.ask(ViewRequest(azimuth=azimuth))
    >>> session.waiting.azimuth, session.replaced
    (30, 2)
    """

    def __init__(self) -> None:
        self._waiting: ViewRequest | None = None
        self._wake = asyncio.Event()
        self.replaced = 0  # requests dropped for a newer one

    @property
    def waiting(self) -> ViewRequest | None:
        """The request to be rendered next, if any."""
        return self._waiting

    def ask(self, request: ViewRequest) -> None:
        """Render ``request`` next, in place of any request still waiting."""
        if self._waiting is not None:
            self.replaced += 1
        self._waiting = request
        self._wake.set()

    async def next(self) -> ViewRequest:
        """The newest request, once there is one."""
        await self._wake.wait()
        self._wake.clear()
        request, self._waiting = self._waiting, None
        return request


async def serve_session(viewer: Viewer, receive: Any, send_text: Any, send_bytes: Any) -> None:
    """Run one page's session until it closes: send the hello, read the page's requests
    (``await receive()`` gives each text, and raises or returns None when the page is
    gone) and send each frame's message (``send_bytes``) or a request's error
    (``send_text``, one JSON line) as it is made."""
    session = Session()
    viewer.sessions.add(session)
    lock = asyncio.Lock()

    async def say(message: dict[str, Any]) -> None:
        async with lock:
            await send_text(json.dumps(message))

    async def frames() -> None:
        while True:
            request = await session.next()
            try:
                data = await viewer.frame(request)
            except Exception as err:  # a frame that fails ends that frame, not the server
                print(f"simd-emu view: a frame failed: {err}", file=sys.stderr)
                await say({"type": "error", "id": request.id, "message": str(err)})
                continue
            async with lock:
                await send_bytes(data)

    maker = asyncio.create_task(frames())
    try:
        await say(viewer.hello())
        while (text := await receive()) is not None:
            try:
                session.ask(viewer.parse(text))
            except ValueError as err:
                await say({"type": "error", "id": None, "message": str(err)})
    finally:
        maker.cancel()
        viewer.sessions.discard(session)
        await asyncio.gather(maker, return_exceptions=True)  # a failed send ended it too
