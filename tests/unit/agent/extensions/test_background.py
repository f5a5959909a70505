"""Background child agents: the task call returns at once, the report comes later."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clover_code import protocol as p
from clover_code.agent.transcript import load
from clover_code.config.settings import Settings
from clover_code.engine.base import ChatRequest
from tests.fakes import text_response, tool_response
from tests.routed_backend import RoutedBackend
from tests.sessions import open_session
from tests.waiting import async_wait_until, within

REPORT = "[Background task "


def _bg(prompt: str, description: str = "look", **more: Any) -> tuple[str, dict[str, Any]]:
    return "task", {"description": description, "prompt": prompt, "background": True, **more}


def _reports(request: ChatRequest) -> list[str]:
    return [
        str(m["content"])
        for m in request.messages
        if m["role"] == "user" and str(m["content"]).startswith(REPORT)
    ]


def _finished(events: list[p.Event]) -> list[p.BackgroundTaskFinished]:
    return [e for e in events if isinstance(e, p.BackgroundTaskFinished)]


async def test_a_background_child_reports_once_with_the_next_request(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    gate = asyncio.Event()
    backend = RoutedBackend(
        {
            "go": [
                tool_response(_bg("CHILD look around")),
                text_response("started it"),
                text_response("got it"),
                text_response("ok"),
            ],
            "CHILD": [[gate, *text_response("the answer is 42")]],
        }
    )
    events: list[p.Event] = []
    session = await open_session(make_settings(), backend, repo, events)
    first = await session.run_turn("go")
    # The turn ended while the child still runs: the call returned at once with its id.
    assert first.status == "completed" and first.final_text == "started it"
    started = next(e for e in events if isinstance(e, p.ToolCallFinished))
    assert isinstance(started.display, p.BackgroundTask)
    assert started.display.task_id == "task-1" and "task-1" in started.result
    assert session.background_running() == [("task-1", "explore", "look")]
    gate.set()
    await async_wait_until(lambda: bool(_finished(events)), message="the child's end")
    done = _finished(events)[0]
    assert done.status == "ok" and done.task_id == "task-1" and "the answer is 42" in done.result
    assert done.call_id == started.call_id and done.display.status == "completed"
    assert session.background_running() == []
    await session.run_turn("next")
    await session.run_turn("more")
    transcript = session.transcript.path
    await session.close()
    requests = backend.requests["go"]
    assert [len(_reports(r)) for r in requests] == [0, 0, 1, 1]  # given once, then kept
    report = _reports(requests[2])[0]
    assert "task-1" in report and "the answer is 42" in report and "explore" in report
    # Recorded: a resumed session has it too.
    assert sum(str(m["content"]).startswith(REPORT) for m in load(transcript).messages) == 1


async def test_interrupting_the_turn_leaves_a_background_child_running(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    gate, hang = asyncio.Event(), asyncio.Event()
    backend = RoutedBackend(
        {
            "go": [tool_response(_bg("CHILD")), [hang, *text_response("never")]],
            "CHILD": [[gate, *text_response("still here")]],
        }
    )
    events: list[p.Event] = []
    session = await open_session(make_settings(), backend, repo, events)
    await session.submit(p.UserInput(text="go"))
    await async_wait_until(lambda: len(backend.requests["go"]) == 2, message="the second request")
    await session.submit(p.Interrupt())
    await async_wait_until(
        lambda: any(isinstance(e, p.TurnFinished) for e in events), message="the turn's end"
    )
    ended = next(e for e in events if isinstance(e, p.TurnFinished))
    assert ended.status == "interrupted"
    assert [task for task, _, _ in session.background_running()] == ["task-1"]
    gate.set()
    await async_wait_until(lambda: bool(_finished(events)), message="the child's end")
    assert _finished(events)[0].status == "ok" and "still here" in _finished(events)[0].result
    await session.close()


async def test_task_result_waits_and_task_stop_stops(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    hang = asyncio.Event()
    backend = RoutedBackend(
        {
            "go": [
                tool_response(_bg("CHILD one", "first")),
                tool_response(_bg("CHILD two", "second")),
                tool_response(("task_result", {"task_id": "task-1", "wait_seconds": 100})),
                tool_response(("task_stop", {"task_id": "task-2"})),
                tool_response(("task_result", {"task_id": "task-9"})),
                text_response("done"),
                text_response("again"),
            ],
            "CHILD one": [[0.05, *text_response("one is done")]],
            "CHILD two": [[hang, *text_response("never")]],
        }
    )
    events: list[p.Event] = []
    session = await open_session(make_settings(), backend, repo, events)
    await session.run_turn("go")
    await session.run_turn("and now")
    await session.close()
    calls = [e for e in events if isinstance(e, p.ToolCallFinished)]
    assert [c.name for c in calls] == ["task", "task", "task_result", "task_stop", "task_result"]
    waited, stopped, unknown = calls[2], calls[3], calls[4]
    assert waited.status == "ok" and "one is done" in waited.result
    assert stopped.status == "error" and "was interrupted" in stopped.result
    assert unknown.status == "error" and "no background task 'task-9'" in unknown.result
    assert {e.task_id: e.status for e in _finished(events)} == {
        "task-1": "ok",
        "task-2": "cancelled",
    }
    # Both were handed over by the tools: no report joins the conversation later.
    assert not any(_reports(r) for r in backend.requests["go"])


async def test_a_turn_that_waits_for_background_children_answers_after_them(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    gate = asyncio.Event()
    backend = RoutedBackend(
        {
            "go": [
                tool_response(_bg("CHILD")),
                text_response("waiting for it"),
                text_response("final: 42"),
            ],
            "CHILD": [[gate, *text_response("42")]],
        }
    )
    events: list[p.Event] = []
    session = await open_session(make_settings(), backend, repo, events, wait_for_background=True)

    async def release() -> None:
        # Only once the parent has answered without it: the turn must wait, not end.
        await async_wait_until(lambda: len(backend.requests["go"]) == 2, message="the answer")
        gate.set()

    releasing = asyncio.create_task(release())
    finished = await within(session.run_turn("go"), message="the turn")
    await releasing
    await session.close()
    assert finished.status == "completed" and finished.final_text == "final: 42"
    assert finished.model_requests == 3
    assert len(_reports(backend.requests["go"][2])) == 1


async def test_closing_the_session_stops_background_children_and_says_so(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    hang = asyncio.Event()
    backend = RoutedBackend(
        {
            "go": [tool_response(_bg("CHILD", "slow job")), text_response("ok")],
            "CHILD": [[hang, *text_response("never")]],
        }
    )
    events: list[p.Event] = []
    session = await open_session(make_settings(), backend, repo, events)
    await session.run_turn("go")
    assert session.background_running()
    await session.close()
    said = [e.text for e in events if isinstance(e, p.Notice) and e.level == "warning"]
    assert any("they were stopped: task-1 (explore: slow job)" in s for s in said), said
    assert [e.status for e in _finished(events)] == ["cancelled"]
    assert isinstance(events[-1], p.SessionEnded)


async def test_background_children_share_the_subagent_limit(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    gate = asyncio.Event()
    backend = RoutedBackend(
        {
            "go": [tool_response(_bg("CHILD a"), _bg("CHILD b")), text_response("ok")],
            "CHILD a": [[gate, *text_response("a")]],
            "CHILD b": [text_response("b")],
        }
    )
    events: list[p.Event] = []
    session = await open_session(make_settings(max_subagents=1), backend, repo, events)
    await session.run_turn("go")
    # One slot: the second child waits for the first to end before it asks the model.
    assert backend.requests["CHILD b"] == []
    gate.set()
    await async_wait_until(lambda: len(_finished(events)) == 2, message="both children's end")
    await session.close()
