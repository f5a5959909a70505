"""``clover-code mcp-server`` driven by the official MCP SDK's client over stdio,
with the scripted model server as the model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.integration.sse_server import ScriptedServer, sse_response
from tests.integration.stream_shapes import SGLangStream

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def sglang(build: Any) -> Any:
    stream = SGLangStream()
    build(stream)
    return sse_response(stream.chunks())


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "README.md").write_text("# demo\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"],
        cwd=root,
        check=True,
    )
    return root


def _params(server: ScriptedServer, home: Path, *flags: str) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOVER_")}
    env.update(
        XDG_DATA_HOME=str(home / "data"),
        XDG_CONFIG_HOME=str(home / "config"),
        PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    )
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "clover_code", "mcp-server", "--base-url", server.base_url, *flags],
        env=env,
        cwd=home,
    )


async def test_run_a_task_then_continue_the_session(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    scripted_server.enqueue(
        sglang(lambda s: s.tool_call("write_file", {"path": "hello.txt", "content": "hi\n"})),
        sglang(lambda s: s.content("Wrote hello.txt.")),
        # The continued session: the model tries to edit, which nobody can approve.
        sglang(lambda s: s.tool_call("write_file", {"path": "second.txt", "content": "x\n"})),
        sglang(lambda s: s.content("Could not write second.txt.")),
    )
    async with Client(_params(scripted_server, tmp_path, "--sandbox", "none")) as client:
        listed = await client.list_tools()
        assert {t.name for t in listed.tools} >= {"run_task", "continue_session"}
        first = await client.call_tool(
            "run_task", {"prompt": "create hello.txt", "cwd": str(repo), "sandbox": "none"}
        )
        assert not first.is_error, first
        outcome = first.structured_content
        assert outcome is not None
        assert outcome["status"] == "success" and outcome["exit_code"] == 0
        assert outcome["result"] == "Wrote hello.txt."
        assert (repo / "hello.txt").read_text() == "hi\n"
        patch = outcome["patch"]
        assert "diff --git a/hello.txt b/hello.txt" in patch and "+hi" in patch
        assert "README" not in patch  # only what the run changed
        session_id = outcome["session_id"]
        assert session_id

        second = await client.call_tool(
            "continue_session",
            {"session_id": session_id, "prompt": "also second.txt", "approval": "ask"},
        )
        outcome = second.structured_content
        assert outcome is not None and outcome["status"] == "success", outcome
        assert outcome["session_id"] == session_id
        assert outcome["patch"] == "" and not (repo / "second.txt").exists()
    # The refusal reached the model as the tool result, as in headless mode.
    refused = scripted_server.chat_requests[3].json()["messages"][-1]
    assert refused["role"] == "tool" and "headless mode cannot ask" in refused["content"]
    # The continued session carried the first task's conversation.
    texts = [m.get("content") for m in scripted_server.chat_requests[2].json()["messages"]]
    assert "create hello.txt" in str(texts)


async def test_requests_leave_no_library_log_lines_on_stderr(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    scripted_server.enqueue(sglang(lambda s: s.content("Nothing to do.")))
    params = _params(scripted_server, tmp_path, "--sandbox", "none")
    errlog = tmp_path / "server-stderr.txt"
    with errlog.open("w") as err_file:
        async with Client(stdio_client(params, errlog=err_file)) as client:
            done = await client.call_tool(
                "run_task", {"prompt": "look", "cwd": str(repo), "sandbox": "none"}
            )
            assert not done.is_error, done
    err = errlog.read_text()
    assert len(scripted_server.chat_requests) == 1
    assert "HTTP Request" not in err and "INFO" not in err, err


async def test_a_bad_directory_is_one_sentence(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    async with Client(_params(scripted_server, tmp_path)) as client:
        result = await client.call_tool("run_task", {"prompt": "x", "cwd": "relative/dir"})
        outcome = result.structured_content
        assert outcome is not None and outcome["status"] == "error"
        assert "not an absolute path" in outcome["error"]
        missing = await client.call_tool("continue_session", {"session_id": "nope", "prompt": "x"})
        assert missing.structured_content is not None
        assert "no session 'nope'" in missing.structured_content["error"]
    assert scripted_server.chat_requests == []


async def test_a_call_cannot_ask_for_more_than_the_server_was_started_with(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    async with Client(_params(scripted_server, tmp_path)) as client:
        looser = await client.call_tool(
            "run_task", {"prompt": "x", "cwd": str(repo), "approval": "full-auto"}
        )
        assert looser.structured_content is not None
        assert "looser than this server allows ('auto-edit')" in looser.structured_content["error"]
        host = await client.call_tool(
            "run_task", {"prompt": "x", "cwd": str(repo), "sandbox": "none"}
        )
        assert host.structured_content is not None
        assert "--sandbox none" in host.structured_content["error"]
    assert scripted_server.chat_requests == []
