"""Where a file's content came from, so that watch mode acts only on what the user wrote.

- ``AgentWrites``: the content hash of every file the agent (or the watcher
  itself, removing a marker) left behind after a turn. A change whose content
  has one of these hashes is the agent's own: its markers never start a turn,
  so the model cannot chain turns by writing ``AI!`` comments. A turn may
  write through any tool, the shell included, so after each turn every file
  modified since it started is hashed.
- ``git_state``: what says git moved (HEAD, the branch it names, the index's
  entries; not the file stats it caches, which any ``git status`` refreshes).
  Changes that arrive while it moved came through git (a merge, pull,
  checkout or rebase), not from the user's editor.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from clover_code.fs.ignore import IgnoreRules, walk_tree

__all__ = ["AgentWrites", "content_hash", "git_state"]

_SLACK_NS = 20_000_000
"""Files modified this long before a turn began still count as the turn's (the file
system's timestamps come from a coarser clock than ``time.time_ns``)."""
_MAX_FILES = 50_000
"""Files looked at after one turn at most."""


def content_hash(data: bytes) -> str:
    """The hash a file's content is remembered by."""
    return hashlib.sha256(data).hexdigest()


class AgentWrites:
    """The content the agent left in each file (by path relative to the root)."""

    def __init__(self, root: Path, max_bytes: int) -> None:
        self.root = root
        self._max_bytes = max_bytes
        self._hashes: dict[str, str] = {}

    def is_agents(self, rel: str, data: bytes) -> bool:
        """Whether ``data`` is what the agent last left in ``rel``."""
        return self._hashes.get(rel) == content_hash(data)

    def remember(self, rel: str, data: bytes) -> None:
        """Record that the agent (or the watcher) wrote ``data`` to ``rel``."""
        self._hashes[rel] = content_hash(data)

    def remember_between(self, started_ns: int, ended_ns: int) -> None:
        """Record every file modified while a turn ran (``time.time_ns`` values) as the
        agent's; a save after it ended stays the user's."""
        since = started_ns - _SLACK_NS
        rules = IgnoreRules(self.root)
        for count, entry in enumerate(walk_tree(self.root, self.root, rules=rules)):
            if count >= _MAX_FILES:
                break
            if not entry.is_file:
                continue
            try:
                st = entry.path.stat()
                if not since <= st.st_mtime_ns <= ended_ns or st.st_size > self._max_bytes:
                    continue
                self.remember(entry.rel, entry.path.read_bytes())
            except OSError:
                continue


def git_state(root: Path) -> tuple[bytes, ...]:
    """What changes when git moves the work tree: HEAD, the ref it names, the index."""
    git = root / ".git"
    try:
        if git.is_file():  # a worktree or submodule: "gitdir: PATH"
            line = git.read_text(encoding="utf-8", errors="replace").strip()
            if line.startswith("gitdir:"):
                git = (root / line.removeprefix("gitdir:").strip()).resolve()
        head = (git / "HEAD").read_bytes()
    except OSError:
        return ()
    parts = [head]
    if head.startswith(b"ref:"):
        ref = head[4:].strip().decode("utf-8", errors="replace")
        for place in (git / ref, _common(git) / ref, _common(git) / "packed-refs"):
            parts.append(_read(place))
    parts.append(_index_entries(_read(git / "index")))
    return tuple(parts)


def _index_entries(data: bytes) -> bytes:
    """The index's entries (mode, blob, stage, path), without the cached file stats that
    any ``git status`` rewrites; the whole file for versions this does not read."""
    if len(data) < 12 or data[:4] != b"DIRC" or int.from_bytes(data[4:8]) not in (2, 3):
        return content_hash(data).encode()
    digest = hashlib.sha256()
    pos = 12
    try:
        for _ in range(int.from_bytes(data[8:12])):
            flags = int.from_bytes(data[pos + 60 : pos + 62])
            start = pos + 62 + (2 if flags & 0x4000 else 0)
            end = data.index(b"\0", start)
            digest.update(data[pos + 24 : pos + 28] + data[pos + 40 : pos + 60])
            digest.update(flags.to_bytes(2) + data[start:end] + b"\0")
            pos += (end - pos + 8) & ~7
    except ValueError:
        return content_hash(data).encode()
    return digest.hexdigest().encode()


def _common(git: Path) -> Path:
    """The repository's common directory (a worktree's refs live there)."""
    try:
        text = (git / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return git
    return (git / text).resolve()


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""
