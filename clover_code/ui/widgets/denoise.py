"""The block being denoised, drawn live at the end of the transcript.

Each of the block's positions is a dim placeholder while masked and its
token once filled; with confidences, filled tokens are tinted from amber
(barely above the threshold) to full colour. A committed block clears the
view: its text settles into the answer above. Backends that send no drafts
never show it.

Drafts come well over a hundred times a second at Clover's speed, so the
view is redrawn at most ``DRAWS_PER_SECOND`` times a second, fewer when the
machine is busy (``ui/pacing.py``), showing the newest draft then; and it
keeps its height for the whole turn (it only grows): a redraw then repaints
these few lines and never re-lays-out the transcript above.
"""

from __future__ import annotations

from textual.content import Content
from textual.reactive import reactive
from textual.widget import Widget

from clover_code import protocol as p
from clover_code.ui.css import sibling_css
from clover_code.ui.pacing import Pacer
from clover_code.ui.text import clean

MASK = "░"
DRAWS_PER_SECOND = 30
"""Most redraws a second: smooth to the eye, and it leaves frames to the committed text
and the keys."""


def _tint(confidence: float | None) -> str:
    # Theme variables: readable on the theme's background, light or dark.
    if confidence is None or confidence >= 0.95:
        return ""
    if confidence >= 0.8:
        return "$text-warning"
    return "$text-error"


def render_draft(draft: p.BlockDraft, *, tint: bool = True) -> Content:
    """The draft as text: masks as placeholders, tokens tinted by confidence."""
    parts: list[tuple[str, str]] = []
    confidences = draft.confidences if tint else None
    filled = 0
    for index, token in enumerate(draft.tokens):
        if token is None:
            parts.append((MASK * 2, "dim"))
            continue
        filled += 1
        conf = confidences[index] if confidences and index < len(confidences) else None
        parts.append((clean(token).replace("\n", "⏎ ") or "·", _tint(conf)))
    parts.append((f"  step {draft.step} · {filled}/{len(draft.tokens)}", "dim italic"))
    return Content.assemble(*parts)


class DenoiseView(Widget):
    """Shows the latest ``BlockDraft`` while a turn runs; ``reset`` hides it."""

    DEFAULT_CSS = sibling_css(__file__)

    enabled: reactive[bool] = reactive(True)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.display = False
        self.draft: p.BlockDraft | None = None
        self.drafts_seen = 0
        self._height = 0
        self._pacer = Pacer(self, self._redraw, 1 / DRAWS_PER_SECOND)

    @property
    def pending(self) -> bool:
        """A draft (or its commit) waits to be drawn."""
        return self._pacer.pending

    def show(self, draft: p.BlockDraft) -> None:
        """Draw this denoising step (or a newer one, when the pace allows)."""
        self.drafts_seen += 1
        self.draft = draft
        self._pacer.request()

    def commit(self, block: int) -> None:
        """The block is final: its text is in the answer now."""
        if self.draft is not None and self.draft.block <= block:
            self.draft = None
            self._pacer.request()

    def reset(self) -> None:
        """The turn ended: hide, and forget the height."""
        self._pacer.cancel()
        self.draft = None
        self._height = 0
        self.display = False

    def watch_enabled(self, enabled: bool) -> None:
        if not enabled:
            self.display = False
        else:
            self._redraw()

    def _redraw(self) -> None:
        if not self.enabled or (self.draft is None and self._height == 0):
            return
        width = max(1, self.content_region.width or self.app.size.width - 4)
        lines = len(self._text().wrap(width)) if self.draft else 1
        if lines > self._height or not self.display:
            self._height = max(lines, self._height)
            self.styles.height = self._height
            self.display = True
            self.refresh(layout=True)
        else:
            self.refresh()

    def _text(self) -> Content:
        return render_draft(self.draft) if self.draft is not None else Content()

    def render(self) -> Content:
        return self._text()
