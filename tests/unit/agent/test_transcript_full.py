"""The transcript's disk filling up: one sentence, an error event, nothing already saved lost.

The failures are the kernel's own: writes to ``/dev/full`` (ENOSPC without
root) and a tiny tmpfs filled for real (needs root; skipped otherwise).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.agent.transcript import Transcript, TranscriptError, load
from clover_code.config.settings import Settings
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.full_disk import fill_until, tiny_tmpfs
from tests.sessions import open_session
from tests.unit.agent.turn.test_agent_loop import of_type


def test_a_write_to_a_full_device_is_one_sentence(tmp_path: Path) -> None:
    path = tmp_path / "sessions" / "20260101-000000-abcdef.jsonl"
    with Path("/dev/full").open("ab", buffering=0) as device:
        transcript = Transcript(path, device)
        with pytest.raises(TranscriptError) as info:
            transcript.message({"role": "user", "content": "hello"})
    message = str(info.value)
    assert message == (
        f"could not save the session transcript {path}: the disk is full ({path.parent}); "
        "free some space there, then resume with `clover-code --resume "
        "20260101-000000-abcdef` (what was saved before is intact)."
    )
    assert "\n" not in message


def test_later_failures_are_reported_once_and_recording_stops(tmp_path: Path) -> None:
    seen: list[TranscriptError] = []
    with Path("/dev/full").open("ab", buffering=0) as device:
        transcript = Transcript(tmp_path / "s.jsonl", device)
        transcript.on_failure = seen.append
        transcript.message({"role": "user", "content": "one"})
        transcript.message({"role": "user", "content": "two"})
        transcript.close()
    assert len(seen) == 1 and transcript.failure is seen[0]


def test_a_sessions_dir_that_cannot_be_made_is_one_sentence(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the sessions directory should be")
    with pytest.raises(TranscriptError) as info:
        Transcript.create(blocker / "sessions", {"id": "x", "cwd": "/repo"})
    assert str(info.value).startswith(f"could not save the session transcript {blocker}")
    assert "set sessions_dir (CLOVER_SESSIONS_DIR) to another place" in str(info.value)


def test_a_disk_full_before_the_header_leaves_no_empty_session(tmp_path: Path) -> None:
    with tiny_tmpfs(tmp_path / "disk") as disk:
        (disk / "sessions").mkdir()
        fill_until(disk, 0)
        with pytest.raises(TranscriptError) as info:
            Transcript.create(disk / "sessions", {"id": "s1", "cwd": "/repo", "pad": "x" * 9000})
        assert list((disk / "sessions").iterdir()) == []
    assert str(info.value) == (
        f"could not save the session transcript {disk / 'sessions' / 's1.jsonl'}: the disk is "
        f"full ({disk / 'sessions'}); free some space there or set sessions_dir "
        "(CLOVER_SESSIONS_DIR) to another place, then start again."
    )


def test_a_record_that_does_not_fit_leaves_no_torn_line(tmp_path: Path) -> None:
    with tiny_tmpfs(tmp_path / "disk") as disk:
        transcript = Transcript.create(disk / "sessions", {"id": "s1", "cwd": "/repo"})
        transcript.message({"role": "user", "content": "kept"})
        fill_until(disk, 6000)
        with pytest.raises(TranscriptError, match="the disk is full"):
            transcript.message({"role": "assistant", "content": "x" * 20_000})
        transcript.close()
        data = transcript.path.read_bytes()
        assert data.endswith(b"\n")
        loaded = load(transcript.path)
        assert not loaded.dropped_torn_line
        assert [m["content"] for m in loaded.messages] == ["kept"]


async def test_a_full_disk_mid_turn_stops_the_session_with_one_error(
    make_settings: Callable[..., Settings], repo: Path, tmp_path: Path
) -> None:
    with tiny_tmpfs(tmp_path / "disk") as disk:
        events: list[p.Event] = []
        backend = ScriptedBackend(
            [
                tool_response(("read_file", {"path": "app.py"})),
                text_response("A long answer. " * 2000),
                text_response("never asked"),
            ]
        )
        settings = make_settings(sessions_dir=disk / "sessions")
        session = await open_session(settings, backend, repo, events)
        fill_until(disk, 12_000)
        finished = await session.run_turn("explain app.py")
        again = await session.run_turn("and now?")
        await session.close()

        assert finished.status == "failed" and again.status == "failed"
        error, repeated = of_type(events, p.ErrorEvent)  # the second for the refused turn
        assert error.fatal and repeated.message == error.message
        assert error.message.startswith(
            f"could not save the session transcript {session.transcript.path}: the disk is full"
        )
        assert f"clover-code --resume {session.id}" in error.message
        assert len(backend.requests) == 2  # the second turn never reached the model
        # What was saved before the disk filled is intact and loads.
        loaded = load(session.transcript.path)
        assert not loaded.dropped_torn_line
        assert loaded.messages[0] == {"role": "user", "content": "explain app.py"}
        assert session.transcript.path.read_bytes().endswith(b"\n")
    # The user's files are untouched.
    assert (repo / "app.py").read_text() == "def add(a, b):\n    return a - b\n"
    status = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True)
    assert status.stdout == b""
