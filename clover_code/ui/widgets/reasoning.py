"""The model's thinking: a dimmed, collapsible section above its answer.

Open while the model thinks (showing the latest lines), closed once the
answer or a tool call starts; a click on the title opens it again.
"""

from __future__ import annotations

from textual.widgets import Collapsible, Static

from clover_code.ui.css import sibling_css
from clover_code.ui.text import clean

_LIVE_CHARS = 600
"""While streaming, only the tail is shown: re-wrapping all of a long thought every
frame would cost more as it grows."""


class Reasoning(Collapsible):
    """Thinking text; ``text`` holds all of it."""

    DEFAULT_CSS = sibling_css(__file__)

    def __init__(self) -> None:
        self._body = Static("", classes="reasoning-body", markup=False)
        super().__init__(self._body, title="Thinking…", collapsed=False)
        self.text = ""
        self._done = False

    def _watch_collapsed(self, collapsed: bool) -> None:
        # Unlike Collapsible, never scroll: the reader is following the answer below.
        self._update_collapsed(collapsed)

    def write(self, fragment: str) -> None:
        """Add thinking text."""
        self.text += clean(fragment)
        self._body.update(self._shown())

    def finish(self) -> None:
        """Thinking ended: show all of it (when opened) and close the section."""
        if self._done:
            return
        self._done = True
        words = len(self.text.split())
        self.title = f"Thought ({words:,} words)"
        self._body.update(self._shown())
        self.collapsed = True

    def _shown(self) -> str:
        text = self.text.strip()
        if self._done or len(text) <= _LIVE_CHARS:
            return text
        return "…" + text[-_LIVE_CHARS:]
