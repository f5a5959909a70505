"""Definitions and references of one source file, from its tree-sitter tag query.

Only what the map needs is kept: for each definition its name, kind, line
span and first line (the text the map shows), and for references only how
often each name is used. Files that are not worth parsing are recorded with
the reason instead (``SKIP_*``), so the cache remembers them too.

A file tree-sitter cannot fully parse still yields the tags of the parts it
could: tree-sitter recovers from syntax errors with ``ERROR`` nodes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from operator import attrgetter

from tree_sitter import Node, QueryCursor

from clover_code.repomap.languages import Grammar

__all__ = [
    "SKIP_BINARY",
    "SKIP_LARGE",
    "SKIP_MINIFIED",
    "SKIP_UNREADABLE",
    "Definition",
    "FileTags",
    "extract_tags",
    "skip_reason",
]

SKIP_BINARY = "binary"
SKIP_LARGE = "large"
SKIP_MINIFIED = "minified"
SKIP_UNREADABLE = "unreadable"

MAX_LINE_CHARS = 160
"""Longest definition line the map shows; longer ones are cut."""
_MINIFIED_LINE_BYTES = 250
"""Mean line length above which a file is taken for generated or minified code
(hand-written code averages 30 to 50)."""

Definition = tuple[str, str, int, int, str]
"""(name, kind, first line, last line, text of the first line); lines count from 0."""


@dataclass(slots=True)
class FileTags:
    """What one file contributes to the map, or why it contributes nothing."""

    lang: str
    defs: list[Definition] = field(default_factory=list)
    refs: dict[str, int] = field(default_factory=dict)
    skipped: str = ""

    def to_tuple(self) -> tuple[str, list[Definition], dict[str, int], str]:
        """A plain form for ``marshal`` (the cache's encoding)."""
        return (self.lang, self.defs, self.refs, self.skipped)

    @classmethod
    def from_tuple(cls, data: tuple[str, list[Definition], dict[str, int], str]) -> FileTags:
        """The inverse of ``to_tuple``."""
        lang, defs, refs, skipped = data
        return cls(lang, defs, refs, skipped)


def skip_reason(data: bytes, max_bytes: int) -> str:
    """Why ``data`` should not be parsed ("" when it should)."""
    if len(data) > max_bytes:
        return SKIP_LARGE
    if b"\x00" in data[:8192]:
        return SKIP_BINARY
    if len(data) >= 1024 and len(data) / (data.count(b"\n") + 1) > _MINIFIED_LINE_BYTES:
        return SKIP_MINIFIED
    return ""


def _line_text(lines: list[bytes], row: int) -> str:
    if row >= len(lines):
        return ""
    text = lines[row].rstrip().decode("utf-8", "replace").expandtabs(4)
    if len(text) > MAX_LINE_CHARS:
        text = text[: MAX_LINE_CHARS - 1] + "…"
    return text


def extract_tags(data: bytes, grammar: Grammar, max_bytes: int) -> FileTags:
    """The tags of one file's contents.

    A definition's span is that of its name's parent node (the function,
    class or declarator), enough to tell which definitions enclose which.
    """
    reason = skip_reason(data, max_bytes)
    if reason:
        return FileTags(grammar.name, skipped=reason)
    tree = grammar.parser.parse(data)
    captures = QueryCursor(grammar.query).captures(tree.root_node)
    lines: list[bytes] | None = None
    defs: dict[tuple[str, int], Definition] = {}
    # References are counted as raw bytes (the counting loop runs in C) and
    # decoded once per distinct name: they are most of the captures.
    raw_refs: Counter[bytes | None] = Counter()
    for capture, nodes in captures.items():
        if capture.startswith("name.reference."):
            raw_refs.update(map(_node_text, nodes))
            continue
        kind = capture.rpartition(".")[2]
        if lines is None:
            lines = data.split(b"\n")
        for node in nodes:
            name = _text(node)
            outer = node.parent or node
            row = outer.start_point[0]
            if name and (name, row) not in defs:
                defs[(name, row)] = (name, kind, row, outer.end_point[0], _line_text(lines, row))
    refs: dict[str, int] = {}
    for raw, count in raw_refs.items():
        if raw:
            name = raw.decode("utf-8", "replace")
            refs[name] = refs.get(name, 0) + count
    return FileTags(grammar.name, sorted(defs.values(), key=lambda d: (d[2], d[0])), refs)


_node_text = attrgetter("text")


def _text(node: Node) -> str:
    raw = node.text
    return raw.decode("utf-8", "replace") if raw else ""
