"""A yes/no question in a modal (used to confirm /undo, listing what it will revert)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from clover_code.ui.css import sibling_css


class ConfirmScreen(ModalScreen[bool]):
    """Dismisses with True (y, Enter on Yes) or False (n, Esc)."""

    DEFAULT_CSS = sibling_css(__file__)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n", "answer(False)", "No"),
        Binding("escape", "answer(False)", "No", priority=True),
    ]

    def __init__(self, question: str, details: list[str]) -> None:
        super().__init__()
        self.question = question
        self.details = details

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(self.question, style="bold"), id="question")
            if self.details:
                with VerticalScroll(id="details"):
                    yield Static(Text("\n".join(self.details)))
            with Horizontal(id="buttons"):
                yield Button("Yes (y)", id="yes", variant="warning")
                yield Button("No (n)", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        """Close with the answer."""
        self.dismiss(yes)
