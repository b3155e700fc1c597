"""Helpers of the viewer's tests: the command as a process, a scripted page over the
websocket, and PNG bytes as pixels."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from renderer.viewer.frames import split_message

ROOT = Path(__file__).resolve().parents[2]

#: A small built-in data set and frame, quick on any machine.
SMALL = ["--dataset-size", "24", "--size", "96", "--pes", "32", "--backend", "numpy"]


def pixels(png: bytes) -> np.ndarray:
    """A PNG file's RGB pixels."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        return np.asarray(image.convert("RGB"))


def socket_url(url: str) -> str:
    """The websocket address of a page's address (``http://host:port/?token=...``)."""
    return url.replace("http://", "ws://", 1).replace("/?token=", "/ws?token=", 1)


def port_of(url: str) -> int:
    return int(url.split("/")[2].rsplit(":", 1)[1])


def port_is_free(port: int) -> bool:
    """Whether nothing listens on ``port`` (connections closing may linger in TIME_WAIT,
    which a new server may take over, as uvicorn's socket does)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class Page:
    """A scripted page: the websocket of one session, its hello, and frames asked for."""

    def __init__(self, url: str, timeout: float = 60.0) -> None:
        from websockets.sync.client import connect

        self.timeout = timeout
        self._stack = contextlib.ExitStack()
        self.socket = self._stack.enter_context(
            connect(socket_url(url), open_timeout=timeout, max_size=2**26)
        )
        self.hello = json.loads(self.socket.recv(timeout=timeout))

    def send(self, **fields) -> None:
        self.socket.send(json.dumps(fields))

    def receive(self) -> tuple[dict, bytes | None]:
        """The next message: (header, PNG) for a frame, (the JSON, None) for text."""
        message = self.socket.recv(timeout=self.timeout)
        if isinstance(message, str):
            return json.loads(message), None
        return split_message(message)

    def frame(self, **fields) -> tuple[dict, bytes]:
        """Ask for one view and wait for its frame (an error fails the test)."""
        self.send(**fields)
        header, png = self.receive()
        assert png is not None, header
        return header, png

    def close(self) -> None:
        self._stack.close()

    def __enter__(self) -> Page:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def environment() -> dict[str, str]:
    """The command's environment: this source tree first on the path."""
    from simd.launch import launch_environment

    env = launch_environment()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


class Command:
    """``simd-emu view ARGS --no-browser --port 0`` as a process (under ``launcher``, e.g.
    mpiexec), its address read from its first line."""

    def __init__(self, *args: str, launcher: tuple[str, ...] = (), timeout: float = 180) -> None:
        command = [*launcher, sys.executable, "-m", "simd.cli", "view", *args]
        command += ["--no-browser", "--port", "0"]
        self.process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=environment(),
            cwd=ROOT,
            start_new_session=True,
        )
        self.lines: list[str] = []
        deadline = time.monotonic() + timeout
        while True:
            line = self.process.stdout.readline()
            if not line:
                self.kill()
                raise AssertionError(f"the viewer ended: {self.process.stderr.read()}")
            self.lines.append(line)
            if " at http://" in line:
                self.url = line.split(" at ", 1)[1].strip()
                break
            if time.monotonic() > deadline:
                self.kill()
                raise AssertionError(f"no address after {timeout} s: {self.lines}")

    def interrupt(self, sig: int = signal.SIGINT, timeout: float = 60) -> tuple[int, str, str]:
        """Send ``sig`` (Ctrl-C) and wait: (status, the rest of stdout, stderr)."""
        self.process.send_signal(sig)
        try:
            out, err = self.process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"the viewer did not stop within {timeout} s") from None
        return self.process.returncode, "".join(self.lines) + out, err

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
