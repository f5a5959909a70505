"""ACP: the agent offers HTTP MCP, and an editor's HTTP server joins the session
(a real SDK server on loopback, with a bearer token in the editor's headers)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from acp import text_block
from acp.schema import ClientCapabilities, HttpHeader, HttpMcpServer

from tests.integration.sse_server import ScriptedServer, sse_response
from tests.integration.stream_shapes import SGLangStream
from tests.integration.test_acp_harness import EditorClient, spawn_acp
from tests.integration.test_mcp_http import SERVER, TOKEN, _free_port
from tests.waiting import within

pytestmark = pytest.mark.integration


@pytest.fixture
async def mcp_port() -> AsyncIterator[int]:
    """A real MCP server over streamable HTTP (bearer token required), listening."""
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, str(SERVER), str(port), "--token", TOKEN],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    async def listening() -> None:
        while True:
            assert server.poll() is None, "the MCP HTTP server exited"
            try:
                _reader, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                await asyncio.sleep(0.1)
                continue
            writer.close()
            return

    try:
        await within(listening(), message="the MCP HTTP server to listen")
        yield port
    finally:
        server.terminate()
        server.wait(timeout=10)


async def test_an_editors_http_mcp_server_joins_the_session(
    scripted_server: ScriptedServer, tmp_path: Path, mcp_port: int
) -> None:
    port = mcp_port
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    for build in (
        lambda s: s.tool_call("mcp__web__add", {"a": 40, "b": 2}),
        lambda s: s.content("It is 42."),
    ):
        stream = SGLangStream()
        build(stream)
        scripted_server.enqueue(sse_response(stream.chunks()))
    client = EditorClient()
    args = ("--base-url", scripted_server.base_url, "--approval", "full-auto")
    async with spawn_acp(client, repo, tmp_path, *args) as (conn, _proc):
        init = await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        caps = init.agent_capabilities
        assert caps is not None and caps.mcp_capabilities is not None
        assert caps.mcp_capabilities.http is True and caps.mcp_capabilities.sse is True
        web = HttpMcpServer(
            name="web",
            url=f"http://127.0.0.1:{port}/mcp",
            headers=[HttpHeader(name="Authorization", value=f"Bearer {TOKEN}")],
            type="http",
        )

        new = await conn.new_session(cwd=str(repo), mcp_servers=[web])
        done = await conn.prompt(session_id=new.session_id, prompt=[text_block("add them")])
    assert done.stop_reason == "end_turn"
    first = scripted_server.chat_requests[0].json()
    assert {t["function"]["name"] for t in first["tools"]} >= {"mcp__web__add", "mcp__web__shout"}
    result = scripted_server.chat_requests[1].json()["messages"][-1]
    assert result["role"] == "tool" and result["content"] == "42"
