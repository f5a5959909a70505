"""MCP client against a real stdio MCP server (``mcp_echo_server.py``, the SDK's server side).

One manager start brings up the echo server together with two that cannot
start (a crashing one and a missing program), since every start pays for the
SDK's import time. Tools are driven the way the turn loop drives them:
``Args.model_validate`` on the model's arguments, then ``run``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from pydantic import ValidationError

from clover_code.config.load import load_settings
from clover_code.config.settings import McpServerConfig, Settings
from clover_code.errors import ToolError
from clover_code.tools.base import Tool, ToolContext
from clover_code.tools.mcp import McpManager, tool_name
from clover_code.tools.mcp_config import DeclaredServer, declared_servers, read_project_servers
from clover_code.tools.workspace import Workspace

SERVER = Path(__file__).with_name("mcp_echo_server.py")


@pytest.fixture
def make_settings(tmp_path: Path) -> Callable[..., Settings]:
    """Settings isolated from the user's config and environment."""

    def make(**overrides: object) -> Settings:
        return load_settings(overrides, user_config=tmp_path / "no-user-config.toml", env={})

    return make


def _server_children() -> list[int]:
    """Live child processes of this test process that run the echo server (Linux)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and fields[0] != "Z" and str(SERVER).encode() in cmdline:
            found.append(int(stat.parent.name))
    return found


def _write_mcp_json(root: Path, servers: dict[str, object]) -> None:
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))


async def _call(tool: Tool, ctx: ToolContext, **arguments: object) -> tuple[str, bool]:
    result = await tool.run(tool.Args.model_validate(arguments), ctx)
    return result.text, result.is_error


@pytest.fixture
async def started(
    tmp_path: Path, make_settings: Callable[..., Settings]
) -> AsyncIterator[tuple[McpManager, list[str]]]:
    root = tmp_path / "work"
    root.mkdir()
    _write_mcp_json(
        root,
        {
            "echo": {"command": sys.executable, "args": [str(SERVER)], "someOtherAgentKey": 1},
            "crashy": {"command": sys.executable, "args": [str(SERVER), "--crash"]},
        },
    )
    settings = make_settings(
        mcp_project="trust",
        mcp_servers={
            "ghost": McpServerConfig(command="clover-no-such-program"),
            "stuck": McpServerConfig(
                command=sys.executable, args=[str(SERVER), "--hang"], startup_timeout=1.0
            ),
        },
    )
    servers, notices = declared_servers(settings, root)
    assert notices == []
    # Long enough for a healthy call on a busy machine; the slow tool sleeps far longer.
    manager = McpManager(servers, root=root, call_timeout=10.0, project_policy="trust")
    notices = await manager.start()
    try:
        yield manager, notices
    finally:
        await manager.aclose()


@pytest.mark.integration
@pytest.mark.timeout(120)
async def test_round_trip_with_a_stdio_server(
    started: tuple[McpManager, list[str]], tmp_path: Path
) -> None:
    manager, notices = started
    ctx = ToolContext(workspace=Workspace(tmp_path))
    tools = {tool.name: tool for tool in manager.tools}

    assert sorted(tools) == [
        "mcp__echo__add",
        "mcp__echo__echo",
        "mcp__echo__fail",
        "mcp__echo__lookup",
        "mcp__echo__slow",
    ]
    echo = tools["mcp__echo__echo"]
    # Its readOnlyHint is the server's claim: only the user's mcp_read_only makes it "read".
    assert echo.kind == "execute" and tools["mcp__echo__add"].kind == "execute"
    spec = echo.spec()
    assert spec.parameters["required"] == ["text"]
    assert "Repeat the text." in spec.description and "'echo'" in spec.description
    assert manager.describe() == [
        "echo: mcp__echo__echo, mcp__echo__add, mcp__echo__slow, mcp__echo__lookup, mcp__echo__fail"
    ]

    assert await _call(echo, ctx, text="hi", times=3) == ("hihihi", False)
    assert await _call(tools["mcp__echo__add"], ctx, a=2, b=3) == ("5", False)
    text, is_error = await _call(tools["mcp__echo__fail"], ctx, reason="disk on fire")
    assert is_error and "disk on fire" in text

    # Arguments are checked against the server's schema before anything is sent.
    with pytest.raises(ValidationError, match="'text' is a required property"):
        echo.Args.model_validate({"times": 2})
    with pytest.raises(ValidationError, match="times: 'x' is not of type 'integer'"):
        echo.Args.model_validate({"text": "a", "times": "x"})

    # A slow call ends with a clear error, and the server still answers after it.
    with pytest.raises(ToolError, match=r"did not answer within 10 s"):
        await _call(tools["mcp__echo__slow"], ctx, seconds=600)
    assert await _call(echo, ctx, text="ok") == ("ok", False)

    # Servers that cannot start are reported in one sentence each and skipped.
    assert len(notices) == 3, notices
    crash = next(n for n in notices if "'crashy'" in n)
    assert "failed to start" in crash and "ECHO_TOKEN is not set" in crash
    ghost = next(n for n in notices if "'ghost'" in n)
    assert "'clover-no-such-program' was not found" in ghost
    stuck = next(n for n in notices if "'stuck'" in n)
    assert "it did not answer within 1 s" in stuck

    assert len(_server_children()) == 1
    await manager.aclose()
    assert manager.tools == []
    assert _server_children() == []  # the server process was ended
    with pytest.raises(ToolError, match="'echo' is not running"):
        await _call(echo, ctx, text="late")


async def test_project_servers_wait_for_trust(
    tmp_path: Path, make_settings: Callable[..., Settings]
) -> None:
    _write_mcp_json(tmp_path, {"echo": {"command": sys.executable, "args": [str(SERVER)]}})

    def settings(**kw: bool) -> Settings:
        values = {"sessions_dir": tmp_path / "sessions", "sandbox": "none"}
        none = tmp_path / "no-user-config.toml"
        return load_settings(values, repo_root=tmp_path, user_config=none, env={}, **kw)

    # untrusted content: not declared, and the settings' one notice names the file
    untrusted = settings()
    servers, notices = declared_servers(untrusted, tmp_path)
    assert servers == [] and notices == []
    notice = untrusted.project_trust.notice() if untrusted.project_trust else None
    assert notice is not None and str(tmp_path / ".mcp.json") in notice
    assert "mcpServers (echo)" in notice
    # trusted (--trust-project): declared as a trusted project server, and it starts
    servers, notices = declared_servers(settings(trust_project=True), tmp_path)
    assert [(s.name, s.project, s.trusted) for s in servers] == [("echo", True, True)]
    async with McpManager(servers, root=tmp_path, call_timeout=3.0) as manager:
        assert tool_name("echo", "echo") in [t.name for t in manager.tools]
    ignored, notices = declared_servers(make_settings(mcp_project="ignore"), tmp_path)
    assert ignored == [] and notices == []


async def test_an_untrusted_project_server_is_only_started_when_approved(
    tmp_path: Path,
) -> None:
    asked: list[str] = []

    async def refuse(server: DeclaredServer) -> bool:
        asked.append(server.name)
        return False

    config = McpServerConfig(command=sys.executable, args=[str(SERVER)])
    path = str(tmp_path / ".mcp.json")
    servers = [DeclaredServer("echo", config, path, project=True)]
    async with McpManager(servers, root=tmp_path, approve=refuse) as manager:
        assert asked == ["echo"] and manager.tools == []
        assert manager.notices == [
            f"MCP server 'echo' of {path} was not started; "
            'set mcp_project = "trust" in your config to start project servers.'
        ]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "is not valid JSON (Expecting property name enclosed in double quotes"),
        ("[1, 2]", 'has no "mcpServers" object'),
        ('{"mcpServers": []}', 'has no "mcpServers" object'),
        ('{"mcpServers": {"a": 3}}', "MCP server 'a' in {path} is not a JSON object"),
        (
            '{"mcpServers": {"a": {"args": ["x"]}}}',
            "has a problem (a stdio server needs a command)",
        ),
        ('{"mcpServers": {"a": {"command": "x", "args": "y"}}}', "has a bad 'args'"),
        (
            '{"mcpServers": {"a": {"type": "ws", "url": "ws://x.invalid"}}}',
            "unknown transport 'ws'",
        ),
        ('{"mcpServers": {"a": {"type": "sse", "command": "x"}}}', "an sse server needs a url"),
        ('{"mcpServers": {"a": {"url": "file:///x"}}}', "is not an http:// or https:// address"),
        ('{"mcpServers": {"a": {"command": "${CLOVER_TEST_UNSET}"}}}', "CLOVER_TEST_UNSET"),
        (b"\xff\xfe", "cannot be read (it is not UTF-8)"),
    ],
)
def test_a_broken_mcp_json_is_one_sentence(
    tmp_path: Path, content: str | bytes, expected: str
) -> None:
    path = tmp_path / ".mcp.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())

    servers, notices = read_project_servers(path, environ={})

    assert servers == []
    assert len(notices) == 1
    assert expected.format(path=path) in notices[0]
    assert notices[0].count(". ") == 0 and notices[0].endswith(".")


def test_good_servers_survive_a_bad_sibling_and_variables_expand(tmp_path: Path) -> None:
    path = tmp_path / ".mcp.json"
    entries = {
        "bad": {"command": 42},
        "good": {
            "command": "${TOOL_HOME}/bin/server",
            "args": ["--key", "${API_KEY:-none}"],
            "env": {"TOKEN": "${TOKEN}"},
        },
    }
    path.write_text(json.dumps({"mcpServers": entries}))

    servers, notices = read_project_servers(path, environ={"TOOL_HOME": "/opt/t", "TOKEN": "s"})

    assert [s.name for s in servers] == ["good"]
    config = servers[0].config
    assert config.command == "/opt/t/bin/server"
    assert config.args == ["--key", "none"] and config.env == {"TOKEN": "s"}
    assert len(notices) == 1 and "'bad'" in notices[0]


def test_settings_server_wins_over_a_project_one(
    tmp_path: Path, make_settings: Callable[..., Settings]
) -> None:
    _write_mcp_json(tmp_path, {"docs": {"command": "evil"}})
    settings = make_settings(
        mcp_project="trust", mcp_servers={"docs": McpServerConfig(command="good")}
    )

    servers, notices = declared_servers(settings, tmp_path)

    assert [(s.name, s.config.command, s.project) for s in servers] == [("docs", "good", False)]
    assert "also in your settings" in notices[0]


def test_tool_names_are_safe_and_short() -> None:
    assert tool_name("git hub", "search.code") == "mcp__git_hub__search_code"
    long = tool_name("server" * 10, "tool" * 10)
    assert len(long) == 64 and long.startswith("mcp__serverserver")
    assert long != tool_name("server" * 10, "tool" * 10 + "x")
