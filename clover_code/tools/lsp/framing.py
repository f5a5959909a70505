"""LSP's base protocol: JSON-RPC messages framed by a ``Content-Length`` header.

Each message is ``Content-Length: N\\r\\n`` (other headers allowed and
ignored), a blank line, then N bytes of UTF-8 JSON. What a server sends is
read with bounds: the header block is at most ``MAX_HEADER`` bytes, a body
at most ``MAX_BODY`` bytes, and the JSON is parsed with ``loads_bounded``;
anything else is a ``FramingError`` naming what was wrong.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from clover_code.protocol.json_text import loads_bounded

__all__ = ["MAX_BODY", "MAX_HEADER", "FramingError", "encode", "read_message"]

MAX_HEADER = 8192
"""Bytes of headers accepted before one message's body."""
MAX_BODY = 16_000_000
"""Bytes of one message's body (a big file's diagnostics fit many times over)."""


class FramingError(ValueError):
    """The server wrote something that is not an LSP message; the text says what."""


def encode(message: dict[str, Any]) -> bytes:
    """One message, framed."""
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def read_message(stream: asyncio.StreamReader) -> dict[str, Any] | None:
    """The next message from ``stream``; None at a clean end (EOF between messages)."""
    try:
        head = await stream.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial.strip():
            return None
        raise FramingError("the server's output ended inside a message header") from None
    except asyncio.LimitOverrunError:
        raise FramingError("the server wrote a header block without an end") from None
    if len(head) > MAX_HEADER:
        raise FramingError(f"the server wrote {len(head):,} bytes of headers")
    length = _content_length(head)
    try:
        body = await stream.readexactly(length)
    except asyncio.IncompleteReadError:
        raise FramingError("the server's output ended inside a message") from None
    try:
        message = loads_bounded(body)
    except ValueError as exc:
        raise FramingError(f"the server wrote a message that is not JSON ({exc})") from None
    if not isinstance(message, dict):
        raise FramingError("the server wrote a message that is not a JSON object")
    return message


def _content_length(head: bytes) -> int:
    for line in head.decode("ascii", "replace").split("\r\n"):
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            try:
                length = int(value.strip())
            except ValueError:
                bad = value.strip()[:40]
                raise FramingError(f"the server wrote a bad Content-Length {bad!r}") from None
            if not 0 <= length <= MAX_BODY:
                raise FramingError(f"the server announced a {length:,}-byte message")
            return length
    # Anything a server prints on stdout before its first message lands here too.
    first = head.decode("utf-8", "replace").strip().splitlines()[0][:120]
    raise FramingError(f"the server wrote {first!r} where an LSP header belongs")
