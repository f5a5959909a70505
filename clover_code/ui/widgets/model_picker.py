"""The model picker for ``/model``: the models the server serves and the ``[models]``
table names, the one in use marked; Enter switches to the highlighted one, Esc closes."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from clover_code import protocol as p
from clover_code.ui.css import sibling_css
from clover_code.ui.text import clean, human_count


def model_label(option: p.ModelOption) -> Text:
    """One row: a mark for the one in use, the name, its id, window and images."""
    row = Text(no_wrap=True, overflow="ellipsis")
    row.append("● " if option.current else "  ", style="bold green")
    row.append(clean(option.name), style="bold")
    if option.id != option.name:
        row.append(f"  {clean(option.id)}", style="cyan")
    if option.context_window:
        row.append(f"  {human_count(option.context_window)} ctx", style="dim")
    if option.vision is not None:
        row.append("  images" if option.vision else "  text only", style="dim")
    if not option.served:
        row.append("  (not listed by the server)", style="yellow")
    return row


class ModelPicker(ModalScreen[p.ModelOption | None]):
    """Dismisses with the chosen model, or None."""

    DEFAULT_CSS = sibling_css(__file__)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", priority=True),
    ]

    def __init__(self, options: list[p.ModelOption], title: str) -> None:
        super().__init__()
        self.options = options
        self.title_text = title

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(self.title_text, style="bold"), id="title")
            rows = [Option(model_label(o), id=str(i)) for i, o in enumerate(self.options)]
            yield OptionList(*rows, id="models")
            yield Static(Text("↑/↓ choose · Enter switch · Esc close", style="dim"), id="hints")

    def on_mount(self) -> None:
        models = self.query_one(OptionList)
        current = next((i for i, o in enumerate(self.options) if o.current), 0)
        models.highlighted = current
        models.focus()

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.options[int(event.option.id or 0)])

    def action_close(self) -> None:
        """Close without switching."""
        self.dismiss(None)
