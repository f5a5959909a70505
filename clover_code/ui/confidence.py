"""Shading text by the confidence each token was filled with (the confidence view).

Only the background changes, and only to the theme's own muted colours, so
the text stays readable in every theme: tokens filled below the
``low_confidence`` threshold sit on its muted error colour, tokens under
``SURE`` on its muted warning colour, the rest on nothing (an added diff line's
sure tokens keep the line's own tint). ``DiffShading`` is what an edit's
``EditConfidence`` says about the rows of its diff.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from textual.content import Content, Span

from clover_code.protocol.confidence import EditConfidence, TokenPiece, decode_pieces
from clover_code.protocol.diff_rows import added_rows
from clover_code.ui.text import clean

__all__ = ["SURE", "DiffShading", "ShadedStream", "shade_style", "shaded_content"]

SURE = 0.9
"""At or above this a token is drawn without a tint."""


def shade_style(confidence: float, *, below: float) -> str:
    """The style of a token filled with ``confidence`` ("" when sure)."""
    if confidence < below:
        return "on $error-muted"
    if confidence < SURE:
        return "on $warning-muted"
    return ""


def shaded_content(text: str, pieces: Sequence[TokenPiece], *, below: float) -> Content:
    """``text`` with each piece's characters shaded by its confidence (text past the
    pieces is left plain; control characters are cleaned piece by piece, so the pieces
    stay on their characters)."""
    plain: list[str] = []
    spans: list[Span] = []
    at = size = 0
    for piece in pieces:
        part = clean(text[at : at + piece.chars])
        if not part and at >= len(text):
            break
        style = shade_style(piece.confidence, below=below)
        if style and part:
            spans.append(Span(size, size + len(part), style))
        plain.append(part)
        size += len(part)
        at += piece.chars
    plain.append(clean(text[at:]))
    return Content("".join(plain), spans)


class ShadedStream:
    """An answer shaded by confidence while its text and pieces arrive, cut at newlines
    into segments, so that only the last (open) one is drawn again as more comes.

    Each piece's text is cleaned on its own, as ``shaded_content`` does, and a cut
    falls on a newline, which the lines of a ``Content`` leave out: the segments,
    drawn one under the other, are the lines of ``shaded_content`` of the whole
    text. The open segment holds the text past the last cut, the part no piece
    covers yet unshaded; once it is longer than ``segment_chars``, its lines are
    closed into segments of about that size (its last line stays open).
    """

    def __init__(self, *, below: float, segment_chars: int) -> None:
        self.below = below
        self.segment_chars = segment_chars
        self.covered = 0
        """Characters of the raw text the taken pieces cover."""
        self.taken = 0
        """How many pieces are taken."""
        self.sealed: list[Content] = []
        """The closed segments, top to bottom."""
        self._open = ""
        """The open segment's text that pieces cover (cleaned)."""
        self._spans: list[Span] = []
        """Its tints."""

    def take(self, raw: str, pieces: Sequence[TokenPiece]) -> None:
        """Shade the pieces not taken yet, as far as ``raw`` holds their text, and close
        the segments that are done."""
        parts: list[str] = []
        size = len(self._open)
        at = self.covered
        taken = self.taken
        while taken < len(pieces):
            piece = pieces[taken]
            end = at + piece.chars
            if end > len(raw):
                break  # its text has not arrived yet
            part = clean(raw[at:end])
            style = shade_style(piece.confidence, below=self.below)
            if style and part:
                self._spans.append(Span(size, size + len(part), style))
            parts.append(part)
            size += len(part)
            at = end
            taken += 1
        self.covered, self.taken = at, taken
        if parts:
            self._open += "".join(parts)
            self._close()

    def open_segment(self, raw: str) -> Content:
        """The open segment: its shaded text, then the raw text no piece covers yet."""
        return Content(self._open + clean(raw[self.covered :]), list(self._spans))

    def _close(self) -> None:
        """Close the open segment's lines into segments of at least ``segment_chars`` (cut
        at the first newline past that, or a long line's last one), keeping its last
        line open."""
        text = self._open
        bounds: list[tuple[int, int]] = []
        start, end = 0, len(text) - 1  # never cut at the last character
        while len(text) - start > self.segment_chars:
            cut = text.find("\n", start + self.segment_chars, end)
            if cut < 0:
                cut = text.rfind("\n", start, end)
            if cut < 0:
                break
            bounds.append((start, cut))
            start = cut + 1
        if not bounds:
            return
        spans: list[list[Span]] = [[] for _ in bounds]
        rest: list[Span] = []
        first = 0  # the first segment a span can still fall in (spans come in order)
        for span in self._spans:
            while first < len(bounds) and bounds[first][1] <= span.start:
                first += 1
            for index in range(first, len(bounds)):
                begin, cut = bounds[index]
                if begin >= span.end:
                    break
                if min(span.end, cut) > max(span.start, begin):
                    low, high = max(span.start, begin), min(span.end, cut)
                    spans[index].append(Span(low - begin, high - begin, span.style))
            if span.end > start:
                rest.append(Span(max(span.start, start) - start, span.end - start, span.style))
        self.sealed += [
            Content(text[begin:cut], segment)
            for (begin, cut), segment in zip(bounds, spans, strict=True)
        ]
        self._open, self._spans = text[start:], rest


@dataclass(frozen=True, slots=True)
class DiffShading:
    """How an edit's diff is shaded by the fill confidences of the tokens that wrote it."""

    pieces: Mapping[int, Sequence[TokenPiece]]
    """Per added row of the diff (0-based), the pieces of its text after the ``+``."""
    unsure: tuple[int, ...]
    """The added rows holding a token filled below ``below``, ascending (marked ``?``)."""
    below: float

    @classmethod
    def of(cls, diff: str, low: EditConfidence) -> DiffShading:
        """The shading ``low`` gives ``diff``. Without pieces (a record written before rows
        were kept) the rows of its unsure lines are marked whole; a row whose pieces
        cannot be read is left plain."""
        pieces: dict[int, list[TokenPiece]] = {}
        for row, encoded in low.row_pieces.items():
            try:
                pieces[row] = decode_pieces(encoded)
            except ValueError:
                continue
        if pieces:
            unsure = sorted(
                row for row, line in pieces.items() if any(p.confidence < low.below for p in line)
            )
        else:
            wanted = set(low.lines)
            unsure = [added.row for added in added_rows(diff) if added.number in wanted]
        return cls(pieces, tuple(unsure), low.below)
