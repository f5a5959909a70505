"""Prompts typed while a turn runs: shown above the prompt and sent, in order, after it.

Alt+Up takes the newest one back into the prompt to edit it (or to remove it:
clear the prompt). Nothing typed is ever dropped.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static, TextArea

from clover_code.ui.css import sibling_css
from clover_code.ui.text import clean

SHOWN = 3
"""Queued prompts listed; more are counted."""


class QueuedPrompts(Static):
    """The queue and its view; the app pushes, pops and takes the next one."""

    DEFAULT_CSS = sibling_css(__file__)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.items: list[str] = []

    def on_mount(self) -> None:
        self._show()

    def push(self, text: str) -> None:
        """Queue a prompt."""
        self.items.append(text)
        self._show()

    def pop_last(self) -> str | None:
        """Take the newest queued prompt back (to edit it), or None."""
        text = self.items.pop() if self.items else None
        self._show()
        return text

    def take_next(self) -> str | None:
        """The oldest queued prompt, removed from the queue, or None."""
        text = self.items.pop(0) if self.items else None
        self._show()
        return text

    def take_all(self) -> list[str]:
        """Everything queued, in order; the queue is then empty."""
        items, self.items = self.items, []
        self._show()
        return items

    def restore_last(self, prompt: TextArea) -> bool:
        """Put the newest queued prompt back into ``prompt`` (before what it holds)."""
        text = self.pop_last()
        if text is None:
            return False
        prompt.load_text(text + (f"\n{prompt.text}" if prompt.text else ""))
        prompt.move_cursor(prompt.document.end)
        prompt.focus()
        return True

    def restore_all(self, prompt: TextArea) -> bool:
        """Put every queued prompt back into ``prompt``, in order, before what it holds."""
        items = self.take_all()
        if items:
            prompt.load_text("\n\n".join([*items, prompt.text] if prompt.text else items))
            prompt.move_cursor(prompt.document.end)
        return bool(items)

    def _show(self) -> None:
        self.display = bool(self.items)
        out = Text(no_wrap=True, overflow="ellipsis")
        for number, text in enumerate(self.items[:SHOWN], 1):
            one_line = clean(text).replace("\n", " ⏎ ").strip()
            out.append(f"⏸ queued {number}: ", style="bold yellow")
            out.append(one_line[:200] + "\n")
        if len(self.items) > SHOWN:
            out.append(f"… and {len(self.items) - SHOWN} more\n", style="dim")
        out.append("sent when the turn ends · Alt+↑ edits or removes the last one", style="dim")
        self.update(out)
