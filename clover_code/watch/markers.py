"""Finding and removing ``AI!`` / ``AI?`` comments (pure; no I/O).

A marker is a comment whose text ends with ``AI!`` (do it) or ``AI?``
(answer it), in the comment syntax of the file's language (``#``, ``//``,
``--``, ``;``, ``%``, ``/* */``, ``<!-- -->``, ``(* *)``, ``'``; files of
unknown type accept them all). Full-line comments right above the marker
line, in the same syntax, belong to the instruction::

    # make this handle negative numbers
    # and say why in a docstring AI!
    def parse(text): ...

A comment opener inside a string literal (an odd number of quotes before
it on the line) is not taken for a comment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["Marker", "find_markers", "openers_for", "remove_marker"]

_ALL = ("#", "//", "/*", "--", ";", "%", "<!--", "(*", "'")
_BY_SUFFIX: dict[str, tuple[str, ...]] = {}
for _suffixes, _openers in (
    (
        "py pyi sh bash zsh fish rb pl pm r yaml yml toml cfg conf mk cmake dockerfile nix tf",
        ("#",),
    ),
    (
        "js jsx ts tsx mjs cjs c h cc cpp cxx hpp hh java go rs cs swift kt kts scala dart",
        ("//", "/*"),
    ),
    ("zig proto groovy gradle scss less v sv", ("//", "/*")),
    ("css", ("/*",)),
    ("php", ("//", "/*", "#")),
    ("sql lua hs elm ada", ("--",)),
    ("lisp el clj cljs scm rkt asm s ini", (";",)),
    ("tex sty erl hrl m", ("%",)),
    ("html htm xml svg md vue", ("<!--",)),
    ("ml mli fs", ("(*", "//")),
    ("vb bas", ("'",)),
):
    for _suffix in _suffixes.split():
        _BY_SUFFIX[_suffix] = _openers

_REPEATABLE = frozenset({"#", "//", "--", ";", "%"})
_CLOSERS = {"/*": "*/", "<!--": "-->", "(*": "*)"}
_MARK = re.compile(r"(?i)(?<![\w])ai([!?])$")


def openers_for(filename: str) -> tuple[str, ...]:
    """The comment openers of ``filename``'s language (all of them when unknown)."""
    name = filename.lower()
    if name in ("makefile", "dockerfile"):
        return ("#",)
    suffix = name.rsplit(".", 1)[-1] if "." in name else ""
    return _BY_SUFFIX.get(suffix, _ALL)


@dataclass(frozen=True, slots=True)
class Marker:
    """One instruction: lines ``first``..``last`` (1-based) of the file."""

    kind: Literal["do", "ask"]
    first: int
    last: int
    text: str
    """The instruction, the comment syntax and the marker left out."""
    inline: bool
    """The marker comment follows code on its line (only the comment is removed)."""


@dataclass(frozen=True, slots=True)
class _Comment:
    start: int
    opener: str
    text: str


def _comment(line: str, openers: tuple[str, ...]) -> _Comment | None:
    """The comment on ``line`` (the first opener outside a string literal), if any."""
    best: _Comment | None = None
    for opener in openers:
        index = line.find(opener)
        while index >= 0:
            before = line[:index]
            if before.count('"') % 2 == 0 and (opener == "'" or before.count("'") % 2 == 0):
                if best is None or index < best.start:
                    body = line[index + len(opener) :].rstrip()
                    closer = _CLOSERS.get(opener)
                    if closer and body.endswith(closer):
                        body = body[: -len(closer)].rstrip()
                    if opener in _REPEATABLE:
                        body = body.lstrip(opener[-1])  # ";;", "##", "///" doc comments
                    best = _Comment(index, opener, body.strip())
                break
            index = line.find(opener, index + 1)
    return best


def find_markers(text: str, filename: str) -> list[Marker]:
    """Every ``AI!`` / ``AI?`` instruction in ``text``, top to bottom."""
    openers = openers_for(filename)
    lines = text.splitlines()
    markers: list[Marker] = []
    for index, line in enumerate(lines):
        comment = _comment(line, openers)
        if comment is None:
            continue
        mark = _MARK.search(comment.text)
        if mark is None:
            continue
        parts = [comment.text[: mark.start()].strip()]
        first = index
        while first > 0:
            above = lines[first - 1]
            prev = _comment(above, openers)
            if (
                prev is None
                or prev.opener != comment.opener
                or above[: prev.start].strip()
                or _MARK.search(prev.text)
                or not prev.text
            ):
                break
            parts.insert(0, prev.text)
            first -= 1
        markers.append(
            Marker(
                kind="do" if mark.group(1) == "!" else "ask",
                first=first + 1,
                last=index + 1,
                text=" ".join(p for p in parts if p),
                inline=bool(line[: comment.start].strip()),
            )
        )
    return markers


def remove_marker(text: str, marker: Marker, filename: str) -> str:
    """``text`` without ``marker``'s comment lines (or its inline comment)."""
    lines = text.splitlines(keepends=True)
    last = lines[marker.last - 1]
    if marker.inline:
        comment = _comment(last, openers_for(filename))
        assert comment is not None, "the marker line has a comment"
        ending = last[len(last.rstrip("\r\n")) :]
        lines[marker.last - 1] = last[: comment.start].rstrip() + ending
        del lines[marker.first - 1 : marker.last - 1]
    else:
        del lines[marker.first - 1 : marker.last]
    return "".join(lines)
