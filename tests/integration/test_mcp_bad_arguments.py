"""Hostile arguments for MCP tools (a real stdio server), through the real agent loop.

The same fuzz as the built-in tools get (``tests/unit/agent/turn/test_tool_arguments.py``),
over the schemas a real MCP server declares: every case is a failed tool
result (refused before anything is sent to the server) and the session goes on.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from clover_code import protocol as p
from clover_code.config.load import load_settings
from clover_code.config.settings import McpServerConfig
from tests.fakes import ScriptedBackend
from tests.sessions import open_session
from tests.unit.agent.turn.test_tool_arguments import fuzz_tool

SERVER = Path(__file__).with_name("mcp_echo_server.py")
VALID: dict[str, dict[str, Any]] = {
    "mcp__echo__echo": {"text": "hi", "times": 2},
    "mcp__echo__add": {"a": 1, "b": 2},
}

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


async def test_hostile_arguments_for_mcp_tools_fail_the_call_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    settings = load_settings(
        {
            "sessions_dir": tmp_path / "sessions",
            "sandbox": "none",
            "tool_retries": 1,
            "mcp_servers": {
                "echo": McpServerConfig(command=sys.executable, args=[str(SERVER)]),
            },
        },
        user_config=tmp_path / "no-user-config.toml",
        env={},
    )
    events: list[p.Event] = []
    backend = ScriptedBackend([])
    session = await open_session(settings, backend, repo, events, approval_mode="full-auto")
    session.checkpoints = None  # undo snapshots are not under test
    try:
        tools = session.agent.dispatch.tools
        assert set(VALID) <= set(tools), sorted(tools)
        for name, base in VALID.items():
            await fuzz_tool(session, backend, events, tools[name], base)
    finally:
        await session.close()
    assert not [e for e in events if isinstance(e, p.ErrorEvent)]
