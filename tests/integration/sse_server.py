"""A real HTTP/1.1 server on loopback that replays scripted OpenAI-style responses.

Tests talk to it over a real socket, so everything between the backend and
the wire (httpx, connection reuse, chunked framing, disconnects) is exercised
for real. It depends only on the standard library, so the benchmark can run it
in a separate process too.

Typical use (the ``scripted_server`` fixture in ``conftest.py`` starts one)::

    scripted_server.enqueue(sse_response(SGLangStream().content("Hi").chunks()))
    backend = OpenAIBackend(scripted_server.base_url, "test-model")
    ...
    assert scripted_server.chat_requests[0].json()["stream"] is True

Responses are queued per path and served in order; ``GET /v1/models`` lists
``models`` unless a response is queued for it; a ``responder`` callable can
answer requests that have nothing queued (handy for multi-turn agent tests).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import defaultdict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

__all__ = [
    "CHAT_PATH",
    "MODELS_PATH",
    "Drop",
    "Frames",
    "Hold",
    "Pause",
    "RecordedRequest",
    "ScriptedResponse",
    "ScriptedServer",
    "Send",
    "Step",
    "Until",
    "encode_event",
    "error_response",
    "frame",
    "json_response",
    "sse_response",
]

CHAT_PATH = "/v1/chat/completions"
MODELS_PATH = "/v1/models"


@dataclass(slots=True)
class Send:
    """Write these bytes (one HTTP chunk; consecutive sends go out in one write)."""

    data: bytes


@dataclass(slots=True)
class Frames:
    """Bytes already framed as HTTP chunks, written verbatim (see ``frame``).

    Lets a benchmark frame a long stream once instead of on every request.
    """

    data: bytes


@dataclass(slots=True)
class Pause:
    """Wait before the next step (a slow server)."""

    seconds: float


@dataclass(slots=True)
class Drop:
    """Close the connection mid-body: the client sees an incomplete response."""


@dataclass(slots=True)
class Hold:
    """Keep the response open until the client disconnects (or ``seconds`` pass)."""

    seconds: float = 30.0


@dataclass(slots=True)
class Until:
    """Wait until ``condition()`` holds (checked every few ms), at most ``seconds``.

    Lets a response wait for other requests to arrive (a test of concurrency
    that cannot pass by luck: a client that sends one request at a time never
    meets the condition, and the wait merely runs out)."""

    condition: Callable[[], bool]
    seconds: float = 30.0


Step = Send | Frames | Pause | Drop | Hold | Until


@dataclass(slots=True)
class ScriptedResponse:
    """One scripted answer: a plain body, or streamed ``steps`` (chunked encoding)."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    steps: list[Step] | None = None
    content_type: str = "application/json"


@dataclass(slots=True)
class RecordedRequest:
    """A request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body decoded as JSON."""
        return json.loads(self.body)


def json_response(
    payload: Any, status: int = 200, headers: dict[str, str] | None = None
) -> ScriptedResponse:
    """A JSON body."""
    return ScriptedResponse(status, dict(headers or {}), json.dumps(payload).encode())


def error_response(
    status: int, message: str, *, retry_after: str | None = None, kind: str = "error"
) -> ScriptedResponse:
    """An OpenAI-shaped error body, optionally with a ``Retry-After`` header."""
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    payload = {"error": {"message": message, "type": kind, "code": status}}
    return json_response(payload, status, headers)


def sse_response(
    chunks: Iterable[dict[str, Any] | bytes | str],
    *,
    done: bool = True,
    drop_after: int | None = None,
    hold: bool = False,
    pause: float = 0.0,
) -> ScriptedResponse:
    """A ``text/event-stream`` response carrying ``chunks``, one SSE event each.

    ``drop_after=n`` sends the first ``n`` events and then drops the
    connection; ``hold`` keeps it open after the events until the client goes
    away; ``pause`` waits between events. Chunks given as ``bytes``/``str`` are
    sent verbatim as the event's data (for malformed-chunk tests).
    """
    steps: list[Step] = []
    for sent, chunk in enumerate(chunks):
        if drop_after is not None and sent >= drop_after:
            break
        if pause and steps:
            steps.append(Pause(pause))
        steps.append(Send(encode_event(chunk)))
    if drop_after is not None:
        steps.append(Drop())
    elif hold:
        steps.append(Hold())
    elif done:
        steps.append(Send(b"data: [DONE]\n\n"))
    return ScriptedResponse(steps=steps, content_type="text/event-stream")


def frame(steps: Iterable[Step]) -> Frames:
    """Frame every ``Send`` of ``steps`` as HTTP chunks, once (other steps are dropped)."""
    return Frames(b"".join(_chunk(s.data) for s in steps if isinstance(s, Send)))


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def encode_event(chunk: dict[str, Any] | bytes | str) -> bytes:
    """One SSE ``data:`` event for a chunk object (or verbatim text)."""
    if isinstance(chunk, bytes):
        data = chunk
    elif isinstance(chunk, str):
        data = chunk.encode()
    else:
        data = json.dumps(chunk, ensure_ascii=False, separators=(",", ":")).encode()
    return b"data: " + data + b"\n\n"


