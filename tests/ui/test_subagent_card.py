"""The task call's card in the app: a child's live progress, expansion, /cost, Esc."""

from __future__ import annotations

import asyncio
from pathlib import Path

from clover_code.config.settings import Settings
from clover_code.engine import events as ev
from clover_code.ui.widgets.notice_line import NoticeLine
from clover_code.ui.widgets.subagent_card import SubagentCard
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.ui.fakes_ui import scripted_app
from tests.ui.test_flows import SIZE, answers, type_and_send, until

TASK = ("task", {"description": "read calc", "prompt": "What is in calc.py?"})


async def test_child_progress_expands_and_is_counted_in_cost(
    repo: Path, settings: Settings
) -> None:
    hang = asyncio.Event()
    backend = ScriptedBackend(
        [
            tool_response(TASK),
            tool_response(("read_file", {"path": "calc.py"})),
            [ev.ContentDelta("calc.py has "), ev.BlockCommitted(0, "calc.py has ", 4), hang],
            text_response("The child says: add subtracts."),
        ]
    )
    app = scripted_app(backend, repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "look")
        await until(pilot, lambda: bool(app.query(SubagentCard)))
        card = app.query_one(SubagentCard)
        await until(pilot, lambda: card.calls == 1 and card.blocks >= 1 and "calc.py" in card.text)
        assert card.finished is None and card.agent == "explore"
        assert not card._log.display
        card.focus()
        await pilot.press("enter")
        await until(pilot, lambda: bool(card._log.display))
        assert "✓ read_file calc.py" in str(card._log.render())
        hang.set()
        await until(pilot, lambda: "add subtracts" in answers(app) and not app.turn_running)
        assert card.finished is not None and card.finished.status == "ok"
        app.composer.input.focus()  # the focus is on the card
        await type_and_send(pilot, "/cost")
        await until(
            pilot, lambda: any("Child agents: 1" in str(n.text) for n in app.query(NoticeLine))
        )


async def test_escape_stops_the_child(repo: Path, settings: Settings) -> None:
    hang = asyncio.Event()
    backend = ScriptedBackend(
        [
            tool_response(TASK),
            [ev.ContentDelta("Looking "), ev.BlockCommitted(0, "Looking ", 2), hang],
            text_response("Second answer."),
        ]
    )
    app = scripted_app(backend, repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "look")
        await until(
            pilot, lambda: bool(app.query(SubagentCard)) and app.query_one(SubagentCard).blocks == 1
        )
        await pilot.press("escape")
        await until(pilot, lambda: not app.turn_running)
        assert not hang.is_set()
        await type_and_send(pilot, "go on")
        await until(pilot, lambda: "Second answer." in answers(app))
