"""Snapshots of the confidence view: an answer and an edit's added lines shaded token by
token by fill confidence (dark and light themes), and the edit approval modal that
shades them the same way, counts the unsure tokens and jumps to them."""

from __future__ import annotations

from typing import Any

import pytest
from textual.content import Content
from textual.pilot import Pilot

from clover_code import protocol as p
from clover_code.protocol.confidence import TokenPiece, encode_pieces
from clover_code.protocol.diff_rows import added_rows
from clover_code.ui.app import CloverApp
from clover_code.ui.widgets.answer import Answer
from clover_code.ui.widgets.approval import ApprovalScreen
from clover_code.ui.widgets.diff_view import DiffView
from tests.ui import scenes
from tests.ui.test_flows import until
from tests.ui.test_snapshots import SnapCompare, drawn, send_prompt, with_turn

ANSWER = "The add function subtracts; I think the fix is one sign."
# (text, confidence) per token of ANSWER: "I think" sure-ish, "one sign" unsure.
TOKENS = [
    ("The", 0.99), (" add", 0.98), (" function", 0.99), (" subtracts", 0.95), (";", 0.97),
    (" I", 0.8), (" think", 0.7), (" the", 0.99), (" fix", 0.93), (" is", 0.99),
    (" one", 0.3), (" sign", 0.2), (".", 0.99),
]  # fmt: skip
DIFF = (
    "--- a/calc.py\n+++ b/calc.py\n@@ -1,3 +1,3 @@\n def add(a, b):\n"
    "-    return a - b\n+    return a + b\n # end\n"
)
# The added line "    return a + b" as its tokens: "+" unsure, " b" not quite sure.
ADDED = [("    return", 0.99), (" a", 0.97), (" +", 0.2), (" b", 0.7)]
LOW = p.EditConfidence(
    tokens=1, lines=[2], changed=4, below=0.5,
    row_pieces={DIFF.split("\n").index("+    return a + b"): encode_pieces(
        [TokenPiece(len(t), c, 1) for t, c in ADDED]
    )},
)  # fmt: skip


def long_edit_confidence(diff: str, lines: list[int]) -> p.EditConfidence:
    """Each added line of ``diff`` as its tokens; on ``lines`` " fast" was filled unsure."""
    rows: dict[int, str] = {}
    low = changed = 0
    for added in added_rows(diff):
        name, call = added.text.split(" = ")
        unsure = added.number in lines
        parts = [(name, 0.99), (" =", 0.99), (" " + call[:-12], 0.95), (",", 0.8),
                 (" fast", 0.3 if unsure else 0.99), ("=True", 0.6), (")", 0.99)]  # fmt: skip
        assert "".join(t for t, _ in parts) == added.text
        rows[added.row] = encode_pieces([TokenPiece(len(t), c, 1) for t, c in parts])
        low += unsure
        changed += len(parts)
    return p.EditConfidence(tokens=low, lines=lines, changed=changed, below=0.5, row_pieces=rows)


def shaded_turn() -> list[Any]:
    assert "".join(t for t, _ in TOKENS) == ANSWER
    pieces = [TokenPiece(len(t), c, 1) for t, c in TOKENS]
    return [
        p.TurnStarted(turn=1, text="fix add in calc.py"),
        p.ContentDelta(text=ANSWER),
        p.AnswerConfidence(confidence=encode_pieces(pieces)),
        p.ToolCallStarted(
            call_id="c1", name="edit_file", kind="edit", arguments={"path": "calc.py"},
            summary="calc.py",
        ),
        p.ToolCallFinished(
            call_id="c1", name="edit_file", status="ok", result="edited",
            display=p.FileEdit(path="calc.py", diff=DIFF, replacements=1), low_confidence=LOW,
        ),
    ]  # fmt: skip


def edit_approval() -> list[Any]:
    args = {"path": "src/engine.py", "old_string": "x", "new_string": "y"}
    low = long_edit_confidence(scenes.long_edit_diff(), [43, 66])
    return [
        p.TurnStarted(turn=1, text="make it fast"),
        p.ToolCallStarted(
            call_id="c1", name="edit_file", kind="edit", arguments=args, summary="src/engine.py"
        ),
        p.ApprovalRequested(
            request_id="r1", call_id="c1", name="edit_file", kind="edit",
            summary="src/engine.py", arguments=args, diff=scenes.long_edit_diff(),
            low_confidence=low,
        ),
    ]  # fmt: skip


async def shade_on(pilot: Pilot[Any]) -> None:
    await send_prompt(pilot)
    app = pilot.app
    assert isinstance(app, CloverApp)
    await pilot.press("f4")
    await until(pilot, lambda: app.transcript.shading, message="the confidence view")
    await drawn(pilot, "the shaded turn")


@pytest.mark.parametrize("theme", ["textual-dark", "textual-light"])
def test_answer_and_diff_shaded_by_confidence(snap_compare: SnapCompare, theme: str) -> None:
    app = with_turn(shaded_turn())

    async def run(pilot: Pilot[Any]) -> None:
        pilot.app.theme = theme
        await shade_on(pilot)

    assert snap_compare(app, terminal_size=(100, 24), run_before=run)


@pytest.mark.parametrize("theme", ["textual-dark", "textual-light"])
def test_edit_approval_counts_unsure_tokens_and_jumps(
    snap_compare: SnapCompare, theme: str
) -> None:
    app = with_turn(edit_approval(), "make it fast")

    async def jump(pilot: Pilot[Any]) -> None:
        pilot.app.theme = theme
        await send_prompt(pilot)
        await until(
            pilot, lambda: isinstance(pilot.app.screen, ApprovalScreen), message="the modal"
        )
        await pilot.press("f3")
        await pilot.press("f3")  # the second unsure line (66), below the first screen
        await pilot.pause()

    assert snap_compare(app, terminal_size=(100, 30), run_before=jump)


async def test_f4_shades_the_answer_and_marks_the_diff() -> None:
    app = with_turn(shaded_turn())
    async with app.run_test(size=(100, 24)) as pilot:
        await send_prompt(pilot)
        answer = app.query_one(Answer)
        diff = app.query_one(DiffView)
        assert answer.pieces is not None and not diff.marked
        await pilot.press("f4")
        await until(pilot, lambda: diff.marked, message="the diff marked")
        shaded = answer.shaded_text
        assert isinstance(shaded, Content)
        tinted = {(shaded.plain[s.start : s.end], str(s.style)) for s in shaded.spans}
        assert tinted == {
            (" I", "on $warning-muted"),
            (" think", "on $warning-muted"),
            (" one", "on $error-muted"),
            (" sign", "on $error-muted"),
        }
        assert isinstance(diff.content, Content) and "2?+" in diff.content.plain
        await pilot.press("f4")
        await until(pilot, lambda: not diff.marked, message="the marks gone")
        assert not answer.shaded
