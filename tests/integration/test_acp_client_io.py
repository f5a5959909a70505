"""The editor-facing helpers against the test editor client, and ``--terminal`` end to end.

``EditorFiles``, ``EditorApprover`` and ``EditorTerminal`` are driven with
the harness's ``EditorClient`` (a real client implementation, no
connection in between); the last test runs ``clover-code acp --terminal``
as a subprocess and checks that shell commands run in the editor's
terminals, with the working directory carried over.
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block
from acp.schema import ClientCapabilities, ReadTextFileResponse

from clover_code.acp.client import EditorApprover, EditorFiles, Outbox
from clover_code.acp.terminal import EditorTerminal
from clover_code.agent.permissions.approval import ApprovalRequest
from clover_code.errors import ToolError
from clover_code.tools.edit_file import edit_text
from clover_code.tools.workspace import Workspace
from tests.integration.sse_server import ScriptedServer, sse_response
from tests.integration.stream_shapes import SGLangStream
from tests.integration.test_acp_harness import EditorClient, spawn_acp

pytestmark = pytest.mark.integration


class SilentEditor(EditorClient):
    """Never answers reads; refuses writes."""

    async def read_text_file(self, session_id: str, path: str, **kwargs: Any) -> Any:
        await asyncio.Event().wait()

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> Any:
        raise RequestError(-32603, "Internal error", {"details": "buffer is read-only"})


def outbox(client: EditorClient) -> Outbox:
    box = Outbox(client)
    box.start("s1")
    return box


async def test_editor_files_read_and_write_through_the_editor(tmp_path: Path) -> None:
    client = EditorClient()
    (tmp_path / "m.py").write_text("x = 1\n")
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01binary")
    files = EditorFiles(client, outbox(client), asyncio.get_running_loop(), read=True, write=True)
    ws = Workspace(tmp_path)
    result = await asyncio.to_thread(edit_text, ws, "m.py", "x = 1", "x = 2", False, files)
    assert (tmp_path / "m.py").read_text() == "x = 2\n"
    assert client.reads == [str(tmp_path / "m.py")]
    assert client.writes == [(str(tmp_path / "m.py"), "x = 2\n")]
    assert files.take_edit(tmp_path / "m.py") == ("x = 1\n", "x = 2\n")
    assert files.take_edit(tmp_path / "m.py") is None
    assert "Edited m.py" in result.text
    # Binary files are read from disk (an editor cannot hand them over as text).
    handle = await asyncio.to_thread(files.open_read, tmp_path / "blob.bin")
    assert handle.read().startswith(b"\x00") and client.reads == [str(tmp_path / "m.py")]
    with pytest.raises(RuntimeError, match="worker thread"):
        files.open_read(tmp_path / "m.py")


async def test_editor_files_turn_silence_and_refusal_into_tool_errors(tmp_path: Path) -> None:
    client = SilentEditor()
    (tmp_path / "m.py").write_text("x = 1\n")
    loop = asyncio.get_running_loop()
    files = EditorFiles(client, outbox(client), loop, read=True, write=True, timeout=0.2)
    with pytest.raises(ToolError, match=r"did not answer the request to read .* within 0\.2 s"):
        await asyncio.to_thread(files.open_read, tmp_path / "m.py")
    with pytest.raises(ToolError, match=r"could not write .*buffer is read-only"):
        await asyncio.to_thread(files.write_bytes, tmp_path / "m.py", b"y")


async def test_editor_approver_maps_each_answer() -> None:
    client = EditorClient(["allow_always", "allow_always", "reject_once", "cancelled"])
    allowed_edits: list[bool] = []

    async def allow_edits() -> None:
        allowed_edits.append(True)

    approver = EditorApprover(client, outbox(client), allow_edits=allow_edits)
    run = ApprovalRequest(
        "c1", "shell", "execute", "git status", {"command": "git status"}, "git status"
    )
    edit = ApprovalRequest("c2", "write_file", "edit", "a.py", {"path": "a.py"}, None)
    always_run = await approver.request(run)
    assert always_run.allowed and always_run.remember_prefix == "git status"
    always_edit = await approver.request(edit)
    assert always_edit.allowed and allowed_edits == [True]
    rejected = await approver.request(run)
    assert not rejected.allowed and "rejected" in (rejected.feedback or "")
    cancelled = await approver.request(run)
    assert not cancelled.allowed and "cancelled" in (cancelled.feedback or "")
    names = [o.name for o in client.permission_requests[0][1]]
    assert names == ["Allow once", "Always allow `git status` commands", "Reject"]
    assert client.permission_requests[1][0].title == "Write a.py"


async def test_editor_terminal_runs_commands_and_keeps_the_directory(tmp_path: Path) -> None:
    client = EditorClient()
    seen: list[str] = []
    terminal = EditorTerminal(client, outbox(client), tmp_path, on_terminal=seen.append)
    first = await terminal.exec("mkdir -p sub && cd sub && echo made", timeout=20)
    assert (first.exit_code, first.output) == (0, "made\n")
    second = await terminal.exec("pwd; exit 3", timeout=20)
    assert second.exit_code == 3 and second.output.strip().endswith("/sub")
    slow = await terminal.exec("sleep 30", timeout=0.5)
    assert slow.timed_out and slow.exit_code is None
    assert seen == ["term-1", "term-2", "term-3"]
    assert client.terminal_commands[0][:2] == ["bash", "-c"]


async def test_acp_terminal_flag_runs_shell_in_the_editor(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    for build in (
        lambda s: s.tool_call("shell", {"command": "echo from-the-editor"}),
        lambda s: s.content("Done."),
    ):
        stream = SGLangStream()
        build(stream)
        scripted_server.enqueue(sse_response(stream.chunks()))
    client = EditorClient()
    args = ("--base-url", scripted_server.base_url, "--terminal", "--approval", "full-auto")
    async with spawn_acp(client, repo, tmp_path, *args) as (conn, _proc):
        await conn.initialize(
            protocol_version=1, client_capabilities=ClientCapabilities(terminal=True)
        )
        new = await conn.new_session(cwd=str(repo), mcp_servers=[])
        done = await conn.prompt(session_id=new.session_id, prompt=[text_block("run it")])
    assert done.stop_reason == "end_turn"
    assert client.terminal_commands and "echo from-the-editor" in client.terminal_commands[0][2]
    ends = [u for u in client.updates if u.session_update == "tool_call_update" and u.content]
    assert [c.type for c in ends[-1].content] == ["terminal"]
    assert ends[-1].status == "completed"
    tool_result = scripted_server.chat_requests[1].json()["messages"][-1]["content"]
    assert "from-the-editor" in tool_result and "exit code 0" in tool_result


async def test_read_text_file_response_is_what_the_tools_see(tmp_path: Path) -> None:
    class UnsavedBuffer(EditorClient):
        async def read_text_file(self, session_id: str, path: str, **kwargs: Any) -> Any:
            return ReadTextFileResponse(content="unsaved = True\n")

    client = UnsavedBuffer()
    (tmp_path / "m.py").write_text("saved = True\n")
    files = EditorFiles(client, outbox(client), asyncio.get_running_loop(), read=True, write=False)
    handle = await asyncio.to_thread(files.open_read, tmp_path / "m.py")
    assert handle.read() == b"unsaved = True\n"
