"""The ``.git`` guard: what sandboxes mount read-only, what it leaves alone, what it puts back.

The attacks themselves, run in every sandbox with the user's git afterwards,
are in ``tests/integration/test_git_escape.py``; here are the guard's own
rules, on real directories and real git, and the notice a session emits.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.config.settings import Settings
from clover_code.tools.sandbox.git_guard import GitGuard, read_only_paths
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.sessions import open_session

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(root: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env |= {"GIT_CONFIG_NOSYSTEM": "1"}
    ident = ["-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    proc = subprocess.run(
        ["git", *ident, *args], cwd=root, env=env, capture_output=True, text=True, check=True
    )
    return proc.stdout


def _sh(root: Path, script: str) -> None:
    subprocess.run(["bash", "-c", script], cwd=root, check=True)


def test_read_only_paths_cover_the_whole_git_directory(repo: Path) -> None:
    assert read_only_paths(repo) == [repo / ".git"]


def test_read_only_paths_of_a_git_file_cover_the_file_and_its_directory(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    _git(ws, "init", "-q", "--separate-git-dir", str(ws / "store.git"))
    assert (ws / ".git").is_file()
    assert read_only_paths(ws) == [ws / ".git", ws / "store.git"]
    # A git directory outside the workspace is not mounted at all: only the pointer is.
    other = tmp_path / "other"
    other.mkdir()
    _git(other, "init", "-q", "--separate-git-dir", str(tmp_path / "outside.git"))
    assert read_only_paths(other) == [other / ".git"]


def test_read_only_paths_of_a_link_cover_its_target_inside(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "real").mkdir(parents=True)
    _git(ws / "real", "init", "-q")
    (ws / ".git").symlink_to(ws / "real" / ".git")
    assert read_only_paths(ws) == [ws / "real" / ".git"]
    assert read_only_paths(tmp_path / "nothing-here") == []


def test_work_with_git_that_plants_nothing_is_left_alone(repo: Path) -> None:
    guard = GitGuard(repo)
    (repo / "app.py").write_text("changed\n")
    _git(repo, "commit", "-qam", "agent commit")
    _git(repo, "checkout", "-q", "-b", "topic")
    _git(repo, "tag", "v1")
    assert guard.check() is None
    assert _git(repo, "log", "--format=%s").split("\n")[0] == "agent commit"


def test_config_change_is_put_back_even_a_harmless_one(repo: Path) -> None:
    before = (repo / ".git" / "config").read_bytes()
    guard = GitGuard(repo)
    _git(repo, "config", "user.name", "someone")
    message = guard.check()
    assert message is not None and ".git/config" in message
    assert (repo / ".git" / "config").read_bytes() == before


def test_an_include_inside_git_and_submodule_configs_are_kept(repo: Path) -> None:
    (repo / ".git" / "extra.cfg").write_text("[user]\n\tname = x\n")
    with (repo / ".git" / "config").open("a") as fh:
        fh.write("[include]\n\tpath = extra.cfg\n")
    modules = repo / ".git" / "modules" / "sub"
    (modules / "hooks").mkdir(parents=True)
    (modules / "config").write_text("[core]\n\tbare = false\n")
    guard = GitGuard(repo)
    (repo / ".git" / "extra.cfg").write_text("[core]\n\tfsmonitor = /bin/evil\n")
    (modules / "config").write_text('[filter "x"]\n\tclean = /bin/evil\n')
    (modules / "hooks" / "post-checkout").write_text("#!/bin/sh\n")
    message = guard.check()
    assert message is not None
    assert "extra.cfg" in message and "modules/sub/config" in message
    assert (repo / ".git" / "extra.cfg").read_text() == "[user]\n\tname = x\n"
    assert (modules / "config").read_text() == "[core]\n\tbare = false\n"
    assert not (modules / "hooks" / "post-checkout").exists()


def test_a_hook_written_through_a_link_is_removed_without_following_it(
    repo: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("keep\n")
    guard = GitGuard(repo)
    _sh(repo, f"cp {elsewhere}/keep.txt {elsewhere}/pre-commit && rm -rf .git/hooks")
    _sh(repo, f"ln -s {elsewhere} .git/hooks")
    assert guard.check() is not None
    assert (repo / ".git" / "hooks").is_dir() and not (repo / ".git" / "hooks").is_symlink()
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert sorted(p.name for p in elsewhere.iterdir()) == ["keep.txt", "pre-commit"]


def test_a_git_file_pointer_swapped_is_put_back(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    _git(ws, "init", "-q", "--separate-git-dir", str(ws / "store.git"))
    pointer = (ws / ".git").read_bytes()
    guard = GitGuard(ws)
    _git(ws, "init", "-q", "evil")
    (ws / ".git").write_text(f"gitdir: {ws / 'evil' / '.git'}\n")
    message = guard.check()
    assert message is not None and "replaced .git" in message
    assert (ws / ".git").read_bytes() == pointer


async def test_the_session_tells_the_user_and_the_model(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    events: list[p.Event] = []
    attack = (
        "mv .git .g && mkdir .git && cp -a .g/. .git/ && echo '#!/bin/sh' > .git/hooks/pre-commit"
    )
    backend = ScriptedBackend(
        [tool_response(("shell", {"command": attack})), text_response("done")]
    )
    session = await open_session(
        make_settings(sandbox="none"), backend, repo, events, approval_mode="full-auto"
    )
    await session.run_turn("go")
    await session.close()
    notices = [e.text for e in events if isinstance(e, p.Notice) and "put it back" in e.text]
    assert len(notices) == 1 and "it moved .git to .g" in notices[0]
    finished = [e for e in events if isinstance(e, p.ToolCallFinished)]
    assert "put it back" in finished[0].result
    assert not (repo / ".g").exists() and not (repo / ".git" / "hooks" / "pre-commit").exists()


def test_pipes_and_odd_bytes_never_block_or_crash_the_guard(repo: Path, tmp_path: Path) -> None:
    """A pipe where a hook or ``.git`` was would block a read; a NUL in a path raises."""
    guard = GitGuard(repo)
    os.mkfifo(repo / ".git" / "hooks" / "pre-commit")
    with (repo / ".git" / "config").open("ab") as fh:
        fh.write(b"[include]\n\tpath = a\0b\n")
    message = guard.check()
    assert message is not None and "hooks/pre-commit" in message
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()

    bare = tmp_path / "bare"
    bare.mkdir()
    guard = GitGuard(bare)
    os.mkfifo(bare / ".git")
    message = guard.check()
    assert message is not None and "moved to .git-clover-quarantine-" in message
    assert not (bare / ".git").exists()


def test_a_workspace_inside_a_repository_guards_both(repo: Path) -> None:
    """Opened in a subdirectory: the enclosing repository's .git, and a new one here."""
    sub = repo / "pkg"
    sub.mkdir()
    config = (repo / ".git" / "config").read_bytes()
    guard = GitGuard(sub)
    with (repo / ".git" / "config").open("a") as fh:
        fh.write("[core]\n\tfsmonitor = /bin/evil\n")
    _git(sub, "init", "-q", ".")
    shutil.copy(repo / "app.py", sub / ".git" / "hooks" / "pre-commit")
    message = guard.check()
    assert message is not None and ".git/config" in message and "quarantine" in message
    assert (repo / ".git" / "config").read_bytes() == config
    assert not (sub / ".git").exists()
