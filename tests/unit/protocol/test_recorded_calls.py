"""A stored session's calls matched to their recorded events: in order per id (servers
that send no ids reuse them), with a child's events and a background end; a call whose
end was never written, and events this version cannot read, are told apart."""

from __future__ import annotations

from typing import Any

from clover_code import protocol as p
from clover_code.protocol.recorded_calls import RecordedCalls, recorded_events


def _started(call_id: str, name: str = "read_file") -> dict[str, Any]:
    return p.ToolCallStarted(
        call_id=call_id, name=name, kind="read", arguments={}, summary=name
    ).model_dump(mode="json")


def _finished(call_id: str, result: str) -> dict[str, Any]:
    return p.ToolCallFinished(
        call_id=call_id, name="read_file", status="ok", result=result
    ).model_dump(mode="json")


def test_reused_ids_are_taken_in_order_with_their_own_events() -> None:
    child = p.SubagentEvent(
        parent_call_id="call_0",
        agent="explore",
        event=p.Notice(text="child at work"),
    ).model_dump(mode="json")
    raw = [
        _started("call_0", "task"),
        child,
        _finished("call_0", "first"),
        {"type": "no_such_event", "call_id": "call_0"},  # another version's: left out
        _started("call_0"),  # the next response's first call, the same id
        _finished("call_0", "second"),
        _started("call_1"),  # never finished: the process died
    ]
    events = recorded_events(raw)
    assert len(events) == 6
    calls = RecordedCalls(events)
    first, second = calls.take("call_0"), calls.take("call_0")
    assert first is not None and second is not None and calls.take("call_0") is None
    assert first.started.name == "task" and [c.event for c in first.children] == [
        p.Notice(text="child at work")
    ]
    assert first.finished is not None and first.finished.result == "first"
    assert second.children == [] and second.finished is not None
    assert second.finished.result == "second"
    unfinished = calls.take("call_1")
    assert unfinished is not None and unfinished.finished is None
    assert calls.take("call_2") is None


def test_an_end_without_a_start_is_not_a_call() -> None:
    calls = RecordedCalls(recorded_events([_finished("call_9", "orphan")]))
    assert calls.take("call_9") is None
