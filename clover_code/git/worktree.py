"""Git worktrees clover-code makes: for a session (``--worktree``) or for a child agent.

Every worktree lives under one folder of clover-code's data directory (the
caller passes it in: ``config`` and ``git`` never import each other), in a
subfolder per repository (``repo_folder``), never inside the user's
checkout. Creating one never touches the user's working tree, index or HEAD:
the user's current state is read into a temporary index (``snapshot``), and
everything runs through hardened git (``git.safe``: no hooks, filters or
other repository-named programs).

Commands that carry file contents (a diff, a patch) run as bytes
(``git_bytes``): a file that is not UTF-8 must reach the other side as it is.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from clover_code.errors import CloverError
from clover_code.git.hardening import git_env
from clover_code.git.safe import git_argv, last_line, run_git

__all__ = [
    "BRANCH_PREFIX",
    "IDENTITY",
    "Snapshot",
    "WorktreeError",
    "WorktreeInfo",
    "add_worktree",
    "apply_patch",
    "branch_exists",
    "branch_merged",
    "changed_files",
    "check_name",
    "delete_branch",
    "diff_names",
    "diff_trees",
    "git_bytes",
    "head_commit",
    "list_worktrees",
    "prune",
    "remove_worktree",
    "repo_folder",
    "repository",
    "snapshot",
]

BRANCH_PREFIX = "clover/"
"""Branches of the worktrees clover-code makes: ``clover/NAME``."""

IDENTITY = ("-c", "user.name=clover-code", "-c", "user.email=clover-code@localhost")
"""Who the commits clover-code makes for its own bookkeeping are by (a worktree's base
state): they never land on the user's branches unless the user merges them."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class WorktreeError(CloverError):
    """A worktree could not be made, merged back or removed (one sentence why)."""


@dataclass(frozen=True, slots=True)
class WorktreeInfo:
    """One worktree of a repository, as ``git worktree list`` reports it."""

    path: Path
    head: str | None
    branch: str | None
    """The branch checked out there (``clover/NAME``), None when detached."""
    prunable: bool = False
    """Git knows it but its folder is gone."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A working tree's state as git objects: a commit of every tracked and untracked
    (not ignored) file, on top of HEAD."""

    commit: str
    tree: str


def check_name(name: str) -> str:
    """``name`` when it can name a worktree folder and its branch; else ``WorktreeError``."""
    if not _NAME.fullmatch(name) or ".." in name or name.endswith((".lock", ".")):
        raise WorktreeError(
            f"'{name}' cannot name a worktree; use letters, digits, '.', '_' and '-' "
            "(at most 64, starting with a letter or digit)."
        )
    return name


