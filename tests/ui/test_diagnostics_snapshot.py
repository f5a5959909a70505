"""An edit card shows the problems the language server found after the edit."""

from __future__ import annotations

from typing import Any

from clover_code import protocol as p
from tests.ui.test_snapshots import SIZES, SnapCompare, send_prompt, with_turn

DIFF = (
    "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n"
    ' def total(items: list[int]) -> int:\n-    return sum(items)\n+    return "none"\n'
)
FOUND = [
    p.Diagnostic(
        path="calc.py",
        line=2,
        column=12,
        severity="error",
        message='Type "Literal[\'none\']" is not assignable to return type "int"',
        source="basedpyright",
        code="reportReturnType",
    ),
    p.Diagnostic(
        path="calc.py",
        line=1,
        column=11,
        severity="warning",
        message='"items" is not accessed',
        source="basedpyright",
    ),
]


def edit_with_diagnostics() -> list[Any]:
    return [
        p.TurnStarted(turn=1, text="make total return a string"),
        p.ToolCallStarted(
            call_id="c1",
            name="edit_file",
            kind="edit",
            arguments={"path": "calc.py"},
            summary="calc.py",
        ),
        p.ToolCallFinished(
            call_id="c1",
            name="edit_file",
            status="ok",
            result="edited",
            display=p.FileEdit(path="calc.py", diff=DIFF, replacements=1, diagnostics=FOUND),
            duration=0.01,
        ),
        p.TurnFinished(turn=1, status="completed", final_text="Done."),
    ]


@SIZES
def test_edit_card_with_diagnostics(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    app = with_turn(edit_with_diagnostics(), "make total return a string")
    assert snap_compare(app, terminal_size=size, run_before=send_prompt)
