"""``session/list`` over real transcript files: filtering by workspace, titles, pages."""

from __future__ import annotations

from pathlib import Path

import pytest

from clover_code.acp import sessions
from clover_code.agent.transcript import Transcript


def test_sessions_of_a_workspace_newest_first_in_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(5):
        t = Transcript.create(tmp_path, {"id": f"2026010{n}-000000-aaaaaa", "cwd": "/repo"})
        t.message({"role": "user", "content": f"task   number\n{n}"})
        t.close()
    other = Transcript.create(tmp_path, {"id": "20260109-000000-bbbbbb", "cwd": "/elsewhere"})
    other.close()
    (tmp_path / "20260110-000000-cccccc.jsonl").write_text("not json\n")
    monkeypatch.setattr(sessions, "PAGE_SIZE", 2)

    first = sessions.list_sessions(tmp_path, "/repo", None)
    assert [(s.session_id[:8], s.title) for s in first.sessions] == [
        ("20260104", "task number 4"),
        ("20260103", "task number 3"),
    ]
    assert first.next_cursor == "2"
    rest = sessions.list_sessions(tmp_path, "/repo", "4")
    assert [s.session_id[:8] for s in rest.sessions] == ["20260100"] and rest.next_cursor is None
    everything = sessions.list_sessions(tmp_path, None, None)
    assert everything.sessions[0].cwd == "/elsewhere"
    assert sessions.list_sessions(tmp_path / "missing", None, None).sessions == []
