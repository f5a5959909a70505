"""A session whose workspace is a linked git worktree: undo works, and both the worktree's
``.git`` file and the main repository's ``.git`` it points into are protected."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from clover_code import protocol as p
from clover_code.config.settings import Settings, worktrees_dir
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.sessions import open_session


def _git(repo: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args]
    return subprocess.run(command, cwd=repo, check=True, capture_output=True, text=True).stdout


async def test_undo_and_git_protection_in_a_worktree(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    tree = worktrees_dir() / "repo-1" / "feature"
    _git(repo, "worktree", "add", "-q", "-b", "clover/feature", str(tree))
    pointer = (tree / ".git").read_bytes()
    config = (repo / ".git" / "config").read_bytes()
    attacks = (
        "printf '#!/bin/sh\\necho pwned\\n' > $(git rev-parse --git-common-dir)/hooks/pre-commit"
        " && git config core.fsmonitor 'echo pwned'"
    )
    backend = ScriptedBackend(
        [
            tool_response(
                ("write_file", {"path": "app.py", "content": "changed\n"}),
                ("write_file", {"path": ".git", "content": "gitdir: /tmp\n"}),
                ("shell", {"command": attacks}),
            ),
            text_response("done"),
        ]
    )
    events: list[p.Event] = []
    session = await open_session(make_settings(), backend, tree, events, approval_mode="full-auto")
    await session.run_turn("go")
    results = [e for e in events if isinstance(e, p.ToolCallFinished)]
    assert [r.status for r in results[:2]] == ["ok", "error"]
    assert ".git" in results[1].result
    # The host command changed the main repository's hooks and config: both put back.
    assert "put it back" in results[2].result
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert (repo / ".git" / "config").read_bytes() == config
    assert (tree / ".git").read_bytes() == pointer
    assert (tree / "app.py").read_text() == "changed\n"
    await session.submit(p.Undo())
    await session.close()
    assert (tree / "app.py").read_text() == "def add(a, b):\n    return a - b\n"
    assert next(e for e in events if isinstance(e, p.UndoDone)).files == ["app.py"]
    assert _git(repo, "status", "--porcelain") == ""  # the user's checkout: untouched
