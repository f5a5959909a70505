"""Pilot tests of the main flows against the real Session with a scripted model."""

from __future__ import annotations

import asyncio
import inspect
import json
from pathlib import Path

from textual.pilot import Pilot

from clover_code import protocol as p
from clover_code.config.settings import Settings
from clover_code.engine import events as ev
from clover_code.ui.app import CloverApp
from clover_code.ui.widgets.answer import Answer
from clover_code.ui.widgets.approval import ApprovalScreen
from clover_code.ui.widgets.diff_view import DiffView
from clover_code.ui.widgets.notice_line import NoticeLine
from clover_code.ui.widgets.tool_card import ToolCard
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.ui.fakes_ui import denoised_response, scripted_app
from tests.waiting import PATIENCE

SIZE = (100, 32)


async def until(
    pilot: Pilot[int], check: object, timeout: float = PATIENCE, message: str | None = None
) -> None:
    """Let the app run until ``check()`` is true; fail after ``timeout`` seconds.

    The deadline is generous (a busy machine runs the app slowly); the failure
    names what was awaited: ``message``, or else the source of ``check``.
    """
    assert callable(check)
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            shown = [str(n.text) for n in pilot.app.query(NoticeLine)]
            raise AssertionError(
                f"waited {timeout:g} s for {message or _source(check)}; notices: {shown}"
            )
        await pilot.pause(0.02)


def _source(check: object) -> str:
    try:
        return inspect.getsource(check).strip()  # type: ignore[arg-type]
    except (OSError, TypeError):
        return repr(check)


async def type_and_send(pilot: Pilot[int], text: str) -> None:
    app = pilot.app
    assert isinstance(app, CloverApp)
    app.composer.input.insert(text)
    await pilot.press("enter")


def answers(app: CloverApp) -> str:
    return "".join(a.text for a in app.query(Answer))


async def test_prompt_blocks_approval_diff_and_undo(repo: Path, settings: Settings) -> None:
    edit = {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}
    backend = ScriptedBackend(
        [
            denoised_response("Let me fix the add function in calc.py now.", pause=0.03)[:-2]
            + tool_response(("edit_file", edit)),
            text_response("Fixed: add now adds."),
        ]
    )
    app = scripted_app(backend, repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "fix add")
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await until(pilot, lambda: bool(app.screen.query(DiffView)))  # the proposed edit
        assert "Let me fix the add function" in answers(app)
        assert app.transcript.denoise.drafts_seen > 0
        await pilot.press("y")
        await until(pilot, lambda: not app.turn_running and "Fixed" in answers(app))
        assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
        card = app.query_one(ToolCard)
        assert card.status == "ok" and card.query(DiffView)
        assert app.turn_files[-1] == ["calc.py"]
        assert not app.transcript.denoise.display
        await until(pilot, lambda: app.status_bar.dirty)
        # /undo asks first, then sends the op to the core
        await type_and_send(pilot, "/undo")
        await until(pilot, lambda: app.screen.__class__.__name__ == "ConfirmScreen")
        await pilot.press("y")
        await until(pilot, lambda: isinstance(app.bridge.sent[-1], p.Undo))
        assert app.screen.__class__.__name__ == "Screen"


async def test_escape_interrupts_and_app_stays_usable(repo: Path, settings: Settings) -> None:
    hang = asyncio.Event()
    backend = ScriptedBackend(
        [
            [ev.ContentDelta("Partial "), ev.BlockCommitted(0, "Partial ", 2), hang],
            text_response("Second answer."),
        ]
    )
    app = scripted_app(backend, repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "explain")
        await until(pilot, lambda: "Partial" in answers(app))
        assert app.turn_running
        await pilot.press("escape")
        await until(pilot, lambda: not app.turn_running)
        notes = " ".join(str(n.text) for n in app.query(NoticeLine))
        assert "Interrupted" in notes
        await type_and_send(pilot, "go on")
        await until(pilot, lambda: "Second answer." in answers(app))


