"""The session picker for ``/sessions`` and ``/resume``: date, directory and first prompt
of each earlier session; Enter resumes the highlighted one, Esc closes."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from clover_code.agent.session_list import SessionInfo
from clover_code.ui.css import sibling_css
from clover_code.ui.text import clean


def session_label(info: SessionInfo) -> Text:
    """One row: when, where, and the first prompt."""
    row = Text(no_wrap=True, overflow="ellipsis")
    row.append(info.when, style="dim")
    row.append(f"  {_short_dir(info.cwd)}  ", style="cyan")
    row.append(clean(info.first_prompt)[:120] or "(no prompt)", style="bold")
    return row


def _short_dir(cwd: str) -> str:
    """The directory with the home directory as ``~`` and long paths cut at the front."""
    home = str(Path.home())
    if cwd == home or cwd.startswith(home + "/"):
        cwd = "~" + cwd[len(home) :]
    return cwd if len(cwd) <= 32 else "…" + cwd[-31:]


class SessionPicker(ModalScreen[SessionInfo | None]):
    """Dismisses with the chosen session, or None."""

    DEFAULT_CSS = sibling_css(__file__)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", priority=True),
    ]

    def __init__(self, sessions: list[SessionInfo], title: str) -> None:
        super().__init__()
        self.sessions = sessions
        self.title_text = title

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(self.title_text, style="bold"), id="title")
            options = [Option(session_label(s), id=str(i)) for i, s in enumerate(self.sessions)]
            yield OptionList(*options, id="sessions")
            yield Static(Text("↑/↓ choose · Enter resume · Esc close", style="dim"), id="hints")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.sessions[int(event.option.id or 0)])

    def action_close(self) -> None:
        """Close without resuming."""
        self.dismiss(None)
