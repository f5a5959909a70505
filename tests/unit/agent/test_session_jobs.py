"""A session's background jobs: an interrupt and the session's end stop every running
one and say which, through a real session on the host sandbox (``--sandbox none``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from clover_code import protocol as p
from clover_code.config.settings import Settings
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.processes import marked
from tests.sessions import open_session
from tests.waiting import async_wait_until

_RUN = os.getpid() % 100_000


def _job_turn(command: str) -> list[list[object]]:
    return [tool_response(("shell", {"command": command, "background": True})), text_response("ok")]


def _notices(events: list[p.Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, p.Notice) and "background job" in e.text]


async def test_an_interrupt_stops_the_running_jobs_and_says_which(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    mark = f"sleep {_RUN}6"
    events: list[p.Event] = []
    backend = ScriptedBackend(_job_turn(mark))
    session = await open_session(make_settings(), backend, repo, events, approval_mode="full-auto")
    try:
        finished = await session.run_turn("start it")
        assert finished.status == "completed"
        assert marked(mark), "the job did not outlive the turn"
        await session.submit(p.Interrupt())
        assert not marked(mark)
        assert _notices(events) == [f"stopped a background job on the interrupt (job 1: {mark})."]
        changed = [e for e in events if isinstance(e, p.JobsChanged)]
        assert [[(j.state, j.reason) for j in e.jobs] for e in changed] == [
            [("running", "")],
            [("stopped", "interrupted")],
        ]
    finally:
        await session.close()
    assert len(_notices(events)) == 1, "the end stopped a job the interrupt had stopped"


async def test_the_end_of_the_session_stops_every_job(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    marks = [f"sleep {_RUN}7", f"sleep {_RUN}8"]
    events: list[p.Event] = []
    backend = ScriptedBackend(_job_turn(marks[0]) + _job_turn(marks[1]))
    session = await open_session(
        make_settings(max_jobs=2), backend, repo, events, approval_mode="full-auto"
    )
    await session.run_turn("start one")
    await session.run_turn("start another")
    await async_wait_until(lambda: all(marked(m) for m in marks), message="both jobs")
    await session.close()
    assert not any(marked(m) for m in marks)
    assert _notices(events) == [
        f"stopped 2 background jobs as the session ended (job 1: {marks[0]}; job 2: {marks[1]})."
    ]
    ended = [e for e in events if isinstance(e, p.SessionEnded)]
    assert ended and events.index(ended[0]) > max(
        i for i, e in enumerate(events) if isinstance(e, p.Notice)
    )


async def test_a_background_command_asks_like_the_same_command(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    """In ask mode headless refuses what it would have to ask: a background command
    is refused like the foreground one, and job_output and job_stop need no approval."""
    events: list[p.Event] = []
    backend = ScriptedBackend(
        [
            tool_response(("shell", {"command": "touch made", "background": True})),
            tool_response(("job_output", {"id": 1})),
            tool_response(("job_stop", {"id": 1})),
            text_response("done"),
        ]
    )
    session = await open_session(make_settings(), backend, repo, events, approval_mode="ask")
    try:
        await session.run_turn("try")
    finally:
        await session.close()
    results = [e for e in events if isinstance(e, p.ToolCallFinished)]
    assert [(r.name, r.status) for r in results] == [
        ("shell", "denied"),
        ("job_output", "error"),
        ("job_stop", "error"),
    ]
    assert "no background job '1'" in results[1].result
    assert "no background job '1'" in results[2].result
    assert not (repo / "made").exists()
