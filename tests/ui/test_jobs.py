"""The app and background jobs: the status bar counts the running ones, ``/jobs`` lists
them, Esc and Ctrl+C stop them even between turns, and quitting names those it stopped."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.pilot import Pilot

from clover_code import protocol as p
from clover_code.ui.app import CloverApp
from clover_code.ui.run import jobs_stopped
from clover_code.ui.slash import jobs_text
from tests.ui import scenes
from tests.ui.fakes_ui import replay_app
from tests.ui.test_flows import until
from tests.ui.test_snapshots import drawn, send_prompt

SnapCompare = Callable[..., bool]

SERVER = "python3 -m http.server 8000"
STARTED_AT = 1_767_225_600.0


def _job(job_id: str, command: str, state: p.JobState, **more: Any) -> p.JobInfo:
    return p.JobInfo(id=job_id, command=command, state=state, started=STARTED_AT, **more)


def serving_turn() -> list[Any]:
    """A turn that starts a dev server as a job and checks the page from a later call."""
    start = {"command": SERVER, "background": True, "description": "serve the site"}
    fetch = {"command": "curl -s localhost:8000 | head -1"}
    running = _job("1", SERVER, "running")
    done = _job("2", "npm run build", "exited", exit_code=0, ended=STARTED_AT + 9)
    return [
        p.TurnStarted(turn=1, text="serve it"),
        p.ToolCallStarted(
            call_id="c1", name="shell", kind="execute", arguments=start, summary="serve the site"
        ),
        p.ToolCallFinished(
            call_id="c1",
            name="shell",
            status="ok",
            result=f"started background job 1: {SERVER}\nFirst output:\n(no new output)\n",
            display=p.JobReport(job_id="1", command=SERVER, state="running", sandbox="docker"),
            duration=0.4,
        ),
        p.JobsChanged(jobs=[done, running]),
        p.ToolCallStarted(
            call_id="c2", name="shell", kind="execute", arguments=fetch, summary=fetch["command"]
        ),
        p.ToolCallFinished(
            call_id="c2",
            name="shell",
            status="ok",
            result="<!DOCTYPE HTML>\nexit code 0 (0.1 s)",
            display=p.CommandRun(command=fetch["command"], exit_code=0, sandbox="docker"),
            duration=0.1,
        ),
        p.ContentDelta(text="The server answers on port 8000."),
        p.BlockCommitted(block=0, text="The server answers on port 8000.", token_count=8),
        p.TurnFinished(turn=1, status="completed", final_text="The server answers."),
    ]


def serving_app() -> CloverApp:
    app = replay_app(scenes.OPEN, [serving_turn()])
    app._snapshot_prompt = "serve the site and check the page"  # type: ignore[attr-defined]
    return app


async def list_jobs(pilot: Pilot[Any]) -> None:
    await send_prompt(pilot)
    app = pilot.app
    assert isinstance(app, CloverApp)
    await until(pilot, lambda: not app.turn_running, message="the turn to end")
    app.composer.input.insert("/jobs")
    await pilot.press("enter")
    await drawn(pilot, "the /jobs list")


def test_jobs_list_and_status_bar_count(snap_compare: SnapCompare) -> None:
    assert snap_compare(serving_app(), terminal_size=(110, 30), run_before=list_jobs)


async def test_the_status_bar_counts_running_jobs_only() -> None:
    app = serving_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await list_jobs(pilot)
        assert app.status_bar.jobs == 1
        assert "1 job running" in str(app.status_bar.render())
        ended = _job("1", SERVER, "stopped", reason="interrupted", ended=STARTED_AT + 60)
        app.bridge.emit(p.JobsChanged(jobs=[ended]))
        await until(pilot, lambda: app.status_bar.jobs == 0, message="the count to drop")
        assert "job" not in str(app.status_bar.render())


async def test_ctrl_c_between_turns_stops_running_jobs() -> None:
    app = serving_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await list_jobs(pilot)
        replay = app.replay  # type: ignore[attr-defined]
        assert not any(isinstance(op, p.Interrupt) for op in replay.ops)
        await pilot.press("ctrl+c")
        await until(
            pilot,
            lambda: any(isinstance(op, p.Interrupt) for op in replay.ops),
            message="Ctrl+C to send an interrupt for the running job",
        )


async def test_esc_without_turn_or_job_sends_nothing() -> None:
    app = replay_app(scenes.OPEN)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.started is not None)
        app.action_interrupt()
        await pilot.pause()
        assert not any(isinstance(op, p.Interrupt) for op in app.replay.ops)  # type: ignore[attr-defined]


async def test_quitting_names_the_jobs_it_stopped() -> None:
    app = serving_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await list_jobs(pilot)
        await app.action_quit()
    assert jobs_stopped(app) == f"Stopped 1 background job (job 1: {SERVER})."


def test_jobs_text_says_how_each_ended() -> None:
    assert jobs_text([]).startswith("No background jobs.")
    text = jobs_text(
        [
            _job("1", "make watch", "stopped", reason="interrupted"),
            _job("2", "false", "exited", exit_code=1),
            _job("3", SERVER, "lost", reason="the sandbox container stopped"),
            _job("4", "npm run dev", "running"),
        ]
    )
    lines = text.splitlines()
    assert lines[0] == "Background jobs (1 running):"
    assert lines[1].split() == ["job", "4", "running", "npm", "run", "dev"]
    assert "stopped (interrupted)  make watch" in lines[2]
    assert "exited with code 1  false" in lines[3]
    assert "lost (the sandbox container stopped)" in lines[4]
    assert "Ctrl+C" in lines[-1]
