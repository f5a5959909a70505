"""Every op has an id, and the events an op causes carry it as ``op_id``."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from clover_code import protocol as p
from clover_code.config.settings import Settings
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.sessions import open_session

DEADLINE = 30.0


async def _until(check: Callable[[], bool]) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + DEADLINE
    while not check():
        assert loop.time() < end, "the state was not reached in time"
        await asyncio.sleep(0.01)


def test_each_op_gets_its_own_id_and_old_clients_need_not_send_one() -> None:
    first, second = p.UserInput(text="hi"), p.UserInput(text="hi")
    assert first.id and first.id != second.id
    parsed = p.OP_ADAPTER.validate_json('{"type": "interrupt"}')
    assert parsed.id
    assert p.OP_ADAPTER.validate_json('{"type": "compact", "id": "op-7"}').id == "op-7"
    # An event written before ops had ids still reads back.
    old = p.EVENT_ADAPTER.validate_json('{"type": "notice", "text": "hello"}')
    assert old.op_id is None
    assert json.loads(p.Notice(text="x", op_id="op-7").model_dump_json())["op_id"] == "op-7"


async def test_a_turns_events_carry_the_prompt_ops_id(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    events: list[p.Event] = []
    backend = ScriptedBackend(
        [
            tool_response(("read_file", {"path": "app.py"})),
            text_response("It subtracts."),
            text_response("Second answer."),
        ]
    )
    session = await open_session(make_settings(), backend, repo, events)
    started = next(e for e in events if isinstance(e, p.SessionStarted))
    assert started.op_id is None  # the session's own announcement
    opened = len(events)

    prompt = p.UserInput(text="what does add do?")
    await session.submit(prompt)
    await _until(lambda: any(isinstance(e, p.TurnFinished) for e in events[opened:]))
    turn = events[opened:]
    kinds = {type(e) for e in turn}
    assert {p.TurnStarted, p.ToolCallStarted, p.ToolCallFinished, p.ContentDelta} <= kinds
    assert {e.op_id for e in turn} == {prompt.id}

    # A turn run directly takes the id of the op it is given.
    direct = p.UserInput(text="again")
    mark = len(events)
    finished = await session.run_turn(direct)
    assert finished.status == "completed"
    assert {e.op_id for e in events[mark:]} == {direct.id}

    mode = p.SetApprovalMode(mode="read-only")
    mark = len(events)
    await session.submit(mode)
    changed = [e for e in events[mark:] if isinstance(e, p.ApprovalModeChanged)]
    assert [(e.mode, e.op_id) for e in changed] == [("read-only", mode.id)]
    await session.close()
    ended = events[-1]
    assert isinstance(ended, p.SessionEnded) and ended.op_id is None


async def test_auto_commit_answers_with_the_commit(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    events: list[p.Event] = []
    backend = ScriptedBackend(
        [
            tool_response(("write_file", {"path": "notes.txt", "content": "hello\n"})),
            text_response("Wrote it."),
        ]
    )
    session = await open_session(make_settings(), backend, repo, events)
    assert (await session.run_turn("write a note")).status == "completed"
    commit = p.AutoCommit(subject="clover-code: write a note")
    await session.submit(commit)
    answer = [e for e in events if isinstance(e, p.AutoCommitted)]
    await session.close()
    assert len(answer) == 1 and answer[0].op_id == commit.id and answer[0].commit
    log = subprocess.run(
        ["git", "log", "-1", "--format=%H %s"], cwd=repo, capture_output=True, text=True
    ).stdout.split(" ", 1)
    assert log == [answer[0].commit, "clover-code: write a note\n"]
