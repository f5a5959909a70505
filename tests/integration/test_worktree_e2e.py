"""End to end: the real `clover-code` in a worktree (``--worktree``), ``clover-code worktree``,
and a headless task that starts a background child agent."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from clover_code import protocol as p
from clover_code.outcome.result import TaskResult, parse_stream_line
from tests.integration.sse_server import RecordedRequest, ScriptedResponse, ScriptedServer, Until
from tests.integration.test_headless_e2e import run_clover
from tests.integration.test_subagents_e2e import route, sglang

pytestmark = pytest.mark.integration

BROKEN = "def add(a, b):\n    return a - b\n"


def _git(repo: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args]
    return subprocess.run(command, cwd=repo, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "calc.py").write_text(BROKEN)
    (root / "notes.md").write_text("notes\n")
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "init")
    # The user's own work in progress: it must stay exactly as it is.
    (root / "notes.md").write_text("notes, being edited\n")
    (root / "scratch.txt").write_text("untracked\n")
    return root


def checkout_state(repo: Path) -> dict[str, tuple[int, bytes]]:
    """Every file of the checkout (mode and bytes), plus git's index, HEAD and branch."""
    state: dict[str, tuple[int, bytes]] = {}
    for path in sorted(repo.rglob("*")):
        rel = path.relative_to(repo).as_posix()
        if path.is_file() and not rel.startswith(".git/"):
            state[rel] = (path.stat().st_mode, path.read_bytes())
    for rel in (".git/index", ".git/HEAD", ".git/refs/heads/master", ".git/refs/heads/main"):
        if (repo / rel).exists():
            state[rel] = (0, (repo / rel).read_bytes())
    return state


def fixer(request: RecordedRequest, messages: list[dict[str, Any]]) -> ScriptedResponse:
    if not any(m["role"] == "tool" for m in messages):
        edit = {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}
        return sglang(lambda s: s.tool_call("edit_file", edit))
    return sglang(lambda s: s.content("Fixed."))


async def _task(
    server: ScriptedServer, repo: Path, home: Path, *extra: str
) -> tuple[int, list[Any], str]:
    code, out, err = await run_clover(
        repo,
        "--task",
        "fix add",
        "--base-url",
        server.base_url,
        "--sandbox",
        "none",
        "--approval",
        "full-auto",
        "--output-format",
        "stream-json",
        *extra,
        home=home,
    )
    return code, [parse_stream_line(line) for line in out.splitlines()], err


