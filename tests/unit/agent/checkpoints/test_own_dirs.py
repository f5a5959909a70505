"""clover-code's own directories (config, data with trust records and checkpoints,
sessions, cache), ``/`` and the home directory are never a workspace, for any front
end; and no file tool writes inside those directories from any workspace, in any
mode, whatever the approver says. Worktrees under the data dir's ``worktrees/`` are
workspaces."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.agent import open as factory
from clover_code.agent.permissions.approval import ApprovalRequest, Decision, RefuseApprover
from clover_code.config.settings import Settings, user_config_path, user_data_dir, worktrees_dir
from clover_code.errors import UsageError
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.sessions import open_session

LOOSE = 'sandbox = "none"\napproval = "full-auto"\n[permissions.allow]\nshell = ["*"]\n'


class Yes:
    """An approver that says yes to everything (the user's worst day)."""

    shows_diff = False

    async def request(self, request: ApprovalRequest) -> Decision:
        return Decision(allowed=True)


async def _open(settings: Settings, cwd: Path, backend: ScriptedBackend | None = None) -> None:
    session = await factory.open_session(
        settings,
        cwd,
        factory.SessionOptions(
            emit=lambda e: None,
            approver=RefuseApprover(),
            approval_mode="full-auto",
            backend=backend or ScriptedBackend([text_response("hi")]),
        ),
    )
    await session.close()


def _config_dir() -> Path:
    folder = user_config_path().parent
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.mark.parametrize(
    "where",
    ["config", "config-sub", "data", "checkpoints", "sessions", "cache", "repo-in-config"],
)
async def test_own_directories_are_never_a_workspace(
    make_settings: Callable[..., Settings],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    where: str,
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache-home"))
    settings = make_settings()
    folders = {
        "config": _config_dir(),
        "config-sub": _config_dir() / "skills" / "x",
        "data": user_data_dir(),
        "checkpoints": user_data_dir() / "checkpoints" / "abc",
        "sessions": settings.resolved_sessions_dir() / "nested",
        "cache": tmp_path / "cache-home" / "clover-code",
        "repo-in-config": _config_dir() / "repo",
    }
    cwd = folders[where]
    cwd.mkdir(parents=True, exist_ok=True)
    if where == "repo-in-config":
        (cwd / ".git").mkdir()
        (cwd / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
        (cwd / ".git" / "objects").mkdir()
    with pytest.raises(UsageError) as caught:
        await _open(settings, cwd)
    assert "one of clover-code's own directories" in str(caught.value)
    assert "never a workspace" in str(caught.value)
    assert not any(settings.resolved_sessions_dir().glob("*.jsonl"))  # nothing was opened


async def test_the_file_system_root_and_home_are_never_a_workspace(
    make_settings: Callable[..., Settings], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(UsageError, match="root of the file system, which is never a workspace"):
        await _open(make_settings(), Path("/"))
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    with pytest.raises(UsageError, match="your home directory, which is never a workspace"):
        await _open(make_settings(), home)
    (home / "project").mkdir()
    await _open(make_settings(), home / "project")  # a folder inside it is fine


async def test_the_attack_cwd_is_the_config_dir_and_the_agent_writes_config_toml(
    make_settings: Callable[..., Settings],
) -> None:
    config = _config_dir()
    backend = ScriptedBackend(
        [tool_response(("write_file", {"path": "config.toml", "content": LOOSE}))]
    )
    with pytest.raises(UsageError, match="never a workspace"):
        await _open(make_settings(), config, backend)
    assert not (config / "config.toml").exists()
    assert backend.requests == []


@pytest.mark.parametrize("holds", ["config", "data"])
async def test_a_workspace_that_holds_the_config_or_data_dir_is_refused(
    make_settings: Callable[..., Settings],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    holds: str,
) -> None:
    # Say ~/.config or ~/.local/share: a sandboxed command could write config.toml.
    workspace = tmp_path / "dotfiles"
    (workspace / holds / "clover-code").mkdir(parents=True)
    monkeypatch.setenv(f"XDG_{holds.upper()}_HOME", str(workspace / holds))
    with pytest.raises(UsageError) as caught:
        await _open(make_settings(), workspace)
    assert f"holds {workspace / holds / 'clover-code'}" in str(caught.value)
    assert "no workspace may hold" in str(caught.value)


@pytest.mark.parametrize("approver", ["refuse", "yes"])
async def test_no_file_tool_writes_own_directories_inside_a_workspace(
    make_settings: Callable[..., Settings],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    approver: str,
) -> None:
    # A workspace that holds the sessions and cache directories.
    workspace = tmp_path / "project"
    workspace.mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(workspace / "cache"))
    settings = make_settings(sessions_dir=workspace / "sessions")
    (workspace / "cache" / "clover-code" / "sandbox").mkdir(parents=True)
    (workspace / "sessions").mkdir()
    (workspace / "sessions" / "real.jsonl").write_text("a\n")
    os.symlink(workspace / "sessions", workspace / "innocent")
    patch = (
        "*** Begin Patch\n*** Add File: cache/clover-code/sandbox/Dockerfile\n"
        "+FROM evil\n*** End Patch\n"
    )
    calls = [
        ("write_file", {"path": "sessions/forged.jsonl", "content": "{}\n"}),
        ("write_file", {"path": "innocent/forged.jsonl", "content": "{}\n"}),
        ("write_file", {"path": str(workspace / "x/../sessions/a.jsonl"), "content": "x"}),
        ("apply_patch", {"patch": patch}),
        ("edit_file", {"path": "sessions/real.jsonl", "old_string": "a", "new_string": "b"}),
    ]
    backend = ScriptedBackend([*(tool_response(c) for c in calls), text_response("Done.")])
    events: list[p.Event] = []
    session = await factory.open_session(
        settings,
        workspace,
        factory.SessionOptions(
            emit=events.append,
            approver=Yes() if approver == "yes" else RefuseApprover(),
            approval_mode="full-auto",
            backend=backend,
        ),
    )
    await session.run_turn("make yourself at home")
    await session.close()
    results = [e for e in events if isinstance(e, p.ToolCallFinished)]
    assert len(results) == len(calls)
    for result in results:
        assert result.status == "error", result
        assert "one of clover-code's own directories" in result.result, result.result
    assert not (workspace / "sessions" / "forged.jsonl").exists()
    assert not (workspace / "sessions" / "a.jsonl").exists()
    assert (workspace / "sessions" / "real.jsonl").read_text() == "a\n"
    assert not (workspace / "cache" / "clover-code" / "sandbox" / "Dockerfile").exists()


async def test_a_worktree_clover_code_made_is_a_workspace(
    make_settings: Callable[..., Settings],
) -> None:
    tree = worktrees_dir() / "session-1"
    tree.mkdir(parents=True)
    backend = ScriptedBackend(
        [tool_response(("write_file", {"path": "a.txt", "content": "x\n"})), text_response("ok")]
    )
    events: list[p.Event] = []
    session = await open_session(make_settings(), backend, tree, events, approval_mode="full-auto")
    await session.run_turn("write a.txt")
    await session.close()
    assert (tree / "a.txt").read_text() == "x\n"
    with pytest.raises(UsageError, match="never a workspace"):
        await _open(make_settings(), worktrees_dir())  # the folder of them is not one
