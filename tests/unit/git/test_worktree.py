"""Worktrees of hardened git: a snapshot that never writes the user's index, and a merge
back that applies every change or none."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from clover_code.git.worktree import (
    WorktreeError,
    add_worktree,
    changed_files,
    check_name,
    list_worktrees,
    repo_folder,
    repository,
    snapshot,
)
from clover_code.git.worktree_merge import merge_back


def _git(repo: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args]
    return subprocess.run(command, cwd=repo, check=True, capture_output=True, text=True).stdout


def _state(repo: Path) -> tuple[bytes, str, str]:
    return (
        (repo / ".git" / "index").read_bytes(),
        _git(repo, "rev-parse", "HEAD"),
        _git(repo, "status", "--porcelain"),
    )


@pytest.fixture
def tree(repo: Path, tmp_path: Path) -> tuple[Path, Path, str]:
    """The repository (with uncommitted work), a child worktree of its current state,
    and the base commit."""
    (repo / "app.py").write_text("def add(a, b):\n    return a - b\n# wip\n")
    (repo / "blob.bin").write_bytes(b"\x00\x01\xff" * 10)
    (repo / "latin.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    before = _state(repo)
    base = snapshot(repo, "base")
    assert _state(repo) == before  # the user's index, HEAD and files are untouched
    path = tmp_path / "wt" / "child"
    add_worktree(repo, path, "clover/child", base.commit)
    assert (path / "app.py").read_text().endswith("# wip\n")  # uncommitted work came along
    assert (path / "blob.bin").exists()
    return path, tmp_path, base.commit


def test_a_clean_merge_applies_every_kind_of_change_byte_exact(
    repo: Path, tree: tuple[Path, Path, str]
) -> None:
    child, _, _ = tree
    base = snapshot(repo, "again")  # the same state: same tree
    (child / "app.py").write_text((child / "app.py").read_text().replace("a - b", "a + b"))
    (child / "blob.bin").write_bytes(b"\xfe\xff\x00" * 20)
    (child / "latin.txt").write_bytes("na\xefve\n".encode("latin-1"))
    (child / "new.py").write_text("NEW = 1\n")
    (child / "new.py").chmod(0o755)
    # Meanwhile the parent changed another file: both survive.
    (repo / "other.txt").write_text("the parent's\n")
    merged = merge_back(repo, base, child, "child")
    assert merged.applied and not merged.conflicts
    assert sorted(merged.files) == ["app.py", "blob.bin", "latin.txt", "new.py"]
    assert "a + b" in (repo / "app.py").read_text() and "# wip" in (repo / "app.py").read_text()
    assert (repo / "blob.bin").read_bytes() == b"\xfe\xff\x00" * 20
    assert (repo / "latin.txt").read_bytes() == "na\xefve\n".encode("latin-1")
    assert (repo / "new.py").stat().st_mode & 0o111
    assert (repo / "other.txt").read_text() == "the parent's\n"


def test_a_conflict_applies_nothing(repo: Path, tree: tuple[Path, Path, str]) -> None:
    child, _, _ = tree
    base = snapshot(repo, "again")
    (child / "app.py").write_text("def add(a, b):\n    return b + a\n# wip\n")
    (child / "clean.txt").write_text("would merge alone\n")
    (child / "blob.bin").unlink()
    (repo / "app.py").write_text("def add(a, b):\n    return a + b\n# wip\n")
    (repo / "blob.bin").write_bytes(b"changed by the parent")
    before = {p.name: p.read_bytes() for p in repo.iterdir() if p.is_file()}
    merged = merge_back(repo, base, child, "child")
    assert not merged.applied
    conflicts = {c.path: c.hunks for c in merged.conflicts}
    assert set(conflicts) == {"app.py", "blob.bin"}
    assert (
        "<<<<<<< your workspace\n    return a + b\n=======\n    return b + a\n>>>>>>> child"
        in (conflicts["app.py"])
    )
    assert "deleted" in conflicts["blob.bin"]
    # Not even the change that would have merged by itself.
    assert {p.name: p.read_bytes() for p in repo.iterdir() if p.is_file()} == before
    assert not (repo / "clean.txt").exists()


def test_nothing_changed_is_nothing_to_merge(repo: Path, tree: tuple[Path, Path, str]) -> None:
    child, _, _ = tree
    merged = merge_back(repo, snapshot(repo, "again"), child, "child")
    assert merged.applied and merged.files == []


def test_listing_naming_and_the_folder_per_repository(
    repo: Path, tree: tuple[Path, Path, str]
) -> None:
    child, tmp_path, _ = tree
    trees = list_worktrees(repo)
    assert len(trees) == 2 and trees[0].path == repo
    assert trees[1].path == child and trees[1].branch == "clover/child"
    (child / "x.txt").write_text("x\n")
    assert changed_files(child) == ["x.txt"]
    top, common = repository(child)
    assert top == child and common == (repo / ".git").resolve()
    assert repo_folder(tmp_path, top, common).name.startswith("repo-")
    assert repo_folder(tmp_path, top, common) == repo_folder(tmp_path, repo, common)
    for bad in ("", "../x", "a b", "-x", ".hidden", "x.lock", "a" * 65):
        with pytest.raises(WorktreeError, match="cannot name a worktree"):
            check_name(bad)
    assert check_name("fix-login.2") == "fix-login.2"


def test_outside_a_repository_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(WorktreeError, match="failed"):
        repository(tmp_path)
