"""The multiline prompt: Enter sends, Shift+Enter / Ctrl+J / Alt+Enter break the line,
Up/Down walk the history from the first/last line, and a huge paste becomes a
placeholder that is expanded when the prompt is sent. Shift+PageUp/PageDown and
Ctrl+Home/End scroll the transcript, and so do PageUp/PageDown unless the prompt
itself is taller than its box (then they page through the prompt). With ``vim``,
the prompt edits like Vim (``ui/vim.py``): Escape leaves insert mode, and in
normal mode printable keys are commands; ``EditorModeChanged`` reports the mode."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

from textual import events
from textual.message import Message
from textual.widgets import TextArea

from clover_code.ui.css import sibling_css

if TYPE_CHECKING:
    from clover_code.ui.vim import Mode, VimEditor

ScrollTo = Literal["page_up", "page_down", "home", "end"]

PASTE_INLINE_LIMIT = 5_000
"""A paste longer than this is held aside and shown as ``[pasted text #N: ...]``."""

_PLACEHOLDER = re.compile(r"\[pasted text #(\d+): [\d,]+ characters[^\]]*\]")
_NEWLINE_KEYS = ("shift+enter", "ctrl+j", "alt+enter", "ctrl+enter")
_SCROLL_KEYS: dict[str, ScrollTo] = {
    "shift+pageup": "page_up",
    "shift+pagedown": "page_down",
    "pageup": "page_up",
    "pagedown": "page_down",
    "ctrl+home": "home",
    "ctrl+end": "end",
}
"""The keys that scroll the transcript while the prompt has focus."""


class PromptInput(TextArea):
    """Where the user types. Posts ``Submitted``; asks its parent about the menu keys."""

    DEFAULT_CSS = sibling_css(__file__)
    BLINK = True
    """Cursor blink for new prompts (tests switch it off for stable snapshots)."""

    class Submitted(Message):
        """The user pressed Enter; ``text`` has pastes expanded."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class MenuKey(Message):
        """A key the completion menu takes while it is open: up, down, tab, enter, escape."""

        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key

    class EditorModeChanged(Message):
        """Vim mode: the prompt is now in ``mode`` (normal or insert)."""

        def __init__(self, mode: Mode) -> None:
            super().__init__()
            self.mode = mode

    class ScrollTranscript(Message):
        """A key asked to scroll the transcript (``where``: a page up or down, the top
        or the end)."""

        def __init__(self, where: ScrollTo) -> None:
            super().__init__()
            self.where = where

    def __init__(self, *, id: str | None = None, vim: bool = False) -> None:
        super().__init__(
            id=id,
            soft_wrap=True,
            show_line_numbers=False,
            tab_behavior="focus",
            compact=True,
            highlight_cursor_line=False,
        )
        self.cursor_blink = self.BLINK
        self.prompt_history: list[str] = []
        self._history_at: int | None = None
        self._draft = ""
        self.menu_open = False
        self._pastes: dict[int, str] = {}
        self.vim: VimEditor | None = None
        if vim:
            from clover_code.ui.vim import VimEditor

            self.vim = VimEditor(self, self._mode_changed)
        """Vim's modes on this prompt (None: plain editing)."""

    def on_mount(self) -> None:
        if self.vim is not None:
            self.post_message(self.EditorModeChanged(self.vim.mode))

    def _mode_changed(self, mode: Mode) -> None:
        self.post_message(self.EditorModeChanged(mode))

    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        if self.menu_open and key in ("up", "down", "tab", "enter", "escape"):
            self._consume(event)
            self.post_message(self.MenuKey(key))
            return
        if self.vim is not None and self._vim_key(event, self.vim):
            return
        if key == "enter":
            self._consume(event)
            self.submit()
            return
        paging_prompt = key in ("pageup", "pagedown") and self.max_scroll_y > 0
        if key in _SCROLL_KEYS and not paging_prompt:
            self._consume(event)
            self.post_message(self.ScrollTranscript(_SCROLL_KEYS[key]))
            return
        if key in _NEWLINE_KEYS:
            self._consume(event)
            self.insert("\n")
            return
        if key == "up" and self.cursor_location[0] == 0 and self.prompt_history:
            self._consume(event)
            self._walk_history(-1)
            return
        if key == "down" and self._history_at is not None and self._on_last_line():
            self._consume(event)
            self._walk_history(1)
            return
        await super()._on_key(event)

    def _vim_key(self, event: events.Key, vim: VimEditor) -> bool:
        """Give ``event`` to Vim's modes; True when it was used."""
        if event.key == "escape":
            used = vim.escape()  # unused: it reaches the app (interrupt)
            if used:
                self._consume(event)
            return used
        if vim.mode != "normal":
            return False
        aliases = {"space": "l", "backspace": "h", "delete": "x"}
        char = aliases.get(event.key) or (event.character if event.is_printable else None)
        if not char:
            return False  # Enter, arrows, Ctrl keys: as without Vim
        self._consume(event)
        vim.key(char)
        return True

    @staticmethod
    def _consume(event: events.Key) -> None:
        event.stop()
        event.prevent_default()

    def _on_last_line(self) -> bool:
        return self.cursor_location[0] >= self.document.line_count - 1

    def _walk_history(self, step: int) -> None:
        if self._history_at is None:
            self._draft = self.text
            at = len(self.prompt_history)
        else:
            at = self._history_at
        at = max(0, min(len(self.prompt_history), at + step))
        self._history_at = None if at == len(self.prompt_history) else at
        self.load_text(self._draft if self._history_at is None else self.prompt_history[at])
        self.move_cursor(self.document.end)

    async def _on_paste(self, event: events.Paste) -> None:
        text = event.text.replace("\r\n", "\n")
        if len(text) <= PASTE_INLINE_LIMIT:
            self.insert(text)
        else:
            number = len(self._pastes) + 1
            self._pastes[number] = text
            lines = text.count("\n") + 1
            self.insert(f"[pasted text #{number}: {len(text):,} characters, {lines:,} lines]")
        event.stop()
        event.prevent_default()

    def expanded(self) -> str:
        """The prompt with paste placeholders replaced by what was pasted."""

        def put_back(match: re.Match[str]) -> str:
            return self._pastes.get(int(match.group(1)), match.group(0))

        return _PLACEHOLDER.sub(put_back, self.text)

    def submit(self) -> None:
        """Send the prompt (nothing happens when it is blank)."""
        text = self.expanded()
        if not text.strip():
            return
        shown = self.text.strip()
        if not self.prompt_history or self.prompt_history[-1] != shown:
            self.prompt_history.append(shown)
        self._history_at = None
        self.load_text("")
        if self.vim is not None:
            self.vim.insert_mode()  # a new prompt is typed
        self.post_message(self.Submitted(text))
