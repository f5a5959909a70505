"""An MCP tool's ``readOnlyHint`` is the server's claim: it does not make the tool safe to run.

The real echo server (``mcp_echo_server.py``) offers ``lookup``, which says it
only reads and runs a program. In plan and read-only modes it must be
refused (nothing asks in headless; the program never runs) unless the user's
own config vouches for the tool or its server (``mcp_read_only``); a project
file that vouches counts only once trusted.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.agent.open import SessionOptions, open_session
from clover_code.agent.permissions.approval import RefuseApprover
from clover_code.config.load import load_settings
from clover_code.config.settings import ApprovalMode
from clover_code.config.trust import TrustStore
from tests.fakes import ScriptedBackend, text_response, tool_response

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SERVER = Path(__file__).with_name("mcp_echo_server.py")
MODES: list[ApprovalMode] = ["plan", "read-only"]


async def _lookup(
    tmp_path: Path, mode: ApprovalMode, *, user: str = "", project: str = ""
) -> tuple[bool, p.ToolCallFinished | None]:
    """Call mcp__echo__lookup once in ``mode``; whether its program ran, and the result."""
    repo = tmp_path / "repo"
    repo.mkdir()
    if project:
        (repo / ".clover").mkdir()
        (repo / ".clover" / "config.toml").write_text(project)
    server = f'[mcp_servers.echo]\ncommand = "{sys.executable}"\nargs = ["{SERVER}"]\n'
    user_config = tmp_path / "user-config.toml"
    user_config.write_text(user + "\n" + server)
    settings = load_settings(
        {"sessions_dir": tmp_path / "sessions", "sandbox": "none"},
        repo_root=repo,
        user_config=user_config,
        env={},
        store=TrustStore(tmp_path / "trusted.json"),
    )
    marker = tmp_path / "the-program-ran"
    backend = ScriptedBackend(
        [tool_response(("mcp__echo__lookup", {"marker": str(marker)})), text_response("ok")]
    )
    events: list[p.Event] = []
    session = await open_session(
        settings,
        repo,
        SessionOptions(
            emit=events.append, approver=RefuseApprover(), approval_mode=mode, backend=backend
        ),
    )
    session.checkpoints = None  # undo snapshots are not under test
    try:
        finished = await session.run_turn("look it up")
    finally:
        await session.close()
    assert finished.status == "completed"
    results = [e for e in events if isinstance(e, p.ToolCallFinished)]
    return marker.exists(), results[0] if results else None


@pytest.mark.parametrize("mode", MODES)
async def test_a_read_only_hint_alone_is_refused(tmp_path: Path, mode: ApprovalMode) -> None:
    ran, result = await _lookup(tmp_path, mode)
    assert not ran
    assert result is not None and result.status in ("denied", "error"), result
    assert result.result.startswith("refused") or "denied" in result.result, result.result


@pytest.mark.parametrize(
    "vouch", ['mcp_read_only = ["mcp__echo__lookup"]', 'mcp_read_only = ["mcp__echo__*"]']
)
@pytest.mark.parametrize("mode", MODES)
async def test_the_users_own_config_vouches(tmp_path: Path, mode: ApprovalMode, vouch: str) -> None:
    ran, result = await _lookup(tmp_path, mode, user=vouch)
    assert ran
    assert result is not None and result.status == "ok" and result.result == "looked up"


@pytest.mark.parametrize("mode", MODES)
async def test_an_untrusted_project_file_cannot_vouch(tmp_path: Path, mode: ApprovalMode) -> None:
    ran, result = await _lookup(tmp_path, mode, project='mcp_read_only = ["mcp__echo__*"]\n')
    assert not ran
    assert result is not None and result.status != "ok"


@pytest.mark.parametrize("mode", MODES)
async def test_vouching_for_another_tool_does_not_cover_this_one(
    tmp_path: Path, mode: ApprovalMode
) -> None:
    ran, _ = await _lookup(tmp_path, mode, user='mcp_read_only = ["mcp__echo__echo"]')
    assert not ran
