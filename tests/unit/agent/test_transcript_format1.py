"""Transcripts of format 1 (written by the format-1 writer, kept in the fixtures) still
load, resume, fork, list and replay the same as they did."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clover_code import protocol as p
from clover_code.acp.replay import replay_updates
from clover_code.agent.fork import fork_session
from clover_code.agent.session_list import read_info
from clover_code.agent.transcript import INTERRUPTED, load
from clover_code.config.settings import Settings
from tests.fakes import ScriptedBackend, text_response
from tests.paths import UNIT_FIXTURES
from tests.sessions import open_session
from tests.unit.agent.turn.test_agent_loop import assert_valid_conversation

FORMAT1 = UNIT_FIXTURES / "transcripts"


def _expected(name: str) -> dict[str, Any]:
    expected: dict[str, Any] = json.loads((FORMAT1 / f"{name}.loaded.json").read_text())
    return expected


def _copy(name: str, sessions: Path) -> Path:
    sessions.mkdir(parents=True, exist_ok=True)
    meta = json.loads((FORMAT1 / f"{name}.jsonl").read_text().splitlines()[0])
    path = sessions / f"{meta['id']}.jsonl"
    shutil.copyfile(FORMAT1 / f"{name}.jsonl", path)
    return path


@pytest.mark.parametrize("name", ["session", "killed"])
def test_a_format1_file_loads_as_the_format1_reader_read_it(name: str) -> None:
    loaded = load(FORMAT1 / f"{name}.jsonl")
    expected = _expected(name)
    assert loaded.messages == expected["messages"]
    assert loaded.events == expected["events"]
    assert loaded.interrupted == expected["interrupted"]
    assert loaded.dropped_torn_line == expected["dropped_torn_line"]
    assert "format" not in loaded.meta


@pytest.mark.parametrize("name", ["session", "killed"])
async def test_a_format1_session_resumes_and_goes_on(
    name: str, make_settings: Callable[..., Settings], repo: Path, tmp_path: Path
) -> None:
    settings = make_settings()
    path = _copy(name, settings.resolved_sessions_dir())
    before = _expected(name)["messages"]
    backend = ScriptedBackend([text_response("Going on.")])
    events: list[p.Event] = []
    session = await open_session(settings, backend, repo, events, resume=path)
    await session.run_turn("go on")
    await session.close()

    sent = backend.requests[0].messages[1:]
    assert sent[: len(before)] == before
    assert_valid_conversation(sent)
    again = load(path)
    assert again.messages == [
        *before,
        {"role": "user", "content": "go on"},
        {"role": "assistant", "content": "Going on."},
    ]
    assert again.interrupted == 0  # the killed call's answer is saved for good
    assert again.events[: len(_expected(name)["events"])] == _expected(name)["events"]
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    # What was appended says its format; the lines before are untouched.
    original = (FORMAT1 / f"{name}.jsonl").read_text().splitlines()
    assert path.read_text().splitlines()[: len(original)] == original
    assert lines[len(original)] == {"kind": "format", "format": 2}


def test_the_killed_format1_session_answers_its_call_as_interrupted() -> None:
    loaded = load(FORMAT1 / "killed.jsonl")
    assert loaded.interrupted == 1
    assert loaded.messages[-1]["content"] == INTERRUPTED


def test_a_format1_session_forks_lists_and_replays(tmp_path: Path) -> None:
    source = FORMAT1 / "session.jsonl"
    forked = fork_session(source, tmp_path)
    assert load(forked).messages == _expected("session")["messages"]
    assert load(forked).meta["format"] == 2
    info = read_info(source)
    assert info is not None and info.first_prompt == "fix add in calc.py"

    updates = replay_updates(load(source), Path("/tmp/clover-format1"))
    shown = json.dumps([u.model_dump(mode="json") for u in updates])
    # The conversation after the compaction: its summary, then the last turns.
    assert "The user asked to fix add; it was fixed. #1" in shown
    assert "python3 -c 'print(1+2)'" in shown and "3\\nexit code 0" in shown
    assert "[REDACTED]" in shown and "Zx9Zx9" not in shown
