"""Per-token shading of edits in the real app: a scripted block stream (each token's fill
confidence known) through the real session, parser and edit tools, an XML-form edit
and a JSON-form write in one response, shaded character by character in the approval
modal and in the finished cards, and again once the session is resumed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.content import Content
from textual.pilot import Pilot

from clover_code import protocol as p
from clover_code.config.settings import Settings
from clover_code.protocol.confidence import TokenPiece, encode_pieces
from clover_code.ui.widgets.approval import ApprovalScreen
from clover_code.ui.widgets.diff_view import DiffView, render_diff
from clover_code.ui.widgets.tool_card import ToolCard
from tests.diffusion_stream import FakeDiffusionBackend, answer, blocks, tokens
from tests.edit_scripts import (
    JSON_LINES,
    JSON_TINTS,
    THINK,
    XML_LINE,
    XML_TINTS,
    json_write,
    xml_edit,
)
from tests.ui.fakes_ui import scripted_app
from tests.ui.test_flows import type_and_send, until

TINTS = {"on $error-muted": "E", "on $warning-muted": "W"}


def tints(content: Content, line: str) -> str:
    """Per character of ``line`` as drawn in ``content``: the confidence tint on it."""
    start = content.plain.index(line)
    out = ["."] * len(line)
    for span in content.spans:
        mark = TINTS.get(str(span.style))
        for at in range(max(span.start, start), min(span.end, start + len(line))):
            if mark:
                out[at - start] = mark
    return "".join(out)


def drawn(view: DiffView) -> Content:
    content = view.content
    assert isinstance(content, Content)
    return content


async def allow_shaded(pilot: Pilot[Any], line: str) -> str:
    """Wait for an approval modal, allow it; the tints it drew on ``line``."""
    app = pilot.app
    await until(pilot, lambda: isinstance(app.screen, ApprovalScreen), message="a modal")
    modal = app.screen
    await until(pilot, lambda: bool(modal.query(DiffView)), message="the diff")
    shown = tints(drawn(modal.query_one(DiffView)), line)
    await pilot.press("y")
    await until(pilot, lambda: app.screen is not modal, message="the modal closed")
    return shown


async def test_edits_are_shaded_token_by_token_in_the_modal_and_the_cards(
    repo: Path, settings: Settings
) -> None:
    response = blocks([*THINK, *xml_edit("calc.py"), *tokens("\n"), *json_write("greet.py")])
    backend = FakeDiffusionBackend([response, answer("Both done.")])
    app = scripted_app(backend, repo, settings)
    async with app.run_test(size=(110, 40)) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "fix add and greet")
        # The modal shades the proposed edit (it holds tokens below the threshold).
        for line, expected in ((XML_LINE, XML_TINTS), (JSON_LINES[0], JSON_TINTS[0])):
            assert await allow_shaded(pilot, line) == expected
        await until(pilot, lambda: not app.turn_running)
        assert (repo / "greet.py").read_text() == "\n".join(JSON_LINES) + "\n"
        views = [card.query_one(DiffView) for card in app.query(ToolCard)]
        assert len(views) == 2 and not any(view.marked for view in views)
        assert "E" not in tints(drawn(views[0]), XML_LINE)
        await pilot.press("f4")
        await until(pilot, lambda: all(view.marked for view in views), message="the view on")
        assert tints(drawn(views[0]), XML_LINE) == XML_TINTS
        for line, expected in zip(JSON_LINES, JSON_TINTS, strict=True):
            assert tints(drawn(views[1]), line) == expected
        assert "   2?+" in drawn(views[0]).plain  # the row holding a low token is marked
        # /resume draws the session again from its file: the same cards, the same shading.
        assert app.started is not None
        cards_before = [(card.tool_name, card.status) for card in app.query(ToolCard)]
        await type_and_send(pilot, f"/resume {app.started.session_id}")
        await until(pilot, lambda: app.started is not None and app.started.resumed)
        await until(pilot, lambda: len(app.query(DiffView)) == 2, message="the resumed cards")
        cards = list(app.query(ToolCard))
        assert [(card.tool_name, card.status) for card in cards] == cards_before
        views = [card.query_one(DiffView) for card in cards]
        await until(pilot, lambda: all(view.marked for view in views), message="still on")
        assert tints(drawn(views[0]), XML_LINE) == XML_TINTS
        for line, expected in zip(JSON_LINES, JSON_TINTS, strict=True):
            assert tints(drawn(views[1]), line) == expected


DIFF = (
    "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
    "-    return a - b\n+    return a + b\n"
)


def test_an_older_record_without_pieces_tints_its_unsure_lines_whole() -> None:
    low = p.EditConfidence(tokens=1, lines=[2], changed=4, below=0.5)
    view = DiffView(DIFF, confidence=low, marked=True)
    assert tints(drawn(view), "    return a + b") == "W" * 16
    assert "   2?+" in drawn(view).plain
    assert view.shading is not None and view.shading.unsure == (5,)


def test_a_row_drawn_otherwise_than_rated_is_not_shaded() -> None:
    pieces = encode_pieces([TokenPiece(4, 0.99, 1), TokenPiece(12, 0.2, 2)])
    low = p.EditConfidence(tokens=1, lines=[2], changed=2, below=0.5, row_pieces={5: pieces})
    shaded = DiffView(DIFF, confidence=low, marked=True)
    assert tints(drawn(shaded), "    return a + b") == "...." + "E" * 12
    # An escape sequence split between two tokens: drawn, the line loses it whole, so
    # where each token's characters are is not known; the row is marked, not guessed.
    escaped = DIFF.replace("a + b", "'\x1b[1mB'")
    split = encode_pieces([TokenPiece(13, 0.99, 1), TokenPiece(7, 0.2, 2)])
    low = p.EditConfidence(tokens=1, lines=[2], changed=2, below=0.5, row_pieces={5: split})
    content = render_diff(escaped, 40, DiffView(escaped, confidence=low).shading)
    assert "E" not in tints(content, "    return 'B'") and "   2?+" in content.plain
