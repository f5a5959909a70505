"""A question with a few answers in a modal, each on a key (the /rewind picker, the
question after a plan), optionally with a line of text to send instead."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.events import Key
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from clover_code.ui.css import sibling_css


@dataclass(frozen=True, slots=True)
class Choice:
    """One answer: ``key`` picks it (also its result), ``label`` says what it does."""

    key: str
    label: str


class ChoiceScreen(ModalScreen[tuple[str, str] | None]):
    """Dismisses with ``(choice key, "")``, ``("text", typed line)`` when the text field
    (if any) is submitted, or None on Esc."""

    DEFAULT_CSS = sibling_css(__file__)

    def __init__(
        self,
        question: str,
        details: str,
        choices: list[Choice],
        *,
        text_hint: str | None = None,
    ) -> None:
        super().__init__()
        self.question = question
        self.details = details
        self.choices = choices
        self.text_hint = text_hint

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(self.question, style="bold"), id="question")
            if self.details:
                with VerticalScroll(id="details"):
                    yield Static(Text(self.details))
            with Vertical(id="choices"):
                for choice in self.choices:
                    # compact: one line, no border (the default style's borders, which
                    # outrank this screen's CSS, would hide the label)
                    yield Button(
                        f"{choice.label} ({choice.key})", id=f"choice-{choice.key}", compact=True
                    )
            if self.text_hint is not None:
                yield Input(placeholder=self.text_hint, id="text")

    def on_mount(self) -> None:
        for button in self.query(Button).results():  # none if already dismissed
            button.focus()
            break

    def on_key(self, event: Key) -> None:
        # Keys pick a choice, unless the text field has them.
        if event.key == "escape":
            event.stop()
            self.dismiss(None)
            return
        if isinstance(self.focused, Input):
            return
        for choice in self.choices:
            if event.key == choice.key:
                event.stop()
                self.dismiss((choice.key, ""))
                return

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(((event.button.id or "").removeprefix("choice-"), ""))

    @on(Input.Submitted)
    def _typed(self, event: Input.Submitted) -> None:
        if event.value.strip():
            self.dismiss(("text", event.value.strip()))
