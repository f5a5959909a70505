"""Shading text by the confidence each token was filled with (the confidence view).

Only the background changes, and only to the theme's own muted colours, so
the text stays readable in every theme: tokens filled below the
``low_confidence`` threshold sit on its muted error colour, tokens under
``SURE`` on its muted warning colour, the rest on nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.content import Content, Span

from clover_code.protocol.confidence import TokenPiece
from clover_code.ui.text import clean

__all__ = ["SURE", "shade_style", "shaded_content", "unsure_rows"]

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


def unsure_rows(diff: str, lines: Sequence[int]) -> list[int]:
    """The rows of ``diff`` (its lines, 0-based) adding the new file's ``lines``."""
    wanted = set(lines)
    rows: list[int] = []
    number = 0
    for row, line in enumerate(diff.splitlines()):
        if line.startswith("@@"):
            head = line.split("+", 1)[1].split(" ", 1)[0] if "+" in line else "1"
            number = int(head.split(",", 1)[0] or 1)
        elif number == 0:
            continue
        elif line.startswith("+"):
            if number in wanted:
                rows.append(row)
            number += 1
        elif line.startswith(" "):
            number += 1
    return rows
