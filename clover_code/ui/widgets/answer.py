"""The assistant's answer: Markdown that grows as blocks commit.

Text is buffered and painted at most ``FLUSHES_PER_SECOND`` times a second
(fewer when painting takes long), never per token, so the cost does not
grow with the model's speed. The answer is drawn as a few leaf widgets
("segments") of Rich Markdown rather than one widget per paragraph: a long
answer then costs the layout a handful of widgets, not thousands. A segment
longer than ``SEGMENT_CHARS`` is closed at the next paragraph break outside
a code fence and never re-rendered; only the open one is re-parsed. Split
points are chosen where the halves render as the whole does.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from rich.console import Console
from textual.containers import Vertical
from textual.geometry import Size
from textual.strip import Strip
from textual.widget import Widget

from clover_code.ui.css import sibling_css
from clover_code.ui.text import clean

if TYPE_CHECKING:
    from rich.markdown import Markdown as RichMarkdown

FLUSHES_PER_SECOND = 8
"""At most this many paints a second; fewer when one takes long (the interval is kept at
the last append-and-repaint time, so the app stays responsive)."""
MAX_INTERVAL = 0.5
SEGMENT_CHARS = 500
"""A segment longer than this is closed at the next safe paragraph break."""
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
    # Imported at the first answer: Rich's Markdown brings markdown-it and Pygments,
    # which the app does not need to start.
    from rich.markdown import Markdown as RichMarkdown

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


class AnswerSegment(Widget):
    """One closed (or the open) piece of an answer, rendered once per text and width.

    (A ``Static`` would render the Markdown twice per change: once to learn its height,
    once to draw it; code highlighting makes that the main cost of streaming.)
    """

    def __init__(self, source: str) -> None:
        super().__init__()
        self.source = source
        self._cache: tuple[int, list[Strip]] | None = None

    def set_source(self, source: str) -> None:
        """Re-render with more text."""
        self.source = source
        self._cache = None
        self.refresh(layout=True)

    def _strips(self, width: int) -> list[Strip]:
        if self._cache is not None and self._cache[0] == width:
            return self._cache[1]
        console = self.app.console
        options = console.options.update_width(max(1, width))
        lines = console.render_lines(markdown(self.source), options, style=self.rich_style)
        strips = [Strip(line, width) for line in lines]
        self._cache = (width, strips)
        return strips

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._strips(width))

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        strips = self._strips(width)
        return strips[y] if y < len(strips) else Strip.blank(width, self.rich_style)


class Answer(Vertical):
    """Streams one assistant answer; ``text`` is everything received so far."""

    DEFAULT_CSS = sibling_css(__file__)
    painted: ClassVar[Callable[[Answer, int], None] | None] = None
    """Called after the screen refresh that follows a flush, with how many characters of
    ``text`` are on screen (a seam for the streaming benchmark; None in the app)."""

    def __init__(self, text: str = "", *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.text = ""
        self._pending: list[str] = []
        self._segment_start = 0
        self._flushing = False
        self._idle = asyncio.Event()
        self._idle.set()
        self._timer_set = False
        self._interval = 1 / FLUSHES_PER_SECOND
        self._current: AnswerSegment | None = None
        if text:
            self._pending.append(clean(text))

    def on_mount(self) -> None:
        if self._pending:
            self._schedule()

    def write(self, fragment: str) -> None:
        """Queue text; it is painted at the next flush."""
        if fragment:
            self._pending.append(clean(fragment))
            self._schedule()

    def _schedule(self) -> None:
        if not self._timer_set and not self._flushing:
            self._timer_set = True
            self.set_timer(self._interval, self._flush)

    async def _flush(self) -> None:
        self._timer_set = False
        if self._flushing or not self._pending or not self.is_mounted:
            return
        self._flushing = True
        self._idle.clear()
        started = time.perf_counter()
        try:
            while self._pending:
                chunk = "".join(self._pending)
                self._pending.clear()
                await self._append(chunk)
            self.call_after_refresh(self._painted, started, len(self.text))
        finally:
            self._flushing = False
            self._idle.set()

    def _painted(self, started: float, chars: int) -> None:
        cost = time.perf_counter() - started
        self._interval = min(MAX_INTERVAL, max(1 / FLUSHES_PER_SECOND, cost))
        if Answer.painted is not None:
            Answer.painted(self, chars)

    async def _append(self, chunk: str) -> None:
        before = len(self.text)
        self.text += chunk
        cut = None
        if before - self._segment_start > SEGMENT_CHARS:
            cut = safe_split(self.text, max(self._segment_start, before - 2), self._segment_start)
        if cut is not None and cut > before:
            await self._show(self.text[self._segment_start : cut - 2])
            self._segment_start = cut
            self._current = None
        await self._show(self.text[self._segment_start :])

    async def _show(self, source: str) -> None:
        if self._current is not None:
            self._current.set_source(source)
        elif source:
            self._current = AnswerSegment(source)
            await self.mount(self._current)

    async def settle(self) -> None:
        """Paint everything still pending (the turn ended or a tool card follows)."""
        while self._flushing:
            await self._idle.wait()
        await self._flush()

    @property
    def segments(self) -> list[str]:
        """The Markdown sources of the segments, top to bottom."""
        return [segment.source for segment in self.query_children(AnswerSegment)]
