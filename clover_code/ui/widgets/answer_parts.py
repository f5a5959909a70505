"""The widgets that draw an answer's segments: Markdown, or text shaded by confidence.

A part holds consecutive segments of one answer and draws them one under the
other; each segment is rendered once per width and kept, so adding a segment
or replacing the last one renders that segment only. ``AnswerPart`` draws
Markdown sources with a blank line between two segments (they were cut at a
paragraph break); ``ShadedPart`` draws shaded plain text with nothing between
(the text was cut at a newline, which the lines leave out).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar

from textual.content import Content
from textual.geometry import Size
from textual.strip import Strip
from textual.visual import Visual
from textual.widget import Widget

if TYPE_CHECKING:
    from rich.markdown import Markdown as RichMarkdown

__all__ = ["CODE_THEME", "AnswerPart", "SegmentPart", "ShadedPart", "markdown"]

CODE_THEME = "monokai"

SegmentT = TypeVar("SegmentT", str, Content)


def markdown(source: str) -> RichMarkdown:
    """The renderable for one segment."""
    # Imported at the first answer: Rich's Markdown brings markdown-it and Pygments,
    # which the app does not need to start.
    from rich.markdown import Markdown as RichMarkdown

    return RichMarkdown(source, code_theme=CODE_THEME, hyperlinks=False)


class SegmentPart(Widget, Generic[SegmentT]):
    """Consecutive segments of an answer, drawn one under the other (``GAP`` blank lines
    between two); each is rendered once per width (the last again when it is replaced)."""

    GAP = 0

    def __init__(self) -> None:
        super().__init__()
        self.sources: list[SegmentT] = []
        self.chars = 0
        self._lines_width = -1
        self._rendered: list[list[Strip]] = []

    def add(self, source: SegmentT) -> None:
        """Draw another segment under the others."""
        self.sources.append(source)
        self.chars += len(source)
        self.refresh(layout=True)

    def replace_last(self, source: SegmentT) -> None:
        """Draw the last segment with this text instead (it grew)."""
        if not self.sources:
            self.add(source)
            return
        self.chars += len(source) - len(self.sources[-1])
        self.sources[-1] = source
        del self._rendered[len(self.sources) - 1 :]
        self.refresh(layout=True)

    def clear(self) -> None:
        """Draw nothing (the segments are drawn anew)."""
        self.sources = []
        self.chars = 0
        self._rendered = []
        self.refresh(layout=True)

    def render_segment(self, source: SegmentT, width: int) -> list[Strip]:
        """The lines of one segment at ``width``."""
        raise NotImplementedError

    def _lines(self, width: int) -> list[list[Strip]]:
        width = max(1, width)
        if width != self._lines_width:
            self._lines_width = width
            self._rendered = []
        while len(self._rendered) < len(self.sources):
            source = self.sources[len(self._rendered)]
            self._rendered.append(self.render_segment(source, width))
        return self._rendered

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        rendered = self._lines(width)
        return sum(len(lines) for lines in rendered) + self.GAP * max(0, len(rendered) - 1)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        for lines in self._lines(width):
            if y < len(lines):
                return lines[y]
            if y < len(lines) + self.GAP:
                break  # the blank line between two segments
            y -= len(lines) + self.GAP
        return Strip.blank(width, self.rich_style)


class AnswerPart(SegmentPart[str]):
    """Markdown segments, a blank line between two (each was cut at a paragraph break)."""

    GAP = 1

    def render_segment(self, source: str, width: int) -> list[Strip]:
        console = self.app.console
        options = console.options.update_width(width)
        lines = console.render_lines(markdown(source), options, style=self.rich_style)
        return [Strip(line, width) for line in lines]


class ShadedPart(SegmentPart[Content]):
    """Shaded plain-text segments, drawn as a ``Static`` draws its content (each was cut
    at a newline)."""

    def render_segment(self, source: Content, width: int) -> list[Strip]:
        return Visual.to_strips(self, source, width, None, self.visual_style)
