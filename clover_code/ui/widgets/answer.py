"""The assistant's answer: Markdown that grows as blocks commit.

Text is cut into segments: once the open (last) segment is longer than
``SEGMENT_CHARS``, it is closed at the next paragraph break outside a code
fence, rendered once and never again (until the width changes); only the
open segment is re-parsed when text arrives. Split points are chosen where
the halves render as the whole does, so the answer looks the same as a
one-shot render of its text. Closed segments are drawn by a few widgets
("parts", about ``PART_CHARS`` each) that draw their own lines, the open
segment by a part of its own: a frame re-renders the open segment's lines
only.

Nothing is rendered when text arrives: ``write`` records it and asks for a
paint, which hands the new text to the parts, and the open segment is
rendered when the next frame is drawn. So however many blocks arrive within
a frame, the frame renders the open segment once, and a long answer costs
the layout a few widgets, not one per paragraph. Paints are paced
(``ui/pacing.py``): on an idle machine each block is painted with the next
frame; on a saturated one blocks are folded together and keys keep their
frames.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rich.console import Console
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.geometry import Size
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static

from clover_code.protocol.confidence import TokenPiece
from clover_code.ui.confidence import shaded_content
from clover_code.ui.css import sibling_css
from clover_code.ui.pacing import Pacer
from clover_code.ui.text import clean

if TYPE_CHECKING:
    from rich.markdown import Markdown as RichMarkdown

SEGMENT_CHARS = 200
"""An open segment longer than this is closed at the next safe paragraph break (a short
open segment keeps the render per frame small; each close renders a segment once more)."""
PAINTS_PER_SECOND = 60
"""At most this many paints a second (fewer when the machine is busy: ``ui/pacing.py``)."""
PAINT_GAP = 0.5
"""After a paint reaches the screen, wait half as long as it took (``ui/pacing.py``): an
unpaced stream then leaves a third of the loop to keys. (Waiting as long kept keys
faster and put the blocks later; not waiting let keys wait behind paints.)"""
PART_CHARS = 2000
"""Closed segments go to one widget until it holds this many characters, then to a new
one: adding to a part redraws it, so parts stay about a screen long."""
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


class AnswerPart(Widget):
    """Consecutive segments of an answer, drawn one under the other with a blank line
    between; each is rendered once per width (the last again when it is replaced)."""

    def __init__(self) -> None:
        super().__init__()
        self.sources: list[str] = []
        self.chars = 0
        self._lines_width = -1
        self._rendered: list[list[Strip]] = []

    def add(self, source: str) -> None:
        """Draw another segment under the others."""
        self.sources.append(source)
        self.chars += len(source)
        self.refresh(layout=True)

    def replace_last(self, source: str) -> None:
        """Draw the last segment with this text instead (it grew)."""
        if not self.sources:
            self.add(source)
            return
        self.chars += len(source) - len(self.sources[-1])
        self.sources[-1] = source
        del self._rendered[len(self.sources) - 1 :]
        self.refresh(layout=True)

    def _lines(self, width: int) -> list[list[Strip]]:
        width = max(1, width)
        if width != self._lines_width:
            self._lines_width = width
            self._rendered = []
        console = self.app.console
        options = console.options.update_width(width)
        while len(self._rendered) < len(self.sources):
            source = self.sources[len(self._rendered)]
            lines = console.render_lines(markdown(source), options, style=self.rich_style)
            self._rendered.append([Strip(line, width) for line in lines])
        return self._rendered

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        rendered = self._lines(width)
        return sum(len(lines) for lines in rendered) + max(0, len(rendered) - 1)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        for lines in self._lines(width):
            if y < len(lines):
                return lines[y]
            if y == len(lines):
                break  # the blank line between two segments
            y -= len(lines) + 1
        return Strip.blank(width, self.rich_style)


class Answer(Vertical):
    """Streams one assistant answer; ``text`` is everything received so far."""

    DEFAULT_CSS = sibling_css(__file__)

    def __init__(self, text: str = "", *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.text = ""
        self._sealed: list[str] = []
        """The sources of the closed segments, top to bottom."""
        self._open_at = 0
        """Where the open segment starts in ``text``."""
        self._parts: list[AnswerPart] = []
        """The parts drawing the closed segments (a new one after ``PART_CHARS``)."""
        self._given = 0
        """How many closed segments the parts have."""
        self._unmounted: list[AnswerPart] = []
        self._open = AnswerPart()
        self._pacer = Pacer(self, self._paint, 1 / PAINTS_PER_SECOND, gap=PAINT_GAP)
        self.raw = ""
        """The text as it arrived (what the confidence pieces cover)."""
        self.pieces: list[TokenPiece] | None = None
        """Each token's fill confidence (None: not known)."""
        self._shaded = Static(classes="shaded")
        self._shaded.display = False
        self.write(text)

    def compose(self) -> ComposeResult:
        yield self._open
        yield self._shaded

    def set_confidence(self, pieces: list[TokenPiece]) -> None:
        """The answer's tokens' fill confidences (shown once shading is on)."""
        self.pieces = pieces

    def shade(self, on: bool, *, below: float) -> None:
        """Show the answer shaded by confidence (plain text), or as Markdown again."""
        shaded = on and self.pieces is not None
        if shaded and self.pieces is not None:
            self._shaded.update(shaded_content(self.raw, self.pieces, below=below))
        self._shaded.display = shaded
        for part in [*self._parts, self._open]:
            part.display = not shaded

    def on_mount(self) -> None:
        for part in self._unmounted:
            self.mount(part, before=self._open)
        self._unmounted = []

    @property
    def pending(self) -> bool:
        """Text has arrived that is not on the screen yet."""
        return self._pacer.pending

    def write(self, fragment: str) -> None:
        """Add text; it is drawn with the next paint."""
        self.raw += fragment
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
        self._pacer.request()

    def _paint(self) -> None:
        """Hand what arrived since the last paint to the parts (they render at the frame)."""
        for source in self._sealed[self._given :]:
            if not self._parts or self._parts[-1].chars >= PART_CHARS:
                part = AnswerPart()
                self._parts.append(part)
                if self.is_mounted:
                    self.mount(part, before=self._open)
                else:
                    self._unmounted.append(part)
            self._parts[-1].add(source)
        self._given = len(self._sealed)
        self._open.replace_last(self.text[self._open_at :])

    @property
    def segments(self) -> list[str]:
        """The Markdown sources of the segments, top to bottom."""
        opened = self.text[self._open_at :]
        return [*self._sealed, opened] if opened else list(self._sealed)

    @property
    def drawn_segments(self) -> list[str]:
        """The sources the parts draw (``segments``, once the last paint is on screen)."""
        return [source for part in [*self._parts, self._open] for source in part.sources if source]
