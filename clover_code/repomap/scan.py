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

import itertools
import operator
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
_Queued = tuple[str, str, bool]
"""A directory to visit: (path from the root, its full path, whether rules apply above it)."""
_Joined = tuple[DirListing, list[str], list[_Queued]]
"""A directory's listing with the paths of its files and of its subdirectories to visit."""


_mtime_of = operator.attrgetter("st_mtime_ns")


@dataclass(slots=True)
class _LastScan:
    """An uncapped scan, to check and reuse: the directories it visited, in order."""

    max_files: int
    result: ScanResult
    visited: list[_Queued]
    mtimes: list[int]
    paths: list[str]
    """The full path of each directory visited."""


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
        self._joined: dict[str, _Joined] = {}
        self._ignore_files: dict[str, dict[str, Stat]] = {}
        """The ignore files' stats of each remembered directory that has some."""
        self._changed = False
        """Whether a listing's content changed since the last ``changed``."""
        self._rules = IgnoreRules(root)
        self._last: _LastScan | None = None

    def export(self) -> Exported:
        """The remembered listings in a plain form, for the disk cache."""
        return self._dirs

    def load(self, data: Exported) -> None:
        """Remember listings saved by ``export`` (they are checked before use)."""
        self._dirs = data
        self._joined = {}
        self._ignore_files = {rel: d[_IGNORE] for rel, d in data.items() if d[_IGNORE]}
        self._changed = False
        self._last = None

    def changed(self) -> bool:
        """Whether what a listing holds changed since the last call (or ``load``), so
        ``export`` is worth saving. A listing whose mtime alone moved is not worth it:
        a later scan lists that directory again, at one ``scandir``."""
        changed, self._changed = self._changed, False
        return changed

    def scan(self, max_files: int) -> ScanResult:
        """The source files, at most ``max_files`` of them, shallow directories first."""
        if self._dirs and not self._ignore_files_unchanged():
            for rel in list(self._dirs):
                self._drop(rel)
            self._rules = IgnoreRules(self.root)
            self._last = None
        last = self._last
        if last is not None and last.max_files == max_files and self._unchanged(last):
            return last.result
        self._last = None
        visited: list[_Queued] = []
        files: list[str] = []
        seen: set[str] = set()
        queue: deque[_Queued] = deque([("", self._base, False)])
        dirs, joined_of, stat = self._dirs, self._joined, os.stat
        # The hot loop of every build: one stat per directory, the rest is lookups.
        while queue:
            rel, path, parent_ruled = queue.popleft()
            try:
                mtime = stat(path).st_mtime_ns
            except OSError:
                self._drop(rel)
                continue
            seen.add(rel)
            visited.append((rel, path, parent_ruled))
            listing = dirs.get(rel)
            if listing is None or listing[_MTIME] != mtime or listing[_RULED] < parent_ruled:
                listing = self._remember(rel, self._list(path, mtime, parent_ruled, listing))
            # The paths below a directory are joined once per listing, not at every scan.
            joined = joined_of.get(rel)
            if joined is None or joined[0] is not listing:
                joined = joined_of[rel] = self._join(rel, listing)
            if len(files) + len(joined[1]) > max_files:
                files += joined[1][: max_files - len(files)]
                self._forget_unseen(seen)
                return ScanResult(files, capped=True)
            files += joined[1]
            queue.extend(joined[2])
        self._forget_unseen(seen)
        result = ScanResult(files, capped=False)
        mtimes = [dirs[v[0]][_MTIME] for v in visited]
        self._last = _LastScan(max_files, result, visited, mtimes, [v[1] for v in visited])
        return result

    def _unchanged(self, last: _LastScan) -> bool:
        """Whether the last scan's result holds, at one stat per directory it visited.

        A directory whose mtime moved is listed again; if what it holds for
        the map is the same (a file replaced by a rename, as atomic writes
        do), the result still holds.
        """
        try:
            mtimes = list(map(_mtime_of, map(os.stat, last.paths)))
        except OSError:
            return False
        for i in itertools.compress(range(len(mtimes)), map(operator.ne, mtimes, last.mtimes)):
            rel, path, parent_ruled = last.visited[i]
            old = self._dirs[rel]
            new = self._list(path, mtimes[i], parent_ruled, old)
            same = (
                new[_IGNORE] == old[_IGNORE]
                and new[_SUBDIRS : _RULED + 1] == old[_SUBDIRS : _RULED + 1]
            )
            self._remember(rel, new, changed=not same)
            if not same:
                return False
            last.mtimes[i] = mtimes[i]
        return True

    def _remember(self, rel: str, listing: DirListing, *, changed: bool = True) -> DirListing:
        self._dirs[rel] = listing
        self._changed = self._changed or changed
        if listing[_IGNORE]:
            self._ignore_files[rel] = listing[_IGNORE]
        else:
            self._ignore_files.pop(rel, None)
        return listing

    def _drop(self, rel: str) -> None:
        if self._dirs.pop(rel, None) is not None:
            self._changed = True
        self._joined.pop(rel, None)
        self._ignore_files.pop(rel, None)

    def _join(self, rel: str, listing: DirListing) -> _Joined:
        prefix = f"{rel}/" if rel else ""
        ruled = listing[_RULED]
        return (
            listing,
            [prefix + name for name in listing[_FILES]],
            [(prefix + sub, f"{self._base}/{prefix}{sub}", ruled) for sub in listing[_SUBDIRS]],
        )

    def _forget_unseen(self, seen: set[str]) -> None:
        """Forget the directories the scan did not reach (gone, or past the file cap)."""
        if len(seen) != len(self._dirs):
            for rel in [rel for rel in self._dirs if rel not in seen]:
                self._drop(rel)

    def _ignore_files_unchanged(self) -> bool:
        base = self._base
        for rel, ignore_files in self._ignore_files.items():
            for name, stat in ignore_files.items():
                if _stat(f"{base}/{rel}/{name}" if rel else f"{base}/{name}") != stat:
                    return False
        return True

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
                self._drop(key)
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
