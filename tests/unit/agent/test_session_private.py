"""Transcripts, locks, spilled outputs and checkpoint stores are private whatever the umask;
tool calls a killed process never answered get a result on load."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from clover_code.agent.checkpoints.store import CheckpointStore
from clover_code.agent.transcript import INTERRUPTED, Transcript, load
from clover_code.tools.spill import OutputSpill


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The loosest umask: whatever is created private is so by its own doing."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def _modes(top: Path) -> list[tuple[str, str]]:
    """Everything at or below ``top`` that another user could read or enter."""
    loose = []
    for path in [top, *top.rglob("*")]:
        mode = path.lstat().st_mode
        if not stat.S_ISLNK(mode) and mode & 0o077:
            loose.append((str(path.relative_to(top.parent)), oct(mode & 0o777)))
    return loose


def test_transcripts_and_spilled_outputs_are_private(tmp_path: Path, open_umask: None) -> None:
    sessions = tmp_path / "data" / "sessions"
    transcript = Transcript.create(sessions, {"id": "20260101-000000-abcdef", "cwd": "/r"})
    transcript.message({"role": "user", "content": "secret plans"})
    spill = OutputSpill(transcript.path.with_suffix(".outputs"), limit=10)
    spill.fit("call-1", "x" * 100)
    transcript.close()
    assert stat.S_IMODE(transcript.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(sessions.stat().st_mode) == 0o700
    assert _modes(tmp_path / "data") == []


def test_an_existing_world_readable_sessions_dir_is_made_private(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir(mode=0o755)
    sessions.chmod(0o755)
    Transcript.create(sessions, {"id": "20260101-000000-abcdef", "cwd": "/r"}).close()
    assert stat.S_IMODE(sessions.stat().st_mode) == 0o700


def test_checkpoint_stores_are_private(tmp_path: Path, open_umask: None) -> None:
    root = tmp_path / "work"
    root.mkdir()
    (root / "a.txt").write_text("private text\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    store = CheckpointStore(root, data, "s1")
    store.snapshot(1)
    (root / "a.txt").write_text("changed\n")
    store.end_turn(1)
    assert _modes(data / "checkpoints") == []


def test_unanswered_tool_calls_get_an_interrupted_result_on_load(tmp_path: Path) -> None:
    transcript = Transcript.create(tmp_path, {"id": "20260101-000000-abcdef", "cwd": "/r"})
    calls = [
        {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": "{}"}},
        {"id": "c2", "type": "function", "function": {"name": "read_file", "arguments": "{}"}},
    ]
    transcript.message({"role": "user", "content": "go"})
    transcript.message({"role": "assistant", "content": "", "tool_calls": calls})
    transcript.message({"role": "tool", "tool_call_id": "c1", "content": "ok"})
    transcript.close()  # killed before c2 had a result
    loaded = load(transcript.path)
    assert loaded.interrupted == 1
    roles = [(m["role"], m.get("tool_call_id")) for m in loaded.messages]
    assert roles == [("user", None), ("assistant", None), ("tool", "c1"), ("tool", "c2")]
    assert loaded.messages[-1]["content"] == INTERRUPTED
    # A later message goes after the answer, and loading again changes nothing.
    again = Transcript.reopen(transcript.path)
    again.message({"role": "user", "content": "next"})
    again.close()
    assert [m.get("tool_call_id") for m in load(transcript.path).messages][2:] == ["c1", "c2", None]
