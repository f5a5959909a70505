"""Harness git and repositories nested in the workspace: a real submodule and a plain
nested repository, each armed with a filter, a textconv, an fsmonitor and hooks.

Plain git at the top runs the submodule's programs (the control); every git
command the harness runs (the status bar, checkpoints, /diff, auto-commit,
undo, GitPython) and porcelain commands through ``gitsafe`` run none.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from clover_code.git.hardening import HARDENING_CONFIG, git_env
from clover_code.git.nested import nested_drivers
from clover_code.git.safe import git_argv, run_git, safe_repo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _plain_git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env |= {"GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=False
    )


NESTED_TRAP = "#!/bin/sh\ntouch {marker}\ncat\n"


def _arm(repo: Path, marker: Path, filter_name: str) -> None:
    """Make ``repo`` run a program at any git command in it: filter, fsmonitor, hooks."""
    trap = repo / ".trap"
    trap.write_text(NESTED_TRAP.format(marker=marker))
    trap.chmod(0o755)
    git_dir = Path(_plain_git(repo, "rev-parse", "--absolute-git-dir").stdout.strip())
    for key, value in [
        (f"filter.{filter_name}.clean", str(trap)),
        (f"filter.{filter_name}.smudge", str(trap)),
        (f"filter.{filter_name}.required", "true"),
        (f"diff.{filter_name}.textconv", str(trap)),
        ("core.fsmonitor", str(trap)),
    ]:
        _plain_git(repo, "config", key, value)
    for hook in ["pre-commit", "post-commit", "post-checkout"]:
        shutil.copy(trap, git_dir / "hooks" / hook)
    (repo / ".gitattributes").write_text(f"* filter={filter_name} diff={filter_name}\n")


def _stir(*files: Path) -> None:
    """Same size, new content and time: git must read (and filter) these files again."""
    for path in files:
        data = path.read_bytes()
        path.write_bytes(data.swapcase())


@pytest.fixture
def nested(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, list[Path]]:
    """A workspace repository holding a real submodule and a plain nested repository,
    each armed to run a program; returns (workspace, marker directory, files to stir)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".gitconfig").write_text(
        '[user]\n\tname = t\n\temail = t@example.invalid\n[protocol "file"]\n\tallow = always\n'
    )
    markers = tmp_path / "markers"
    markers.mkdir()
    source = tmp_path / "source"
    source.mkdir()
    _plain_git(source, "init", "-q", "-b", "main")
    (source / "s.txt").write_text("sub\n")
    _plain_git(source, "add", "s.txt")
    _plain_git(source, "commit", "-q", "-m", "sub")

    ws = tmp_path / "ws"
    ws.mkdir()
    _plain_git(ws, "init", "-q", "-b", "main")
    (ws / "a.txt").write_text("top\n")
    _plain_git(ws, "add", "a.txt")
    _plain_git(ws, "submodule", "add", "-q", str(source), "sub")
    _plain_git(ws, "commit", "-q", "-m", "top with a submodule")
    assert (ws / "sub" / ".git").is_file(), "the submodule was not made"

    nest = ws / "nest"
    nest.mkdir()
    _plain_git(nest, "init", "-q", "-b", "main")
    (nest / "n.txt").write_text("nest\n")
    _plain_git(nest, "add", "n.txt")
    _plain_git(
        nest, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "n"
    )

    _arm(ws / "sub", markers / "submodule", "subx")
    _arm(nest, markers / "nested", "nestx")
    # The submodule's own ignore setting must not bring the recursion back.
    _plain_git(ws, "config", "-f", ".gitmodules", "submodule.sub.ignore", "none")
    return ws, markers, [ws / "sub" / "s.txt", nest / "n.txt"]


def test_nested_traps_fire_without_hardening(nested: tuple[Path, Path, list[Path]]) -> None:
    ws, markers, files = nested
    _stir(*files)
    _plain_git(ws, "status")
    assert (markers / "submodule").exists()
    _plain_git(ws / "nest", "status")
    assert (markers / "nested").exists()


def test_harness_git_never_enters_nested_repositories(
    nested: tuple[Path, Path, list[Path]], tmp_path: Path
) -> None:
    from clover_code.agent.checkpoints.store import CheckpointStore

    ws, markers, files = nested
    _stir(*files)
    # The status bar.
    status = run_git("status", "--porcelain=v1", "-b", cwd=ws, check=False)
    assert status.returncode == 0 and status.stdout.startswith("## main"), status.stderr
    for args in [("diff",), ("diff", "HEAD"), ("diff", "--cached"), ("log", "-p", "-2")]:
        _stir(*files)
        run_git(*args, cwd=ws, check=False)
    # Checkpoints, /diff, auto-commit and undo.
    store = CheckpointStore(ws, tmp_path / "data", session_id="s1")
    store.snapshot(1)
    _stir(*files)
    (ws / "a.txt").write_text("changed\n")
    (ws / "added.txt").write_text("new\n")
    store.end_turn(1)
    _, changed = store.diff_since_session_start()
    assert changed == ["a.txt", "added.txt"], changed
    commit = store.auto_commit("agent work")
    assert commit is not None
    store.snapshot(2)
    _stir(*files)
    store.end_turn(2)
    store.undo()
    # GitPython through the hardened wrapper.
    _stir(*files)
    safe_repo(ws).is_dirty(untracked_files=True)
    assert list(markers.iterdir()) == []
    shown = _plain_git(ws, "show", "--name-only", "--format=%s", "HEAD").stdout.split()
    assert shown == ["agent", "work", "a.txt", "added.txt"]


def test_porcelain_commit_skips_a_submodule_even_when_it_asks_not_to_be(
    nested: tuple[Path, Path, list[Path]],
) -> None:
    ws, markers, files = nested
    _stir(*files)
    (ws / "a.txt").write_text("changed\n")
    run_git("add", "-A", cwd=ws)  # the plain nested repository becomes a gitlink too
    run_git("commit", "-q", "-m", "porcelain", cwd=ws)
    for args in [("status",), ("commit", "-qam", "again"), ("diff", "HEAD~1")]:
        _stir(*files)
        (ws / "a.txt").write_text(f"{args}\n")
        run_git(*args, cwd=ws)
    assert list(markers.iterdir()) == []
    tree = _plain_git(ws, "ls-tree", "--name-only", "HEAD").stdout.split()
    assert "nest" in tree and "sub" in tree
    argv = git_argv(["commit"], cwd=ws)
    assert "submodule.sub.ignore=all" in argv and "diff.ignoreSubmodules=all" in argv
    assert git_argv(["status"], cwd=ws)[-2:] == ["status", "--ignore-submodules=all"]


def test_nested_drivers_are_found_in_submodules_and_added_repositories(
    nested: tuple[Path, Path, list[Path]],
) -> None:
    ws, _, _ = nested
    command = ["git", *(arg for k, v in HARDENING_CONFIG for arg in ("-c", f"{k}={v}"))]
    found = nested_drivers(command, ws / ".git", ws, git_env())
    assert found == {("filter", "subx")}
    _plain_git(ws, "add", "nest")  # an embedded repository, now a gitlink
    found = nested_drivers(command, ws / ".git", ws, git_env())
    assert found == {("filter", "subx"), ("filter", "nestx")}
