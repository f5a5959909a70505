"""``session/list``: the stored sessions of a workspace, newest first, a page at a time."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from acp.schema import ListSessionsResponse, SessionInfo

from clover_code.agent.transcript import iter_sessions

__all__ = ["PAGE_SIZE", "list_sessions"]

PAGE_SIZE = 50
_TITLE_CHARS = 80
_SCAN_LINES = 200
"""Lines of a transcript read looking for its first user message (the title)."""


def _info(path: Path, cwd: str | None) -> SessionInfo | None:
    try:
        with path.open("rb") as handle:
            meta = json.loads(handle.readline())
            if meta.get("kind") != "meta" or (cwd is not None and meta.get("cwd") != cwd):
                return None
            title = None
            for _, line in zip(range(_SCAN_LINES), handle, strict=False):
                record = json.loads(line)
                message = record.get("message") or {}
                if record.get("kind") == "message" and message.get("role") == "user":
                    text = " ".join(str(message.get("content", "")).split())
                    title = text[:_TITLE_CHARS] + ("…" if len(text) > _TITLE_CHARS else "")
                    break
        updated = datetime.fromtimestamp(path.stat().st_mtime, UTC).isoformat()
    except (OSError, ValueError, AttributeError):
        return None
    return SessionInfo(
        session_id=str(meta.get("id", path.stem)),
        cwd=str(meta.get("cwd", "")),
        title=title,
        updated_at=updated,
    )


def list_sessions(directory: Path, cwd: str | None, cursor: str | None) -> ListSessionsResponse:
    """Sessions in ``directory`` (those of ``cwd`` when given), from ``cursor`` on."""
    start = int(cursor) if cursor and cursor.isdigit() else 0
    found: list[SessionInfo] = []
    matched = 0
    for path in iter_sessions(directory):
        info = _info(path, cwd)
        if info is None:
            continue
        if matched >= start:
            if len(found) == PAGE_SIZE:
                return ListSessionsResponse(sessions=found, next_cursor=str(matched))
            found.append(info)
        matched += 1
    return ListSessionsResponse(sessions=found)
