"""A one-line note in the transcript: info, a warning, or an error."""

from __future__ import annotations

from typing import Literal

from rich.text import Text
from textual.widgets import Static

from clover_code.ui.css import sibling_css
from clover_code.ui.text import clean

Level = Literal["info", "warning", "error"]
_MARK = {"info": "•", "warning": "⚠", "error": "✗"}


class NoticeLine(Static):
    """A note the core or the app wants the user to see."""

    DEFAULT_CSS = sibling_css(__file__)

    def __init__(self, text: str, level: Level = "info") -> None:
        self.text = text
        self.level = level
        super().__init__(Text(f"{_MARK[level]} {clean(text)}"), classes=f"-{level}")
