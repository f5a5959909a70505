"""Vim's modal editing for the prompt (``editor_mode = "vim"``): normal and insert modes.

Normal mode reads commands of the form ``[count] operator [count] motion`` or
``[count] command``:

- motions: ``h j k l`` (left, down, up, right), ``w b e`` (next word, back a
  word, end of word; a word is a run of letters, digits and ``_``, or a run
  of other non-blank characters), ``0 $`` (line start, line end), ``gg G``
  (first line, last line; with a count, that line);
- operators ``d c y`` (delete, change, yank) with any motion, and doubled
  (``dd cc yy``) for whole lines; ``cw`` changes to the end of the word, as
  in Vim, and ``dw`` stops at the end of the line;
- ``x`` deletes the character under the cursor, ``p`` puts what was deleted
  or yanked after the cursor (below the line when it was whole lines),
  ``u`` undoes;
- ``i a`` insert before/after the cursor, ``o O`` open a line below/above,
  ``A I`` insert at the end / the first non-blank of the line.

Escape goes from insert to normal mode (and, in normal mode with nothing
pending, reaches the app: it interrupts a running turn). Enter sends the
prompt from either mode. ``VimEditor`` works on the ``TextArea`` it is given
through its editing calls, so undo, the history and the completion menu
see ordinary edits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from textual.widgets import TextArea

__all__ = ["Mode", "VimEditor"]

Mode = Literal["normal", "insert"]
MAX_COUNT = 10_000
"""The largest count honoured (a typo of many digits does not hang the app)."""

Location = tuple[int, int]


@dataclass(frozen=True, slots=True)
class _Target:
    """Where a motion goes: an offset, or a row for a motion over whole lines."""

    offset: int
    inclusive: bool = False
    linewise: bool = False


def _kind(char: str) -> int:
    """0: blank, 1: a word character, 2: any other character."""
    if char.isspace():
        return 0
    return 1 if char.isalnum() or char == "_" else 2


def _next_word(text: str, at: int) -> int:
    end = len(text)
    if at >= end:
        return end
    kind = _kind(text[at])
    if kind:
        while at < end and _kind(text[at]) == kind:
            at += 1
    while at < end and _kind(text[at]) == 0:
        if text[at] == "\n" and at + 1 < end and text[at + 1] == "\n":
            return at + 1  # an empty line is a word of its own
        at += 1
    return at


def _word_end(text: str, at: int) -> int:
    end = len(text)
    at += 1
    while at < end and _kind(text[at]) == 0:
        at += 1
    if at >= end:
        return max(0, end - 1)
    kind = _kind(text[at])
    while at + 1 < end and _kind(text[at + 1]) == kind:
        at += 1
    return at


def _previous_word(text: str, at: int) -> int:
    at -= 1
    while at > 0 and _kind(text[at]) == 0:
        at -= 1
    if at <= 0:
        return 0
    kind = _kind(text[at])
    while at > 0 and _kind(text[at - 1]) == kind:
        at -= 1
    return at


class VimEditor:
    """Normal and insert mode on a ``TextArea``; ``on_mode`` hears each change of mode."""

    def __init__(self, area: TextArea, on_mode: Callable[[Mode], None]) -> None:
        self.area = area
        self.mode: Mode = "insert"
        self._on_mode = on_mode
        self.pending = ""
        """The keys of a command not yet complete (a count, an operator, a ``g``)."""
        self.register = ""
        self.register_lines = False
        """What ``p`` puts, and whether it is whole lines."""

    # ------------------------------------------------------------ modes

    def insert_mode(self) -> None:
        """Type text (the mode a new prompt starts in)."""
        self.pending = ""
        if self.mode != "insert":
            self.area.history.checkpoint()
            self.mode = "insert"
            self._on_mode("insert")

    def normal_mode(self) -> None:
        """Leave insert mode: the cursor steps back onto the last character typed."""
        if self.mode == "normal":
            return
        self.area.history.checkpoint()
        self.mode = "normal"
        row, column = self.area.cursor_location
        self.area.move_cursor((row, max(0, column - 1)))
        self._on_mode("normal")

    def escape(self) -> bool:
        """Escape was pressed: True when it was used (insert mode, or a pending command)."""
        if self.mode == "insert":
            self.normal_mode()
            return True
        if self.pending:
            self.pending = ""
            return True
        return False

    # ------------------------------------------------------------ normal mode

    def key(self, char: str) -> None:
        """A printable key in normal mode: part of a command, or the end of one."""
        keys = self.pending + char
        self.pending = ""
        count, rest = _split_count(keys)
        if not rest:
            self.pending = keys  # digits so far
            return
        if rest[0] in "dcy":
            operator, tail = rest[0], rest[1:]
            second, motion = _split_count(tail)
            if not motion or motion == "g":
                self.pending = keys
                return
            counted = count is not None or second is not None
            total = (count or 1) * (second or 1) if counted else None
            if motion == operator:
                self._lines_operator(operator, total or 1)
                return
            target = self._motion(motion, total, operator=operator)
            if target is not None:
                self._operate(operator, target)
            return
        if rest == "g":
            self.pending = keys
            return
        if self._command(rest, count or 1):
            return
        target = self._motion(rest, count)
        if target is not None:
            self._move(target)

    def _command(self, name: str, count: int) -> bool:
        area = self.area
        row, column = area.cursor_location
        line = area.document.get_line(row)
        if name == "x":
            if line:
                end = min(len(line), column + count)
                self._operate("d", _Target(self._offset((row, end))))
        elif name == "p":
            self._put(count)
        elif name == "u":
            for _ in range(count):
                area.undo()
            self._clamp()
        elif name == "i":
            self.insert_mode()
        elif name == "a":
            area.move_cursor((row, min(len(line), column + 1)))
            self.insert_mode()
        elif name == "A":
            area.move_cursor((row, len(line)))
            self.insert_mode()
        elif name == "I":
            area.move_cursor((row, len(line) - len(line.lstrip())))
            self.insert_mode()
        elif name == "o":
            self._edit(lambda: area.insert("\n", (row, len(line))))
            area.move_cursor((row + 1, 0))
            self.insert_mode()
        elif name == "O":
            self._edit(lambda: area.insert("\n", (row, 0)))
            area.move_cursor((row, 0))
            self.insert_mode()
        else:
            return False
        return True

    def _motion(self, name: str, given: int | None, operator: str = "") -> _Target | None:
        """Where motion ``name`` goes, ``given`` times (None: no count was typed)."""
        area = self.area
        text = self._text()
        count = given or 1
        row, column = area.cursor_location
        line = area.document.get_line(row)
        at = self._offset((row, column))
        last_row = area.document.line_count - 1
        if name == "h":
            return _Target(self._offset((row, max(0, column - count))))
        if name == "l":
            limit = len(line) if operator else max(0, len(line) - 1)
            return _Target(self._offset((row, min(limit, column + count))))
        if name in ("j", "k"):
            step = count if name == "j" else -count
            return _Target(self._offset((min(last_row, max(0, row + step)), 0)), linewise=True)
        if name == "0":
            return _Target(self._offset((row, 0)))
        if name == "$":
            end_row = min(last_row, row + count - 1)
            end = len(area.document.get_line(end_row))
            # An empty line has no last character to include (not its line break).
            return _Target(self._offset((end_row, max(0, end - 1))), inclusive=end > 0)
        if name in ("gg", "G"):
            default = 0 if name == "gg" else last_row
            target_row = default if given is None else min(last_row, max(0, given - 1))
            return _Target(self._offset((target_row, 0)), linewise=True)
        if name == "w" and operator == "c" and _kind(text[at : at + 1] or " "):
            name = "e"  # cw changes to the end of the word, as in Vim
        if name == "w":
            target = at
            for _ in range(count):
                target = _next_word(text, target)
            if operator:  # dw at the last word of a line stops at the line's end
                target = min(target, self._offset((row, len(line))))
            return _Target(target)
        if name == "e":
            target = at
            for _ in range(count):
                target = _word_end(text, target)
            return _Target(target, inclusive=True)
        if name == "b":
            target = at
            for _ in range(count):
                target = _previous_word(text, target)
            return _Target(target)
        return None

    def _move(self, target: _Target) -> None:
        location = self._location(target.offset)
        if target.linewise:
            row = location[0]
            keep = self.area.cursor_location[1]
            location = (row, min(keep, max(0, len(self.area.document.get_line(row)) - 1)))
        self.area.move_cursor(location)
        self._clamp()

    def _operate(self, operator: str, target: _Target) -> None:
        area = self.area
        if target.linewise:
            here = area.cursor_location[0]
            there = self._location(target.offset)[0]
            self._lines(operator, min(here, there), max(here, there))
            return
        at = self._offset(area.cursor_location)
        start, end = sorted((at, target.offset))
        text = self._text()
        if target.inclusive:
            end = min(len(text), end + 1)
        begin, finish = self._location(start), self._location(end)
        self.register = text[start:end]
        self.register_lines = False
        if operator in "dc" and end > start:
            self._edit(lambda: area.delete(begin, finish))
        area.move_cursor(begin)
        if operator == "c":
            self.insert_mode()
        else:
            self._clamp()

    def _lines_operator(self, operator: str, count: int) -> None:
        row = self.area.cursor_location[0]
        last = min(self.area.document.line_count - 1, row + count - 1)
        self._lines(operator, row, last)

    def _lines(self, operator: str, first: int, last: int) -> None:
        """``operator`` on rows ``first`` to ``last``, as whole lines."""
        area = self.area
        doc = area.document
        lines = [doc.get_line(r) for r in range(first, last + 1)]
        self.register = "\n".join(lines) + "\n"
        self.register_lines = True
        if operator == "y":
            area.move_cursor((first, area.cursor_location[1] if first == last else 0))
            self._clamp()
            return
        if operator == "c":  # the lines become one empty line to type on
            self._edit(lambda: area.replace("", (first, 0), (last, len(lines[-1]))))
            area.move_cursor((first, 0))
            self.insert_mode()
            return
        end_row = doc.line_count - 1
        if last < end_row:
            self._edit(lambda: area.delete((first, 0), (last + 1, 0)))
        elif first > 0:
            start = (first - 1, len(doc.get_line(first - 1)))
            self._edit(lambda: area.delete(start, (last, len(lines[-1]))))
            first -= 1
        else:
            self._edit(lambda: area.delete((0, 0), (last, len(lines[-1]))))
        line = doc.get_line(first)
        area.move_cursor((first, len(line) - len(line.lstrip())))
        self._clamp()

    def _put(self, count: int) -> None:
        area = self.area
        if not self.register:
            return
        row, column = area.cursor_location
        line = area.document.get_line(row)
        if self.register_lines:
            block = self.register.removesuffix("\n")
            text = "\n" + "\n".join([block] * count)
            self._edit(lambda: area.insert(text, (row, len(line))))
            area.move_cursor((row + 1, 0))
            return
        text = self.register * count
        at = (row, min(len(line), column + 1)) if line else (row, 0)
        self._edit(lambda: area.insert(text, at))
        end = self._offset(at) + len(text) - 1
        area.move_cursor(self._location(max(0, end)))

    # ------------------------------------------------------------ helpers

    def _edit(self, change: Callable[[], object]) -> None:
        """One edit that ``u`` undoes alone."""
        self.area.history.checkpoint()
        change()
        self.area.history.checkpoint()

    def _text(self) -> str:
        """The prompt's text with ``\\n`` line breaks (offsets count one per break)."""
        return "\n".join(self.area.document.lines)

    def _offset(self, location: Location) -> int:
        row, column = location
        lines = self.area.document.lines
        return sum(len(line) + 1 for line in lines[:row]) + column

    def _location(self, offset: int) -> Location:
        lines = self.area.document.lines
        for row, line in enumerate(lines):
            if offset <= len(line):
                return row, offset
            offset -= len(line) + 1
        return len(lines) - 1, len(lines[-1])

    def _clamp(self) -> None:
        """In normal mode the cursor sits on a character, never past the line's end."""
        row, column = self.area.cursor_location
        length = len(self.area.document.get_line(row))
        if self.mode == "normal" and length and column >= length:
            self.area.move_cursor((row, length - 1))


def _split_count(keys: str) -> tuple[int | None, str]:
    """The count in front of ``keys`` (None when none; a ``0`` first is the motion) and
    the rest."""
    digits = 0
    while digits < len(keys) and keys[digits].isdigit() and not (digits == 0 and keys[0] == "0"):
        digits += 1
    count = min(MAX_COUNT, int(keys[:digits])) if digits else None
    return count, keys[digits:]
