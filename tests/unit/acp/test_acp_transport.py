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


async def test_open_requests_are_tracked_and_the_rest_refused_at_the_end() -> None:
    t, sink = transport(
        b'{"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": {}}\n',
        b'{"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {}}\n',
        b'{"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {}}\n',
        b'{"jsonrpc": "2.0", "method": "session/cancel", "params": {}}\n',
        b'{"jsonrpc": "2.0", "id": 7, "result": {}}\n',  # the client answering the agent
    )
    while await t.receive() is not None:
        pass
    assert t.open_requests == [(1, "session/prompt"), (2, "session/new"), (2, "session/list")]
    assert not await t.settle(0.01)
    await t.send({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "cancelled"}})
    await t.send({"jsonrpc": "2.0", "id": 2, "result": {}})  # one of the two id-2 requests
    assert t.open_requests == [(2, "session/list")]
    await t.refuse_open("the input closed.")
    assert await t.settle(0.01)
    assert sink.lines[-1] == {
        "jsonrpc": "2.0",
        "id": 2,
        "error": {"code": -32800, "message": "session/list was not completed: the input closed."},
    }
    # A handler that answers after the refusal is not heard twice.
    count = len(sink.lines)
    await t.send({"jsonrpc": "2.0", "id": 2, "result": {}})
    assert len(sink.lines) == count
