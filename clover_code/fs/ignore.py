"""Which files the listing and search tools skip, the way ripgrep does.

Rules come from ``.gitignore``, ``.ignore`` and ``.rgignore`` files in the
workspace root and every directory below it, and from ``.git/info/exclude``.
Files above the workspace root are never read. Precedence follows ripgrep
(so both grep back ends agree): a match in any ``.rgignore`` of the chain of
directories wins over ``.ignore``, which wins over ``.gitignore``, which wins
over ``info/exclude``; within one kind the deepest directory decides, and
within one file the last matching pattern. Git rules stop at a repository
boundary: a directory holding ``.git`` does not inherit the ``.gitignore``
files of the directories above it.

A directory that is ignored is not entered, so nothing below it can be
re-included. Any entry named ``.git`` (compared without regard to case) is
always skipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

__all__ = ["IgnoreRules", "WalkEntry", "is_git_name", "walk_tree"]

_DOT_KINDS = (".rgignore", ".ignore")


def is_git_name(name: str) -> bool:
    """Whether a file name is ``.git`` in any letter case."""
    return name.casefold() == ".git"


def _load_spec(file: Path) -> GitIgnoreSpec | None:
    try:
        text = file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    lines = text.splitlines()
    if not any(line.strip() and not line.startswith("#") for line in lines):
        return None
    # Imported here: most directories have no rules, and a run may meet none.
    from pathspec import GitIgnoreSpec

    return GitIgnoreSpec.from_lines(lines)


def _git_common_dir(directory: Path) -> Path | None:
    """The git directory whose ``info/exclude`` applies to ``directory``."""
    dot_git = directory / ".git"
    if dot_git.is_dir():
        return dot_git
    if not dot_git.is_file():
        return None
    # A worktree or submodule: ".git" is a file naming the real git directory.
    try:
        first = dot_git.read_text(encoding="utf-8", errors="replace").splitlines()[0]
    except (OSError, IndexError):
        return None
    if not first.startswith("gitdir:"):
        return None
    git_dir = (directory / first.removeprefix("gitdir:").strip()).resolve()
    try:
        common = (git_dir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return git_dir
    return (git_dir / common).resolve()


@dataclass(slots=True)
class _DirRules:
    by_kind: dict[str, GitIgnoreSpec]
    has_git: bool


class IgnoreRules:
    """Lazily loaded ignore rules for the tree under ``root``.

    Ignore files are read the first time a directory is consulted; make a new
    instance to see edits to them.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._dirs: dict[Path, _DirRules] = {}

    def _rules(self, directory: Path) -> _DirRules:
        cached = self._dirs.get(directory)
        if cached is not None:
            return cached
        by_kind: dict[str, GitIgnoreSpec] = {}
        for kind in (*_DOT_KINDS, ".gitignore"):
            spec = _load_spec(directory / kind)
            if spec is not None:
                by_kind[kind] = spec
        git_dir = _git_common_dir(directory)
        if git_dir is not None:
            spec = _load_spec(git_dir / "info" / "exclude")
            if spec is not None:
                by_kind["exclude"] = spec
        rules = _DirRules(by_kind, has_git=os.path.lexists(directory / ".git"))
        self._dirs[directory] = rules
        return rules

    def _chain(self, parent: Path) -> list[Path]:
        """``parent`` and its ancestors up to the root, deepest first."""
        chain = [parent]
        current = parent
        while current != self.root and current.is_relative_to(self.root):
            current = current.parent
            chain.append(current)
        return chain

    def is_ignored(self, path: Path, is_dir: bool) -> bool:
        """Whether ``path`` itself is ignored (its parents are assumed not to be)."""
        if is_git_name(path.name):
            return True
        if path == self.root:
            return False
        chain = self._chain(path.parent)
        git_chain: list[Path] = []
        for directory in chain:
            git_chain.append(directory)
            if self._rules(directory).has_git:
                break
        suffix = "/" if is_dir else ""
        for kind, dirs in (
            (".rgignore", chain),
            (".ignore", chain),
            (".gitignore", git_chain),
            ("exclude", git_chain),
        ):
            for directory in dirs:
                spec = self._rules(directory).by_kind.get(kind)
                if spec is None:
                    continue
                rel = path.relative_to(directory).as_posix() + suffix
                result = spec.check_file(rel)
                if result.include is not None:
                    return bool(result.include)
        return False

    def is_ignored_path(self, path: Path) -> bool:
        """Whether ``path`` or any directory between it and the root is ignored."""
        if path == self.root or not path.is_relative_to(self.root):
            return False
        current = self.root
        for part in path.relative_to(self.root).parts:
            current = current / part
            is_dir = current.is_dir() and not current.is_symlink()
            if self.is_ignored(current, is_dir):
                return True
        return False


@dataclass(slots=True, frozen=True)
class WalkEntry:
    """One entry found by a walk: its path, ``rel`` (POSIX, from the root) and kind.

    ``is_file`` means a regular file (not a link, FIFO, socket or device).
    """

    path: Path
    rel: str
    is_dir: bool
    is_file: bool
    is_symlink: bool
    depth: int


def _sorted_entries(directory: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as it:
            entries = list(it)
    except OSError:
        return []
    entries.sort(key=lambda e: e.name)
    return entries


def walk_tree(
    root: Path,
    start: Path,
    *,
    rules: IgnoreRules | None,
    max_depth: int | None = None,
) -> Iterator[WalkEntry]:
    """Entries below ``start``, depth first with names sorted (ripgrep's order).

    ``depth`` is 1 for the children of ``start``; with ``max_depth`` deeper
    entries are not produced. ``rules`` None means nothing is ignored but
    ``.git``. Symbolic links are produced but never followed.
    """

    def visit(directory: Path, depth: int) -> Iterator[WalkEntry]:
        for entry in _sorted_entries(directory):
            if is_git_name(entry.name):
                continue
            path = Path(entry.path)
            is_symlink = entry.is_symlink()
            try:
                is_dir = not is_symlink and entry.is_dir(follow_symlinks=False)
                is_file = not is_symlink and entry.is_file(follow_symlinks=False)
            except OSError:
                continue
            if rules is not None and rules.is_ignored(path, is_dir):
                continue
            rel = path.relative_to(root).as_posix()
            yield WalkEntry(path, rel, is_dir, is_file, is_symlink, depth)
            if is_dir and (max_depth is None or depth < max_depth):
                yield from visit(path, depth + 1)

    if start.is_dir() and not start.is_symlink():
        yield from visit(start, 1)
