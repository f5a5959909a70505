"""The repo map's disk cache: one SQLite file, shared by every workspace.

Per file it keeps the extracted tags keyed by path + mtime + size, so a warm
build parses only files that changed. Per workspace it also keeps the
directory listings of the last scan (written when what one holds changed)
and the last few rendered maps, keyed by a digest of
every file's (path, mtime, size) and the render options, so a new session on
an unchanged repository reads one row instead of rebuilding. A build's
writes go in one transaction; the file is in WAL mode and does not wait for
the disk at each commit (what a crash loses is only cache).

Values are ``marshal``-encoded plain data (``marshal`` cannot run code, unlike
``pickle``). A fingerprint of the schema, the tree-sitter wheels and our tag
queries is stored in the file; when it differs the cache is emptied. If the
file cannot be used the map is built without it and ``error`` says why.
"""

from __future__ import annotations

import contextlib
import marshal
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["CacheChanges", "TagCache"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    root TEXT NOT NULL, path TEXT NOT NULL, mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (root, path));
CREATE TABLE IF NOT EXISTS dirs (root TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS maps (
    root TEXT NOT NULL, key TEXT NOT NULL, data BLOB NOT NULL, used INTEGER NOT NULL,
    PRIMARY KEY (root, key));
"""
_MAPS_KEPT = 8
"""Rendered maps kept per workspace."""


class TagCache:
    """SQLite storage for one workspace ``root``; a no-op when ``path`` is None or unusable."""

    def __init__(self, path: Path | None, root: str, fingerprint: str) -> None:
        self.path = path
        self.root = root
        self.error = ""
        self._db: sqlite3.Connection | None = None
        if path is not None:
            self._open(path, fingerprint)

    def _open(self, path: Path, fingerprint: str) -> None:
        for attempt in range(2):
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                # Builds are serialised by RepoMap's lock but may run in a worker thread.
                db = sqlite3.connect(
                    path, timeout=2.0, isolation_level=None, check_same_thread=False
                )
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                db.executescript(_SCHEMA)
                row = db.execute("SELECT value FROM meta WHERE key = 'fingerprint'").fetchone()
                if row is None or row[0] != fingerprint:
                    with db:
                        db.execute("BEGIN")
                        for table in ("files", "dirs", "maps"):
                            db.execute(f"DELETE FROM {table}")
                        db.execute(
                            "INSERT OR REPLACE INTO meta VALUES ('fingerprint', ?)", (fingerprint,)
                        )
                self._db = db
                return
            except sqlite3.DatabaseError as exc:
                # A file that is not a database (or is damaged) is ours to replace.
                damaged = "not a database" in str(exc) or "malformed" in str(exc)
                if attempt == 0 and damaged:
                    with contextlib.suppress(OSError):
                        path.unlink()
                    continue
                self._fail(exc)
                return
            except (sqlite3.Error, OSError) as exc:
                self._fail(exc)
                return

    def _fail(self, exc: Exception) -> None:
        self.error = (
            f"the repo map cache {self.path} cannot be used ({exc}); "
            "the map is built without it, so each start parses every file again"
        )
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
        self._db = None

    def close(self) -> None:
        """Close the database file."""
        if self._db is not None:
            self._db.close()
            self._db = None

    def files(self) -> dict[str, tuple[int, int, bytes]]:
        """Every cached file of this workspace: path -> (mtime_ns, size, encoded tags)."""
        if self._db is None:
            return {}
        try:
            rows = self._db.execute(
                "SELECT path, mtime_ns, size, data FROM files WHERE root = ?", (self.root,)
            ).fetchall()
        except sqlite3.Error as exc:
            self._fail(exc)
            return {}
        return {path: (mtime, size, data) for path, mtime, size, data in rows}

    def listings(self) -> dict[str, Any]:
        """The directory listings of this workspace's last scan (empty if none)."""
        if self._db is None:
            return {}
        try:
            row = self._db.execute("SELECT data FROM dirs WHERE root = ?", (self.root,)).fetchone()
            listings = {} if row is None else marshal.loads(row[0])
        except (sqlite3.Error, ValueError, EOFError, TypeError) as exc:
            self._fail(exc)
            return {}
        return listings if isinstance(listings, dict) else {}

    def get_map(self, key: str) -> Any:
        """The decoded map stored under ``key``, or None."""
        if self._db is None:
            return None
        try:
            row = self._db.execute(
                "SELECT data FROM maps WHERE root = ? AND key = ?", (self.root, key)
            ).fetchone()
            return None if row is None else marshal.loads(row[0])
        except (sqlite3.Error, ValueError, EOFError, TypeError) as exc:
            self._fail(exc)
            return None

    def store(self, changes: CacheChanges) -> None:
        """Write what one build changed, in one transaction; old maps are evicted."""
        if self._db is None:
            return
        root = self.root
        try:
            with self._db:
                self._db.execute("BEGIN")
                self._db.executemany(
                    "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?)",
                    [(root, p, m, s, marshal.dumps(d)) for p, m, s, d in changes.files],
                )
                self._db.executemany(
                    "DELETE FROM files WHERE root = ? AND path = ?",
                    [(root, p) for p in changes.files_removed],
                )
                if changes.listings is not None:
                    self._db.execute(
                        "INSERT OR REPLACE INTO dirs VALUES (?, ?)",
                        (root, marshal.dumps(changes.listings)),
                    )
                if changes.map_key:
                    self._db.execute(
                        "INSERT OR REPLACE INTO maps VALUES (?, ?, ?, "
                        "(SELECT COALESCE(MAX(used), 0) + 1 FROM maps WHERE root = ?))",
                        (root, changes.map_key, marshal.dumps(changes.map_value), root),
                    )
                    self._db.execute(
                        "DELETE FROM maps WHERE root = ? AND key NOT IN "
                        "(SELECT key FROM maps WHERE root = ? ORDER BY used DESC LIMIT ?)",
                        (root, root, _MAPS_KEPT),
                    )
        except sqlite3.Error as exc:
            self._fail(exc)


@dataclass(slots=True)
class CacheChanges:
    """What one build writes to the cache (values are plain data, for ``marshal``)."""

    files: list[tuple[str, int, int, Any]] = field(default_factory=list)
    """(path, mtime_ns, size, tags) of files parsed."""
    files_removed: list[str] = field(default_factory=list)
    listings: dict[str, Any] | None = None
    """Every directory listing, when one changed."""
    map_key: str = ""
    map_value: Any = None
