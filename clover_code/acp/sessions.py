"""``session/list``: the stored sessions of a workspace, newest first, a page at a time."""

from __future__ import annotations

from pathlib import Path

from acp.schema import ListSessionsResponse, SessionInfo

from clover_code.agent.open import SessionInfo as StoredSession
from clover_code.agent.open import iter_infos

__all__ = ["PAGE_SIZE", "list_sessions"]

PAGE_SIZE = 50
_TITLE_CHARS = 80


def _info(stored: StoredSession) -> SessionInfo:
    return SessionInfo(
        session_id=stored.id,
        cwd=stored.cwd,
        title=stored.title(_TITLE_CHARS),
        updated_at=stored.updated.isoformat() if stored.updated else None,
    )


def list_sessions(directory: Path, cwd: str | None, cursor: str | None) -> ListSessionsResponse:
    """Sessions in ``directory`` (those of ``cwd`` when given), from ``cursor`` on."""
    start = int(cursor) if cursor and cursor.isdigit() else 0
    found: list[SessionInfo] = []
    for matched, stored in enumerate(iter_infos(directory, cwd)):
        if matched < start:
            continue
        if len(found) == PAGE_SIZE:
            return ListSessionsResponse(sessions=found, next_cursor=str(matched))
        found.append(_info(stored))
    return ListSessionsResponse(sessions=found)
