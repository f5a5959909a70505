"""Sessions in git worktrees: ``--worktree [NAME]``, and ``clover-code worktree``.

``--worktree NAME`` runs the session (app or ``--task``) in a git worktree on
branch ``clover/NAME``, made in the worktrees folder of clover-code's data
directory, never inside the user's checkout, whose files, index and HEAD are
left as they are. The user's uncommitted changes stay in their checkout
unless ``--worktree-from-dirty`` carries them over (as uncommitted changes
in the new worktree). The same NAME again reopens that worktree. When the
session ends, the branch and how to merge or remove it are printed.

``clover-code worktree list|remove NAME|prune`` lists the worktrees
clover-code made for the current repository (a child agent's kept ones too),
removes one (refusing to lose uncommitted changes without ``--force``; its
branch goes once it is merged), or prunes: forgets the worktrees whose folders
are gone and removes the clean ones whose branch is merged.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from clover_code.config.settings import worktrees_dir
from clover_code.errors import CloverError, UsageError
from clover_code.git.worktree import (
    BRANCH_PREFIX,
    WorktreeError,
    WorktreeInfo,
    add_worktree,
    apply_patch,
    branch_exists,
    branch_merged,
    changed_files,
    check_name,
    delete_branch,
    diff_trees,
    head_commit,
    list_worktrees,
    prune,
    remove_worktree,
    repo_folder,
    repository,
    snapshot,
)

__all__ = ["SessionWorktree", "build_parser", "main", "open_worktree"]


@dataclass(frozen=True, slots=True)
class SessionWorktree:
    """The worktree a session runs in."""

    name: str
    path: Path
    branch: str
    checkout: Path
    """The user's working tree it was made from."""
    cwd: Path
    """Where the session starts: the same folder of the worktree as the user was in."""
    notes: tuple[str, ...] = ()

    def farewell(self, out: TextIO) -> None:
        """Say where the session's work is and how to merge or remove it."""
        try:
            changed = changed_files(self.path)
        except CloverError:
            changed = []
        state = f" ({len(changed)} files changed, not committed yet)" if changed else ""
        lines = [f"clover-code: the session worked in {self.path}, on branch {self.branch}{state}."]
        if changed:
            lines.append(
                f'  keep the work:  git -C {self.path} add -A && git -C {self.path} commit -m "..."'
            )
        lines.append(f"  merge it:       git -C {self.checkout} merge {self.branch}")
        lines.append(f"  remove it:      clover-code worktree remove {self.name}")
        out.write("\n".join(lines) + "\n")
        out.flush()


def _repository(cwd: Path, what: str) -> tuple[Path, Path]:
    try:
        return repository(cwd)
    except WorktreeError:
        raise UsageError(
            f"{what} needs a git repository, and {cwd} is not in one; run it in a "
            "repository (git init, then a first commit)."
        ) from None


def open_worktree(cwd: Path, name: str | None, *, carry: bool) -> SessionWorktree:
    """The worktree ``--worktree NAME`` asks for: made now, or the existing one of that
    name (``UsageError`` for what cannot work, in one sentence)."""
    top, common = _repository(cwd, "--worktree")
    try:
        name = check_name(name) if name else time.strftime("session-%Y%m%d-%H%M%S")
    except WorktreeError as exc:
        raise UsageError(str(exc)) from None
    folder = repo_folder(worktrees_dir(), top, common)
    path, branch = folder / name, BRANCH_PREFIX + name
    known = {w.path.resolve() for w in list_worktrees(top) if not w.prunable}
    rel = cwd.resolve().relative_to(top.resolve()) if cwd.resolve() != top.resolve() else Path()
    if path.exists():
        if path.resolve() not in known:
            raise UsageError(
                f"{path} exists but is not a worktree of this repository; remove it or "
                "choose another name."
            )
        if carry:
            raise UsageError(
                f"the worktree {name} exists already; --worktree-from-dirty carries "
                "changes over only into a new one (choose another name)."
            )
        start = path / rel if (path / rel).is_dir() else path
        return SessionWorktree(name, path, branch, top, start, (f"reopened the worktree {name}.",))
    head = head_commit(top)
    if head is None:
        raise UsageError(
            f"--worktree starts from the current commit, and {top} has none yet; "
            "make a first commit."
        )
    notes: list[str] = []
    reused = branch_exists(top, branch)
    add_worktree(top, path, branch, None if reused else head)
    if reused:
        notes.append(f"the branch {branch} existed already: the worktree has its commits.")
    dirty = changed_files(top)
    if carry and dirty:
        state = snapshot(top, f"clover-code: uncommitted changes carried to {name}", head)
        problem = apply_patch(path, diff_trees(top, head, state.tree))
        if problem is not None:
            remove_worktree(top, path, branch=None if reused else branch, force=True)
            raise WorktreeError(
                f"your uncommitted changes could not be carried over ({problem}); "
                "the worktree was not made."
            )
        notes.append(f"carried {len(dirty)} uncommitted files over to the worktree.")
    elif dirty:
        notes.append(
            f"your {len(dirty)} uncommitted files stay in your checkout and are not in the "
            "worktree (--worktree-from-dirty carries them over)."
        )
    start = path / rel if (path / rel).is_dir() else path
    return SessionWorktree(name, path, branch, top, start, tuple(notes))


