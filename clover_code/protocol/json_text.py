"""Text that must travel as JSON: read with bounds, written with what UTF-8 cannot carry escaped.

Python's ``json.loads`` recurses once per nesting level: a few kilobytes of
``[[[[...]]]]`` from a model's tool call, a server's chunk or an editor's
message raise ``RecursionError``, which nothing expects. ``loads_bounded``
measures the text before parsing it (a linear scan that skips strings) and
raises ``JSONLimitError`` (a ``ValueError``, so existing ``except ValueError``
handlers catch it) with one sentence saying which bound was crossed.

``printable`` is the other direction: a file name or file content that is not
UTF-8 reaches Python with each undecodable byte as a lone surrogate, which no
JSON encoder, HTTP body or UTF-8 stream accepts; it writes such bytes as
``\\xNN``.

This module imports nothing of clover-code, so every layer can use it.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = [
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "JSONLimitError",
    "json_depth",
    "loads_bounded",
    "printable",
    "printable_value",
]

MAX_JSON_DEPTH = 64
"""Levels of nested lists and objects accepted before parsing; deeper is refused unparsed.
(Tool arguments are held to a tighter depth after parsing, with the argument named.)"""

MAX_JSON_BYTES = 8_000_000
"""Characters in one JSON text (a call's whole arguments, one message or chunk)."""

# A string literal (with its escapes), or one bracket.
_TOKEN = re.compile(r'"(?:[^"\\]++|\\.)*+"?|[\[\]{}]', re.DOTALL)


class JSONLimitError(ValueError):
    """JSON text nested deeper or longer than its bound; the message is one sentence."""


def json_depth(text: str) -> int:
    """The deepest nesting of lists and objects in ``text`` (brackets inside strings ignored).

    Works on any text, valid JSON or not; unbalanced closers never go below zero.
    """
    depth = deepest = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif token in "]}":
            depth = max(depth - 1, 0)
    return deepest


def loads_bounded(
    text: str | bytes, *, max_depth: int = MAX_JSON_DEPTH, max_bytes: int = MAX_JSON_BYTES
) -> Any:
    """``json.loads(text)`` once ``text`` is known to be at most ``max_bytes`` long and
    nested at most ``max_depth`` deep; ``JSONLimitError`` otherwise, and ``ValueError``
    for text that is not JSON, as ``json.loads`` raises it."""
    if len(text) > max_bytes:
        raise JSONLimitError(
            f"the JSON is {len(text):,} characters long, more than the {max_bytes:,} allowed"
        )
    # Latin-1 maps bytes to characters one to one; quotes, backslashes and brackets
    # never occur inside a UTF-8 sequence, so the depth is the same.
    depth = json_depth(text.decode("latin-1") if isinstance(text, bytes) else text)
    if depth > max_depth:
        raise JSONLimitError(
            f"the JSON is nested {depth} levels deep, more than the {max_depth} allowed"
        )
    return json.loads(text)


def printable(text: str) -> str:
    """``text`` with what UTF-8 cannot carry escaped, so that it always serialises.

    A file name or file content that is not UTF-8 (a shell command can make
    both) reaches us with each undecodable byte as a lone surrogate
    (Python's ``surrogateescape``); it becomes the four characters ``\\xNN``.
    Any other lone surrogate becomes U+FFFD. Valid text comes back unchanged.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join(_printable_char(c) for c in text)
    return text


def _printable_char(char: str) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    if 0xD800 <= code <= 0xDFFF:
        return "\ufffd"
    return char


def printable_value(value: Any) -> Any:
    """``value`` (JSON-like: dicts, lists, strings) with ``printable`` applied to every string."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable_value(k): printable_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [printable_value(v) for v in value]
    return value
