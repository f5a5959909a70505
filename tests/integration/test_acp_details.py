"""ACP details: a new file through an editor that errors on missing files, a write
outside the workspace refused without asking, unanswered replayed calls marked failed.

A real ``clover-code acp`` subprocess over stdio, the harness's editor client
(whose ``fs/read_text_file`` answers "resource not found" for a missing file,
as editors do) and a scripted model server.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from acp import text_block

from clover_code import protocol as p
from clover_code.agent.transcript import Transcript, new_session_id
from tests.integration.sse_server import ScriptedServer
from tests.integration.test_acp import EDITOR_CAPS, EDITOR_INFO, sglang
from tests.integration.test_acp_harness import EditorClient, spawn_acp

pytestmark = pytest.mark.integration


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


def _statuses(client: EditorClient) -> list[str]:
    return [u.status for u in client.updates if u.session_update == "tool_call_update" and u.status]


async def _prompt(
    server: ScriptedServer, client: EditorClient, repo: Path, tmp_path: Path, call: dict[str, Any]
) -> str:
    server.enqueue(
        sglang(lambda s: s.tool_call("write_file", call)),
        sglang(lambda s: s.content("Done.")),
    )
    args = ("--base-url", server.base_url, "--sandbox", "none")
    async with spawn_acp(client, repo, tmp_path, *args) as (conn, _proc):
        await conn.initialize(
            protocol_version=1, client_capabilities=EDITOR_CAPS, client_info=EDITOR_INFO
        )
        new = await conn.new_session(cwd=str(repo), mcp_servers=[])
        done = await conn.prompt(session_id=new.session_id, prompt=[text_block("write it")])
    return str(done.stop_reason)


async def test_a_new_file_is_created_when_the_editor_errors_on_reading_it(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    client = EditorClient(permission_answers=["allow_once"])
    call = {"path": "new.py", "content": "print('hi')\n"}
    assert await _prompt(scripted_server, client, repo, tmp_path, call) == "end_turn"
    assert (repo / "new.py").read_text() == "print('hi')\n"
    # Asked, got an error (a new file); after the write, read back for the language server.
    assert client.reads == [str(repo / "new.py")] * 2
    [(asked, _options)] = client.permission_requests
    assert asked.content is not None and asked.content[0].old_text is None
    assert _statuses(client)[-1] == "completed"


async def test_a_write_outside_the_workspace_is_refused_without_asking(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    client = EditorClient(permission_answers=["allow_once"])
    call = {"path": str(outside), "content": "planted\n"}
    assert await _prompt(scripted_server, client, repo, tmp_path, call) == "end_turn"
    assert client.permission_requests == []
    assert not outside.exists() and client.writes == []
    assert _statuses(client)[-1] == "failed"
    sent = scripted_server.chat_requests[-1].json()["messages"]
    assert "outside the workspace" in str(sent[-1]["content"]), sent[-1]


async def test_replayed_calls_that_never_got_a_result_are_marked_failed(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    """A session whose process was killed during a tool call, loaded by the editor."""
    session_id = new_session_id()
    sessions = tmp_path / "data" / "clover-code" / "sessions"
    transcript = Transcript.create(sessions, {"id": session_id, "cwd": str(repo)})
    function = {"name": "shell", "arguments": '{"command": "sleep 100"}'}
    call: dict[str, Any] = {"id": "call-1", "type": "function", "function": function}
    transcript.message({"role": "user", "content": "run it"})
    transcript.event(
        p.ToolCallStarted(
            call_id="call-1",
            name="shell",
            kind="execute",
            arguments={"command": "sleep 100"},
            summary="sleep 100",
        ).model_dump(mode="json")
    )
    transcript.message({"role": "assistant", "content": "", "tool_calls": [call]})
    transcript.close()
    client = EditorClient()
    args = ("--base-url", scripted_server.base_url, "--sandbox", "none")
    async with spawn_acp(client, repo, tmp_path, *args) as (conn, _proc):
        await conn.initialize(
            protocol_version=1, client_capabilities=EDITOR_CAPS, client_info=EDITOR_INFO
        )
        await conn.load_session(cwd=str(repo), session_id=session_id, mcp_servers=[])
    mine = [u for u in client.updates if getattr(u, "tool_call_id", None) == "call-1"]
    assert mine, client.updates
    assert mine[-1].session_update == "tool_call_update" and mine[-1].status == "failed", mine
