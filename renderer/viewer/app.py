"""The viewer's web application: the page, its two files and one websocket, behind a token.

A small ASGI application (Starlette) that uvicorn serves (:mod:`renderer.viewer.serving`):

``GET /``
    The page (``static/index.html``), its script and style sheet linked with the token.
``GET /static/viewer.js``, ``GET /static/viewer.css``
    The page's script and style, package data of :mod:`renderer.viewer`: nothing comes
    from another site, so the viewer works without internet.
``/ws``
    The websocket of one page's session (:func:`~renderer.viewer.sessions.serve_session`):
    the page sends views as JSON text, the server sends each frame as one binary message
    (:mod:`renderer.viewer.frames`) and errors as JSON text.

Every request, HTTP or websocket, must carry the viewer's token in its query
(``?token=...``), as Jupyter's addresses do: the token is made at random when the viewer
starts and printed in its address, so another user of the machine, who can reach the
port but not read the address, cannot drive it. A request without it gets 403 (a
websocket is refused before it opens).
"""

from __future__ import annotations

import secrets
from importlib import resources
from typing import Any
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from renderer.viewer.sessions import Viewer, serve_session

__all__ = ["STATIC_FILES", "make_app", "new_token"]

#: The page's files (package data of renderer.viewer, in static/) and their types.
STATIC_FILES = {
    "index.html": "text/html; charset=utf-8",
    "viewer.js": "text/javascript; charset=utf-8",
    "viewer.css": "text/css; charset=utf-8",
}

#: Headers of every page response: never cached (the address carries the token), the
#: page's script, style, images and socket only from this server.
_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'"
    ),
}


def new_token() -> str:
    """A random token for a viewer's address (48 hexadecimal digits, 192 bits)."""
    return secrets.token_hex(24)


def _static(name: str) -> bytes:
    return resources.files("renderer.viewer").joinpath("static", name).read_bytes()


def make_app(viewer: Viewer, token: str) -> Any:
    """The ASGI application of ``viewer``, whose every request must carry ``token``."""
    files = {name: _static(name) for name in STATIC_FILES}
    page = files["index.html"].replace(b"__TOKEN__", token.encode())

    async def index(request: Any) -> Response:
        return Response(page, media_type=STATIC_FILES["index.html"], headers=_HEADERS)

    async def static(request: Any) -> Response:
        name = request.path_params["name"]
        if name not in files or name == "index.html":
            return PlainTextResponse("not found", status_code=404, headers=_HEADERS)
        return Response(files[name], media_type=STATIC_FILES[name], headers=_HEADERS)

    async def socket(ws: WebSocket) -> None:
        await ws.accept()

        async def receive() -> str | None:
            message = await ws.receive()
            if message["type"] == "websocket.disconnect":
                return None
            return message.get("text") or ""  # a binary message is not a view

        await serve_session(viewer, receive, ws.send_text, ws.send_bytes)

    app = Starlette(
        routes=[
            Route("/", index),
            Route("/static/{name}", static),
            WebSocketRoute("/ws", socket),
        ]
    )
    return TokenGuard(app, token)


class TokenGuard:
    """ASGI middleware: only requests whose query carries ``token`` reach ``app``."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket") and not self._allowed(scope):
            if scope["type"] == "websocket":  # closed before it opens: a 403 handshake
                await send({"type": "websocket.close", "code": 1008})
                return
            response = PlainTextResponse(
                "This viewer's address carries a token: open the address that "
                "simd-emu view printed.",
                status_code=403,
                headers=_HEADERS,
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _allowed(self, scope: dict) -> bool:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        given = query.get("token", [""])[0].encode()
        return secrets.compare_digest(given, self.token)
