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

from clover_code.config.settings import McpServerConfig
from clover_code.tools.base import ToolContext
from clover_code.tools.mcp import McpManager
from clover_code.tools.mcp_config import DeclaredServer, read_project_servers
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
    # The user vouches for shout being read-only (its own readOnlyHint is only a claim).
    async with McpManager(
        [good, bad, unset], root=tmp_path, read_only=["mcp__web__shout"]
    ) as manager:
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


OAUTH_SERVER = Path(__file__).with_name("mcp_oauth_server.py")


async def test_oauth_sign_in_through_the_sdk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server answers 401; the SDK's OAuth client registers, the "browser"
    (a script that follows the sign-in redirects) brings the code back to the
    loopback listener, and the tokens are kept for the next session."""
    import webbrowser

    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, str(OAUTH_SERVER), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the OAuth MCP server did not start"
                time.sleep(0.1)
        opened = tmp_path / "opened.txt"
        browser = tmp_path / "browser.sh"
        browser.write_text(
            '#!/bin/sh\necho "$1" >> "' + str(opened) + '"\n(curl -s -L -o /dev/null "$1" &)\n'
        )
        browser.chmod(0o755)
        webbrowser.register(
            "clover-test", None, webbrowser.GenericBrowser([str(browser), "%s"]), preferred=True
        )
        monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
        locked = _server(
            "locked", url=f"http://127.0.0.1:{port}/mcp", oauth=True, startup_timeout=60
        )
        for _session in range(2):
            async with McpManager([locked], root=tmp_path) as manager:
                assert manager.notices == []
                tool = manager.tools[0]
                assert tool.name == "mcp__locked__secret"
                ctx = ToolContext(workspace=Workspace(tmp_path))
                result = await tool.run(tool.Args.model_validate({}), ctx)
                assert result.text == "the vault is open"
        # Signed in once: the second session used the kept tokens.
        assert len(opened.read_text().splitlines()) == 1
        stored = list((tmp_path / "data" / "clover-code" / "mcp-oauth").iterdir())
        assert len(stored) == 1 and oct(stored[0].stat().st_mode & 0o777) == "0o600"
        assert "access_token" in stored[0].read_text()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