async def test_a_session_in_a_worktree_leaves_the_checkout_byte_identical(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    route(scripted_server, fixer, {})
    before = checkout_state(repo)
    code, lines, err = await _task(scripted_server, repo, tmp_path, "--worktree", "fix-add")
    assert code == 0, err
    assert checkout_state(repo) == before
    started = next(e for e in lines if isinstance(e, p.SessionStarted))
    tree = Path(started.cwd)
    assert tree.is_relative_to(tmp_path / "data" / "clover-code" / "worktrees")
    assert tree.name == "fix-add" and (tree / "calc.py").read_text() == BROKEN.replace("-", "+")
    # The uncommitted work was not carried over (not asked for), and the user is told.
    assert (tree / "notes.md").read_text() == "notes\n" and not (tree / "scratch.txt").exists()
    assert "--worktree-from-dirty carries them over" in err
    assert "on branch clover/fix-add (1 files changed" in err
    assert f"git -C {repo} merge clover/fix-add" in err
    assert "clover-code worktree remove fix-add" in err
    assert isinstance(lines[-1], TaskResult) and lines[-1].files_changed == ["calc.py"]


async def test_uncommitted_changes_are_carried_over_only_when_asked(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    route(scripted_server, fixer, {})
    before = checkout_state(repo)
    code, lines, err = await _task(
        scripted_server, repo, tmp_path, "--worktree", "carry", "--worktree-from-dirty"
    )
    assert code == 0, err
    assert checkout_state(repo) == before
    tree = Path(next(e for e in lines if isinstance(e, p.SessionStarted)).cwd)
    assert (tree / "notes.md").read_text() == "notes, being edited\n"
    assert (tree / "scratch.txt").read_text() == "untracked\n"
    assert "carried 2 uncommitted files over" in err
    # The branch starts at the user's commit: their changes stay uncommitted there.
    assert _git(tree, "rev-parse", "HEAD") == _git(repo, "rev-parse", "HEAD")


async def test_worktree_list_remove_and_prune(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    route(scripted_server, fixer, {})
    code, _, err = await _task(scripted_server, repo, tmp_path, "--worktree", "one")
    assert code == 0, err
    code, _, err = await _task(scripted_server, repo, tmp_path, "--worktree", "two")
    assert code == 0, err
    code, out, err = await run_clover(repo, "worktree", "list", home=tmp_path)
    assert code == 0, err
    listed = out.splitlines()
    assert [line.split()[:2] for line in listed] == [["one", "clover/one"], ["two", "clover/two"]]
    assert "1 files changed" in listed[0]
    code, out, err = await run_clover(repo, "worktree", "remove", "one", home=tmp_path)
    assert code == 2 and "uncommitted" in err and "--force" in err
    code, out, err = await run_clover(repo, "worktree", "remove", "one", "--force", home=tmp_path)
    assert code == 0, err
    assert "removed the worktree" in out and "deleted its branch clover/one (merged)" in out
    # Two's work, committed and merged: nothing would be lost, so prune removes it.
    tree = next(line.split()[-1] for line in listed if line.startswith("two"))
    _git(Path(tree), "commit", "-qam", "fix add")
    _git(repo, "stash", "-q", "--include-untracked")
    _git(repo, "merge", "-q", "clover/two")
    _git(repo, "stash", "pop", "-q")
    code, out, err = await run_clover(repo, "worktree", "prune", home=tmp_path)
    assert code == 0, err
    assert "removed two (clean, and clover/two is merged)" in out
    code, out, err = await run_clover(repo, "worktree", "list", home=tmp_path)
    assert out == "clover-code made no worktrees for this repository.\n"
    assert (repo / "calc.py").read_text() == BROKEN.replace("-", "+")


async def test_worktree_outside_a_repository_is_one_sentence(repo: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    code, _, err = await run_clover(
        plain, "--task", "x", "--worktree", "--base-url", "http://127.0.0.1:9/v1", home=tmp_path
    )
    assert code == 2
    assert "--worktree needs a git repository" in err and "Traceback" not in err
    code, _, err = await run_clover(repo, "--task", "x", "--worktree", "../up", home=tmp_path)
    assert code == 2 and "'../up' cannot name a worktree" in err and "Traceback" not in err


async def test_a_headless_task_waits_for_its_background_child(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    def parent(request: RecordedRequest, messages: list[dict[str, Any]]) -> ScriptedResponse:
        reports = [
            m for m in messages if m["role"] == "user" and "[Background task" in m["content"]
        ]
        if not any(m["role"] == "tool" for m in messages):
            call = {"description": "count", "prompt": "CHILD: count", "background": True}
            return sglang(lambda s: s.tool_call("task", call))
        if not reports:
            return sglang(lambda s: s.content("Started it; waiting."))
        answer = reports[0]["content"].rsplit("\n", 1)[-1]
        return sglang(lambda s: s.content(f"The child says: {answer}"))

    def parent_requests() -> int:
        return sum(
            not r.json()["messages"][1]["content"].startswith("CHILD")
            for r in scripted_server.chat_requests
        )

    def child(request: RecordedRequest, messages: list[dict[str, Any]]) -> ScriptedResponse:
        response = sglang(lambda s: s.content("forty-two"))
        # It ends only after the parent answered without it: the run must wait for it.
        assert response.steps is not None
        response.steps.insert(0, Until(lambda: parent_requests() >= 2, seconds=60))
        return response

    route(scripted_server, parent, {"CHILD": child})
    code, lines, err = await _task(scripted_server, repo, tmp_path)
    assert code == 0, err
    *events, result = lines
    assert isinstance(result, TaskResult) and result.result == "The child says: forty-two"
    ended = [e for e in events if isinstance(e, p.BackgroundTaskFinished)]
    assert [(e.task_id, e.status) for e in ended] == [("task-1", "ok")]
    assert [(s.agent, s.status) for s in result.subagents] == [("explore", "completed")]
    assert result.turns == 3
