"""The working line while a turn runs, and prompts queued during it (real Session,
scripted model)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.config.settings import Settings
from clover_code.engine import events as ev
from clover_code.ui.clock import Clock
from clover_code.ui.widgets.approval import ApprovalScreen
from clover_code.ui.widgets.working_line import activity, elapsed_text
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.ui.fakes_ui import draft_steps, scripted_app
from tests.ui.test_flows import SIZE, answers, type_and_send, until


def line(app: object) -> str:
    return str(app.working.shown.plain)  # type: ignore[attr-defined]


async def test_working_line_follows_the_turn_and_stays_through_a_stall(
    repo: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    drafts_seen = asyncio.Event()
    stall = asyncio.Event()
    backend = ScriptedBackend(
        [
            [
                ev.ReasoningDelta("thinking"),
                ev.BlockCommitted(0, "thinking", 2),
                stall,
                *draft_steps(1, ["a ", "b "], 2),
                drafts_seen,
                ev.ContentDelta("Done."),
                ev.BlockCommitted(1, "Done.", 2),
                ev.Usage(0, 4),
                ev.Finished("stop"),
            ]
        ]
    )
    app = scripted_app(backend, repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        assert not app.working.display
        await type_and_send(pilot, "explain")
        await until(pilot, lambda: "reasoning" in line(app))
        assert app.working.display and "Esc to interrupt" in line(app)
        assert "0s" in line(app)
        # nothing arrives for 45 s: the line stays and says so
        monkeypatch.setattr(Clock, "frozen", 1045.0)
        app.working._tick()
        assert "no output for 45s" in line(app) and "45s" in line(app)
        assert app.working.display and app.turn_running
        stall.set()
        await until(pilot, lambda: "denoising block 2" in line(app))
        assert "no output" not in line(app)
        drafts_seen.set()
        await until(pilot, lambda: not app.turn_running)
        assert not app.working.display


async def test_working_line_names_the_command_and_the_approval_wait(
    repo: Path, settings: Settings
) -> None:
    backend = ScriptedBackend(
        [tool_response(("shell", {"command": "echo hi"})), text_response("ok")]
    )
    app = scripted_app(backend, repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "say hi")
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        assert "waiting for your approval (shell)" in line(app)
        await pilot.press("y")
        await until(pilot, lambda: not app.turn_running)


def test_activity_and_elapsed_texts() -> None:
    started = p.ToolCallStarted(
        call_id="c", name="shell", kind="execute", arguments={"command": "make\nall"}, summary=""
    )
    assert activity(started, "") == "running `make`"
    assert activity(p.BlockDraft(block=2, step=1, tokens=[]), "") == "denoising block 3"
    assert activity(p.ToolOutput(call_id="c", text="x"), "running `make`") == "running `make`"
    assert [elapsed_text(s) for s in (7, 125, 3720)] == ["7s", "2m 05s", "1h 02m"]


async def test_prompts_typed_during_a_turn_are_queued_then_sent(
    repo: Path, settings: Settings
) -> None:
    release = asyncio.Event()
    backend = ScriptedBackend(
        [
            [
                ev.ContentDelta("First "),
                ev.BlockCommitted(0, "First ", 2),
                release,
                *text_response("answer."),
            ],
            text_response("Second answer."),
            text_response("Third answer."),
        ]
    )
    app = scripted_app(backend, repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "one")
        await until(pilot, lambda: "First" in answers(app))
        await type_and_send(pilot, "two")
        await type_and_send(pilot, "three, to edit")
        assert app.queued.items == ["two", "three, to edit"] and app.queued.display
        assert "queued 1: two" in str(app.queued.content)
        # Alt+Up takes the newest back into the prompt to edit it; it is sent again
        await pilot.press("alt+up")
        assert app.composer.input.text == "three, to edit"
        assert app.queued.items == ["two"]
        app.composer.input.load_text("three")
        await pilot.press("enter")
        assert app.queued.items == ["two", "three"]
        release.set()
        await until(pilot, lambda: "Third answer." in answers(app), timeout=10)
        sent = [op.text for op in app.bridge.sent if isinstance(op, p.UserInput)]
        assert sent == ["one", "two", "three"]
        assert not app.queued.display


async def test_an_interrupt_puts_queued_prompts_back_in_the_prompt(
    repo: Path, settings: Settings
) -> None:
    hang = asyncio.Event()
    backend = ScriptedBackend([[ev.ContentDelta("Partial "), ev.BlockCommitted(0, "P", 2), hang]])
    app = scripted_app(backend, repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "one")
        await until(pilot, lambda: "Partial" in answers(app))
        await type_and_send(pilot, "keep me")
        await pilot.press("escape")
        await until(pilot, lambda: not app.turn_running)
        assert app.composer.input.text == "keep me"
        assert not app.queued.items
        assert [op.text for op in app.bridge.sent if isinstance(op, p.UserInput)] == ["one"]
