"""MCP client over streamable HTTP and SSE, against a real SDK server on loopback
(``mcp_http_server.py``), with a bearer token from the environment."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from clover_code.agent.mcp_config import DeclaredServer, read_project_servers
from clover_code.config import McpServerConfig
from clover_code.tools.base import ToolContext
from clover_code.tools.mcp import McpManager
from clover_code.tools.workspace import Workspace

SERVER = Path(__file__).with_name("mcp_http_server.py")
TOKEN = "s3cret-token"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def start_server() -> Iterator[Callable[..., int]]:
    procs: list[subprocess.Popen[bytes]] = []

    def start(*flags: str) -> int:
        port = _free_port()
        cmd = [sys.executable, str(SERVER), str(port), "--token", TOKEN, *flags]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        procs.append(proc)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return port
            except OSError:
                time.sleep(0.1)
        raise AssertionError("the MCP HTTP server did not start")

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=10)


def _server(name: str, **config: object) -> DeclaredServer:
    return DeclaredServer(name, McpServerConfig.model_validate(config), "settings")


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_tools_of_an_http_server(
    tmp_path: Path,
    start_server: Callable[..., int],
    monkeypatch: pytest.MonkeyPatch,
    transport: str,
) -> None:
    port = start_server(*(["--sse"] if transport == "sse" else []))
    path = "/sse" if transport == "sse" else "/mcp"
    monkeypatch.setenv("CLOVER_TEST_MCP_TOKEN", TOKEN)
    good = _server(
        "web",
        type=transport,
        url=f"http://127.0.0.1:{port}{path}",
        headers={"Authorization": "Bearer ${CLOVER_TEST_MCP_TOKEN}"},
        startup_timeout=30,
    )
    bad = _server(
        "nokey",
        type=transport,
        url=f"http://127.0.0.1:{port}{path}",
        headers={"Authorization": "Bearer wrong"},
        startup_timeout=15,
    )
    unset = _server(
        "unset",
        url=f"http://127.0.0.1:{port}{path}",
        headers={"Authorization": "Bearer ${CLOVER_TEST_UNSET_VAR}"},
    )
    async with McpManager([good, bad, unset], root=tmp_path) as manager:
        tools = {t.name: t for t in manager.tools}
        assert set(tools) == {"mcp__web__shout", "mcp__web__add"}
        assert tools["mcp__web__shout"].kind == "read"
        assert tools["mcp__web__add"].kind == "execute"
        ctx = ToolContext(workspace=Workspace(tmp_path))
        shout = tools["mcp__web__shout"]
        result = await shout.run(shout.Args.model_validate({"text": "hi"}), ctx)
        assert result.text == "HI!" and not result.is_error
        add = tools["mcp__web__add"]
        result = await add.run(add.Args.model_validate({"a": 2, "b": 40}), ctx)
        assert result.text == "42"
        notices = " ".join(manager.notices)
        assert "MCP server 'nokey' failed to start" in notices
        assert "MCP server 'unset' failed to start" in notices
        assert "CLOVER_TEST_UNSET_VAR" in notices


def test_mcp_json_declares_http_servers(tmp_path: Path) -> None:
    path = tmp_path / ".mcp.json"
    path.write_text(
        '{"mcpServers": {"a": {"type": "http", "url": "https://x.example/mcp",'
        ' "headers": {"Authorization": "Bearer ${T}"}},'
        ' "b": {"type": "sse", "url": "https://x.example/sse"},'
        ' "c": {"url": "https://x.example/mcp", "type": "streamable-http"}}}'
    )
    servers, notices = read_project_servers(path, environ={"T": "tok"})
    assert notices == []
    got = {s.name: (s.config.type, s.config.url, s.config.headers) for s in servers}
    assert got == {
        "a": ("http", "https://x.example/mcp", {"Authorization": "Bearer tok"}),
        "b": ("sse", "https://x.example/sse", {}),
        "c": ("http", "https://x.example/mcp", {}),
    }
    assert all(s.project for s in servers)


def test_the_environment_stays_out_of_the_test() -> None:
    assert "CLOVER_TEST_UNSET_VAR" not in os.environ
