"""Newline-delimited JSON-RPC over stdin/stdout, answering bad input.

The SDK's ``Connection`` does the JSON-RPC (ids, dispatch, errors of
handlers) over any ``Transport`` that moves decoded messages. This one
frames them one per line like the SDK's own, and differs only on input the
SDK would drop without a word: a line that is not JSON gets a "Parse error"
reply, and JSON that is not a JSON-RPC message gets "Invalid request" (both
with a null id, as JSON-RPC 2.0 says). End of input ends the stream.

It also keeps the ids of the requests it handed on and not yet answered,
so that at the end every one of them gets an answer: ``settle`` waits for
the handlers still running, and ``refuse_open`` answers what is left with
an error (a request is never dropped without a word).

``stdio_pipes`` takes the process's stdin and stdout for the protocol and
points file descriptors 0 and 1 elsewhere (``/dev/null`` and stderr), so a
stray ``print`` or a child process cannot corrupt or steal protocol bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from typing import Any, Protocol

from clover_code.protocol.json_text import JSONLimitError, loads_bounded

__all__ = ["CANCELLED", "LineTransport", "Sink", "StdoutPipe", "stdio_pipes"]

LINE_LIMIT = 50 * 1024 * 1024
"""Longest message accepted (prompts may embed whole files)."""

CANCELLED = -32800
"""The error code of a request cancelled before it completed (as in LSP)."""


class Sink(Protocol):
    """Where encoded messages go (a ``StdoutPipe`` or an ``asyncio.StreamWriter``)."""

    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    def close(self) -> None: ...


class StdoutPipe(asyncio.BaseProtocol):
    """A write pipe with flow control: ``drain`` waits while the reader lags."""

    def __init__(self) -> None:
        self._transport: asyncio.WriteTransport | None = None
        self._paused = False
        self._resumed: asyncio.Future[None] | None = None
        self._lost: BaseException | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.WriteTransport)
        self._transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = exc or ConnectionResetError("the editor closed the agent's output")
        self._wake()

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake()

    def _wake(self) -> None:
        if self._resumed is not None and not self._resumed.done():
            self._resumed.set_result(None)
        self._resumed = None

    def write(self, data: bytes) -> None:
        """Queue ``data``; raises ``ConnectionError`` once the pipe is gone."""
        if self._lost is not None or self._transport is None:
            raise ConnectionResetError("the editor closed the agent's output")
        self._transport.write(data)

    async def drain(self) -> None:
        """Wait until the pipe accepts more."""
        while self._paused and self._lost is None:
            self._resumed = asyncio.get_running_loop().create_future()
            await self._resumed
        if self._lost is not None:
            raise ConnectionResetError("the editor closed the agent's output")

    def close(self) -> None:
        """Close the pipe."""
        if self._transport is not None:
            self._transport.close()


class LineTransport:
    """The SDK ``Transport`` over a line reader and a ``Sink``."""

    def __init__(self, reader: asyncio.StreamReader, sink: Sink) -> None:
        self._reader = reader
        self._sink = sink
        self._lock = asyncio.Lock()
        self._closed = False
        self._open: dict[Any, list[str]] = {}
        """Requests received and not answered yet: id -> their methods (a client
        may reuse an id; each request still gets its own answer)."""
        self._all_answered = asyncio.Event()
        self._all_answered.set()

    async def send(self, message: dict[str, Any]) -> None:
        """Write one message as a line (a second answer to one request is dropped)."""
        if self._closed:
            raise ConnectionResetError("the connection to the editor is closed")
        is_answer = "method" not in message and ("result" in message or "error" in message)
        request_id = _hashable(message.get("id"))
        if is_answer and request_id is not None:
            if request_id not in self._open:
                return  # refused at shutdown already; the late handler's answer goes nowhere
            self._answered(request_id)
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode("utf-8")
        async with self._lock:
            self._sink.write(data)
            await self._sink.drain()

    def _answered(self, request_id: Any) -> None:
        methods = self._open.get(request_id)
        if methods:
            methods.pop(0)
        if not methods:
            self._open.pop(request_id, None)
        if not self._open:
            self._all_answered.set()

    @property
    def open_requests(self) -> list[tuple[Any, str]]:
        """The requests not answered yet: (id, method)."""
        return [(i, m) for i, methods in self._open.items() for m in methods]

    async def settle(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for every open request to be answered."""
        try:
            await asyncio.wait_for(self._all_answered.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def refuse_open(self, reason: str) -> None:
        """Answer every open request with a "cancelled" error saying ``reason``."""
        for request_id, method in self.open_requests:
            reply = {
                "jsonrpc": "2.0",
                "id": request_id,
                "error": {"code": CANCELLED, "message": f"{method} was not completed: {reason}"},
            }
            if self._closed:
                self._answered(request_id)
                continue
            # ``send`` counts the request as answered before it writes.
            with contextlib.suppress(ConnectionError, OSError):
                await self.send(reply)

    async def receive(self) -> dict[str, Any] | None:
        """The next well-formed message; None at end of input."""
        while True:
            line = await self._read_line()
            if line is None:
                return None
            line = line.strip()
            if not line:
                continue
            try:
                message = loads_bounded(line, max_bytes=LINE_LIMIT)
            except JSONLimitError as exc:
                await self._reply_error(-32700, f"Parse error: {exc}; send a flatter message.")
                continue
            except ValueError:
                await self._reply_error(-32700, "Parse error: the line is not valid JSON.")
                continue
            problem = _shape_problem(message)
            if problem is not None:
                await self._reply_error(-32600, f"Invalid request: {problem}")
                continue
            request_id = _hashable(message.get("id"))
            if "method" in message and request_id is not None:
                self._open.setdefault(request_id, []).append(str(message["method"]))
                self._all_answered.clear()
            return dict(message)

    async def close(self) -> None:
        """Stop sending and close the output."""
        if not self._closed:
            self._closed = True
            self._sink.close()

    async def _read_line(self) -> bytes | None:
        while True:
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                return exc.partial or None
            except asyncio.LimitOverrunError as exc:
                await self._skip_long_line(exc.consumed)
                continue
            return line

    async def _skip_long_line(self, consumed: int) -> None:
        await self._reader.readexactly(consumed)
        while True:
            try:
                await self._reader.readuntil(b"\n")
                break
            except asyncio.LimitOverrunError as exc:
                await self._reader.readexactly(exc.consumed)
            except asyncio.IncompleteReadError:
                break
        limit = LINE_LIMIT // (1024 * 1024)
        await self._reply_error(-32600, f"Invalid request: a message is longer than {limit} MiB.")

    async def _reply_error(self, code: int, message: str) -> None:
        reply = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
        with contextlib.suppress(ConnectionError, OSError):
            await self.send(reply)


def _hashable(request_id: object) -> str | int | float | None:
    """A request id usable as a key (JSON-RPC ids are strings or numbers)."""
    if isinstance(request_id, str | int | float) and not isinstance(request_id, bool):
        return request_id
    return None


def _shape_problem(message: object) -> str | None:
    """Why ``message`` is not a JSON-RPC request, notification or response; None if it is."""
    if not isinstance(message, dict):
        return "a message must be a JSON object (batches are not supported)."
    method = message.get("method")
    if method is not None:
        if not isinstance(method, str):
            return "'method' must be a string."
        params = message.get("params")
        if params is not None and not isinstance(params, dict | list):
            return "'params' must be an object or an array."
        return None
    if "id" in message and ("result" in message or "error" in message):
        return None
    return "a message needs a 'method' (request, notification) or an 'id' with a result."


async def stdio_pipes() -> tuple[asyncio.StreamReader, StdoutPipe]:
    """The protocol's reader (stdin) and writer (stdout); fds 0 and 1 are moved aside."""
    loop = asyncio.get_running_loop()
    sys.stdout.flush()
    protocol_in = os.fdopen(os.dup(0), "rb", buffering=0)
    protocol_out = os.fdopen(os.dup(1), "wb", buffering=0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), protocol_in)
    _, pipe = await loop.connect_write_pipe(StdoutPipe, protocol_out)
    return reader, pipe
