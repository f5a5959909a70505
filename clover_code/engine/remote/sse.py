"""A small, fast reader of server-sent events (SSE) from a raw byte stream.

OpenAI-compatible servers stream ``data: <json>`` events separated by blank
lines and end with ``data: [DONE]``. The reader works on bytes, not on decoded
text lines: splitting bytes and handing them straight to ``json.loads`` avoids
a decode and a Python-level line decoder per event, which is most of the cost
of ingesting a stream that can carry thousands of events per second.

Only what chat-completion streams use is implemented: ``data`` (multi-line
data joined with ``\\n``), ``event`` (so an ``event: error`` can be told apart),
comment lines (``:`` keep-alives, ignored), and llama.cpp's non-standard
``error: {json}`` lines (an ``error`` event). ``id`` and ``retry`` fields are
ignored because a chat completion stream cannot be resumed anyway.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterable
from dataclasses import dataclass

__all__ = ["SSEEvent", "iter_sse"]


@dataclass(slots=True)
class SSEEvent:
    """One dispatched event: its type (``message`` unless named) and raw data."""

    data: bytes
    event: str = "message"


async def iter_sse(chunks: AsyncIterable[bytes]) -> AsyncGenerator[SSEEvent, None]:
    """Yield the events of an SSE byte stream, in order.

    A final event that the server did not close with a blank line is still
    dispatched when the stream ends: some servers omit the last separator.
    """
    buffer = b""
    data_lines: list[bytes] = []
    event_name = "message"
    async for chunk in chunks:
        buffer = buffer + chunk if buffer else chunk
        if b"\n" not in chunk:
            continue
        lines = buffer.split(b"\n")
        buffer = lines.pop()
        for line in lines:
            if line.endswith(b"\r"):
                line = line[:-1]
            if not line:
                if data_lines:
                    data = data_lines[0] if len(data_lines) == 1 else b"\n".join(data_lines)
                    yield SSEEvent(data, event_name)
                    data_lines = []
                event_name = "message"
                continue
            if line.startswith(b"data:"):
                # The spec strips exactly one space after the colon.
                value = line[6:] if line[5:6] == b" " else line[5:]
                data_lines.append(value)
            elif line.startswith(b":"):
                continue
            elif line.startswith(b"event:"):
                event_name = line[6:].strip().decode("utf-8", "replace") or "message"
            elif line.startswith(b"error:"):
                # Not SSE, but llama.cpp's server reports mid-stream errors as
                # an ``error: {json}`` line; surface it as an error event.
                yield SSEEvent(line[6:].strip(), "error")
    if buffer.endswith(b"\r"):
        buffer = buffer[:-1]
    if buffer.startswith(b"data:"):
        data_lines.append(buffer[6:] if buffer[5:6] == b" " else buffer[5:])
    if data_lines:
        yield SSEEvent(b"\n".join(data_lines), event_name)
