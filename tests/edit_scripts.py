"""Scripted edit responses whose tokens' fill confidences are known, in both call forms.

Each builds the committed tokens of a response (see ``tests/diffusion_stream.py``)
that thinks a little and makes one or more calls; the expected pieces of the
lines they add are given beside them, as (characters, confidence, step) per
token run, with the tint the confidence view gives each character:
``E`` below 0.5, ``W`` below 0.9, ``.`` none.
"""

from __future__ import annotations

import json

from tests.diffusion_stream import Token, tokens

__all__ = [
    "JSON_LINES",
    "JSON_PIECES",
    "JSON_TINTS",
    "THINK",
    "XML_LINE",
    "XML_PIECES",
    "XML_TINTS",
    "json_write",
    "xml_edit",
    "xml_param",
]

THINK = tokens("I", " will", " edit", " it", ".", "</think>", "\n\n")
CLOSE_XML = tokens("\n", "</parameter>", "\n", "</function>", "\n", "</tool_call>")


def xml_param(name: str, value: str) -> list[Token]:
    """A whole parameter of the XML form, every token sure."""
    return tokens("<parameter=", name, ">\n", value, "\n", "</parameter>", "\n")


XML_LINE = "    return a + b  # fixed"
XML_PIECES = [(10, 0.99, 1), (2, 0.7, 1), (2, 0.2, 2), (2, 0.99, 1), (3, 0.99, 1), (6, 0.4, 2)]
XML_TINTS = "." * 10 + "WW" + "EE" + "." * 5 + "E" * 6


def xml_edit(path: str) -> list[Token]:
    """An XML-form ``edit_file`` of ``path`` (``def add(a, b):\\n    return a - b``) whose
    new line is ``XML_LINE``: " +" and " fixed" below 0.5, " a" between 0.5 and 0.9."""
    return [
        *tokens("<tool_call>", "\n", "<function=", "edit_file", ">\n"),
        *xml_param("path", path),
        *xml_param("old_string", "    return a - b"),
        *tokens("<parameter=", "new_string", ">\n"),
        *tokens("    return", (" a", 0.7), (" +", 0.2), " b", "  #", (" fixed", 0.4)),
        *CLOSE_XML,
    ]


JSON_LINES = ['msg = "héllo"', "print(msg)  # 😀"]
JSON_PIECES = [
    [(3, 0.99, 1), (2, 0.99, 1), (2, 0.7, 1), (1, 0.99, 1), (1, 0.2, 2), (3, 0.99, 1), (1, 0.3, 2)],
    [(5, 0.99, 1), (5, 0.6, 1), (3, 0.99, 1), (1, 0.99, 1), (1, 0.1, 2)],
]
JSON_TINTS = ["." * 5 + "WW" + "." + "E" + "..." + "E", "." * 5 + "W" * 5 + "...." + "E"]


def json_write(path: str) -> list[Token]:
    """A JSON-form ``write_file`` of ``path`` with ``JSON_LINES``, escaped as
    ``json.dumps`` does by default: "é" is ``\\u00e9`` (unsure), the closing quote's
    escape is split over two tokens (its backslash unsure), the emoji is a surrogate
    pair split over two tokens (its second half unsure)."""
    head = json.dumps({"name": "write_file", "arguments": {"path": path, "content": ""}})
    return [
        *tokens("<tool_call>", "\n", head[: -len('"}}')]),
        *tokens("msg", " =", (' \\"', 0.7), "h", ("\\u00e9", 0.2), "llo", ("\\", 0.3), '"', "\\n"),
        *tokens("print", ("(msg)", 0.6), "  #", " \\ud83d", ("\\ude00", 0.1), "\\n"),
        *tokens('"}}', "\n", "</tool_call>"),
    ]
