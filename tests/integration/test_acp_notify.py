"""``clover-code acp`` runs the Notification hooks when the editor's user leaves a wait
for ``notify_after`` seconds: a permission request the editor shows, and the prompt after
a turn ends. A real agent subprocess over stdio, a real hook program."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp.schema import (
    ClientCapabilities,
    FileSystemCapabilities,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)

from tests.integration.sse_server import ScriptedServer, sse_response
from tests.integration.stream_shapes import SGLangStream
from tests.integration.test_acp_harness import EditorClient, spawn_acp
from tests.waiting import async_wait_until

pytestmark = pytest.mark.integration

CAPS = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=False
)
HOOK = "import sys\nopen(sys.argv[1], 'a').write(sys.stdin.read() + '\\n')\n"


class SlowEditor(EditorClient):
    """An editor whose user answers a permission request only once they were notified."""

    def __init__(self, notified: Path) -> None:
        super().__init__(permission_answers=["allow_once"])
        self.notified = notified

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        await async_wait_until(
            lambda: any(
                e["notification_type"] == "permission_prompt" for e in logged(self.notified)
            ),
            message="the Notification hook for the waiting approval",
        )
        return await super().request_permission(session_id, tool_call, options, **kwargs)


def logged(path: Path) -> list[dict[str, Any]]:
    text = path.read_text() if path.exists() else ""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


async def test_a_waiting_approval_and_an_idle_prompt_run_the_hooks(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    log = tmp_path / "notified.jsonl"
    (tmp_path / "hook.py").write_text(HOOK)
    config = tmp_path / "config" / "clover-code" / "config.toml"
    config.parent.mkdir(parents=True)
    hook = shlex.join([sys.executable, str(tmp_path / "hook.py"), str(log)])
    config.write_text(f"notify_after = 0.2\n[[hooks.Notification]]\ncommand = {json.dumps(hook)}\n")
    edit = {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}
    first, second = SGLangStream(), SGLangStream()
    first.tool_call("edit_file", edit)
    second.content("Fixed.")
    scripted_server.enqueue(sse_response(first.chunks()), sse_response(second.chunks()))
    client = SlowEditor(log)
    args = ("--base-url", scripted_server.base_url, "--sandbox", "none")
    async with spawn_acp(client, repo, tmp_path, *args) as (conn, _proc):
        await conn.initialize(protocol_version=1, client_capabilities=CAPS)
        session = await conn.new_session(cwd=str(repo), mcp_servers=[])
        done = await conn.prompt(session_id=session.session_id, prompt=[text_block("fix add")])
        assert done.stop_reason == "end_turn"
        await async_wait_until(
            lambda: (
                [e["notification_type"] for e in logged(log)]
                == ["permission_prompt", "idle_prompt"]
            ),
            message="the idle prompt's Notification hook",
        )
    permission, idle = logged(log)
    assert permission["hook_event_name"] == "Notification"
    assert permission["message"] == "clover-code needs your permission to use edit_file."
    assert permission["session_id"] == session.session_id and permission["cwd"] == str(repo)
    assert idle["message"] == "The turn finished; clover-code is waiting for your input."
