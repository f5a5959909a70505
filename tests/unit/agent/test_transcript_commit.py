"""Group commit: one fsync a step, and one before calls that may change something, so
the call is on disk before its effect."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.config.settings import Settings
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.sessions import open_session


@dataclass
class Sync:
    """One fsync of the transcript: how much of it was durable, and the file the edit
    changes as it was at that moment."""

    durable: bytes
    app: str


async def test_one_fsync_a_step_and_one_before_each_change(
    make_settings: Callable[..., Settings], repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    syncs: list[Sync] = []
    sessions = make_settings().resolved_sessions_dir()
    real_fsync = os.fsync

    def watched_fsync(fd: int) -> None:
        real_fsync(fd)  # the real one; only what it was asked is noted
        path = Path(os.readlink(f"/proc/self/fd/{fd}"))
        if path.parent == sessions and path.suffix == ".jsonl":
            syncs.append(Sync(path.read_bytes(), (repo / "app.py").read_text()))

    monkeypatch.setattr(os, "fsync", watched_fsync)
    backend = ScriptedBackend(
        [
            tool_response(("read_file", {"path": "app.py"})),
            tool_response(
                ("edit_file", {"path": "app.py", "old_string": "a - b", "new_string": "a + b"})
            ),
            tool_response(("grep", {"pattern": "add"})),
            text_response("Fixed."),
        ]
    )
    events: list[p.Event] = []
    session = await open_session(make_settings(), backend, repo, events)
    opened = len(syncs)
    await session.run_turn("fix add")
    in_turn = len(syncs) - opened
    await session.close()

    # Four steps (model requests), one of them with an edit, and the turn's end.
    assert in_turn == 4 + 1 + 1
    # The edit call was durable while app.py was still as before.
    edit_call = next(s for s in syncs if b'"name":"edit_file"' in s.durable)
    assert edit_call.app == "def add(a, b):\n    return a - b\n"
    # Nothing is left unsynced at the end, and every step's records are on disk.
    assert syncs[-1].durable == session.transcript.path.read_bytes()
    kinds = [json.loads(line)["kind"] for line in syncs[-1].durable.splitlines()]
    assert kinds.count("tool_result") == 3
