"""JSON string values read with the raw span of every character they decode to.

A tool call in the JSON form (``{"name": ..., "arguments": {...}}``) holds the
text an edit writes escaped: a newline is ``\\n``, a quote ``\\"``, a
backslash ``\\\\``, a character may be ``\\u00e9``, and one outside the Basic
Multilingual Plane a surrogate pair of two such escapes. To find a line of
the edit's new text among the tokens the model wrote, each decoded character
keeps the span of raw text it was read from.

The scanner checks only what it needs: string literals and their escapes,
balanced brackets, and nothing but JSON's punctuation and literals between
strings. Text that fails any of these is not JSON to it (``None``), never an
exception.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["OffsetText", "json_string_values"]

_PLAIN = re.compile(r'[^"\\]+')
"""A run of string characters that stand for themselves."""
_BETWEEN = re.compile(r"[\s,:0-9eE+.\-]+|true|false|null")
"""What may stand between strings and brackets: separators, numbers and literals."""
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_HEX = re.compile(r"[0-9a-fA-F]{4}")
_NESTED_KEYS = frozenset({"arguments", "parameters"})
"""Keys whose string value may itself be a JSON object (arguments sent encoded twice)."""


@dataclass(slots=True)
class OffsetText:
    """Decoded text and, per character, the raw span ``[begin, end)`` it was read from."""

    text: str
    begin: array[int]
    end: array[int]

    @classmethod
    def verbatim(cls, begin: int, raw: str) -> OffsetText:
        """Raw text that stands for itself, found at ``begin`` of the whole raw text."""
        return cls(
            raw,
            array("q", range(begin, begin + len(raw))),
            array("q", range(begin + 1, begin + len(raw) + 1)),
        )

    @classmethod
    def joined(cls, parts: Iterable[OffsetText]) -> OffsetText:
        """Several texts one after another, a newline between them, so no line found in
        the whole spans two of them (the newline stands for no raw text)."""
        text: list[str] = []
        begin: array[int] = array("q")
        end: array[int] = array("q")
        for part in parts:
            if text:
                text.append("\n")
                begin.append(end[-1] if end else 0)
                end.append(end[-1] if end else 0)
            text.append(part.text)
            begin += part.begin
            end += part.end
        return cls("".join(text), begin, end)

    def within(self, outer: OffsetText) -> OffsetText:
        """This text read out of ``outer``'s decoded text, its spans taken back to
        ``outer``'s raw text."""
        begin = array("q", (outer.begin[i] for i in self.begin))
        end = array("q", (outer.end[i - 1] for i in self.end))
        return OffsetText(self.text, begin, end)


def json_string_values(
    raw: str, start: int = 0, stop: int | None = None
) -> list[tuple[str, OffsetText]] | None:
    """The string values of the JSON text ``raw[start:stop]`` in order, each with the key
    of the object member holding it (an array's items take the key of the array; "" at
    the top), their spans in ``raw``. A string value under ``arguments`` or
    ``parameters`` that is itself JSON adds its own values after it. None when the
    text is not JSON."""
    stop = len(raw) if stop is None else stop
    values: list[tuple[str, OffsetText]] = []
    keys: list[str] = [""]
    """The key of the member being read, per open object or array (and the top)."""
    closers: list[str] = []
    at = start
    while at < stop:
        char = raw[at]
        if char == '"':
            read = _string(raw, at + 1, stop)
            if read is None:
                return None
            value, at = read
            colon = _BETWEEN.match(raw, at, stop)
            if colon is not None and ":" in colon.group():
                keys[-1] = value.text
                continue
            values.append((keys[-1], value))
            if keys[-1] in _NESTED_KEYS and len(closers) == 1:
                values += _nested(value)
        elif char in "{[":
            closers.append("}" if char == "{" else "]")
            keys.append("" if char == "{" else keys[-1])
            at += 1
        elif char in "}]":
            if not closers or closers.pop() != char:
                return None
            keys.pop()
            at += 1
        elif between := _BETWEEN.match(raw, at, stop):
            at = between.end()
        else:
            return None
    return None if closers else values


def _nested(value: OffsetText) -> list[tuple[str, OffsetText]]:
    """The values of a string that holds a JSON object, spans taken back to the raw text."""
    if not value.text.lstrip().startswith("{"):
        return []
    inner = json_string_values(value.text)
    return [(key, text.within(value)) for key, text in inner or ()]


def _string(raw: str, at: int, stop: int) -> tuple[OffsetText, int] | None:
    """The string literal whose text starts at ``raw[at]`` (after its quote), and where
    the text after its closing quote starts; None when it is cut off or badly escaped."""
    text: list[str] = []
    begin: array[int] = array("q")
    end: array[int] = array("q")
    while at < stop:
        plain = _PLAIN.match(raw, at, stop)
        if plain is not None:
            text.append(plain.group())
            begin.extend(range(at, plain.end()))
            end.extend(range(at + 1, plain.end() + 1))
            at = plain.end()
            continue
        if raw[at] == '"':
            return OffsetText("".join(text), begin, end), at + 1
        escaped = _escape(raw, at, stop)
        if escaped is None:
            return None
        char, after = escaped
        text.append(char)
        begin.append(at)
        end.append(after)
        at = after
    return None


def _escape(raw: str, at: int, stop: int) -> tuple[str, int] | None:
    """The character the escape at ``raw[at]`` (a backslash) stands for, and where the
    text after it starts; a surrogate pair of two ``\\u`` escapes is one character."""
    kind = raw[at + 1] if at + 1 < stop else ""
    if kind in _ESCAPES:
        return _ESCAPES[kind], at + 2
    unit = _unit(raw, at, stop)
    if unit is None:
        return None
    if 0xD800 <= unit < 0xDC00:
        low = _unit(raw, at + 6, stop)
        if low is not None and 0xDC00 <= low < 0xE000:
            return chr(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)), at + 12
    return chr(unit), at + 6  # a lone surrogate stays one, as json.loads reads it


def _unit(raw: str, at: int, stop: int) -> int | None:
    """The UTF-16 code unit of a ``\\uXXXX`` escape at ``raw[at]`` (None: not one)."""
    if raw.startswith("\\u", at) and at + 6 <= stop and _HEX.fullmatch(raw, at + 2, at + 6):
        return int(raw[at + 2 : at + 6], 16)
    return None
