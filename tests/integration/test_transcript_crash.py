"""A session process killed with SIGKILL at every point of its transcript writes resumes
valid, having lost at most the step in flight.

``crash_session.py`` runs real sessions (a read, an edit, a command, answers),
each in a process of its own that SIGKILLs itself at its N-th point
(``transcript_crash``): before a record is written, halfway through writing
it, or before an fsync. A first run without a crash counts the points. Then,
for each point:

- kill: the process dies there (what it wrote stays in the file, as after a
  real kill -9): every whole record written before the point is kept;
- power: the transcript is first cut back to its last fsync (what a power cut
  may leave): the messages of every step before the one in flight are kept,
  and a change made in the workspace always has its call in the transcript.

Either way the transcript loads, resumes through the factory, takes a new
turn whose request is a valid conversation, and loads again with that turn.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clover_code import protocol as p
from clover_code.agent.transcript import INTERRUPTED, LoadedSession, load
from clover_code.engine.messages import Message, tool_calls
from clover_code.errors import UsageError
from tests.fakes import ScriptedBackend, text_response
from tests.integration.crash_session import FIXED, settings
from tests.paths import ROOT
from tests.sessions import open_session
from tests.unit.agent.turn.test_agent_loop import assert_valid_conversation

pytestmark = pytest.mark.integration

MESSAGE_RECORDS = ("message:", "tool_result")


def _run(base: Path, points: list[int], *flags: str) -> dict[int, int]:
    """Run the crash session once per point; how each run ended, by point."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("CLOVER_")}
    done = subprocess.run(
        [sys.executable, "-m", "tests.integration.crash_session", str(base), *flags]
        + [str(n) for n in points],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    ended = dict(tuple(map(int, line.split())) for line in done.stdout.splitlines())
    assert sorted(ended) == sorted(points), done.stdout
    return ended


_TIMES = re.compile(r"\(\d+(\.\d+)? s\)")


def _same(message: Message) -> Message:
    """``message`` without what differs from run to run (how long a command took)."""
    if message["role"] != "tool":
        return message
    return {**message, "content": _TIMES.sub("(T s)", message["content"])}


@pytest.fixture(scope="module")
def uncut(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], list[Message]]:
    """The points of a whole run, in order, and the conversation it ends with."""
    base = tmp_path_factory.mktemp("uncut")
    assert _run(base, [0], "--log") == {0: 0}
    points = [json.loads(line) for line in (base / "0" / "points.jsonl").read_text().splitlines()]
    [path] = (base / "0" / "sessions").glob("*.jsonl")
    return points, [_same(m) for m in load(path).messages]


def _written(points: list[dict[str, Any]], point: int) -> int:
    """Messages whole in the file before ``point``: those whose torn point came earlier."""
    return sum(
        1
        for p_ in points
        if p_["at"] == "torn" and p_["point"] < point and p_["record"].startswith(MESSAGE_RECORDS)
    )


def _step_start(full: list[Message], index: int) -> int:
    """Where the step holding ``full[index]`` begins: at its assistant message, or at the
    user's prompt for the first step of a turn."""
    while full[index]["role"] == "tool":
        index -= 1
    if full[index]["role"] == "assistant" and index > 0 and full[index - 1]["role"] == "user":
        index -= 1
    return index


def _kept(loaded: LoadedSession, full: list[Message]) -> int:
    """How many messages ``loaded`` has of ``full``, checking that the rest are only
    answers given on load to calls that lost their results."""
    kept = 0
    for message, whole in zip(loaded.messages, full, strict=False):
        if _same(message) != whole:
            break
        kept += 1
    for message in loaded.messages[kept:]:
        assert message["role"] == "tool" and message["content"] == INTERRUPTED, loaded.messages
    assert len(loaded.messages) <= len(full)
    return kept


def _calls(loaded: LoadedSession) -> set[str]:
    return {c["function"]["name"] for m in loaded.messages for c in tool_calls(m)}


async def _resumes(work: Path, path: Path, loaded: LoadedSession) -> None:
    backend = ScriptedBackend([text_response("Resumed.")])
    events: list[p.Event] = []
    session = await open_session(
        settings(work), backend, work / "repo", events, resume=path, approval_mode="full-auto"
    )
    finished = await session.run_turn("go on")
    await session.close()
    assert finished.status == "completed"
    sent = backend.requests[0].messages[1:]
    assert_valid_conversation(sent)
    again = load(path)
    assert again.interrupted == 0
    new_turn = [{"role": "user", "content": "go on"}, {"role": "assistant", "content": "Resumed."}]
    assert again.messages == [*loaded.messages, *new_turn]
    assert len(sent) == len(loaded.messages) + 1  # the model saw the whole conversation


@pytest.mark.parametrize("mode", ["kill", "power"])
async def test_a_kill_at_every_point_loses_at_most_the_step_in_flight(
    mode: str,
    uncut: tuple[list[dict[str, Any]], list[Message]],
    tmp_path: Path,
) -> None:
    points, full = uncut
    assert {"write", "torn", "fsync"} <= {p_["at"] for p_ in points}
    chosen = [p_ for p_ in points if mode == "kill" or p_["at"] != "torn"]
    ended = _run(
        tmp_path, [p_["point"] for p_ in chosen], *(["--power"] if mode == "power" else [])
    )
    for point in chosen:
        number = point["point"]
        work = tmp_path / str(number)
        where = f"{mode} at point {number} ({point['at']} {point['record']})"
        assert ended[number] == -signal.SIGKILL, where
        [path] = (work / "sessions").glob("*.jsonl")
        try:
            loaded = load(path)
        except UsageError as exc:
            # Killed before the header was whole: nothing to resume, nothing half kept.
            assert "has no session header" in str(exc), where
            assert b"\n" not in path.read_bytes(), where
            continue
        written = _written(points, number)
        kept = _kept(loaded, full)
        if mode == "kill":
            assert kept == written, where
        else:
            assert kept >= (_step_start(full, written - 1) if written else 0), where
        if (work / "repo" / "calc.py").read_text() == FIXED:
            assert "edit_file" in _calls(loaded), where
        if (work / "repo" / "made.txt").exists():
            assert "shell" in _calls(loaded), where
        await _resumes(work, path, loaded)
        shutil.rmtree(work)