async def test_engine_error_is_shown_once_and_app_still_usable(
    repo: Path, settings: Settings
) -> None:
    from clover_code.errors import StreamInterrupted

    backend = ScriptedBackend(
        [
            [
                ev.ContentDelta("Half a blo"),
                ev.Failed(StreamInterrupted("the model server closed the stream mid-block."), True),
                ev.Finished("error"),
            ],
            text_response("Recovered."),
        ]
    )
    app = scripted_app(backend, repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "hello")
        await until(pilot, lambda: not app.turn_running and app.stats.responses == 1)
        errors = [n for n in app.query(NoticeLine) if getattr(n, "level", "") == "error"]
        assert errors and "closed the stream" in str(errors[0].text)
        # the reader is at the end, where the line shows: no toast repeats it
        assert not any("closed the stream" in str(n.message) for n in app._notifications)
        await type_and_send(pilot, "again")
        await until(pilot, lambda: "Recovered." in answers(app))


async def test_quit_saves_transcript(repo: Path, settings: Settings) -> None:
    backend = ScriptedBackend([text_response("Hi.")])
    app = scripted_app(backend, repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "hi")
        await until(pilot, lambda: "Hi." in answers(app) and not app.turn_running)
        await type_and_send(pilot, "/quit")
        # /quit itself ends the app (leaving run_test would close it anyway).
        await until(pilot, lambda: app.return_value is not None, message="the app to quit")
    assert app.return_value == 0
    assert backend.closed
    saved = list(settings.resolved_sessions_dir().glob("*.jsonl"))
    assert len(saved) == 1
    records = [json.loads(line) for line in saved[0].read_text().splitlines()]
    messages = [r["message"] for r in records if r["kind"] == "message"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[-1]["content"] == "Hi."
    assert records[-1]["kind"] == "event" and records[-1]["event"]["type"] == "session_ended"


async def test_ctrl_c_during_approval_interrupts_and_closes_it(
    repo: Path, settings: Settings
) -> None:
    backend = ScriptedBackend(
        [
            tool_response(("shell", {"command": "echo hi"})),
            text_response("Next."),
        ]
    )
    app = scripted_app(backend, repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "run it")
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.press("ctrl+c")
        await until(pilot, lambda: not app.turn_running)
        await until(pilot, lambda: not isinstance(app.screen, ApprovalScreen))
        card = app.query_one(ToolCard)
        assert card.status == "cancelled"
        await type_and_send(pilot, "next")
        await until(pilot, lambda: "Next." in answers(app))


async def test_no_engine_is_shown_and_quit_returns_its_exit_code(tmp_path: Path) -> None:
    from clover_code.errors import EngineUnavailable

    async def factory(emit: object, resume: object) -> object:
        raise EngineUnavailable("No model engine is configured. Point clover-code at a server.")

    app = CloverApp(factory, cwd=tmp_path, git_status=False)  # type: ignore[arg-type]
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.exit_code == 3)
        notes = " ".join(n.text for n in app.query(NoticeLine))
        assert "No model engine is configured" in notes
        await type_and_send(pilot, "hello")
        assert not app.bridge.sent
        assert app.composer.input.text == "hello"  # kept, not dropped
        app.composer.input.load_text("")
        await type_and_send(pilot, "/quit")
        await until(pilot, lambda: app.return_value is not None, message="the app to quit")
    assert app.return_value == 3


async def test_an_error_is_toasted_only_when_the_reader_scrolled_up() -> None:
    from tests.ui import scenes
    from tests.ui.fakes_ui import long_markdown, replay_app

    app = replay_app(scenes.OPEN)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        app.transcript.add_answer(long_markdown(6000))
        app.transcript.end_turn()
        await until(pilot, lambda: app.transcript.max_scroll_y > 10)
        app.transcript.scroll_home(animate=False)
        await until(pilot, lambda: app.transcript.scroll_y == 0)
        app.bridge.emit(p.ErrorEvent(message="the server went away"))
        await until(pilot, lambda: bool(app._notifications))
        assert "the server went away" in str(next(iter(app._notifications)).message)
