"""The agent's file tools never write the project's own config files without the user."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.agent import open as factory
from clover_code.agent.permissions.approval import ApprovalRequest, Decision
from clover_code.agent.permissions.policy import PermissionPolicy
from clover_code.config.settings import ApprovalMode, PermissionRules, Settings
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.sessions import open_session

LOOSE = 'approval = "full-auto"\nsandbox = "none"\n[permissions.allow]\nshell = ["*"]\n'
PATCH = (
    "*** Begin Patch\n*** Add File: .mcp.json\n"
    '+{"mcpServers": {"x": {"command": "sh"}}}\n*** End Patch\n'
)


@pytest.mark.parametrize("mode", ["ask", "auto-edit", "full-auto"])
@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("write_file", {"path": ".clover/config.toml", "content": LOOSE}),
        ("edit_file", {"path": ".clover/config.toml", "old_string": "a", "new_string": "b"}),
        ("write_file", {"path": "./src/../.clover/hooks/x.sh", "content": "id"}),
        ("write_file", {"path": ".mcp.json", "content": "{}"}),
        ("apply_patch", {"patch": PATCH}),
    ],
)
def test_writing_protected_files_asks_in_every_mode(
    tmp_path: Path, mode: ApprovalMode, name: str, arguments: dict[str, str]
) -> None:
    # even an allow rule covering every edit does not approve them
    policy = PermissionPolicy(PermissionRules(allow={"edit": ["**"], name: ["**"]}), tmp_path)
    ruling = policy.decide(mode, name, "edit", arguments)
    assert ruling.verdict == "ask" and ruling.protected
    assert "only the user may approve" in ruling.reason


def test_protected_files_through_links_and_absolute_paths(tmp_path: Path) -> None:
    (tmp_path / ".clover").mkdir()
    os.symlink(tmp_path / ".clover", tmp_path / "innocent")
    policy = PermissionPolicy(PermissionRules(), tmp_path)
    for path in ("innocent/config.toml", str(tmp_path / ".clover" / "config.toml")):
        ruling = policy.decide("full-auto", "write_file", "edit", {"path": path})
        assert ruling.verdict == "ask" and ruling.protected, path


def test_other_files_reads_and_deny_rules_are_unchanged(tmp_path: Path) -> None:
    policy = PermissionPolicy(PermissionRules(deny={"edit": [".mcp.json"]}), tmp_path)
    write = policy.decide("full-auto", "write_file", "edit", {"path": "src/clover.py"})
    assert write.verdict == "allow" and not write.protected
    read = policy.decide("ask", "read_file", "read", {"path": ".clover/config.toml"})
    assert read.verdict == "allow"
    denied = policy.decide("full-auto", "write_file", "edit", {"path": ".mcp.json"})
    assert denied.verdict == "deny"  # a deny rule still wins outright


async def test_headless_refuses_writing_project_config_in_full_auto(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    backend = ScriptedBackend(
        [
            tool_response(("write_file", {"path": ".clover/config.toml", "content": LOOSE})),
            tool_response(("apply_patch", {"patch": PATCH})),
            text_response("Done."),
        ]
    )
    events: list[p.Event] = []
    session = await open_session(make_settings(), backend, repo, events, approval_mode="full-auto")
    await session.run_turn("make yourself at home")
    await session.close()
    assert not (repo / ".clover").exists() and not (repo / ".mcp.json").exists()
    results = [e for e in events if isinstance(e, p.ToolCallFinished)]
    assert [r.status for r in results] == ["denied", "denied"]
    for result in results:
        assert "headless mode never does" in result.result
        assert "only the user may approve" in result.result


async def test_an_approver_is_asked_and_its_yes_writes(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    asked: list[ApprovalRequest] = []

    class Yes:
        shows_diff = False

        async def request(self, request: ApprovalRequest) -> Decision:
            asked.append(request)
            return Decision(allowed=True)

    backend = ScriptedBackend(
        [
            tool_response(("write_file", {"path": ".mcp.json", "content": json.dumps({})})),
            text_response("Done."),
        ]
    )
    session = await factory.open_session(
        make_settings(),
        repo,
        factory.SessionOptions(
            emit=lambda e: None, approver=Yes(), approval_mode="full-auto", backend=backend
        ),
    )
    await session.run_turn("add an mcp file")
    await session.close()
    assert [r.protected for r in asked] == [True]
    assert (repo / ".mcp.json").read_text() == "{}"
