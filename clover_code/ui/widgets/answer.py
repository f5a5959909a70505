"""The assistant's answer: Markdown that grows as blocks commit.

The answer is one widget that draws its own lines. Text is cut into
segments: once the open (last) segment is longer than ``SEGMENT_CHARS``, it
is closed at the next paragraph break outside a code fence, rendered once
and never again (until the width changes); only the open segment is re-parsed
when text arrives. Split points are chosen where the halves render as the
whole does, so the answer looks the same as a one-shot render of its text.

Nothing is rendered when text arrives: ``write`` records it and asks for a
repaint, and the open segment is rendered when the next frame is drawn. So
however many blocks arrive within a frame, the frame renders the open segment
once, and a long answer costs the layout one widget, not one per paragraph.
"""

from __future__ import annotations

import re

from rich.console import Console
from rich.markdown import Markdown as RichMarkdown
from textual.geometry import Size
from textual.strip import Strip
from textual.widget import Widget

from clover_code.ui.css import sibling_css
from clover_code.ui.text import clean

SEGMENT_CHARS = 200
"""An open segment longer than this is closed at the next safe paragraph break (a short
open segment keeps the render per frame small; each close renders a segment once more)."""
CODE_THEME = "monokai"

_FENCE = re.compile(r"^ {0,3}(```|~~~)", re.MULTILINE)
_BREAK = re.compile(r"\n\n(?=[^\s\-*+>|\d#=])")


def safe_split(source: str, start: int, segment_start: int = 0) -> int | None:
    """The last index after ``start`` where ``source`` can be cut into two Markdown documents
    that render as the whole does, or None. The cut lies after a blank line, outside fences
    (counted from ``segment_start``, which must itself be outside one), and before a line that
    cannot continue a list, quote, table or setext heading."""
    best: int | None = None
    for match in _BREAK.finditer(source, start):
        cut = match.end()
        if len(_FENCE.findall(source, segment_start, cut)) % 2 == 0:
            best = cut
    return best


def markdown(source: str) -> RichMarkdown:
    """The renderable for one segment."""
    return RichMarkdown(source, code_theme=CODE_THEME, hyperlinks=False)


def render_plain(sources: list[str], width: int) -> list[str]:
    """Plain lines of segments rendered one under the other (a blank line between), as
    the answer draws them; one source gives the one-shot render."""
    console = Console(width=width, color_system=None, legacy_windows=False)
    lines: list[str] = []
    for index, source in enumerate(sources):
        if index:
            lines.append("")
        rendered = console.render_lines(markdown(source), console.options, pad=False)
        lines += ["".join(seg.text for seg in line).rstrip() for line in rendered]
    return lines


class Answer(Widget):
    """Streams one assistant answer; ``text`` is everything received so far."""

    DEFAULT_CSS = sibling_css(__file__)

    def __init__(self, text: str = "", *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.text = ""
        self._sealed: list[str] = []
        """The sources of the closed segments, top to bottom."""
        self._open_at = 0
        """Where the open segment starts in ``text``."""
        self._lines_width = -1
        self._sealed_lines: list[Strip] = []
        self._sealed_drawn = 0
        """How many closed segments ``_sealed_lines`` holds (at ``_lines_width``)."""
        self._open_lines: tuple[str, list[Strip]] = ("", [])
        self.write(text)

    def write(self, fragment: str) -> None:
        """Add text; it is drawn with the next frame."""
        fragment = clean(fragment)
        if not fragment:
            return
        before = len(self.text)
        self.text += fragment
        if before - self._open_at > SEGMENT_CHARS:
            cut = safe_split(self.text, max(self._open_at, before - 2), self._open_at)
            if cut is not None and cut > before:
                self._sealed.append(self.text[self._open_at : cut - 2])
                self._open_at = cut
        self.refresh(layout=True)

    @property
    def segments(self) -> list[str]:
        """The Markdown sources of the segments, top to bottom."""
        opened = self.text[self._open_at :]
        return [*self._sealed, opened] if opened else list(self._sealed)

    def _markdown_lines(self, source: str, width: int) -> list[Strip]:
        console = self.app.console
        options = console.options.update_width(width)
        lines = console.render_lines(markdown(source), options, style=self.rich_style)
        return [Strip(line, width) for line in lines]

    def _lines(self, width: int) -> tuple[list[Strip], list[Strip]]:
        """The closed segments' lines (a blank line between two) and the open segment's."""
        width = max(1, width)
        if width != self._lines_width:
            self._lines_width = width
            self._sealed_lines = []
            self._sealed_drawn = 0
            self._open_lines = ("", [])
        while self._sealed_drawn < len(self._sealed):
            if self._sealed_lines:
                self._sealed_lines.append(Strip.blank(width, self.rich_style))
            self._sealed_lines += self._markdown_lines(self._sealed[self._sealed_drawn], width)
            self._sealed_drawn += 1
        source = self.text[self._open_at :]
        if source != self._open_lines[0]:
            self._open_lines = (source, self._markdown_lines(source, width) if source else [])
        return self._sealed_lines, self._open_lines[1]

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        closed, opened = self._lines(width)
        return len(closed) + len(opened) + (1 if closed and opened else 0)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        closed, opened = self._lines(width)
        if y < len(closed):
            return closed[y]
        y -= len(closed) + (1 if closed else 0)
        if 0 <= y < len(opened):
            return opened[y]
        return Strip.blank(width, self.rich_style)