# ---------------------------------------------------------------- the subcommand


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``clover-code worktree``."""
    parser = argparse.ArgumentParser(
        prog="clover-code worktree",
        description="The git worktrees clover-code made for this repository (--worktree "
        "sessions, and child agents' work that was kept).",
    )
    parser.add_argument("-C", "--cd", type=Path, metavar="DIR", help="the repository's folder")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser("list", help="list them: name, branch, state")
    remove = commands.add_parser("remove", help="remove one (its branch too, once merged)")
    remove.add_argument("name", metavar="NAME", help="its name (as list shows it)")
    remove.add_argument(
        "--force", action="store_true", help="remove it even with uncommitted changes (lost)"
    )
    commands.add_parser(
        "prune",
        help="forget worktrees whose folders are gone; remove clean ones whose branch is merged",
    )
    return parser


def _ours(cwd: Path) -> tuple[Path, list[WorktreeInfo]]:
    """The repository's top and the worktrees clover-code made for it."""
    top, common = _repository(cwd, "clover-code worktree")
    folder = repo_folder(worktrees_dir(), top, common).resolve()
    return top, [w for w in list_worktrees(top) if w.path.resolve().parent == folder]


def _state(tree: WorktreeInfo, top: Path) -> str:
    if tree.prunable or not tree.path.exists():
        return "folder gone (prune forgets it)"
    changed = changed_files(tree.path)
    parts = [f"{len(changed)} files changed" if changed else "clean"]
    if tree.branch and branch_merged(top, tree.branch):
        parts.append("merged")
    return ", ".join(parts)


def _list(cwd: Path, out: TextIO) -> int:
    top, found = _ours(cwd)
    if not found:
        out.write("clover-code made no worktrees for this repository.\n")
        return 0
    rows = [(w.path.name, w.branch or "(detached)", _state(w, top), str(w.path)) for w in found]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for row in rows:
        cells = [row[i].ljust(widths[i]) for i in range(3)]
        out.write("  ".join([*cells, row[3]]) + "\n")
    return 0


def _remove(cwd: Path, name: str, force: bool, out: TextIO) -> int:
    top, found = _ours(cwd)
    tree = next((w for w in found if w.path.name == name), None)
    if tree is None:
        names = ", ".join(w.path.name for w in found) or "none"
        raise UsageError(f"there is no worktree {name} of clover-code here; there are: {names}.")
    if tree.path.exists() and not force:
        changed = changed_files(tree.path)
        if changed:
            raise UsageError(
                f"the worktree {name} has {len(changed)} uncommitted changed files "
                f"({', '.join(changed[:3])}{'...' if len(changed) > 3 else ''}); commit them "
                "there, or add --force to lose them."
            )
    remove_worktree(top, tree.path, branch=None, force=True)
    out.write(f"removed the worktree {tree.path}.\n")
    if tree.branch:
        out.write(_drop_branch(top, tree.branch))
    return 0


def _drop_branch(top: Path, branch: str) -> str:
    if branch_merged(top, branch):
        delete_branch(top, branch, force=False)
        return f"deleted its branch {branch} (merged).\n"
    return f"kept its branch {branch}: it is not merged (git branch -D {branch} deletes it).\n"


def _prune(cwd: Path, out: TextIO) -> int:
    top, found = _ours(cwd)
    gone = [w for w in found if w.prunable or not w.path.exists()]
    prune(top)
    for tree in gone:
        out.write(f"forgot {tree.path.name} (its folder was gone).\n")
    removed = 0
    for tree in found:
        if tree in gone or not tree.branch or changed_files(tree.path):
            continue
        if branch_merged(top, tree.branch):
            remove_worktree(top, tree.path, branch=tree.branch, force=False)
            out.write(f"removed {tree.path.name} (clean, and {tree.branch} is merged).\n")
            removed += 1
    if not gone and not removed:
        out.write("nothing to prune.\n")
    return 0


def main(argv: list[str]) -> int:
    """Run ``clover-code worktree``; errors are one sentence on stderr."""
    args = build_parser().parse_args(argv)
    cwd = (args.cd or Path.cwd()).resolve()
    try:
        if args.command == "list":
            return _list(cwd, sys.stdout)
        if args.command == "remove":
            return _remove(cwd, args.name, args.force, sys.stdout)
        return _prune(cwd, sys.stdout)
    except CloverError as exc:
        sys.stderr.write(f"clover-code: {exc}\n")
        return int(exc.exit_code)
