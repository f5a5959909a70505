"""Managed limits at run time: mode changes, the default modes, what the model is offered,
which MCP servers start, which sandbox auto picks, an MCP server call, the doctor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.agent.open import SessionOptions, open_session
from clover_code.agent.permissions.approval import RefuseApprover
from clover_code.config.load import load_settings
from clover_code.config.settings import Settings
from clover_code.doctor.managed import managed_checks
from clover_code.errors import ConfigError
from clover_code.mcp_server.roots import Roots
from clover_code.mcp_server.server import TaskOutcome, _prepare
from clover_code.tools.mcp_config import declared_servers
from clover_code.tools.sandbox.select import choose_sandbox
from tests.fakes import ScriptedBackend, text_response


def managed(tmp_path: Path, text: str, **values: object) -> Settings:
    """Settings under the managed file ``text`` (added with CLOVER_MANAGED_SETTINGS)."""
    path = tmp_path / "managed.toml"
    path.write_text(text)
    base = {"sessions_dir": tmp_path / "sessions", "sandbox": "none", **values}
    env = {"CLOVER_MANAGED_SETTINGS": str(path)}
    return load_settings(base, user_config=tmp_path / "no-user.toml", env=env)


async def test_a_mode_change_above_the_ceiling_is_refused_and_the_mode_stays(
    tmp_path: Path, repo: Path
) -> None:
    settings = managed(tmp_path, '[limits]\nmax_approval = "auto-edit"\n')
    events: list[p.Event] = []
    session = await open_session(
        settings,
        repo,
        SessionOptions(
            backend=ScriptedBackend([text_response("done")]),
            emit=events.append,
            approver=RefuseApprover(),
            approval_mode="ask",
        ),
    )
    try:
        await session.submit(p.SetApprovalMode(mode="full-auto"))
        assert session.agent.approval_mode == "ask"
        [error] = [e for e in events if isinstance(e, p.ErrorEvent)]
        assert error.message == (
            'approval mode full-auto is refused because max_approval = "auto-edit" is set by '
            f"your administrator in {tmp_path / 'managed.toml'}; it stays ask."
        )
        # Front ends learn the mode that is in force (the app's status bar, ACP's picker).
        assert [e.mode for e in events if isinstance(e, p.ApprovalModeChanged)] == ["ask"]
        await session.submit(p.SetApprovalMode(mode="auto-edit"))
        now: str = session.agent.approval_mode
        assert now == "auto-edit"
    finally:
        await session.close()


async def test_a_session_cannot_open_in_a_mode_above_the_ceiling(
    tmp_path: Path, repo: Path
) -> None:
    settings = managed(tmp_path, '[limits]\nmax_approval = "plan"\n')
    with pytest.raises(
        ConfigError, match=r'^approval mode ask is refused because max_approval = "plan"'
    ):
        await open_session(
            settings,
            repo,
            SessionOptions(backend=ScriptedBackend([]), emit=lambda e: None, approval_mode="ask"),
        )


def test_front_ends_start_in_their_default_held_to_the_ceiling(tmp_path: Path) -> None:
    settings = managed(tmp_path, '[limits]\nmax_approval = "ask"\n')
    assert settings.approval_or("sandbox-auto") == "ask"  # headless
    assert settings.approval_or("auto-edit") == "ask"  # watch, the GitHub bot
    assert settings.approval_or("read-only") == "read-only"
    assert settings.managed.approval_modes() == ("read-only", "plan", "ask")
    chosen = managed(tmp_path, '[limits]\nmax_approval = "ask"\n', approval="plan")
    assert chosen.approval_or("sandbox-auto") == "plan"
    free = managed(tmp_path, "")
    assert free.approval_or("sandbox-auto") == "sandbox-auto"


async def test_a_disabled_tool_is_not_offered_to_the_model(tmp_path: Path, repo: Path) -> None:
    search = {"search_url": "http://localhost:8888/search"}
    offered: dict[str, set[str]] = {}
    for text in ("", '[limits]\ndisabled = ["web_fetch"]\n'):
        backend = ScriptedBackend([text_response("done")])
        session = await open_session(
            managed(tmp_path, text, **search),
            repo,
            SessionOptions(
                backend=backend, emit=lambda e: None, approver=RefuseApprover(), approval_mode="ask"
            ),
        )
        try:
            await session.run_turn("hello")
        finally:
            await session.close()
        offered[text] = {spec.name for spec in backend.requests[0].tools}
    assert {"web_fetch", "web_search"} <= offered[""]
    assert "web_fetch" not in offered['[limits]\ndisabled = ["web_fetch"]\n']
    assert "web_search" in offered['[limits]\ndisabled = ["web_fetch"]\n']


def _mcp_json(root: Path) -> None:
    servers = {"docs": {"command": "docs-mcp"}, "stranger": {"command": "stranger-mcp"}}
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))


def test_the_projects_and_an_editors_servers_start_only_when_allowed(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    _mcp_json(root)
    settings = managed(
        tmp_path, '[limits]\nallowed_mcp_servers = ["docs", "editor-ok"]\n', mcp_project="trust"
    )
    # The editor's servers join the settings after they were read (clover-code acp).
    from clover_code.config.settings import McpServerConfig

    editor = {
        "editor-ok": McpServerConfig(command="ok-mcp"),
        "editor-other": McpServerConfig(command="other-mcp"),
    }
    with_editor = settings.model_copy(update={"mcp_servers": editor})
    servers, notices = declared_servers(with_editor, root)
    assert sorted(s.name for s in servers) == ["docs", "editor-ok"]
    refused = [n for n in notices if "was not started because allowed_mcp_servers" in n]
    assert len(refused) == 2
    assert any("'stranger'" in n for n in refused) and any("'editor-other'" in n for n in refused)


def test_with_mcp_disabled_no_server_starts_and_a_notice_says_why(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    _mcp_json(root)
    settings = managed(tmp_path, '[limits]\ndisabled = ["mcp"]\n', mcp_project="trust")
    servers, notices = declared_servers(settings, root)
    assert servers == []
    assert notices == [
        f'no MCP server was started because disabled = ["mcp"] is set by your administrator '
        f"in {tmp_path / 'managed.toml'}."
    ]


def test_auto_never_picks_a_forbidden_sandbox_and_never_suggests_one(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    choice = choose_sandbox("auto", root, forbidden=("docker", "bwrap", "none"))
    assert choice.sandbox is None and choice.notice is not None
    assert "--sandbox none" not in choice.notice
    assert "Docker: forbidden by your administrator" in choice.notice
    explicit = choose_sandbox("none", root, forbidden=("none",))
    assert explicit.sandbox is None and explicit.unavailable is not None


def test_an_mcp_server_call_cannot_ask_for_more_than_the_managed_file_allows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    managed_file = tmp_path / "managed.toml"
    managed_file.write_text('[limits]\nmax_approval = "ask"\nforbidden_sandboxes = ["none"]\n')
    monkeypatch.setenv("CLOVER_MANAGED_SETTINGS", str(managed_file))
    work = tmp_path / "work"
    work.mkdir()
    roots = Roots.given([work])
    for flags, clause in (
        ({"approval": "auto-edit"}, 'max_approval = "ask"'),
        ({"approval": "ask", "sandbox": "none"}, 'forbidden_sandboxes = ["none"]'),
    ):
        outcome = _prepare(flags, str(work), None, roots)
        assert isinstance(outcome, TaskOutcome)
        assert outcome.exit_code == 2 and outcome.error is not None
        assert outcome.error.endswith(
            f"is refused because {clause} is set by your administrator in {managed_file}."
        )
    assert not isinstance(_prepare({"approval": "ask"}, str(work), None, roots), TaskOutcome)


def test_the_doctor_lists_every_managed_value_with_its_file(tmp_path: Path) -> None:
    system_like = tmp_path / "managed.toml"
    system_like.write_text(
        'max_turns = 20\napi_key = "sk-managed-0042"\n[limits]\nmax_approval = "auto-edit"\n'
        'forbidden_sandboxes = ["none"]\nallowed_base_urls = ["https://llm.example.com/v1"]\n'
        'allowed_mcp_servers = ["docs"]\ndisabled = ["plugins"]\n'
        'telemetry = { endpoint = "https://otel.example.com" }\n'
    )
    rows = managed_checks({"CLOVER_MANAGED_SETTINGS": str(system_like)})
    shown = {row.name: row.detail for row in rows}
    assert shown["file"] == str(system_like)
    assert shown["max_turns"] == f"fixed to 20 in {system_like}"
    assert shown["api_key"] == f"fixed to (a secret, not shown) in {system_like}"
    assert shown["max_approval"].startswith("auto-edit (read-only, plan, ask, auto-edit)")
    assert shown["forbidden_sandboxes"] == f'["none"] in {system_like}'
    assert shown["allowed_base_urls"] == f'["https://llm.example.com/v1"] in {system_like}'
    assert shown["allowed_mcp_servers"] == f'["docs"] in {system_like}'
    assert shown["disabled"] == f'["plugins"] in {system_like}'
    assert "https://otel.example.com" in shown["telemetry"]
    assert all(row.state == "info" for row in rows)
    # A value the environment sets against the policy is a failed row.
    broken = managed_checks(
        {"CLOVER_MANAGED_SETTINGS": str(system_like), "OTEL_SDK_DISABLED": "true"}
    )
    assert [r.state for r in broken if r.state == "fail"] == ["fail"]
    assert managed_checks({})[0].detail.startswith("none (/etc/clover-code/managed.toml does not")
