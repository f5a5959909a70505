"""The prompt with its completion menu: ``/`` completes commands, ``@`` completes files.

The parent gives it the file index (``files``) and the custom commands
(``custom``); it posts ``PromptInput.Submitted`` up unchanged.
"""

from __future__ import annotations

import re

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import OptionList, Static, TextArea
from textual.widgets.option_list import Option

from clover_code.ui.commands import SlashCommand, complete
from clover_code.ui.css import sibling_css
from clover_code.ui.file_index import FileIndex
from clover_code.ui.widgets.prompt_input import PromptInput

_AT_WORD = re.compile(r"(?:^|\s)@([^\s@]*)$")


class Composer(Vertical):
    """Prompt, prompt marker and completion menu."""

    DEFAULT_CSS = sibling_css(__file__)

    def __init__(self, *, id: str | None = None, vim: bool = False) -> None:
        super().__init__(id=id)
        self.files = FileIndex()
        self.custom: list[SlashCommand] = []
        """The session's custom commands, completed after the built-in ones."""
        self.input = PromptInput(id="prompt", vim=vim)
        self.menu = OptionList(id="completion")
        self._replace: tuple[int, int] | None = None
        """Column range on the cursor's line that an accepted completion replaces."""

    def compose(self) -> ComposeResult:
        yield self.menu
        with Horizontal(id="prompt-row"):
            yield Static("›", id="prompt-marker")
            yield self.input

    def on_mount(self) -> None:
        self.menu.display = False
        self.menu.can_focus = False

    @on(TextArea.Changed)
    def _changed(self) -> None:
        self._refresh_menu()

    @on(TextArea.SelectionChanged)
    def _moved(self) -> None:
        self._refresh_menu()

    def _refresh_menu(self) -> None:
        row, column = self.input.cursor_location
        line = self.input.document.get_line(row)[:column] if self.input.document.line_count else ""
        options: list[Option] = []
        if row == 0 and re.fullmatch(r"/[\w:.-]*", line):
            typed = line[1:].lower()
            custom = [c for c in self.custom if c.name.lower().startswith(typed)]
            for command in [*complete(typed), *custom]:
                label = Text(f"/{command.name}", style="bold")
                if command.args:
                    label.append(f" {command.args}", style="dim")
                label.append(f"  {command.help}", style="dim")
                options.append(Option(label, id=f"/{command.name}"))
            self._replace = (0, column)
        elif match := _AT_WORD.search(line):
            query = match.group(1)
            for path in self.files.match(query):
                options.append(Option(Text("@" + path), id="@" + path))
            self._replace = (column - len(query) - 1, column)
        self._show(options)

    def _show(self, options: list[Option]) -> None:
        self.menu.clear_options()
        if options:
            self.menu.add_options(options)
            self.menu.highlighted = 0
        self.menu.display = bool(options)
        self.input.menu_open = bool(options)

    def close_menu(self) -> None:
        """Hide the completion menu."""
        self._show([])

    @on(PromptInput.MenuKey)
    def _menu_key(self, event: PromptInput.MenuKey) -> None:
        event.stop()
        if event.key == "escape":
            self.close_menu()
        elif event.key in ("up", "down"):
            count = self.menu.option_count
            current = self.menu.highlighted or 0
            self.menu.highlighted = (current + (1 if event.key == "down" else -1)) % count
        else:
            self._accept(submit=event.key == "enter")

    def _accept(self, submit: bool = False) -> None:
        index = self.menu.highlighted
        if index is None or self._replace is None:
            self.close_menu()
            return
        choice = self.menu.get_option_at_index(index).id or ""
        row = self.input.cursor_location[0]
        start, end = self._replace
        typed = self.input.document.get_line(row)[start:end]
        if submit and typed == choice:
            # "/undo" typed in full: Enter runs it rather than completing it again
            self.close_menu()
            # from the input's own loop: a message a parent posts never bubbles back to it
            self.input.call_next(self.input.submit)
            return
        self.input.replace(choice + " ", (row, start), (row, end))
        self.close_menu()

    @on(OptionList.OptionSelected)
    def _clicked(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._accept()
