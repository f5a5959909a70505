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

__all__ = ["SURE", "DiffShading", "shade_style", "shaded_content"]

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
