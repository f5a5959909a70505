from __future__ import annotations

from pathlib import Path

import pytest

from clover_code.agent.transcript import Transcript, find_session, load
from clover_code.errors import UsageError


def write_session(directory: Path, session_id: str = "20260101-000000-abcdef") -> Transcript:
    transcript = Transcript.create(directory, {"id": session_id, "cwd": "/repo"})
    transcript.message({"role": "user", "content": "one"})
    transcript.message({"role": "assistant", "content": "two"})
    return transcript


def test_torn_last_line_is_dropped_not_the_session(tmp_path: Path) -> None:
    transcript = write_session(tmp_path)
    transcript.close()
    with transcript.path.open("ab") as fh:
        fh.write(b'{"kind":"message","message":{"role":"user","con')
    loaded = load(transcript.path)
    assert loaded.dropped_torn_line
    assert [m["content"] for m in loaded.messages] == ["one", "two"]
    # appending after a torn tail starts on a clean line
    again = Transcript.reopen(transcript.path)
    again.message({"role": "user", "content": "three"})
    again.close()
    assert [m["content"] for m in load(transcript.path).messages] == ["one", "two", "three"]


def test_damage_before_the_last_line_is_a_clear_error(tmp_path: Path) -> None:
    transcript = write_session(tmp_path)
    transcript.close()
    lines = transcript.path.read_bytes().split(b"\n")
    lines[1] = b"garbage"
    transcript.path.write_bytes(b"\n".join(lines))
    with pytest.raises(UsageError, match="damaged at line 2"):
        load(transcript.path)


def test_find_session_by_prefix_and_latest_for_cwd(tmp_path: Path) -> None:
    write_session(tmp_path, "20260101-000000-aaaaaa").close()
    write_session(tmp_path, "20260102-000000-bbbbbb").close()
    assert find_session(tmp_path, "20260101", Path("/x")).stem.endswith("aaaaaa")
    assert find_session(tmp_path, None, Path("/repo")).stem.endswith("bbbbbb")
    with pytest.raises(UsageError, match="ambiguous"):
        find_session(tmp_path, "2026", Path("/repo"))
    with pytest.raises(UsageError, match="no session 'zzz'"):
        find_session(tmp_path, "zzz", Path("/repo"))
    with pytest.raises(UsageError, match="no earlier session"):
        find_session(tmp_path, None, Path("/elsewhere"))