class ScriptedServer:
    """A loopback HTTP server that replays queued responses and records requests."""

    def __init__(self, models: Iterable[str] = ("test-model",)) -> None:
        self.models = list(models)
        """What ``GET /v1/models`` lists when nothing is queued for it."""
        self.requests: list[RecordedRequest] = []
        self.responder: Callable[[RecordedRequest], ScriptedResponse] | None = None
        """Answers requests that have no queued response (optional)."""
        self.connections = 0
        """How many TCP connections were accepted."""
        self.disconnects = 0
        """How many responses the client abandoned before they were complete."""
        self.in_flight = 0
        """Chat requests received whose responses are not complete yet."""
        self.max_in_flight = 0
        """The most chat requests that were in flight at the same time."""
        self._queues: defaultdict[str, deque[ScriptedResponse]] = defaultdict(deque)
        self._server: asyncio.Server | None = None
        self._disconnected = asyncio.Event()
        self._writers: set[asyncio.StreamWriter] = set()
        self.port = 0

    @property
    def root_url(self) -> str:
        """``http://127.0.0.1:PORT`` (no ``/v1``)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``: what a client's ``base_url`` should be."""
        return f"{self.root_url}/v1"

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The chat-completion requests received, in order."""
        return [r for r in self.requests if r.path == CHAT_PATH]

    def enqueue(self, *responses: ScriptedResponse, path: str = CHAT_PATH) -> None:
        """Queue responses for ``path``; each request takes the next one."""
        self._queues[path].extend(responses)

    def pending(self, path: str = CHAT_PATH) -> int:
        """How many queued responses for ``path`` are still unserved."""
        return len(self._queues[path])

    async def start(self, port: int = 0) -> None:
        """Listen on 127.0.0.1 (a free port unless one is given)."""
        self._server = await asyncio.start_server(
            self._handle, "127.0.0.1", port, limit=16 * 1024 * 1024
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        """Stop listening and close every open connection."""
        if self._server is None:
            return
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), 5)
        self._server = None

    async def serve_forever(self) -> None:
        """Run until cancelled (for a server in its own process)."""
        if self._server is None:
            await self.start()
        assert self._server is not None
        await self._server.serve_forever()

    async def wait_for_disconnect(self, timeout: float = 120.0) -> bool:
        """True once a client abandoned a response, False after ``timeout`` seconds.

        The default is generous: on a busy machine noticing a dropped
        connection can take a while, and a healthy run returns at once.
        """
        try:
            await asyncio.wait_for(self._disconnected.wait(), timeout)
        except TimeoutError:
            return False
        return True

    # -- HTTP ---------------------------------------------------------------------

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.add(writer)
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    break
                self.requests.append(request)
                chat = request.path == CHAT_PATH
                if chat:
                    self.in_flight += 1
                    self.max_in_flight = max(self.max_in_flight, self.in_flight)
                try:
                    reused = await self._respond(self._answer(request), reader, writer)
                finally:
                    self.in_flight -= chat
                if not reused:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _answer(self, request: RecordedRequest) -> ScriptedResponse:
        queue = self._queues[request.path]
        if queue:
            return queue.popleft()
        if self.responder is not None:
            return self.responder(request)
        if request.method == "GET" and request.path == MODELS_PATH:
            data = [{"id": m, "object": "model", "owned_by": "test"} for m in self.models]
            return json_response({"object": "list", "data": data})
        # 400, not 5xx: a test that forgot to queue a response should fail
        # at once, not sit through the client's retries.
        return error_response(
            400, f"the scripted server has no response queued for {request.method} {request.path}"
        )

    async def _respond(
        self,
        response: ScriptedResponse,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        """Send one response; False when the connection must not be reused."""
        reason = HTTPStatus(response.status).phrase if response.status in _STATUSES else "Status"
        head = [f"HTTP/1.1 {response.status} {reason}", f"Content-Type: {response.content_type}"]
        head += [f"{name}: {value}" for name, value in response.headers.items()]
        if response.steps is None:
            head.append(f"Content-Length: {len(response.body)}")
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + response.body)
            await writer.drain()
            return True
        head += ["Transfer-Encoding: chunked", "Cache-Control: no-cache"]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
        # A client that goes away shows up as EOF on the reader while we write.
        watcher = asyncio.ensure_future(reader.read(1))
        try:
            pending: list[bytes] = []
            for step in response.steps:
                if isinstance(step, Send):
                    pending.append(_chunk(step.data))
                    continue
                if isinstance(step, Frames):
                    pending.append(step.data)
                    continue
                await self._flush(writer, pending, watcher)
                if isinstance(step, Pause | Hold):
                    await asyncio.wait({watcher}, timeout=step.seconds)
                if isinstance(step, Until):
                    await self._until(step, watcher)
                if watcher.done():
                    self._client_left()
                    return False
                if isinstance(step, Drop):
                    return False
            pending.append(b"0\r\n\r\n")
            await self._flush(writer, pending, watcher)
            return not watcher.done()
        except ConnectionError:
            self._client_left()
            return False
        finally:
            watcher.cancel()
            # The next request on this connection must not meet a reader still waiting.
            with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                await watcher

    async def _flush(
        self, writer: asyncio.StreamWriter, pending: list[bytes], watcher: asyncio.Future[bytes]
    ) -> None:
        if pending:
            writer.write(b"".join(pending))
            pending.clear()
            await writer.drain()

    async def _until(self, step: Until, watcher: asyncio.Future[bytes]) -> None:
        loop = asyncio.get_running_loop()
        end = loop.time() + step.seconds
        while not step.condition() and not watcher.done() and loop.time() < end:
            await asyncio.sleep(0.005)

    def _client_left(self) -> None:
        self.disconnects += 1
        self._disconnected.set()


_STATUSES = {status.value for status in HTTPStatus}


async def _read_request(reader: asyncio.StreamReader) -> RecordedRequest | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    body = b""
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        parts = []
        while True:
            size = int((await reader.readline()).split(b";")[0], 16)
            if size == 0:
                await reader.readline()
                break
            parts.append(await reader.readexactly(size))
            await reader.readline()
        body = b"".join(parts)
    return RecordedRequest(method, target.split("?", 1)[0], headers, body)
