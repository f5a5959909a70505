"""A unified diff, coloured line by line and cut to a readable size.

Lines longer than ``LINE_LIMIT`` and diffs longer than ``max_lines`` are cut
with a note saying how much, so a 5 MB one-line file costs no more to show
than a small one.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from clover_code.ui.css import sibling_css
from clover_code.ui.text import clean, cut_lines

LINE_LIMIT = 400

_STYLES = {
    "+": "green",
    "-": "red",
    "@": "cyan",
}


def render_diff(diff: str, max_lines: int) -> Text:
    """The diff as styled text: additions green, removals red, hunk headers cyan."""
    lines, left_out = cut_lines(clean(diff), max_lines, LINE_LIMIT)
    out = Text(no_wrap=False)
    for line in lines:
        style = "bold" if line.startswith(("+++", "---")) else _STYLES.get(line[:1], "")
        out.append(line + "\n", style=style)
    if left_out:
        out.append(f"… {left_out:,} more diff lines not shown\n", style="dim italic")
    out.rstrip()
    return out


class DiffView(Static):
    """Shows one diff; ``expanded`` shows up to ``full_lines`` instead of ``short_lines``."""

    DEFAULT_CSS = sibling_css(__file__)

    def __init__(
        self, diff: str, *, short_lines: int = 40, full_lines: int = 2000, classes: str = ""
    ) -> None:
        self.diff = diff
        self.short_lines = short_lines
        self.full_lines = full_lines
        self._expanded = False
        super().__init__(render_diff(diff, short_lines), classes=classes)

    def toggle(self) -> None:
        """Switch between the short and the long view."""
        self._expanded = not self._expanded
        self.update(render_diff(self.diff, self.full_lines if self._expanded else self.short_lines))
