"""The ACP line transport: framing, and JSON-RPC errors for lines the SDK would drop."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from clover_code.acp.transport import LineTransport


class Sink:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.lines += [json.loads(line) for line in data.splitlines()]

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        self.closed = True


def transport(*lines: bytes) -> tuple[LineTransport, Sink]:
    reader = asyncio.StreamReader()
    for line in lines:
        reader.feed_data(line)
    reader.feed_eof()
    sink = Sink()
    return LineTransport(reader, sink), sink


async def test_messages_pass_and_bad_lines_get_errors() -> None:
    t, sink = transport(
        b"not json\n",
        b"\n",
        b"[1]\n",
        b'{"jsonrpc": "2.0", "method": 5}\n',
        b'{"jsonrpc": "2.0"}\n',
        b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}\n',
        b'{"jsonrpc": "2.0", "id": 0, "result": {}}',  # a reply; no newline before EOF
    )
    assert (await t.receive()) == {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    assert (await t.receive()) == {"jsonrpc": "2.0", "id": 0, "result": {}}
    assert await t.receive() is None
    assert [(m["id"], m["error"]["code"]) for m in sink.lines] == [
        (None, -32700),
        (None, -32600),
        (None, -32600),
        (None, -32600),
    ]
    await t.send({"jsonrpc": "2.0", "id": 1, "result": None})
    assert sink.lines[-1] == {"jsonrpc": "2.0", "id": 1, "result": None}
    await t.close()
    assert sink.closed
