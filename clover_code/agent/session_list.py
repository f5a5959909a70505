"""Earlier sessions, for the app's ``/sessions`` and ``/resume`` and ACP's
``session/list``: when, where and how each began.

The one reader of a transcript's head for front ends (they never parse the
file format themselves). Only the first lines of each transcript are read, so
listing hundreds of sessions stays quick.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from clover_code.agent.transcript import iter_sessions

HEAD_LINES = 200
"""Lines of a transcript read to find its first prompt."""


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One earlier session."""

    path: Path
    id: str
    cwd: str
    started: datetime | None
    first_prompt: str
    """The first user message, its runs of white space made one space ('' if none)."""
    updated: datetime | None = None
    """When the transcript was last written (UTC)."""

    @property
    def when(self) -> str:
        """The start as ``2026-01-01 09:30`` (UTC), or ``?``."""
        return self.started.strftime("%Y-%m-%d %H:%M") if self.started else "?"

    def title(self, limit: int = 80) -> str | None:
        """The first prompt cut to ``limit`` characters (with an ellipsis), or None."""
        text = self.first_prompt
        if not text:
            return None
        return text[:limit] + ("…" if len(text) > limit else "")


def _started(session_id: str) -> datetime | None:
    try:
        return datetime.strptime(session_id[:15], "%Y%m%d-%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        return None


def read_info(path: Path) -> SessionInfo | None:
    """What a transcript's head says (None when it has no readable header)."""
    cwd, first, session_id = "", "", path.stem
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            for number, line in zip(range(HEAD_LINES), fh, strict=False):
                record = json.loads(line)
                if number == 0:
                    if record.get("kind") != "meta":
                        return None
                    cwd, session_id = str(record.get("cwd", "")), str(record.get("id", path.stem))
                    continue
                message = record.get("message") or {}
                content = message.get("content")
                user = record.get("kind") == "message" and message.get("role") == "user"
                if user and isinstance(content, list):  # a prompt with images: its text
                    texts = [p.get("text") for p in content if isinstance(p, dict)]
                    content = "".join(t for t in texts if isinstance(t, str))
                if user and isinstance(content, str):
                    first = " ".join(content.split())
                    break
    except (OSError, ValueError):
        if not cwd:
            return None
    try:
        updated: datetime | None = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except OSError:
        updated = None
    return SessionInfo(path, session_id, cwd, _started(session_id), first, updated)


def iter_infos(directory: Path, cwd: str | Path | None) -> Iterator[SessionInfo]:
    """Sessions in ``directory``, newest first: those started in ``cwd`` (a workspace
    root), or all of them when ``cwd`` is None."""
    wanted = str(cwd) if cwd is not None else None
    for path in iter_sessions(directory):
        info = read_info(path)
        if info is not None and (wanted is None or info.cwd == wanted):
            yield info


def list_sessions(directory: Path, cwd: Path | None, limit: int = 50) -> list[SessionInfo]:
    """Sessions in ``directory``, newest first: those started in ``cwd`` (its repository
    root), or all of them when ``cwd`` is None."""
    found: list[SessionInfo] = []
    for info in iter_infos(directory, cwd):
        found.append(info)
        if len(found) >= limit:
            break
    return found
