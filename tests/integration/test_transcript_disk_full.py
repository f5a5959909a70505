"""Headless ``clover-code --task`` with its data on a disk that is full, for real.

A tiny tmpfs (root only; skipped otherwise) holds the data directory: full
from the start, and nearly full so that the transcript fills it mid-turn.
Either way the run ends with one sentence, a fatal error event in
stream-json, exit code 1, no traceback, the user's files untouched and
what was saved before intact.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from clover_code.agent.transcript import load
from tests.full_disk import fill_until, tiny_tmpfs
from tests.integration.sse_server import ScriptedServer, sse_response
from tests.integration.stream_shapes import SGLangStream
from tests.integration.test_headless_e2e import run_clover

pytestmark = pytest.mark.integration

CALC = "def add(a, b):\n    return a - b\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "calc.py").write_text(CALC)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


def _events(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def _check_one_clear_failure(code: int, out: str, err: str) -> dict[str, Any]:
    assert code == 1, err
    assert "Traceback" not in err and "Traceback" not in out
    errors = [e for e in _events(out) if e["type"] == "error"]
    assert len(errors) == 1, errors
    (error,) = errors
    assert error["fatal"] is True
    message = error["message"]
    assert message.startswith("could not save the session transcript ")
    assert ": the disk is full (" in message and "free some space there" in message
    assert "\n" not in message
    return error


async def test_a_data_dir_on_a_full_disk_stops_before_anything_runs(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    with tiny_tmpfs(home / "data") as disk:
        fill_until(disk, 0)
        code, out, err = await run_clover(
            repo,
            "--task",
            "fix add",
            "--output-format",
            "stream-json",
            "--base-url",
            scripted_server.base_url,
            "--sandbox",
            "none",
            home=home,
        )
    _check_one_clear_failure(code, out, err)
    assert scripted_server.chat_requests == []  # nothing ran
    assert (repo / "calc.py").read_text() == CALC


async def test_the_transcript_filling_the_disk_mid_turn_is_one_error_and_exit_1(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    first = SGLangStream()
    first.tool_call("read_file", {"path": "calc.py"})
    scripted_server.enqueue(
        sse_response(first.chunks()),
        sse_response(SGLangStream().content(*["A long explanation. " * 100] * 20).chunks()),
    )
    home = tmp_path / "home"
    with tiny_tmpfs(tmp_path / "disk") as disk:
        sessions = disk / "sessions"
        sessions.mkdir()
        fill_until(disk, 12_000)
        code, out, err = await run_clover(
            repo,
            "--task",
            "explain add",
            "--output-format",
            "stream-json",
            "--base-url",
            scripted_server.base_url,
            "--sandbox",
            "none",
            home=home,
            extra_env={"CLOVER_SESSIONS_DIR": str(sessions)},
        )
        error = _check_one_clear_failure(code, out, err)
        events = _events(out)
        started = next(e for e in events if e["type"] == "session_started")
        path = Path(started["transcript"])
        assert path.parent == sessions and str(path) in error["message"]
        assert [e["status"] for e in events if e["type"] == "turn_finished"] == ["failed"]
        # What was saved before the disk filled is intact: whole lines, loadable.
        assert path.read_bytes().endswith(b"\n")
        loaded = load(path)
        assert not loaded.dropped_torn_line
        assert loaded.messages[0] == {"role": "user", "content": "explain add"}
        assert any(m.get("role") == "tool" for m in loaded.messages)
    assert (repo / "calc.py").read_text() == CALC
