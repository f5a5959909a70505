"""``clover-code acp`` end to end: a real subprocess over real stdio, the SDK's client side.

The model is a scripted SGLang-shaped SSE server on loopback. One editor
session: initialize, session/new, a prompt whose edit is rejected and then
allowed and lands through ``fs/write_text_file``, a second prompt cancelled
mid-stream, then a fresh agent process lists the stored sessions and loads
this one back. The whole
JSON-RPC message sequence is compared with ``golden/acp_session.json``
(``UPDATE_GOLDEN=1`` rewrites it after an intended change).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation

from tests.integration.sse_server import ScriptedResponse, ScriptedServer, sse_response
from tests.integration.stream_shapes import SGLangStream
from tests.integration.test_acp_harness import EditorClient, Wire, check_golden, spawn_acp
from tests.waiting import within

pytestmark = pytest.mark.integration

EDITOR_CAPS = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=False
)
EDITOR_INFO = Implementation(name="test-editor", version="1.0")
FIX = {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}


def sglang(build: Callable[[SGLangStream], Any], *, hold: bool = False) -> ScriptedResponse:
    stream = SGLangStream()
    build(stream)
    chunks = stream.chunks()
    if hold:
        # Stream the blocks, then keep the response open: a model still working.
        return sse_response(chunks[:-2], hold=True)
    return sse_response(chunks)


async def test_session_edit_permission_cancel_and_load(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    scripted_server.enqueue(
        sglang(lambda s: (s.reasoning("The sign is wrong."), s.tool_call("edit_file", FIX))),
        sglang(lambda s: (s.content("Trying again."), s.tool_call("edit_file", FIX))),
        sglang(lambda s: s.content("Fixed `add`: ", "it adds now.")),
        sglang(lambda s: s.content("Writing tests", " for add…"), hold=True),
    )
    wire = Wire()
    client = EditorClient(permission_answers=["reject_once", "allow_once"])
    args = ("--base-url", scripted_server.base_url, "--sandbox", "none")
    async with spawn_acp(client, repo, tmp_path, *args, wire=wire) as (conn, proc):
        init = await conn.initialize(
            protocol_version=1, client_capabilities=EDITOR_CAPS, client_info=EDITOR_INFO
        )
        assert init.agent_capabilities is not None and init.agent_capabilities.load_session
        new = await conn.new_session(cwd=str(repo), mcp_servers=[])
        session_id = new.session_id
        assert new.modes is not None and new.modes.current_mode_id == "ask"
        offered = [m.id for m in new.modes.available_modes]
        assert offered == ["read-only", "plan", "ask", "auto-edit", "sandbox-auto", "full-auto"]

        done = await conn.prompt(session_id=session_id, prompt=[text_block("Fix add in calc.py")])
        assert done.stop_reason == "end_turn"
        # The edit went through the editor, after one rejection and one approval.
        assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
        assert client.writes == [(str(repo / "calc.py"), "def add(a, b):\n    return a + b\n")]
        assert [o.option_id for o in client.permission_requests[0][1]] == [
            "allow_once",
            "allow_always",
            "reject_once",
        ]
        # Each permission request shows the change the edit would make, as a diff the
        # editor draws (the editor's own file text before, the edited text after).
        for asked, _options in client.permission_requests:
            assert asked.content is not None and len(asked.content) == 1
            change = asked.content[0]
            assert change.type == "diff" and change.path == str(repo / "calc.py")
            assert change.old_text == "def add(a, b):\n    return a - b\n"
            assert change.new_text == "def add(a, b):\n    return a + b\n"
        ends = [u for u in client.updates if u.session_update == "tool_call_update" and u.status]
        assert [u.status for u in ends] == ["failed", "in_progress", "completed"]
        diff = ends[-1].content[0]
        assert diff.type == "diff" and diff.old_text.endswith("a - b\n")
        assert diff.new_text.endswith("a + b\n")

        running = asyncio.create_task(
            conn.prompt(session_id=session_id, prompt=[text_block("Now add tests")])
        )
        await client.wait_for(
            lambda: client.message_text().endswith("for add…"), message="the streamed answer"
        )
        await conn.cancel(session_id=session_id)
        cancelled = await within(running, message="the cancelled prompt to answer")
        assert cancelled.stop_reason == "cancelled"
        assert await scripted_server.wait_for_disconnect(), "the model request was not abandoned"
    assert proc.returncode == 0

    # A fresh agent process (the editor restarted) loads the session back.
    replayed = EditorClient()
    async with spawn_acp(replayed, repo, tmp_path, *args, wire=wire) as (conn, proc):
        await conn.initialize(
            protocol_version=1, client_capabilities=EDITOR_CAPS, client_info=EDITOR_INFO
        )
        listed = await conn.list_sessions(cwd=str(repo))
        assert [(i.session_id, i.title) for i in listed.sessions] == [
            (session_id, "Fix add in calc.py")
        ]
        loaded = await conn.load_session(cwd=str(repo), session_id=session_id, mcp_servers=[])
        assert loaded is not None and loaded.modes is not None
    assert proc.returncode == 0
    kinds = [u.session_update for u in replayed.updates]
    assert kinds.count("user_message_chunk") == 2
    assert "Writing tests for add…" in replayed.message_text()

    messages = wire.normalized({str(repo): "<repo>", session_id: "<session>"})
    for message in messages:
        for info in message["msg"].get("result", {}).get("sessions", []):
            info["updatedAt"] = "<time>"
    check_golden("acp_session.json", messages)
    transcript = tmp_path / "data" / "clover-code" / "sessions" / f"{session_id}.jsonl"
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    statuses = [
        r["event"]["status"]
        for r in records
        if r["kind"] == "event" and r["event"]["type"] == "turn_finished"
    ]
    assert statuses == ["completed", "interrupted"]
