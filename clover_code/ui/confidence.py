"""Shading text by the confidence each token was filled with (the confidence view).

Only the background changes, so the theme's own text colour stays readable:
tokens filled below the ``low_confidence`` threshold get a red tint, tokens
under ``SURE`` a yellow one, the rest none. Dark and light themes get tints
of their own (a dark tint under light text, a pale one under dark text).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.style import Style
from rich.text import Text

from clover_code.protocol.confidence import TokenPiece
from clover_code.ui.text import clean

__all__ = ["SURE", "shade_style", "shaded_text", "unsure_rows"]

SURE = 0.9
"""At or above this a token is drawn without a tint."""

_TINTS = {
    (True, "low"): "on #5c1f1f",
    (True, "mid"): "on #4a4114",
    (False, "low"): "on #f4c7c3",
    (False, "mid"): "on #f6ecbd",
}


def shade_style(confidence: float, *, dark: bool, below: float) -> Style:
    """The style of a token filled with ``confidence`` (an empty style when sure)."""
    if confidence < below:
        return Style.parse(_TINTS[(dark, "low")])
    if confidence < SURE:
        return Style.parse(_TINTS[(dark, "mid")])
    return Style()


def shaded_text(text: str, pieces: Sequence[TokenPiece], *, dark: bool, below: float) -> Text:
    """``text`` with each piece's characters shaded by its confidence (text past the
    pieces is left plain; control characters are cleaned piece by piece, so the pieces
    stay on their characters)."""
    out = Text(no_wrap=False)
    at = 0
    for piece in pieces:
        part = text[at : at + piece.chars]
        if not part:
            break
        out.append(clean(part), style=shade_style(piece.confidence, dark=dark, below=below))
        at += piece.chars
    if at < len(text):
        out.append(clean(text[at:]))
    return out


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