def git_bytes(
    *args: str, cwd: Path, input: bytes | None = None, index: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    """One hardened git command whose input and output are bytes (never raises for
    git's exit status: callers read ``returncode``)."""
    env = git_env()
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    argv = git_argv(args, cwd=cwd, env=env)
    return subprocess.run(argv, cwd=cwd, env=env, input=input, capture_output=True, timeout=300)


def _git(*args: str, cwd: Path, what: str, index: Path | None = None) -> str:
    """Run a hardened git command; its stdout, or ``WorktreeError`` saying ``what`` failed."""
    try:
        proc = run_git(*args, cwd=cwd, check=False, index=index, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise WorktreeError(f"{what} failed: git could not run ({exc}).") from None
    if proc.returncode != 0:
        raise WorktreeError(f"{what} failed: {last_line(proc.stderr)}.")
    return proc.stdout


def repository(path: Path) -> tuple[Path, Path]:
    """The top of the working tree holding ``path`` and its repository's common git
    directory (shared by all its worktrees); ``WorktreeError`` outside a repository."""
    out = _git(
        "rev-parse",
        "--show-toplevel",
        "--git-common-dir",
        cwd=path,
        what=f"finding the git repository of {path}",
    ).splitlines()
    if len(out) < 2:
        raise WorktreeError(f"{path} is not inside a git working tree.")
    top = Path(out[0])
    common = Path(out[1]) if os.path.isabs(out[1]) else path / out[1]
    return top, Path(os.path.realpath(common))


def repo_folder(base: Path, top: Path, common_dir: Path) -> Path:
    """Where the worktrees of one repository go under ``base``: its main folder's name
    and a short hash of its git directory (two clones of one project never share)."""
    digest = hashlib.sha256(os.fsencode(str(common_dir))).hexdigest()[:8]
    main = common_dir.parent if common_dir.name == ".git" else top
    name = re.sub(r"[^A-Za-z0-9._-]", "_", main.name)[:40] or "repo"
    return base / f"{name}-{digest}"


def head_commit(root: Path) -> str | None:
    """The commit HEAD names, or None in a repository without commits yet."""
    proc = run_git("rev-parse", "--verify", "-q", "HEAD^{commit}", cwd=root, check=False)
    if proc.returncode != 0:
        return None
    return proc.stdout.strip() or None


def snapshot(root: Path, message: str, parent: str | None = None) -> Snapshot:
    """A commit of ``root``'s working tree as it is now (tracked and untracked files
    that are not ignored), on top of ``parent`` (default: HEAD).

    Read through a copy of the index, so the user's own index is never
    written; the blobs go to the repository's object store."""
    parent = parent or head_commit(root)
    with tempfile.TemporaryDirectory(prefix="clover-index-") as tmp:
        index = Path(tmp) / "index"
        real = Path(_git("rev-parse", "--git-path", "index", cwd=root, what="reading the index"))
        real = real if real.is_absolute() else root / real
        if real.is_file():
            shutil.copyfile(real, index)  # unchanged files need no hashing again
        what = f"reading the state of {root}"
        _git("add", "-A", "--", ".", cwd=root, index=index, what=what)
        tree = _git("write-tree", cwd=root, index=index, what=what).strip()
    args = [*IDENTITY, "commit-tree", tree, "-m", message]
    if parent:
        args += ["-p", parent]
    commit = _git(*args, cwd=root, what=f"recording the state of {root}").strip()
    return Snapshot(commit, tree)


def add_worktree(root: Path, path: Path, branch: str, commit: str | None) -> None:
    """Check out a new folder ``path`` on ``branch``: a new branch at ``commit``, or
    (``commit`` None) the existing branch."""
    path.parent.mkdir(parents=True, exist_ok=True)
    where = ["-b", branch, str(path), commit] if commit is not None else [str(path), branch]
    _git("worktree", "add", "--quiet", *where, cwd=root, what=f"creating the worktree {path}")


def branch_exists(root: Path, branch: str) -> bool:
    """Whether the local branch ``branch`` exists."""
    ref = f"refs/heads/{branch}"
    proc = run_git("rev-parse", "--verify", "-q", ref, cwd=root, check=False)
    return proc.returncode == 0


def remove_worktree(root: Path, path: Path, *, branch: str | None, force: bool) -> None:
    """Remove the worktree at ``path`` (its uncommitted changes too when ``force``) and,
    when given, its ``branch`` (unmerged commits too when ``force``)."""
    args = ["worktree", "remove", *(["--force"] if force else []), str(path)]
    if path.exists():
        _git(*args, cwd=root, what=f"removing the worktree {path}")
    else:
        _git("worktree", "prune", cwd=root, what="pruning worktree records")
    if branch is not None:
        delete_branch(root, branch, force=force)


def delete_branch(root: Path, branch: str, *, force: bool) -> None:
    """Delete ``branch`` (when not ``force``, only if it is merged)."""
    flag = "-D" if force else "-d"
    _git("branch", flag, branch, cwd=root, what=f"deleting the branch {branch}")


def prune(root: Path) -> None:
    """Forget the worktrees whose folders are gone."""
    _git("worktree", "prune", cwd=root, what="pruning worktree records")


def branch_merged(root: Path, branch: str) -> bool:
    """Whether every commit of ``branch`` is in HEAD (deleting it loses nothing)."""
    proc = run_git("merge-base", "--is-ancestor", branch, "HEAD", cwd=root, check=False)
    return proc.returncode == 0


def list_worktrees(root: Path) -> list[WorktreeInfo]:
    """Every worktree of the repository holding ``root`` (the main one first)."""
    out = _git("worktree", "list", "--porcelain", "-z", cwd=root, what="listing the worktrees")
    found: list[WorktreeInfo] = []
    fields: dict[str, str] = {}
    for item in [*out.split("\0"), ""]:
        if item:
            key, _, value = item.partition(" ")
            fields[key] = value
            continue
        if "worktree" in fields:
            branch = fields.get("branch")
            found.append(
                WorktreeInfo(
                    Path(fields["worktree"]),
                    fields.get("HEAD"),
                    branch.removeprefix("refs/heads/") if branch else None,
                    prunable="prunable" in fields,
                )
            )
        fields = {}
    return found


def changed_files(root: Path) -> list[str]:
    """Files of the working tree at ``root`` that differ from HEAD (untracked ones too)."""
    out = _git(
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        cwd=root,
        what=f"reading the status of {root}",
    )
    names: list[str] = []
    items = out.split("\0")
    i = 0
    while i < len(items):
        item = items[i]
        if len(item) > 3:
            names.append(item[3:])
            if item[0] in "RC":
                i += 1  # a rename's source follows
        i += 1
    return names


def diff_trees(root: Path, old: str, new: str, paths: Sequence[str] = ()) -> bytes:
    """The binary-safe patch from tree (or commit) ``old`` to ``new``."""
    args = ["diff", "--binary", "--full-index", "--no-renames", old, new]
    proc = git_bytes(*args, "--", *paths, cwd=root) if paths else git_bytes(*args, cwd=root)
    if proc.returncode != 0:
        why = last_line(proc.stderr.decode("utf-8", "replace"))
        raise WorktreeError(f"comparing the states of {root} failed: {why}.")
    return proc.stdout


def diff_names(root: Path, old: str, new: str) -> list[str]:
    """The files that differ between tree (or commit) ``old`` and ``new``."""
    proc = git_bytes("diff", "--name-only", "-z", "--no-renames", old, new, cwd=root)
    if proc.returncode != 0:
        why = last_line(proc.stderr.decode("utf-8", "replace"))
        raise WorktreeError(f"comparing the states of {root} failed: {why}.")
    return [os.fsdecode(name) for name in proc.stdout.split(b"\0") if name]


def apply_patch(root: Path, patch: bytes) -> str | None:
    """Apply ``patch`` to the working tree at ``root``, all of it or nothing: None once
    applied, else why it does not apply (git's last line), with nothing changed."""
    if not patch.strip():
        return None
    check = git_bytes("apply", "--check", "--whitespace=nowarn", "-", cwd=root, input=patch)
    if check.returncode != 0:
        return last_line(check.stderr.decode("utf-8", "replace"))
    done = git_bytes("apply", "--whitespace=nowarn", "-", cwd=root, input=patch)
    if done.returncode != 0:  # git apply is atomic: a failure here changed nothing
        return last_line(done.stderr.decode("utf-8", "replace"))
    return None
