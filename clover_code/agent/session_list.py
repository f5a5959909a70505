"""Earlier sessions, for ``/sessions`` and ``/resume``: when, where and how each began.

Only the first lines of each transcript are read, so listing hundreds of
sessions stays quick.
"""

from __future__ import annotations

import json
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

    @property
    def when(self) -> str:
        """The start as ``2026-01-01 09:30`` (UTC), or ``?``."""
        return self.started.strftime("%Y-%m-%d %H:%M") if self.started else "?"


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
                if user and isinstance(content, str):
                    first = " ".join(content.split())
                    break
    except (OSError, ValueError):
        if not cwd:
            return None
    return SessionInfo(path, session_id, cwd, _started(session_id), first)


def list_sessions(directory: Path, cwd: Path | None, limit: int = 50) -> list[SessionInfo]:
    """Sessions in ``directory``, newest first: those started in ``cwd`` (its repository
    root), or all of them when ``cwd`` is None."""
    wanted = str(cwd) if cwd is not None else None
    found: list[SessionInfo] = []
    for path in iter_sessions(directory):
        info = read_info(path)
        if info is None or (wanted is not None and info.cwd != wanted):
            continue
        found.append(info)
        if len(found) >= limit:
            break
    return found
