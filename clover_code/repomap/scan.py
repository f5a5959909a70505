"""Finding the source files of a workspace quickly, again and again.

The scan honours the workspace's ignore rules (``IgnoreRules``: ``.gitignore``,
``.ignore``, ``.rgignore``, ``info/exclude``) but asks them only about
directories and files with a mapped extension, and only below a directory
where some rule can apply. Hidden directories (``.git``, ``.venv``, ...) and
``node_modules`` are never entered: they hold tooling and vendored code, not
the project's own.

Directories are visited breadth first, so when a repository has more files
than the map may take, the shallow ones win. Each directory's listing is
remembered with its mtime: a later scan lists again only directories whose
entries changed, unless an ignore file changed, which starts afresh.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from clover_code.fs.ignore import IgnoreRules
from clover_code.repomap.languages import EXTENSIONS

__all__ = ["DirListing", "Exported", "ScanResult", "SourceScanner"]

_IGNORE_FILES = (".gitignore", ".ignore", ".rgignore")
_SKIPPED_DIRS = frozenset({"node_modules", "__pycache__"})

Stat = tuple[int, int]
"""(mtime in ns, size)."""


DirListing = tuple[int, list[str], list[str], bool, dict[str, Stat]]
"""What one directory holds that the map cares about: (mtime in ns, subdirectories,
source files, whether an ignore rule can apply here, its ignore files' stats).
A plain tuple: a warm scan of a large tree reads thousands of them."""
_MTIME: Final = 0
_SUBDIRS: Final = 1
_FILES: Final = 2
_RULED: Final = 3
_IGNORE: Final = 4
Exported = dict[str, DirListing]
"""Directory listings as the disk cache stores them."""


@dataclass(slots=True)
class ScanResult:
    """The source files found (POSIX paths from the root) and whether the cap cut them."""

    files: list[str]
    capped: bool


def _stat(path: str) -> Stat | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def _has_patterns(path: str) -> bool:
    """Whether an ignore file holds a pattern (git's default exclude file is all comments)."""
    try:
        with open(path, "rb") as f:
            return any(line.strip() and not line.startswith(b"#") for line in f)
    except OSError:
        return False


class SourceScanner:
    """Lists the mapped source files under ``root``, remembering directory listings."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._base = str(root)
        self._dirs: dict[str, DirListing] = {}
        self._rules = IgnoreRules(root)

    def export(self) -> Exported:
        """The remembered listings in a plain form, for the disk cache."""
        return self._dirs

    def load(self, data: Exported) -> None:
        """Remember listings saved by ``export`` (they are checked before use)."""
        self._dirs = data

    def scan(self, max_files: int) -> ScanResult:
        """The source files, at most ``max_files`` of them, shallow directories first."""
        if self._dirs and not self._ignore_files_unchanged():
            self._dirs = {}
            self._rules = IgnoreRules(self.root)
        files: list[str] = []
        seen: set[str] = set()
        queue: deque[tuple[str, bool]] = deque([("", False)])
        while queue:
            rel, parent_ruled = queue.popleft()
            seen.add(rel)
            listing = self._listing(rel, parent_ruled)
            if listing is None:
                continue
            prefix = f"{rel}/" if rel else ""
            if len(files) + len(listing[_FILES]) > max_files:
                files += [prefix + name for name in listing[_FILES][: max_files - len(files)]]
                self._forget_unseen(seen)
                return ScanResult(files, capped=True)
            files += [prefix + name for name in listing[_FILES]]
            ruled = listing[_RULED]
            queue.extend((prefix + sub, ruled) for sub in listing[_SUBDIRS])
        self._forget_unseen(seen)
        return ScanResult(files, capped=False)

    def _forget_unseen(self, seen: set[str]) -> None:
        if len(seen) != len(self._dirs):
            for rel in [rel for rel in self._dirs if rel not in seen]:
                del self._dirs[rel]

    def _ignore_files_unchanged(self) -> bool:
        for rel, listing in self._dirs.items():
            for name, stat in listing[_IGNORE].items():
                if _stat(f"{self._base}/{rel}/{name}" if rel else f"{self._base}/{name}") != stat:
                    return False
        return True

    def _listing(self, rel: str, parent_ruled: bool) -> DirListing | None:
        path = f"{self._base}/{rel}" if rel else self._base
        try:
            mtime = os.stat(path).st_mtime_ns
        except OSError:
            self._dirs.pop(rel, None)
            return None
        cached = self._dirs.get(rel)
        if cached is not None and cached[_MTIME] == mtime and cached[_RULED] >= parent_ruled:
            return cached
        listing = self._list(path, mtime, parent_ruled, cached)
        self._dirs[rel] = listing
        return listing

    def _list(
        self, path: str, mtime: int, parent_ruled: bool, cached: DirListing | None
    ) -> DirListing:
        try:
            with os.scandir(path) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return (mtime, [], [], parent_ruled, {})
        names = {e.name for e in entries}
        ignore_files: dict[str, Stat] = {}
        for name in _IGNORE_FILES:
            if name in names:
                stat = _stat(os.path.join(path, name))
                if stat is not None:
                    ignore_files[name] = stat
        if ".git" in names:
            stat = _stat(os.path.join(path, ".git", "info", "exclude"))
            if stat is not None:
                ignore_files[".git/info/exclude"] = stat
        if cached is not None and cached[_IGNORE] != ignore_files:
            # An ignore file here changed: what was decided below may change too.
            self._rules = IgnoreRules(self.root)
            rel = os.path.relpath(path, self.root)
            prefix = "" if rel == "." else f"{rel}/"
            for key in [k for k in self._dirs if k.startswith(prefix)]:
                del self._dirs[key]
        ruled = parent_ruled or any(_has_patterns(os.path.join(path, n)) for n in ignore_files)
        subdirs: list[str] = []
        files: list[str] = []
        for entry in entries:
            name = entry.name
            try:
                if entry.is_symlink():
                    continue
                if entry.is_dir():
                    if name.startswith(".") or name in _SKIPPED_DIRS:
                        continue
                    if ruled and self._rules.is_ignored(Path(entry.path), True):
                        continue
                    subdirs.append(name)
                elif entry.is_file():
                    if os.path.splitext(name)[1].lower() not in EXTENSIONS:
                        continue
                    if ruled and self._rules.is_ignored(Path(entry.path), False):
                        continue
                    files.append(name)
            except OSError:
                continue
        return (mtime, subdirs, files, ruled, ignore_files)
