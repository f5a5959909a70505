"""A resumed session's answers come back with the fill confidences they were recorded
with: the same pieces and the same shading as before, and a transcript written with
the first form of the confidences (before the compact one) replays too."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

from textual.content import Content

from clover_code.config.settings import Settings
from clover_code.engine import events as ev
from clover_code.protocol.confidence import TokenPiece
from clover_code.ui.app import CloverApp
from clover_code.ui.widgets.answer import Answer
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.paths import UNIT_FIXTURES
from tests.ui.fakes_ui import scripted_app
from tests.ui.test_flows import SIZE, type_and_send, until

FIRST_FORM = UNIT_FIXTURES / "transcripts" / "confidence_first_form"


def _with_confidences(response: list[Any]) -> list[Any]:
    """Each committed block cut into tokens of up to three characters, some unsure."""
    out: list[Any] = []
    for event in response:
        if isinstance(event, ev.BlockCommitted):
            sizes = [min(3, len(event.text) - at) for at in range(0, len(event.text), 3)]
            shades = (0.3, 0.8, 0.99, 0.97)
            pieces = [TokenPiece(n, shades[k % 4], 1 + k // 3) for k, n in enumerate(sizes)]
            event = dataclasses.replace(event, pieces=pieces)
        out.append(event)
    return out


Shading = list[tuple[str, list[tuple[int, int, str]]]]


async def _shown(app: CloverApp, pilot: Any) -> tuple[list[list[TokenPiece] | None], Shading]:
    """Every answer's pieces, and its shaded text and tints once F4 is pressed."""
    answers = list(app.query(Answer))
    pieces = [answer.pieces for answer in answers]
    await pilot.press("f4")
    await until(pilot, lambda: all(a.shaded for a in answers), message="shading")
    shading: Shading = []
    for answer in answers:
        content = answer.shaded_text
        assert isinstance(content, Content)
        shading.append((content.plain, [(s.start, s.end, str(s.style)) for s in content.spans]))
    await pilot.press("f4")
    return pieces, shading


async def _resume(app: CloverApp, pilot: Any, session_id: str, answers: int) -> None:
    await until(pilot, lambda: app.started is not None)
    await type_and_send(pilot, f"/resume {session_id}")
    await until(pilot, lambda: app.started is not None and app.started.resumed)
    await until(pilot, lambda: len(app.query(Answer)) == answers, message="the answers")


async def test_a_resumed_session_shades_its_answers_as_before(
    repo: Path, settings: Settings
) -> None:
    script = [
        tool_response(("read_file", {"path": "calc.py"}), text="Let me look at calc.py."),
        text_response("It subtracts; one sign fixes it.", reasoning="It subtracts."),
    ]
    backend = ScriptedBackend([_with_confidences(r) for r in script])
    app = scripted_app(backend, repo, settings, approval="full-auto")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "fix add")
        await until(pilot, lambda: not app.turn_running and len(app.query(Answer)) == 2)
        await until(pilot, lambda: all(a.pieces for a in app.query(Answer)), message="pieces")
        before = await _shown(app, pilot)
        assert app.started is not None
        # /resume closes the session, clears the screen and draws it again from its file
        await _resume(app, pilot, app.started.session_id, answers=2)
        after = await _shown(app, pilot)
    assert [len(pieces or []) for pieces in before[0]] == [8, 11]
    assert all(tints for _, tints in before[1])
    assert after == before


async def test_a_transcript_with_the_first_form_replays_its_confidences(
    repo: Path, settings: Settings
) -> None:
    sessions = settings.resolved_sessions_dir()
    sessions.mkdir(parents=True, exist_ok=True)
    meta = json.loads(FIRST_FORM.with_suffix(".jsonl").read_text().splitlines()[0])
    shutil.copyfile(FIRST_FORM.with_suffix(".jsonl"), sessions / f"{meta['id']}.jsonl")
    expected = json.loads(FIRST_FORM.with_suffix(".pieces.json").read_text())
    app = scripted_app(ScriptedBackend([]), repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await _resume(app, pilot, meta["id"], answers=len(expected))
        shown = [
            [[p.chars, p.confidence, p.step] for p in answer.pieces or []]
            for answer in app.query(Answer)
        ]
    assert shown == expected
