"""Checkpoints and undo on real files, a real git repository and a real shadow store.

Each test plays turns the way the session does (``snapshot`` before a turn,
``end_turn`` after it) and changes the workspace the way the agent would:
through the file tools, or through the shell tool (on the host sandbox) and
plain shell commands, run for real.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from clover_code.agent.checkpoints import shadow_git, shadow_store
from clover_code.agent.checkpoints.store import CheckpointError, CheckpointStore
from clover_code.fs.stamps import stamps
from clover_code.tools.base import ToolContext
from clover_code.tools.edit_file import EditFileArgs, EditFileTool
from clover_code.tools.sandbox.host import HostSandbox
from clover_code.tools.shell import ShellArgs, ShellTool
from clover_code.tools.workspace import Workspace
from clover_code.tools.write_file import WriteFileArgs, WriteFileTool
from tests.waiting import need_program, wait_until


@pytest.fixture(autouse=True)
def _git_installed() -> None:
    need_program("git")


ORIGINAL = "def add(a, b):\n    return a - b\n"


def _git(root: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    proc = subprocess.run(
        ["git", *args], cwd=root, env=env, capture_output=True, text=True, check=True
    )
    return proc.stdout


def _sh(root: Path, script: str) -> None:
    subprocess.run(["sh", "-c", script], cwd=root, check=True)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def store(repo: Path, tmp_path: Path) -> CheckpointStore:
    return CheckpointStore(repo, tmp_path / "data", session_id="s1")


async def test_undo_after_file_tool_edits(repo: Path, store: CheckpointStore) -> None:
    ctx = ToolContext(workspace=Workspace(repo))
    store.snapshot(1)
    old, new = "return a - b", "return a + b"
    await EditFileTool().run(EditFileArgs(path="app.py", old_string=old, new_string=new), ctx)
    await WriteFileTool().run(WriteFileArgs(path="pkg/new.py", content="x = 1\n"), ctx)
    store.end_turn(1)
    assert "a + b" in (repo / "app.py").read_text()

    files = store.undo()

    assert files == ["app.py", "pkg/new.py"]
    assert (repo / "app.py").read_text() == ORIGINAL
    assert not (repo / "pkg").exists()  # the directory the agent created is gone too
    assert _git(repo, "status", "--porcelain") == ""
    assert store.turns == 0


async def test_undo_after_shell_edits(repo: Path, store: CheckpointStore) -> None:
    (repo / ".gitignore").write_text("build/\n")
    (repo / "notes.txt").write_text("untracked, not ignored\n")
    (repo / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (repo / "run.sh").chmod(0o755)
    store.snapshot(1)
    command = (
        "sed -i 's/a - b/a * b/' app.py && echo changed > notes.txt && rm run.sh"
        " && mkdir -p build && echo out > build/artifact && echo new > made.txt"
        " && ln -s app.py link.py"
    )
    sandbox = HostSandbox(repo)
    try:
        ctx = ToolContext(workspace=Workspace(repo), sandbox=sandbox)
        result = await ShellTool().run(ShellArgs(command=command), ctx)
    finally:
        await sandbox.close()
    assert not result.is_error, result.text
    store.end_turn(1)

    files = store.undo()

    assert files == ["app.py", "link.py", "made.txt", "notes.txt", "run.sh"]
    assert (repo / "app.py").read_text() == ORIGINAL
    assert (repo / "notes.txt").read_text() == "untracked, not ignored\n"
    assert (repo / "run.sh").read_text() == "#!/bin/sh\necho hi\n"
    assert os.access(repo / "run.sh", os.X_OK)
    assert not (repo / "made.txt").exists() and not (repo / "link.py").is_symlink()
    # An ignored directory is not part of a checkpoint, so undo leaves it alone.
    assert (repo / "build" / "artifact").read_text() == "out\n"


def test_undo_after_rm_rf_of_the_repository_including_git(
    repo: Path, store: CheckpointStore
) -> None:
    (repo / "src").mkdir()
    (repo / "src" / "lib.py").write_text("VALUE = 1\n")
    _git(repo, "add", "src")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "lib")
    head = _git(repo, "rev-parse", "HEAD")
    store.snapshot(1)
    _sh(repo, "rm -rf .git src app.py")
    assert list(repo.iterdir()) == []
    store.end_turn(1)

    files = store.undo()

    assert files == [".git", "app.py", "src/lib.py"]
    assert (repo / "src" / "lib.py").read_text() == "VALUE = 1\n"
    assert _git(repo, "rev-parse", "HEAD") == head
    assert _git(repo, "status", "--porcelain") == ""
    assert "lib" in _git(repo, "log", "--format=%s")


def test_conflicting_user_edit_refuses_then_force_overwrites(
    repo: Path, store: CheckpointStore
) -> None:
    (repo / "other.py").write_text("other\n")
    store.snapshot(1)
    (repo / "app.py").write_text("agent version\n")
    store.end_turn(1)
    (repo / "app.py").write_text("user version\n")  # the user edits after the turn
    (repo / "other.py").write_text("user edit, agent never touched it\n")

    with pytest.raises(CheckpointError) as refused:
        store.undo()

    assert "app.py" in str(refused.value) and "force" in str(refused.value)
    assert "other.py" not in str(refused.value)
    assert (repo / "app.py").read_text() == "user version\n"
    assert store.turns == 1  # nothing was undone

    assert store.undo(force=True) == ["app.py"]
    assert (repo / "app.py").read_text() == ORIGINAL
    assert (repo / "other.py").read_text() == "user edit, agent never touched it\n"


def test_user_edit_between_turns_conflicts_with_a_rewind(
    repo: Path, store: CheckpointStore
) -> None:
    store.snapshot(1)
    (repo / "app.py").write_text("turn 1\n")
    store.end_turn(1)
    (repo / "app.py").write_text("user between turns\n")
    store.snapshot(2)
    (repo / "b.py").write_text("turn 2\n")
    store.end_turn(2)

    assert store.undo(1) == ["b.py"]  # the last turn alone does not touch app.py
    store.snapshot(3)
    (repo / "c.py").write_text("turn 3\n")
    store.end_turn(3)
    with pytest.raises(CheckpointError, match=r"app\.py"):
        store.undo(2)


def test_rewind_several_turns_and_limits(repo: Path, store: CheckpointStore) -> None:
    for turn in (1, 2, 3):
        store.snapshot(turn)
        (repo / "app.py").write_text(f"turn {turn}\n")
        (repo / f"t{turn}.txt").write_text("x\n")
        store.end_turn(turn)

    with pytest.raises(CheckpointError, match="3 turn"):
        store.undo(4)
    assert store.undo(1) == ["app.py", "t3.txt"]
    assert (repo / "app.py").read_text() == "turn 2\n"
    assert store.undo(2) == ["app.py", "t1.txt", "t2.txt"]
    assert (repo / "app.py").read_text() == ORIGINAL
    with pytest.raises(CheckpointError, match="0 turn"):
        store.undo()


def test_user_git_state_is_never_touched(repo: Path, store: CheckpointStore) -> None:
    (repo / "app.py").write_text("staged\n")
    _git(repo, "add", "app.py")
    (repo / "stash.txt").write_text("s\n")
    _git(repo, "add", "stash.txt")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "stash", "-q")
    (repo / "app.py").write_text("staged\n")
    _git(repo, "add", "app.py")
    before = {p: _digest(repo / ".git" / p) for p in ("index", "HEAD", "refs/stash")}

    store.snapshot(1)
    (repo / "app.py").write_text("agent\n")
    store.end_turn(1)
    store.undo()
    store.diff_since_session_start()

    after = {p: _digest(repo / ".git" / p) for p in ("index", "HEAD", "refs/stash")}
    assert after == before
    assert not store.store.is_relative_to(repo)


def test_works_in_a_directory_that_is_not_a_git_repository(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    (root / ".gitignore").write_text("*.log\n")
    store = CheckpointStore(root, tmp_path / "data")
    store.snapshot(1)
    (root / "a.txt").write_text("two\n")
    (root / "debug.log").write_text("ignored\n")
    store.end_turn(1)

    diff, files = store.diff_since_session_start()
    assert files == ["a.txt"]
    assert "-one\n+two" in diff
    assert store.undo() == ["a.txt"]
    assert (root / "a.txt").read_text() == "one\n"
    assert (root / "debug.log").exists()


def test_diff_since_session_start_spans_turns(repo: Path, store: CheckpointStore) -> None:
    assert store.diff_since_session_start() == ("", [])
    store.snapshot(1)
    (repo / "app.py").write_text(ORIGINAL.replace("a - b", "a + b"))
    store.end_turn(1)
    store.snapshot(2)
    (repo / "new.txt").write_text("hello\n")
    store.end_turn(2)

    diff, files = store.diff_since_session_start()

    assert files == ["app.py", "new.txt"]
    assert "a/app.py" in diff and "+    return a + b" in diff and "+hello" in diff


def test_diff_as_the_turn_left_it_serves_the_end_snapshot_until_a_restore(
    repo: Path, store: CheckpointStore
) -> None:
    store.snapshot(1)
    (repo / "new.txt").write_text("hello\n")
    store.end_turn(1)
    # Written after the turn ended: a caller that knows nothing changed since gets
    # the end snapshot's diff, any other caller a new capture's.
    (repo / "late.txt").write_text("late\n")
    assert store.diff_since_session_start(as_turn_left=True)[1] == ["new.txt"]
    assert store.diff_since_session_start()[1] == ["late.txt", "new.txt"]

    store.undo(1, force=True)  # the end snapshot no longer is the workspace
    assert store.diff_since_session_start(as_turn_left=True)[1] == ["late.txt"]


def test_auto_commit_commits_agent_changes_without_running_hooks(
    repo: Path, store: CheckpointStore, tmp_path: Path
) -> None:
    marker = tmp_path / "hook-ran"
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    (repo / "user-draft.txt").write_text("not the agent's\n")
    store.snapshot(1)
    assert store.auto_commit("nothing yet") is None
    (repo / "app.py").write_text("fixed\n")
    (repo / "added.py").write_text("new\n")
    store.end_turn(1)

    commit = store.auto_commit("Fix add()")

    assert commit == _git(repo, "rev-parse", "HEAD").strip()
    assert _git(repo, "show", "--name-only", "--format=", "HEAD").split() == [
        "added.py",
        "app.py",
    ]
    message = _git(repo, "log", "-1", "--format=%B")
    assert message.startswith("Fix add()\n") and "- added.py" in message
    assert not marker.exists()
    assert "?? user-draft.txt" in _git(repo, "status", "--porcelain")


def test_snapshot_of_unchanged_tree_is_cheap_and_stable(repo: Path, store: CheckpointStore) -> None:
    first = store.snapshot(1)
    store.end_turn(1)
    second = store.snapshot(2)
    tree = store.shadow.git("rev-parse", f"{first}^{{tree}}", f"{second}^{{tree}}").split()
    assert tree[0] == tree[1]


def test_undo_never_writes_through_links_the_agent_left(
    repo: Path, store: CheckpointStore, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / "src").mkdir()
    (repo / "src" / "lib.py").write_text("VALUE = 1\n")
    store.snapshot(1)
    _sh(repo, f"rm -rf src .git && ln -s {outside} src && ln -s {outside} .git")
    store.end_turn(1)

    assert store.undo() == [".git", "src", "src/lib.py"]

    assert list(outside.iterdir()) == []
    assert not (repo / "src").is_symlink() and not (repo / ".git").is_symlink()
    assert (repo / "src" / "lib.py").read_text() == "VALUE = 1\n"
    assert _git(repo, "status", "--porcelain") == "?? src/\n"


def test_many_new_files_are_stored_as_one_pack(repo: Path, store: CheckpointStore) -> None:
    for i in range(150):
        (repo / "gen").mkdir(exist_ok=True)
        (repo / "gen" / f"f{i}.txt").write_text(f"content {i}\n" * (i + 1))
    store.snapshot(1)
    assert list((store.store / "objects" / "pack").glob("pack-*.pack"))
    _sh(repo, "rm -rf gen")
    store.end_turn(1)

    assert len(store.undo()) == 150

    assert (repo / "gen" / "f149.txt").read_text() == "content 149\n" * 150
    assert _git(store.store, "fsck", "--no-dangling").strip() == ""


def test_a_git_directory_over_the_limit_is_left_out_with_a_notice(
    repo: Path, store: CheckpointStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shadow_store, "MAX_GIT_BYTES", 1)
    store.snapshot(1)
    notices = store.take_notices()
    assert len(notices) == 1 and "too large to checkpoint" in notices[0]
    _sh(repo, "rm -rf .git app.py")
    store.end_turn(1)
    store.snapshot(2)
    assert store.take_notices() == []  # said once

    store.end_turn(2)
    assert store.undo(2) == ["app.py"]
    assert (repo / "app.py").read_text() == ORIGINAL and not (repo / ".git").exists()


def test_tracked_files_are_listed_again_only_when_the_index_changes(
    repo: Path, store: CheckpointStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A turn's two snapshots list what the repository tracks; while its index keeps its
    # stamp the list is the same, so git is asked once.
    wait_until(lambda: stamps([repo / ".git" / "index"]) is not None, message="the index to settle")
    listed: list[tuple[str, ...]] = []
    real = shadow_store.run_git

    def counting(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        listed.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(shadow_store, "run_git", counting)
    store.snapshot(1)
    store.end_turn(1)
    assert listed == [("ls-files", "-z")]

    # A file the user adds though it is ignored is tracked from then on: a new index,
    # listed again, and the file is in the next snapshot.
    (repo / ".gitignore").write_text("*.log\n")
    (repo / "build.log").write_text("kept\n")
    _git(repo, "add", "-f", "build.log")
    second = store.snapshot(2)
    assert len(listed) == 2
    assert "files/build.log" in store.shadow.git("ls-tree", "-r", "--name-only", second)


def test_a_snapshot_works_out_the_store_hardening_once(
    repo: Path, store: CheckpointStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Commands with the workspace as their work tree (listing, the index) and without it
    # (objects, commits, refs) share one reading: the first covers what the second needs.
    read: list[Path] = []
    real = shadow_git.repo_driver_overrides

    def counting(cwd: Path, **kwargs: Any) -> list[tuple[str, str]]:
        read.append(cwd)
        return real(cwd, **kwargs)

    monkeypatch.setattr(shadow_git, "repo_driver_overrides", counting)
    store.snapshot(1)
    assert read == [repo]


def test_the_diff_of_unchanged_files_asks_git_nothing(
    repo: Path, store: CheckpointStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The session's first and last snapshots hold the same files: no diff to run. Once a
    # file differs, git is asked and the change shows.
    asked: list[str] = []
    real = store.shadow.git

    def counting(*args: str, **kwargs: Any) -> str:
        asked.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(store.shadow, "git", counting)
    store.snapshot(1)
    store.end_turn(1)
    assert store.diff_since_session_start(as_turn_left=True) == ("", [])
    assert "diff" not in asked

    (repo / "app.py").write_text("def add(a, b):\n    return a + b\n")
    store.snapshot(2)
    store.end_turn(2)
    diff, files = store.diff_since_session_start(as_turn_left=True)
    assert files == ["app.py"] and "+    return a + b" in diff
    assert "diff" in asked
