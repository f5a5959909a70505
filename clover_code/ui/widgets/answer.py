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

With the confidence view on (and fill confidences known), the answer is drawn
instead as plain text shaded by confidence, the same way: the pieces that
arrive as each block commits are shaded into the open segment, which is cut
at a newline once it is long enough (``ui/confidence.py``'s ``ShadedStream``),
so a paint re-renders the open segment only and the answer is shaded while it
streams. The pieces of a response start where the answer's text stood when
the response began (an answer can span several responses).
"""

from __future__ import annotations

import re

from rich.console import Console
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widget import Widget

from clover_code.protocol.confidence import TokenPiece
from clover_code.ui.confidence import ShadedStream
from clover_code.ui.css import sibling_css
from clover_code.ui.pacing import Pacer
from clover_code.ui.text import clean
from clover_code.ui.widgets.answer_parts import AnswerPart, SegmentPart, ShadedPart, markdown

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
        self._unmounted: list[tuple[SegmentPart[str] | SegmentPart[Content], Widget]] = []
        """Parts made before the answer was mounted, each with the widget it goes before."""
        self._open = AnswerPart()
        self._pacer = Pacer(self, self._paint, 1 / PAINTS_PER_SECOND, gap=PAINT_GAP)
        self.raw = ""
        """The text as it arrived (what the confidence pieces cover)."""
        self.pieces: list[TokenPiece] | None = None
        """Each token's fill confidence, as far as known (None: none known)."""
        self._covered = 0
        """The characters of ``raw`` that ``pieces`` cover."""
        self._response_chars = 0
        """Where the current response's text starts in ``raw`` (its pieces start there)."""
        self._response_at = 0
        """Where the current response's pieces start in ``pieces``."""
        self._shading: ShadedStream | None = None
        """The shaded text while the confidence view shows this answer (None: Markdown)."""
        self._shaded_parts: list[ShadedPart] = []
        self._shaded_given = 0
        self._shaded_open = ShadedPart()
        self._shaded_open.display = False
        self.write(text)

    def compose(self) -> ComposeResult:
        yield self._open
        yield self._shaded_open

    def on_mount(self) -> None:
        for part, before in self._unmounted:
            self.mount(part, before=before)
        self._unmounted = []

    # ------------------------------------------------------------ fill confidences

    def add_confidence(self, pieces: list[TokenPiece]) -> None:
        """More of the current response's pieces, continuing those that came before."""
        self._response_pieces().extend(pieces)
        self._covered += sum(piece.chars for piece in pieces)
        if self._shading is not None:
            self._pacer.request()

    def set_confidence(self, pieces: list[TokenPiece]) -> None:
        """All the pieces of the current response, once it is over (drawn anew only when
        they differ from those that streamed)."""
        known = self._response_pieces()
        whole = known[: self._response_at] + pieces
        if whole == known:
            return
        self.pieces = whole
        self._covered = sum(piece.chars for piece in whole)
        if self._shading is not None:
            self.shade(True, below=self._shading.below)

    def response_ended(self) -> None:
        """A model response is over: the next one's pieces start after its text."""
        self._response_chars = len(self.raw)
        if self.pieces is not None:
            self._response_at = len(self._response_pieces())

    def _response_pieces(self) -> list[TokenPiece]:
        """``pieces``, covering all the text before the current response (text no piece
        covered counts as sure)."""
        if self.pieces is None:
            self.pieces = []
        gap = self._response_chars - self._covered
        if gap > 0:
            self.pieces.append(TokenPiece(gap, 1.0, 0))
            self._covered = self._response_chars
            self._response_at = len(self.pieces)
        return self.pieces

    @property
    def shaded(self) -> bool:
        """The answer is drawn shaded by confidence."""
        return self._shading is not None

    def shade(self, on: bool, *, below: float) -> None:
        """Draw the answer shaded by confidence (plain text), or as Markdown again."""
        dropped = set(self._shaded_parts)
        for shaded_part in self._shaded_parts:
            if shaded_part.parent is not None:
                shaded_part.remove()
        self._unmounted = [(part, at) for part, at in self._unmounted if part not in dropped]
        self._shaded_parts, self._shaded_given = [], 0
        self._shaded_open.clear()
        shaded = on and self.pieces is not None
        self._shading = ShadedStream(below=below, segment_chars=SEGMENT_CHARS) if shaded else None
        if shaded:
            self._paint_shaded()
        else:
            self._paint_markdown()
        self._shaded_open.display = shaded
        for part in [*self._parts, self._open]:
            part.display = not shaded

    @property
    def shaded_text(self) -> Content | None:
        """The whole shaded text, as drawn (None: not shaded)."""
        if self._shading is None:
            return None
        segments = [*self._shading.sealed, self._shading.open_segment(self.raw)]
        return Content("\n").join(segments)

    # ------------------------------------------------------------ streaming

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
        """Hand what arrived since the last paint to the parts (they render at the frame):
        the shaded ones while shaded, else the Markdown ones (which catch up when shading
        ends)."""
        if self._shading is not None:
            self._paint_shaded()
        else:
            self._paint_markdown()

    def _paint_markdown(self) -> None:
        """Hand the Markdown parts the text they do not have yet."""
        for source in self._sealed[self._given :]:
            if not self._parts or self._parts[-1].chars >= PART_CHARS:
                part = AnswerPart()
                self._parts.append(part)
                self._mount_part(part, before=self._open)
            self._parts[-1].add(source)
        self._given = len(self._sealed)
        self._open.replace_last(self.text[self._open_at :])

    def _paint_shaded(self) -> None:
        """Shade the pieces that arrived and hand the closed segments to the shaded parts."""
        shading = self._shading
        assert shading is not None and self.pieces is not None
        shading.take(self.raw, self.pieces)
        for content in shading.sealed[self._shaded_given :]:
            if not self._shaded_parts or self._shaded_parts[-1].chars >= PART_CHARS:
                part = ShadedPart()
                self._shaded_parts.append(part)
                self._mount_part(part, before=self._shaded_open)
            self._shaded_parts[-1].add(content)
        self._shaded_given = len(shading.sealed)
        self._shaded_open.replace_last(shading.open_segment(self.raw))

    def _mount_part(self, part: SegmentPart[str] | SegmentPart[Content], before: Widget) -> None:
        if self.is_mounted:
            self.mount(part, before=before)
        else:
            self._unmounted.append((part, before))

    @property
    def segments(self) -> list[str]:
        """The Markdown sources of the segments, top to bottom."""
        opened = self.text[self._open_at :]
        return [*self._sealed, opened] if opened else list(self._sealed)

    @property
    def drawn_segments(self) -> list[str]:
        """The sources the parts draw (``segments``, once the last paint is on screen)."""
        return [source for part in [*self._parts, self._open] for source in part.sources if source]
