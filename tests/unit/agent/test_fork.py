"""Forking a transcript: a new session with the same conversation; the source is only read."""

from __future__ import annotations

from pathlib import Path

import pytest

from clover_code.agent.fork import fork_session
from clover_code.agent.session_list import read_info
from clover_code.agent.transcript import Transcript, load
from clover_code.errors import UsageError


def test_fork_copies_the_conversation_under_a_new_id(tmp_path: Path) -> None:
    source = Transcript.create(tmp_path, {"id": "20260101-000000-aaaaaa", "cwd": "/repo"})
    source.message({"role": "user", "content": "first question"})
    source.message({"role": "assistant", "content": "an answer"})
    source.close()
    before = source.path.read_bytes()

    forked = fork_session(source.path, tmp_path)

    assert forked != source.path and source.path.read_bytes() == before
    loaded = load(forked)
    assert loaded.meta["id"] != "20260101-000000-aaaaaa"
    assert loaded.meta["forked_from"] == "20260101-000000-aaaaaa"
    assert loaded.meta["cwd"] == "/repo"
    assert loaded.messages == load(source.path).messages
    info = read_info(forked)
    assert info is not None and info.first_prompt == "first question"


def test_forking_a_file_that_is_no_session_says_so(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        fork_session(tmp_path / "missing.jsonl", tmp_path)
