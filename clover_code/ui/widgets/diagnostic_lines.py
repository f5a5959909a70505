"""The problems a language server found in the files an edit changed, under its diff.

One line each: a mark coloured by severity, where (file, line, column), the
message and, dimmed, who found it and its code. Long lists are cut with a
note saying how many more there are.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

from clover_code import protocol as p
from clover_code.ui.css import sibling_css
from clover_code.ui.text import clean

SHOWN = 10
"""Diagnostics listed on a card."""
_MARKS = {"error": ("✗", "bold red"), "warning": ("⚠", "bold yellow")}


def render_diagnostics(items: Sequence[p.Diagnostic], limit: int = SHOWN) -> Text:
    """The diagnostics as styled lines, at most ``limit`` of them."""
    out = Text(no_wrap=False, overflow="fold")
    for item in items[:limit]:
        mark, style = _MARKS[item.severity]
        out.append(f"{mark} ", style=style)
        out.append(f"{clean(item.path)}:{item.line}:{item.column} ", style="bold")
        out.append(clean(item.message)[:400])
        who = " ".join(part for part in (clean(item.source), clean(item.code)) if part)
        if who:
            out.append(f"  {who}", style="dim")
        out.append("\n")
    if len(items) > limit:
        out.append(f"… {len(items) - limit} more\n", style="dim italic")
    out.rstrip()
    return out


class DiagnosticLines(Static):
    """Shows an edit's diagnostics."""

    DEFAULT_CSS = sibling_css(__file__)

    def __init__(self, items: Sequence[p.Diagnostic]) -> None:
        super().__init__(render_diagnostics(items))
