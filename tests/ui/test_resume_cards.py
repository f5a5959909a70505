"""A resumed session draws its tool calls as the cards they were, from the events its
transcript recorded: a child agent's calls, a call whose end the process never
recorded (answered as interrupted), and a transcript without events (one line a call)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clover_code.config.settings import Settings
from clover_code.ui.widgets.notice_line import NoticeLine
from clover_code.ui.widgets.subagent_card import SubagentCard
from clover_code.ui.widgets.tool_card import ToolCard
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.ui.fakes_ui import scripted_app
from tests.ui.test_flows import SIZE, type_and_send, until

TASK = ("task", {"description": "read calc", "prompt": "What is in calc.py?"})
READ = ("read_file", {"path": "calc.py"})
Records = list[dict[str, Any]]


async def _resumed(
    repo: Path, settings: Settings, damage: Callable[[Records], Records] | None = None
) -> tuple[list[ToolCard], list[str]]:
    """Run one turn (a child agent that reads, then a read of the parent's own), then
    resume it (or a copy of its transcript as ``damage`` leaves it): the cards and the
    "(called ...)" lines drawn."""
    backend = ScriptedBackend(
        [
            tool_response(TASK),
            tool_response(READ),
            text_response("calc.py adds by subtracting."),
            tool_response(READ, text="Let me look myself."),
            text_response("It subtracts; one sign fixes it."),
        ]
    )
    app = scripted_app(backend, repo, settings, approval="full-auto")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "fix add")
        await until(pilot, lambda: not app.turn_running and len(app.query(ToolCard)) == 2)
        assert app.started is not None
        session_id = app.started.session_id
        if damage is not None:
            path = settings.resolved_sessions_dir() / f"{session_id}.jsonl"
            records = [json.loads(line) for line in path.read_text().splitlines()]
            session_id = f"{session_id}-copy"
            records[0]["id"] = session_id
            copy = path.with_name(f"{session_id}.jsonl")
            copy.write_text("".join(json.dumps(r) + "\n" for r in damage(records)))
        await type_and_send(pilot, f"/resume {session_id}")
        await until(pilot, lambda: app.started is not None and app.started.resumed)
        await pilot.pause()  # the history is drawn before the session reopens
        cards = list(app.query(ToolCard))
        notes = [str(note.text) for note in app.query(NoticeLine)]
    return cards, [note for note in notes if note.startswith("(called")]


async def test_the_cards_come_back_with_the_childs_calls(repo: Path, settings: Settings) -> None:
    cards, lines = await _resumed(repo, settings)
    assert [(type(c).__name__, c.tool_name, c.status) for c in cards] == [
        ("SubagentCard", "task", "ok"),
        ("ToolCard", "read_file", "ok"),
    ]
    assert lines == []
    child = cards[0]
    assert isinstance(child, SubagentCard)
    assert child.calls == 1 and child.agent == "explore"
    assert child.finished is not None and "subtracting" in child.finished.result


async def test_a_call_whose_end_was_never_recorded_shows_as_cancelled(
    repo: Path, settings: Settings
) -> None:
    def died_during_the_read(records: Records) -> Records:
        # The process died during the parent's read: its end and all after it unwritten.
        last = max(i for i, r in enumerate(records) if r.get("kind") == "tool_result")
        return records[:last]

    cards, _ = await _resumed(repo, settings, died_during_the_read)
    assert [(c.tool_name, c.status) for c in cards] == [("task", "ok"), ("read_file", "cancelled")]
    assert cards[1].finished is not None and "interrupted" in cards[1].finished.result


async def test_a_transcript_without_events_names_each_call(repo: Path, settings: Settings) -> None:
    cards, lines = await _resumed(
        repo, settings, lambda records: [r for r in records if r.get("kind") != "event"]
    )
    assert cards == [] and lines == ["(called task)", "(called read_file)"]


async def test_calls_that_reuse_one_id_are_drawn_each_with_its_own_end(
    repo: Path, settings: Settings
) -> None:
    def one_id(records: Records) -> Records:
        # A server that sends no ids: every response's first call is call_0.
        text = json.dumps(records)
        for call_id in sorted(set(re.findall(r'"(call_\d+)"', text))):
            text = text.replace(f'"{call_id}"', '"call_0"')
        return list(json.loads(text))

    cards, lines = await _resumed(repo, settings, one_id)
    assert [(c.tool_name, c.status) for c in cards] == [("task", "ok"), ("read_file", "ok")]
    assert lines == []
    task, read = (c.finished for c in cards)
    assert task is not None and "subtracting" in task.result
    assert read is not None and "subtracting" not in read.result and "def add" in read.result
