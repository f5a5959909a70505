"""LSP framing: what a server writes is read with bounds, and bad output is one sentence."""

from __future__ import annotations

import asyncio

import pytest

from clover_code.tools.lsp.framing import MAX_BODY, FramingError, encode, read_message


def stream(data: bytes) -> asyncio.StreamReader:
    reader = asyncio.StreamReader()
    reader.feed_data(data)
    reader.feed_eof()
    return reader


async def test_messages_round_trip_and_a_clean_end_is_none() -> None:
    first = {"jsonrpc": "2.0", "id": 1, "result": {"text": "é ✓"}}
    second = {"jsonrpc": "2.0", "method": "x", "params": None}
    reader = stream(encode(first) + b"Content-Type: x\r\n" + encode(second))
    assert await read_message(reader) == first
    assert await read_message(reader) == second
    assert await read_message(reader) is None


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"hello from the server\r\n\r\n", "where an LSP header belongs"),
        (b"Content-Length: x\r\n\r\n", "bad Content-Length"),
        (b"Content-Length: %d\r\n\r\n" % (MAX_BODY + 1), "announced a"),
        (b"Content-Length: 10\r\n\r\n{}", "ended inside a message"),
        (b"Content-Length: 5\r\n\r\n[1,2]", "not a JSON object"),
        (b"Content-Length: 3\r\n\r\n{x}", "not JSON"),
        (b"Content-Len", "inside a message header"),
    ],
)
async def test_bad_output_is_one_sentence(data: bytes, says: str) -> None:
    with pytest.raises(FramingError, match=says):
        await read_message(stream(data))


async def test_deep_json_is_refused_before_parsing() -> None:
    body = b"[" * 5000 + b"]" * 5000
    with pytest.raises(FramingError, match="nested"):
        await read_message(stream(b"Content-Length: %d\r\n\r\n" % len(body) + body))
