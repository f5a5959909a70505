"""What the user asked, as the transcript shows it (long pastes are cut for display)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from clover_code.ui.css import sibling_css
from clover_code.ui.text import clean, cut_lines

MAX_LINES = 30


class UserMessage(Static):
    """One user input."""

    DEFAULT_CSS = sibling_css(__file__)

    def __init__(self, text: str) -> None:
        self.text = text
        lines, left_out = cut_lines(clean(text), MAX_LINES)
        body = Text("› ", style="bold")
        body.append("\n  ".join(lines))
        if left_out:
            body.append(
                f"\n  … {left_out:,} more lines ({len(text):,} characters in all, all sent)",
                style="dim italic",
            )
        super().__init__(body)
