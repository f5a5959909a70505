"""End to end through the agent's permission path: a scripted model sends the
issue's command to the real shell tool on the host, headless (nobody to ask).

``x='a[$(rm victim.txt)]'; (( x )); git status`` makes bash run ``rm`` while
evaluating the arithmetic. It must not run with ``git status`` allowed in
auto-edit, nor with ``rm *`` denied in full-auto; with no rules at all in
full-auto it does run, which shows the command really deletes the file.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clover_code import protocol as p
from clover_code.agent.open import SessionOptions, open_session
from clover_code.agent.permissions.approval import RefuseApprover
from clover_code.config.settings import Settings
from tests.fakes import ScriptedBackend, text_response, tool_response

EXAMPLE = "x='a[$(rm victim.txt)]'; (( x )); git status"


async def run_shell(settings: Settings, repo: Path, mode: str, command: str) -> p.ToolCallFinished:
    events: list[p.Event] = []
    backend = ScriptedBackend(
        [tool_response(("shell", {"command": command})), text_response("done")]
    )
    session = await open_session(
        settings,
        repo,
        SessionOptions(
            emit=events.append,
            approver=RefuseApprover(),
            approval_mode=mode,  # type: ignore[arg-type]
            backend=backend,
        ),
    )
    try:
        await session.run_turn("go")
    finally:
        await session.close()
    (finished,) = [e for e in events if isinstance(e, p.ToolCallFinished)]
    return finished


@pytest.mark.parametrize(
    ("mode", "permissions"),
    [
        ("auto-edit", {"allow": {"shell": ["git status"]}}),
        ("full-auto", {"deny": {"shell": ["rm *"]}}),
    ],
)
async def test_the_issue_example_does_not_delete_the_file(
    make_settings: Callable[..., Settings], repo: Path, mode: str, permissions: dict[str, Any]
) -> None:
    victim = repo / "victim.txt"
    victim.write_text("keep me\n")
    settings = make_settings(sandbox="none", permissions=permissions)
    finished = await run_shell(settings, repo, mode, EXAMPLE)
    assert victim.read_text() == "keep me\n"
    assert finished.status == "denied"
    assert "headless mode cannot ask" in finished.result
    assert "value for x" in finished.result  # the reason names the construct


async def test_eval_under_a_deny_rule_in_full_auto_says_what_is_wrong(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    settings = make_settings(sandbox="none", permissions={"deny": {"shell": ["rm *"]}})
    finished = await run_shell(settings, repo, "full-auto", "eval 'touch made'")
    assert finished.status == "denied" and not (repo / "made").exists()
    assert "a deny rule exists and this call cannot be checked" in finished.result
    assert "--approval full-auto" not in finished.result


async def test_without_rules_full_auto_really_runs_it(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    victim = repo / "victim.txt"
    victim.write_text("gone soon\n")
    finished = await run_shell(make_settings(sandbox="none"), repo, "full-auto", EXAMPLE)
    assert finished.status == "ok", finished.result
    assert not victim.exists()


@pytest.mark.parametrize(
    "command", ["git status > {out}/x", "git diff --output={out}/y", "git status | tee {out}/w"]
)
async def test_allowed_commands_do_not_write_outside(
    make_settings: Callable[..., Settings], repo: Path, tmp_path: Path, command: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    permissions = {"allow": {"shell": ["git status", "git diff *", "tee *"]}}
    settings = make_settings(sandbox="none", permissions=permissions)
    finished = await run_shell(settings, repo, "auto-edit", command.format(out=outside))
    assert finished.status == "denied"
    assert "outside the workspace" in finished.result
    assert list(outside.iterdir()) == []
