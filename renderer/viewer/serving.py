"""Serving a viewer: its socket bound before anything else, uvicorn in the foreground (the
command) or on a thread (a notebook), and its address.

:func:`bind` takes the port first, so that a port in use is one line before any work;
:class:`Server` then serves the application on that socket. In the foreground, Ctrl-C
stops it: uvicorn closes every page's websocket, the frame being made is finished, and
:meth:`Server.run` returns.
"""

from __future__ import annotations

import contextlib
import ipaddress
import signal
import socket
import threading
import time
from typing import Any

__all__ = ["LOCAL_HOST", "Server", "address", "bind"]

#: Where a viewer listens unless told otherwise: this machine only.
LOCAL_HOST = "127.0.0.1"


def bind(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host``:``port`` and listening (port 0: any free port).

    Raises
    ------
    OSError
        With one line: the port is in use, or the host is not an address of this machine.

    Examples
    --------
    >>> sock = bind("127.0.0.1", 0)
    >>> try:
    ...     bind("127.0.0.1", sock.getsockname()[1])
    ... except OSError as err:
    ...     print(str(err).split(":")[0])  # doctest: +ELLIPSIS
    port ... is in use on 127.0.0.1
    >>> sock.close()
    """
    family = socket.AF_INET6 if _is_ipv6(host) else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as err:
        sock.close()
        if err.errno in (98, 48, 10048):  # EADDRINUSE (Linux, macOS, Windows)
            raise OSError(
                f"port {port} is in use on {host}: give another with --port (--port 0 takes "
                "any free one)"
            ) from None
        raise OSError(f"cannot listen on {host} port {port}: {err.strerror or err}") from None
    sock.setblocking(False)
    return sock


def _interrupt(signum: int, frame: Any) -> None:
    """SIGTERM, once uvicorn has stopped serving, as Ctrl-C: a KeyboardInterrupt."""
    raise KeyboardInterrupt


def _is_ipv6(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).version == 6
    except ValueError:
        return False


def address(sock: socket.socket, token: str) -> str:
    """The page's address on ``sock``, with its token. A socket listening on every
    interface is reached by this machine's name.

    >>> sock = bind("127.0.0.1", 0)
    >>> address(sock, "abc").startswith("http://127.0.0.1:"), address(sock, "abc")[-10:]
    (True, '?token=abc')
    >>> sock.close()
    """
    host, port = sock.getsockname()[:2]
    if host in ("0.0.0.0", "::"):
        host = socket.gethostname()
    elif _is_ipv6(host):
        host = f"[{host}]"
    return f"http://{host}:{port}/?token={token}"


class Server:
    """uvicorn serving ``app`` on a socket made by :func:`bind`.

    Examples
    --------
    >>> from starlette.applications import Starlette
    >>> server = Server(Starlette(), bind("127.0.0.1", 0))
    >>> server.start(); server.running
    True
    >>> server.stop(); server.running
    False
    """

    def __init__(self, app: Any, sock: socket.socket) -> None:
        import uvicorn

        self.socket = sock
        config = uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            lifespan="off",
            ws="websockets-sansio",
            timeout_graceful_shutdown=5,
        )
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        """Whether it serves (started and not stopped)."""
        return self._server.started and not self._server.should_exit

    def run(self, announce: Any = None) -> None:
        """Serve in this thread (the main thread) until Ctrl-C (SIGINT) or SIGTERM (what
        ``mpiexec`` sends its ranks on Ctrl-C), then return: uvicorn stops serving on
        either, closing the pages' websockets, and raises the signal again once stopped,
        which here ends in a return, not the process. ``announce()`` is called first,
        where either signal already stops the server cleanly (the socket listens, so a
        browser it opens waits for the server)."""
        previous = signal.signal(signal.SIGTERM, _interrupt)
        try:
            if announce is not None:
                announce()
            self._server.run(sockets=[self.socket])
        except KeyboardInterrupt:
            pass
        finally:
            signal.signal(signal.SIGTERM, previous)

    def start(self, timeout: float = 10.0) -> None:
        """Serve on a thread of its own; returns once it accepts connections."""
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [self.socket]},
            name="simd-emu-viewer",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the viewer's server did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        """Stop serving (the pages' websockets are closed) and close the socket."""
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with contextlib.suppress(OSError):
            self.socket.close()
