"""The question asked at start when the project's config files would loosen safety."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from clover_code.ui.css import sibling_css


@dataclass(frozen=True, slots=True)
class TrustQuestion:
    """What to ask and what trusting does."""

    files: list[tuple[str, list[str]]]
    """Each untrusted file's path and the settings in it that loosen safety."""
    accept: Callable[[], str | None]
    """Records the trust and reloads the settings when the user trusts; returns
    why it could not (one sentence), else None."""


class TrustScreen(ModalScreen[bool]):
    """Dismisses with True (t, Trust) or False (n, Esc, Not now)."""

    DEFAULT_CSS = sibling_css(__file__)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("t", "answer(True)", "Trust"),
        Binding("n", "answer(False)", "Not now"),
        Binding("escape", "answer(False)", "Not now", priority=True),
    ]

    def __init__(self, files: list[tuple[str, list[str]]]) -> None:
        super().__init__()
        self.files = files

    def compose(self) -> ComposeResult:
        lines: list[str] = []
        for path, keys in self.files:
            lines.append(path)
            lines += [f"  {key}" for key in keys]
        with Vertical(id="dialog"):
            yield Static(Text("Trust this project's settings?", style="bold"), id="question")
            yield Static(
                "These settings would loosen safety. They apply only if you trust this exact "
                "content; a later change (by the agent or anyone) asks again.",
                id="why",
            )
            with VerticalScroll(id="details"):
                yield Static(Text("\n".join(lines)))
            with Horizontal(id="buttons"):
                yield Button("Trust (t)", id="trust", variant="warning")
                yield Button("Not now (n)", id="not-now")

    def on_mount(self) -> None:
        self.query_one("#not-now", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "trust")

    def action_answer(self, trust: bool) -> None:
        """Close with the answer."""
        self.dismiss(trust)
