"""Bringing a worktree's changes back into the working tree it was made from.

A child agent's worktree starts from a snapshot of the parent's working tree
(``worktree.snapshot``: the *base*). When the child is done, ``merge_back``
records what its worktree holds, records the parent's working tree as it is
*now*, and lets git merge the two against the base (``git merge-tree``, which
writes nothing to any working tree or index). A clean merge becomes one patch
from the parent's current state to the merged one, applied with ``git apply``
(checked first, all files or none). A conflict is reported with its
conflicting hunks, and nothing is applied: the parent's files are never left
half merged, and the child's work stays on its branch.

Needs git 2.38 or newer (``merge-tree --write-tree``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from clover_code.git.safe import last_line
from clover_code.git.worktree import (
    Snapshot,
    WorktreeError,
    apply_patch,
    diff_names,
    diff_trees,
    git_bytes,
    snapshot,
)

__all__ = ["Conflict", "MergeBack", "merge_back"]

CONTEXT_LINES = 2
"""Lines of context shown around a conflicting hunk."""
HUNKS_LIMIT = 6_000
"""Characters of conflicting hunks reported per file (the rest is named, not shown)."""


@dataclass(frozen=True, slots=True)
class Conflict:
    """One file whose changes could not be merged: its conflicting hunks (between
    ``<<<<<<<`` and ``>>>>>>>`` markers), or what git said when there are none
    (a file one side deleted and the other changed, a binary file)."""

    path: str
    hunks: str


@dataclass(frozen=True, slots=True)
class MergeBack:
    """What came of merging a worktree back."""

    files: list[str]
    """The files the worktree changed (relative to the top of the working tree)."""
    applied: bool
    """Whether its changes are now in the parent's working tree (True when there were none)."""
    conflicts: list[Conflict] = field(default_factory=list)
    problem: str | None = None
    """Why nothing was applied, besides conflicts (the files kept changing under it)."""


def merge_back(parent: Path, base: Snapshot, worktree: Path, label: str) -> MergeBack:
    """Merge what ``worktree`` changed since ``base`` into the working tree ``parent``.

    ``label`` names the worktree's side in conflict markers (``task-1``)."""
    child = snapshot(worktree, f"clover-code: the work of {label}", parent=base.commit)
    if child.tree == base.tree:
        return MergeBack([], applied=True)
    files = diff_names(parent, base.tree, child.tree)
    problem = "the workspace kept changing while the changes were merged"
    for _ in range(3):
        current = snapshot(parent, "clover-code: the workspace before a merge", base.commit)
        if current.tree == base.tree:
            merged = child.tree
        else:
            merged, conflicts = _merge_trees(parent, current, child, label)
            if conflicts:
                return MergeBack(files, applied=False, conflicts=conflicts)
        why = apply_patch(parent, diff_trees(parent, current.tree, merged))
        if why is None:
            return MergeBack(files, applied=True)
        problem = f"the merged changes did not apply ({why})"
        # The parent's files changed between reading and applying them: read again.
    return MergeBack(files, applied=False, problem=problem)


def _merge_trees(
    root: Path, ours: Snapshot, theirs: Snapshot, label: str
) -> tuple[str, list[Conflict]]:
    """Merge ``theirs`` into ``ours`` (both on the same base commit): the merged tree
    and the conflicts (none when it merged cleanly)."""
    proc = git_bytes(
        "merge-tree",
        "--write-tree",
        "--name-only",
        "-z",
        "--messages",
        ours.commit,
        theirs.commit,
        cwd=root,
    )
    if proc.returncode not in (0, 1):
        why = last_line(proc.stderr.decode("utf-8", "replace"))
        if "unknown option" in why or "usage:" in proc.stderr.decode("utf-8", "replace"):
            why = "merging needs git 2.38 or newer; update git"
        raise WorktreeError(f"merging the changes of {label} failed: {why}.")
    parts = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    tree = parts[0].strip()
    if proc.returncode == 0:
        return tree, []
    names: list[str] = []
    i = 1
    while i < len(parts) and parts[i]:
        if parts[i] not in names:
            names.append(parts[i])
        i += 1
    messages = _messages(parts[i + 1 :])
    for path in messages:
        if path not in names:
            names.append(path)
    conflicts = []
    for path in names:
        hunks = _hunks(root, tree, path, {ours.commit: "your workspace", theirs.commit: label})
        said = "\n".join(messages.get(path, []))
        conflicts.append(Conflict(path, hunks or said or "both sides changed it"))
    return tree, conflicts


def _messages(parts: list[str]) -> dict[str, list[str]]:
    """The conflict messages of ``merge-tree -z --messages``, by path."""
    found: dict[str, list[str]] = {}
    i = 0
    while i < len(parts) and parts[i].isdigit():
        count = int(parts[i])
        paths = parts[i + 1 : i + 1 + count]
        kind = parts[i + 1 + count] if i + 1 + count < len(parts) else ""
        text = parts[i + 2 + count] if i + 2 + count < len(parts) else ""
        i += count + 3
        if kind.startswith("CONFLICT"):
            for path in paths:
                found.setdefault(path, []).append(text.strip())
    return found


def _hunks(root: Path, tree: str, path: str, labels: dict[str, str]) -> str:
    """The conflicting regions of ``path`` in the merged ``tree``, with a little context;
    the commit ids git put on the markers are replaced by ``labels``."""
    proc = git_bytes("cat-file", "blob", f"{tree}:{path}", cwd=root)
    if proc.returncode != 0 or b"\0" in proc.stdout[:8000]:
        return ""
    lines = proc.stdout.decode("utf-8", "replace").splitlines()
    keep: set[int] = set()
    start: int | None = None
    for n, line in enumerate(lines):
        if line.startswith("<<<<<<< "):
            start = n
        elif line.startswith(">>>>>>> ") and start is not None:
            keep.update(
                range(max(0, start - CONTEXT_LINES), min(len(lines), n + 1 + CONTEXT_LINES))
            )
            start = None
    out: list[str] = []
    last = -2
    for n in sorted(keep):
        if n != last + 1 and out:
            out.append("...")
        out.append(_relabel(lines[n], labels))
        last = n
    text = "\n".join(out)
    if len(text) > HUNKS_LIMIT:
        text = text[:HUNKS_LIMIT] + "\n... (more conflicting lines in this file)"
    return text


def _relabel(line: str, labels: dict[str, str]) -> str:
    for marker in ("<<<<<<< ", ">>>>>>> "):
        if line.startswith(marker):
            name = line.removeprefix(marker).strip()
            return marker + labels.get(name, name)
    return line
