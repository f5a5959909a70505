"""The lines a unified diff adds: their row in the diff and their number in the new file.

An edit's fill confidences are kept per row of its diff (the diff's text split
at newlines, 0-based), so that a front end drawing the diff row by row finds
each added line's pieces without counting hunks, and a patch that touches
several files (whose line numbers repeat) has one key per line.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["AddedRow", "added_rows"]


class AddedRow(NamedTuple):
    """One line a diff adds."""

    row: int
    """Its row in the diff (0-based, the diff split at ``\\n``)."""
    number: int
    """Its 1-based line number in the file after the edit."""
    text: str
    """The line without its leading ``+``."""
    path: str = ""
    """The file it is added to, from the last ``+++`` header before its hunk (without
    git's ``b/``; "" when the diff names none)."""


_HUNK = re.compile(r"@@ -\d+(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def added_rows(diff: str) -> list[AddedRow]:
    """The lines ``diff`` adds, in order. Each hunk is read for the number of lines its
    header gives, so file headers between hunks (and a line that only looks like one)
    are told apart."""
    out: list[AddedRow] = []
    number = old_left = new_left = 0
    path = ""
    for row, line in enumerate(diff.split("\n")):
        if old_left <= 0 and new_left <= 0:
            if line.startswith("+++ "):
                name = line[4:].split("\t", 1)[0]
                path = name[2:] if name.startswith("b/") else name
            elif hunk := _HUNK.match(line):
                old_left = int(hunk.group(1) or 1)
                number = int(hunk.group(2))
                new_left = int(hunk.group(3) or 1)
            continue
        mark = line[:1]
        if mark == "+":
            out.append(AddedRow(row, number, line[1:], path))
            number += 1
            new_left -= 1
        elif mark == "-":
            old_left -= 1
        elif mark == " " or not line:  # a context line (some tools drop its lone space)
            number += 1
            old_left -= 1
            new_left -= 1
    return out
