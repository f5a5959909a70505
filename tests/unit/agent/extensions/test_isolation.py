"""Child agents in worktrees of their own: parallel edits merged back, or conflicts reported."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clover_code import protocol as p
from clover_code.config.settings import Settings, worktrees_dir
from tests.fakes import text_response, tool_response
from tests.routed_backend import RoutedBackend
from tests.sessions import open_session
from tests.waiting import async_wait_until

ORIGINAL = "def add(a, b):\n    return a - b\n"


def _task(prompt: str, **more: Any) -> tuple[str, dict[str, Any]]:
    args = {"description": prompt.lower(), "prompt": prompt, "agent": "general"}
    return "task", {**args, "isolation": "worktree", **more}


def _edit(new: str) -> tuple[str, dict[str, Any]]:
    return "edit_file", {"path": "app.py", "old_string": "a - b", "new_string": new}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True
    ).stdout


def _tasks(events: list[p.Event]) -> list[p.ToolCallFinished]:
    return [e for e in events if isinstance(e, p.ToolCallFinished) and e.name == "task"]


async def test_two_children_edit_one_file_one_merges_and_one_conflicts(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    second_may_end = asyncio.Event()
    backend = RoutedBackend(
        {
            "go": [tool_response(_task("EDIT A"), _task("EDIT B")), text_response("both ran")],
            "EDIT A": [tool_response(_edit("a + b")), text_response("A done")],
            "EDIT B": [tool_response(_edit("b + a")), [second_may_end, *text_response("B done")]],
        }
    )
    events: list[p.Event] = []
    session = await open_session(make_settings(), backend, repo, events)

    async def after_the_first() -> None:
        await async_wait_until(lambda: len(_tasks(events)) == 1, message="the first child's end")
        second_may_end.set()

    ordering = asyncio.create_task(after_the_first())
    finished = await session.run_turn("go")
    await ordering
    await session.close()
    assert finished.status == "completed"
    first, second = _tasks(events)
    # The first child's change is in the workspace, merged back whole.
    assert (repo / "app.py").read_text() == ORIGINAL.replace("a - b", "a + b")
    assert first.status == "ok" and "merged into your workspace: app.py" in first.result
    assert isinstance(first.display, p.SubagentRun)
    assert first.display.isolation == "worktree" and first.display.changed_files == ["app.py"]
    assert first.display.kept_branch is None
    # The second one conflicts: reported with the hunks, nothing applied, its work kept.
    assert second.status == "error" and "conflict with your workspace" in second.result
    hunks = second.result[second.result.index("--- app.py") :]
    assert "<<<<<<< your workspace\n    return a + b\n=======\n    return b + a" in hunks
    assert ">>>>>>> general" in hunks
    assert isinstance(second.display, p.SubagentRun)
    assert second.display.conflicted_files == ["app.py"]
    branch = second.display.kept_branch
    assert branch is not None and branch.startswith("clover/task-")
    # Each child edited its own worktree, never the parent's files.
    for route in ("EDIT A", "EDIT B"):
        system = str(backend.requests[route][0].messages[0]["content"])
        assert f"Repository root: {worktrees_dir()}" in system
    kept = _git(repo, "worktree", "list", "--porcelain").splitlines()
    paths = [Path(line.removeprefix("worktree ")) for line in kept if line.startswith("worktree ")]
    assert len(paths) == 2 and paths[1].is_relative_to(worktrees_dir())
    assert (paths[1] / "app.py").read_text() == ORIGINAL.replace("a - b", "b + a")
    listed = _git(repo, "branch", "--list", "--format=%(refname:short)", "clover/*")
    assert listed.split() == [branch]
    assert _git(repo, "status", "--porcelain") == " M app.py\n"


async def test_undoing_the_turn_undoes_a_merged_child(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    backend = RoutedBackend(
        {
            "go": [tool_response(_task("EDIT")), text_response("done")],
            "EDIT": [
                tool_response(
                    _edit("a + b"), ("write_file", {"path": "notes.txt", "content": "new\n"})
                ),
                text_response("edited"),
            ],
        }
    )
    events: list[p.Event] = []
    session = await open_session(make_settings(), backend, repo, events)
    await session.run_turn("go")
    assert (repo / "app.py").read_text() == ORIGINAL.replace("a - b", "a + b")
    assert (repo / "notes.txt").read_text() == "new\n"
    await session.submit(p.Undo())
    await session.close()
    assert (repo / "app.py").read_text() == ORIGINAL
    assert not (repo / "notes.txt").exists()
    assert _git(repo, "worktree", "list").count("\n") == 1  # the merged one is gone


async def test_a_background_child_in_a_worktree_is_merged_inside_the_next_turn(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    backend = RoutedBackend(
        {
            "go": [
                tool_response(_task("EDIT", background=True)),
                text_response("started"),
                text_response("thanks"),
            ],
            "EDIT": [tool_response(_edit("a + b")), text_response("edited")],
        }
    )
    events: list[p.Event] = []
    session = await open_session(make_settings(), backend, repo, events)
    await session.run_turn("go")
    await async_wait_until(
        lambda: any(isinstance(e, p.BackgroundTaskFinished) for e in events),
        message="the child's end",
    )
    # Ended, but not merged yet: that waits for the parent's next request.
    assert (repo / "app.py").read_text() == ORIGINAL
    await session.run_turn("next")
    assert (repo / "app.py").read_text() == ORIGINAL.replace("a - b", "a + b")
    report = str(backend.requests["go"][2].messages[-1]["content"])
    assert report.startswith("[Background task task-1") and "merged into your workspace" in report
    await session.submit(p.Undo())  # the merge was part of that turn
    await session.close()
    assert (repo / "app.py").read_text() == ORIGINAL


async def test_a_shell_command_of_a_child_runs_in_its_worktree(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    command = ("shell", {"command": "pwd > where.txt && echo made > made.txt"})
    backend = RoutedBackend(
        {
            "go": [tool_response(_task("RUN")), text_response("done")],
            "RUN": [tool_response(command), text_response("ran")],
        }
    )
    events: list[p.Event] = []
    session = await open_session(make_settings(), backend, repo, events, approval_mode="full-auto")
    await session.run_turn("go")
    await session.close()
    assert (repo / "made.txt").read_text() == "made\n"
    ran_in = Path((repo / "where.txt").read_text().strip())
    assert ran_in.is_relative_to(worktrees_dir()) and ran_in.name.startswith("task-")


async def test_an_agent_file_asks_for_a_worktree_and_a_reader_never_gets_one(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    agents = repo / ".clover" / "agents"
    agents.mkdir(parents=True)
    (agents / "fixer.md").write_text(
        "---\ndescription: Fixes.\ntools: [read_file, edit_file]\nisolation: worktree\n---\nFix.\n"
    )
    backend = RoutedBackend(
        {
            "go": [
                tool_response(
                    ("task", {"description": "fix", "prompt": "FIX", "agent": "fixer"}),
                    _task("LOOK", agent="explore"),
                ),
                text_response("done"),
            ],
            "FIX": [tool_response(_edit("a + b")), text_response("fixed")],
            "LOOK": [text_response("looked")],
        }
    )
    events: list[p.Event] = []
    session = await open_session(make_settings(), backend, repo, events)
    await session.run_turn("go")
    await session.close()
    fix = str(backend.requests["FIX"][0].messages[0]["content"])
    look = str(backend.requests["LOOK"][0].messages[0]["content"])
    assert f"Repository root: {worktrees_dir()}" in fix
    assert f"Repository root: {repo}" in look  # read-only: nothing to isolate
    assert (repo / "app.py").read_text() == ORIGINAL.replace("a - b", "a + b")


async def test_isolation_outside_a_repository_is_one_sentence(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    backend = RoutedBackend({"go": [tool_response(_task("EDIT")), text_response("ok")], "EDIT": []})
    events: list[p.Event] = []
    session = await open_session(make_settings(), backend, folder, events)
    await session.run_turn("go")
    await session.close()
    (result,) = _tasks(events)
    assert result.status == "error"
    assert "needs" in result.result and "to be a git repository" in result.result
    assert result.result.count(". ") <= 1 and "Traceback" not in result.result
