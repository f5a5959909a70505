"""``clover-code acp`` in plan mode: the editor picks the mode, the model's edit is
refused without asking the editor, and its plan is the answer."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import text_block

from tests.integration.sse_server import ScriptedServer
from tests.integration.test_acp import EDITOR_CAPS, EDITOR_INFO, FIX, sglang
from tests.integration.test_acp_harness import EditorClient, spawn_acp

pytestmark = pytest.mark.integration


async def test_plan_mode_from_the_editor_refuses_edits(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    scripted_server.enqueue(
        sglang(lambda s: s.tool_call("edit_file", FIX)),
        sglang(lambda s: s.content("PLAN: make add return a + b.")),
    )
    client = EditorClient(permission_answers=[])
    args = ("--base-url", scripted_server.base_url, "--sandbox", "none")
    async with spawn_acp(client, repo, tmp_path, *args) as (conn, _proc):
        await conn.initialize(
            protocol_version=1, client_capabilities=EDITOR_CAPS, client_info=EDITOR_INFO
        )
        new = await conn.new_session(cwd=str(repo), mcp_servers=[])
        await conn.set_session_mode(session_id=new.session_id, mode_id="plan")
        done = await conn.prompt(session_id=new.session_id, prompt=[text_block("fix add")])
        assert done.stop_reason == "end_turn"
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"
    assert client.permission_requests == [] and client.writes == []
    tools = {t["function"]["name"] for t in scripted_server.chat_requests[0].json()["tools"]}
    assert "edit_file" not in tools and "read_file" in tools
    last = scripted_server.chat_requests[-1].json()["messages"]
    refusal = next(m["content"] for m in last if m["role"] == "tool")
    assert refusal.startswith("refused: plan mode changes nothing")
