"""The host end of the runner protocol (see ``runner.py``) over an attach stream.

Docker hijacks the HTTP connection of ``POST /containers/{id}/attach``: after
the response headers, what the host writes is the container's stdin and what
it reads is the container's stdout and stderr, multiplexed in frames of an
8-byte header (stream, 0, 0, 0, big-endian length) and a payload. A thread
reads that stream and hands the runner's frames to the registered calls; the
event loop writes requests. Output callbacks run in the reader thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["RunnerGone", "RunnerLink", "RunnerRefused", "open_attach_stream"]

log = logging.getLogger(__name__)

_DOCKER_HEADER = struct.Struct(">BxxxL")
_RUNNER_HEADER = struct.Struct(">cII")


class RunnerGone(Exception):
    """The stream to the runner broke: the container or the Docker daemon went away."""


class RunnerRefused(RunnerGone):
    """The runner would not run commands (it cannot lock them down); the text says why."""


@dataclass(slots=True)
class _Call:
    feed: Callable[[bytes], None]
    done: asyncio.Future[dict[str, Any]]
    loop: asyncio.AbstractEventLoop


def open_attach_stream(api: Any, container_id: str) -> tuple[Any, Any, socket.socket]:
    """Attach to a created container; returns (response, buffered reader, socket).

    The buffered reader, not the bare socket, must be read: it may already
    hold bytes that arrived with the response headers.
    """
    response = api._post(
        api._url("/containers/{0}/attach", container_id),
        params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1},
        headers={"Connection": "Upgrade", "Upgrade": "tcp"},
        stream=True,
    )
    api._raise_for_status(response)
    reader = response.raw._fp.fp
    sock = getattr(reader.raw, "_sock", None)
    if not isinstance(sock, socket.socket):
        response.close()
        raise RunnerGone("this Docker connection does not expose a socket to stream over")
    sock.settimeout(None)
    return response, reader, sock


class RunnerLink:
    """One runner connection: send requests, route its frames to the waiting calls."""

    def __init__(self, response: Any, reader: Any, sock: socket.socket) -> None:
        self._response = response
        self._reader = reader
        self._sock = sock
        self._calls: dict[int, _Call] = {}
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._stderr = b""
        self._refusal: str | None = None
        self.closed = False
        self.reason = ""
        """Why the link closed, when it did."""
        self._thread = threading.Thread(target=self._read_loop, name="clover-runner", daemon=True)
        self._thread.start()

    def wait_ready(self, timeout: float) -> None:
        """Block until the runner says it is ready; raises ``RunnerGone`` otherwise,
        ``RunnerRefused`` with the runner's sentence when it refused to start."""
        ready = self._ready.wait(timeout)
        if self._refusal is not None:
            raise RunnerRefused(self._refusal)
        if not ready or self.closed:
            detail = self.reason or f"no answer in {timeout:.0f} s"
            raise RunnerGone(f"the sandbox runner did not start ({detail})")

    def register(
        self, cid: int, feed: Callable[[bytes], None], done: asyncio.Future[dict[str, Any]]
    ) -> None:
        """Route the output and the end of command ``cid`` to ``feed`` and ``done``."""
        with self._lock:
            if self.closed:
                raise RunnerGone(self.reason)
            self._calls[cid] = _Call(feed, done, asyncio.get_running_loop())

    def unregister(self, cid: int) -> None:
        """Stop routing frames of ``cid``; after this returns ``feed`` is not called again."""
        with self._lock:
            self._calls.pop(cid, None)

    def send(self, request: dict[str, Any]) -> None:
        """Write one request line to the runner's stdin."""
        try:
            self._sock.sendall(json.dumps(request).encode() + b"\n")
        except OSError as exc:
            raise RunnerGone(f"cannot write to the sandbox ({exc.strerror or exc})") from None

    def close(self) -> None:
        """Close the stream: the runner sees its stdin end and stops the container."""
        with self._lock:
            self.closed = True
            self.reason = self.reason or "the session closed the stream"
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(Exception):
            self._response.close()
        with contextlib.suppress(OSError):
            self._sock.close()

    def _read_exact(self, size: int) -> bytes:
        data = self._reader.read(size)
        if len(data) < size:
            raise EOFError
        return bytes(data)

    def _read_loop(self) -> None:
        pending = bytearray()
        try:
            while True:
                stream, size = _DOCKER_HEADER.unpack(self._read_exact(8))
                payload = self._read_exact(size) if size else b""
                if stream == 2:
                    self._stderr = (self._stderr + payload)[-4000:]
                    continue
                pending += payload
                while len(pending) >= 9:
                    kind, cid, length = _RUNNER_HEADER.unpack_from(pending)
                    if len(pending) < 9 + length:
                        break
                    body = bytes(pending[9 : 9 + length])
                    del pending[: 9 + length]
                    self._dispatch(kind, cid, body)
        except (EOFError, OSError, ValueError) as exc:
            reason = "the stream ended" if isinstance(exc, EOFError) else str(exc)
            self._shut(reason)
        except Exception as exc:  # a bug here must not leave callers waiting forever
            log.exception("sandbox runner stream failed")
            self._shut(f"internal error: {exc}")

    def _dispatch(self, kind: bytes, cid: int, body: bytes) -> None:
        if kind == b"R":
            self._ready.set()
            return
        if kind == b"F":
            with self._lock:
                self._refusal = self.reason = body.decode("utf-8", "replace")
            self._ready.set()
            return
        with self._lock:
            call = self._calls.get(cid)
            if call is None:
                return
            if kind == b"O":
                call.feed(body)
            elif kind == b"X":
                self._resolve(call, json.loads(body))
            elif kind == b"E":
                error = RunnerGone(body.decode("utf-8", "replace"))
                call.loop.call_soon_threadsafe(_fail, call.done, error)

    @staticmethod
    def _resolve(call: _Call, info: dict[str, Any]) -> None:
        call.loop.call_soon_threadsafe(_succeed, call.done, info)

    def _shut(self, reason: str) -> None:
        stderr = self._stderr.decode("utf-8", "replace").strip()
        with self._lock:
            self.closed = True
            if not self.reason:
                self.reason = reason + (f"; the runner said: {stderr[-500:]}" if stderr else "")
            calls = list(self._calls.values())
            self._calls.clear()
        self._ready.set()
        for call in calls:
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                call.loop.call_soon_threadsafe(_fail, call.done, RunnerGone(self.reason))


def _succeed(future: asyncio.Future[dict[str, Any]], info: dict[str, Any]) -> None:
    if not future.done():
        future.set_result(info)


def _fail(future: asyncio.Future[dict[str, Any]], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)
