"""Reading tool calls that start while the response is still streaming, end to end.

A real session on the remote backend talks to the scripted OpenAI-compatible
server over loopback, in a real git repository, with the real tools and the
real MCP echo server (``mcp_echo_server.py``): its ``lookup`` tool makes a
marker file, so the test can see when a call ran. The server holds the stream
(``Until``) after the first calls until the marker appears: it does only when
the call started before the response ended (otherwise the wait just runs out).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from clover_code import protocol as p
from clover_code.agent.open import SessionOptions, open_session
from clover_code.agent.permissions.approval import ApprovalRequest, Decision, RefuseApprover
from clover_code.agent.session import Session
from clover_code.config.load import load_settings
from clover_code.config.trust import TrustStore
from tests.integration.sse_server import (
    Drop,
    Hold,
    ScriptedResponse,
    ScriptedServer,
    Send,
    Step,
    Until,
    encode_event,
    sse_response,
)
from tests.integration.stream_shapes import SGLangStream
from tests.waiting import async_wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SERVER = Path(__file__).with_name("mcp_echo_server.py")
HELD = 20.0
"""Longest the server holds a stream for a condition that the change makes true."""


class RecordingApprover:
    """Allows every call, and records each request with the events seen before it."""

    shows_diff = False

    def __init__(self, events: list[p.Event]) -> None:
        self.events = events
        self.asked: list[tuple[str, int]] = []

    async def request(self, request: ApprovalRequest) -> Decision:
        self.asked.append((request.name, len(self.events)))
        return Decision(allowed=True)


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "notes.txt").write_text("the notes\n")
    (repo / "secret.txt").write_text("do not show\n")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    return repo


async def _session(
    tmp_path: Path,
    server: ScriptedServer,
    events: list[p.Event],
    *,
    config: str = 'mcp_read_only = ["mcp__echo__*"]\n',
    approver: Any = None,
) -> tuple[Session, Path]:
    repo = _repo(tmp_path)
    user_config = tmp_path / "user-config.toml"
    user_config.write_text(
        config + f'[mcp_servers.echo]\ncommand = "{sys.executable}"\nargs = ["{SERVER}"]\n'
    )
    settings = load_settings(
        {
            "sessions_dir": tmp_path / "sessions",
            "sandbox": "none",
            "base_url": server.base_url,
            "model": "test-model",
            "max_retries": 0,
        },
        repo_root=repo,
        user_config=user_config,
        env={},
        store=TrustStore(tmp_path / "trusted.json"),
    )
    options = SessionOptions(
        emit=events.append, approval_mode="auto-edit", approver=approver or RefuseApprover()
    )
    session = await open_session(settings, repo, options)
    session.checkpoints = None  # undo snapshots are not under test
    return session, repo


def _held_stream(
    build_early: Callable[[SGLangStream], None],
    build_rest: Callable[[SGLangStream], None],
    hold: Step,
    *,
    end: list[Step] | None = None,
) -> ScriptedResponse:
    """One SGLang-shaped response: the ``build_early`` part, then ``hold``, then the rest."""
    stream = SGLangStream()
    build_early(stream)
    cut = len(stream.chunks()) - 2  # chunks() adds the finish and usage chunks
    build_rest(stream)
    sends: list[Step] = [Send(encode_event(c)) for c in stream.chunks()]
    tail = end if end is not None else [*sends[cut:], Send(b"data: [DONE]\n\n")]
    return ScriptedResponse(steps=[*sends[:cut], hold, *tail], content_type="text/event-stream")


def _answer(text: str) -> ScriptedResponse:
    return sse_response(SGLangStream().content(text).chunks())


E = TypeVar("E")


def _of(events: list[p.Event], kind: type[E]) -> list[E]:
    return [e for e in events if isinstance(e, kind)]


def _tool_messages(server: ScriptedServer, request: int) -> list[dict[str, Any]]:
    messages = server.chat_requests[request].json()["messages"]
    return [m for m in messages if m["role"] == "tool"]


async def test_reading_calls_run_during_the_stream_and_report_in_order(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    events: list[p.Event] = []
    marker = tmp_path / "looked-up"
    seen: list[int] = []

    def ran() -> bool:
        if marker.exists() and not seen:
            # What the front ends had heard of any call when the early one had run.
            seen.append(len(_of(events, p.ToolCallStarted)) + len(_of(events, p.ToolOutput)))
        return marker.exists()

    def early(s: SGLangStream) -> None:
        s.content("Looking first.")
        s.tool_call("read_file", {"path": "notes.txt"})
        s.tool_call("mcp__echo__lookup", {"marker": str(marker)})

    def rest(s: SGLangStream) -> None:
        s.content("Now the edit.")
        s.tool_call("write_file", {"path": "notes.txt", "content": "edited\n"})
        # A read after an edit waits for it, so it sees the edited file.
        s.tool_call("read_file", {"path": "notes.txt"})

    scripted_server.enqueue(
        _held_stream(early, rest, Until(ran, seconds=HELD)), _answer("all done")
    )
    session, repo = await _session(tmp_path, scripted_server, events)
    try:
        finished = await session.run_turn("read, look up, edit")
    finally:
        await session.close()
    assert finished.status == "completed", events
    assert seen == [0], "the lookup did not run while the response was streaming"
    started = _of(events, p.ToolCallStarted)
    assert [e.name for e in started] == [
        "read_file",
        "mcp__echo__lookup",
        "write_file",
        "read_file",
    ]
    # Nothing of the calls is shown before the response has ended.
    usage = next(i for i, e in enumerate(events) if isinstance(e, p.UsageReport))
    first_call = next(i for i, e in enumerate(events) if isinstance(e, p.ToolCallStarted))
    assert usage < first_call
    results = [m["content"] for m in _tool_messages(scripted_server, 1)]
    assert len(results) == 4
    assert "the notes" in results[0]
    assert results[1] == "looked up"
    assert "edited" in results[3] and "the notes" not in results[3]
    assert (repo / "notes.txt").read_text() == "edited\n"
    finished_ids = [e.call_id for e in _of(events, p.ToolCallFinished)]
    assert sorted(finished_ids) == sorted(e.call_id for e in started)


async def test_pre_tool_use_hooks_run_in_order_and_can_refuse_an_early_call(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    events: list[p.Event] = []
    marker = tmp_path / "looked-up"
    log = tmp_path / "hook-log"
    hook = tmp_path / "hook.py"
    hook.write_text(
        "import json, sys\n"
        "event = json.load(sys.stdin)\n"
        f"with open({str(log)!r}, 'a') as f:\n"
        "    f.write(event['tool_name'] + ' ' + json.dumps(event['tool_input']) + '\\n')\n"
        "if 'secret' in json.dumps(event['tool_input']):\n"
        "    print('not that file', file=sys.stderr)\n"
        "    sys.exit(2)\n"
    )
    config = (
        'mcp_read_only = ["mcp__echo__*"]\n'
        f'[[hooks.PreToolUse]]\nmatcher = ""\ncommand = "{sys.executable} {hook}"\n'
    )

    def early(s: SGLangStream) -> None:
        s.tool_call("read_file", {"path": "secret.txt"})
        s.tool_call("read_file", {"path": "notes.txt"})
        s.tool_call("mcp__echo__lookup", {"marker": str(marker)})

    hooked: list[str] = []

    def ran() -> bool:
        if marker.exists() and log.exists() and not hooked:
            hooked.extend(log.read_text().splitlines())
        return bool(hooked)

    scripted_server.enqueue(
        _held_stream(early, lambda s: s.content("done reading"), Until(ran, seconds=HELD)),
        _answer("ok"),
    )
    session, _ = await _session(tmp_path, scripted_server, events, config=config)
    try:
        finished = await session.run_turn("read them")
    finally:
        await session.close()
    assert finished.status == "completed", events
    # Every early call's hook ran, in the order of the calls, before the response ended.
    assert [line.split(" ")[0] for line in hooked] == [
        "read_file",
        "read_file",
        "mcp__echo__lookup",
    ]
    assert "secret.txt" in hooked[0] and "notes.txt" in hooked[1]
    results = [m["content"] for m in _tool_messages(scripted_server, 1)]
    assert "not that file" in results[0] and "do not show" not in results[0]
    assert "the notes" in results[1]
    statuses = {e.call_id: e.status for e in _of(events, p.ToolCallFinished)}
    assert sorted(statuses.values()) == ["denied", "ok", "ok"]


async def test_a_call_the_mode_would_ask_about_waits_for_the_whole_response(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    events: list[p.Event] = []
    approver = RecordingApprover(events)
    marker = tmp_path / "looked-up"

    def early(s: SGLangStream) -> None:
        # Not vouched for: an MCP tool is "execute", and auto-edit asks before it runs.
        s.tool_call("mcp__echo__lookup", {"marker": str(marker)})

    def rest(s: SGLangStream) -> None:
        s.content("waiting")

    stalled: list[bool] = []

    def ran() -> bool:
        if marker.exists():
            stalled.append(True)
        return marker.exists()

    scripted_server.enqueue(
        _held_stream(early, rest, Until(ran, seconds=2.0)),
        _answer("ok"),
    )
    session, _ = await _session(tmp_path, scripted_server, events, config="", approver=approver)
    try:
        finished = await session.run_turn("look it up")
    finally:
        await session.close()
    assert finished.status == "completed", events
    assert not stalled
    usage = next(i for i, e in enumerate(events) if isinstance(e, p.UsageReport))
    assert [tool for tool, _ in approver.asked] == ["mcp__echo__lookup"]
    assert approver.asked[0][1] > usage, "asked before the response had ended"
    assert marker.exists()


async def test_a_failed_response_cancels_its_early_calls_unreported(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    events: list[p.Event] = []
    marker = tmp_path / "looked-up"

    def early(s: SGLangStream) -> None:
        s.tool_call("mcp__echo__lookup", {"marker": str(marker)})
        s.tool_call("mcp__echo__slow", {"seconds": 60})

    met: list[bool] = []

    def ran() -> bool:
        if marker.exists():
            met.append(True)
        return marker.exists()

    scripted_server.enqueue(
        _held_stream(early, lambda s: None, Until(ran, seconds=HELD), end=[Drop()])
    )
    session, _ = await _session(tmp_path, scripted_server, events)
    try:
        finished = await session.run_turn("look it up")
        messages = list(session.agent.messages)
        transcript = session.transcript.path.read_text()
    finally:
        await session.close()
    assert met, "the lookup did not start while the response was streaming"
    assert finished.status == "failed"
    assert not _of(events, p.ToolCallStarted) and not _of(events, p.ToolCallFinished)
    assert not _of(events, p.ToolOutput)
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert "tool_calls" not in messages[1]
    assert '"role": "tool"' not in transcript and '"role":"tool"' not in transcript


async def test_an_interrupted_response_cancels_its_early_calls_unreported(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    events: list[p.Event] = []
    marker = tmp_path / "looked-up"

    def early(s: SGLangStream) -> None:
        s.tool_call("mcp__echo__lookup", {"marker": str(marker)})
        s.tool_call("mcp__echo__slow", {"seconds": 60})

    scripted_server.enqueue(_held_stream(early, lambda s: None, Hold(seconds=120), end=[]))
    session, _ = await _session(tmp_path, scripted_server, events)
    try:
        turn = asyncio.create_task(session.run_turn("look it up"))
        await async_wait_until(marker.exists, message="the early lookup", timeout=HELD)
        turn.cancel()
        finished = await turn
        messages = list(session.agent.messages)
    finally:
        await session.close()
    assert finished.status == "interrupted"
    assert not _of(events, p.ToolCallStarted) and not _of(events, p.ToolCallFinished)
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert "tool_calls" not in messages[1]


async def test_turned_off_nothing_starts_before_the_response_ends(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    events: list[p.Event] = []
    marker = tmp_path / "looked-up"
    met: list[bool] = []

    def ran() -> bool:
        if marker.exists():
            met.append(True)
        return marker.exists()

    def early(s: SGLangStream) -> None:
        s.tool_call("mcp__echo__lookup", {"marker": str(marker)})

    scripted_server.enqueue(
        _held_stream(early, lambda s: s.content("then"), Until(ran, seconds=2.0)),
        _answer("ok"),
    )
    session, _ = await _session(
        tmp_path, scripted_server, events, config='early_tools = false\nmcp_read_only = ["*"]\n'
    )
    try:
        finished = await session.run_turn("look it up")
    finally:
        await session.close()
    assert finished.status == "completed"
    assert not met and marker.exists()
