"""How a tool call shows in the editor: its ACP kind, its title and its content.

Pure helpers shared by the event mapper (``updates.py``) and the editor's
approvals (``client.py``): a call's card is titled from its name and path,
results are capped (the model sees all) and fenced so that Markdown cannot
break them, and an edit's diagnostics are listed as the model read them.
"""

from __future__ import annotations

from typing import Any

from acp.schema import (
    ContentToolCallContent,
    FileEditToolCallContent,
    TerminalToolCallContent,
    ToolKind,
)

from clover_code import protocol as p

__all__ = [
    "RESULT_CHARS",
    "ToolContent",
    "acp_kind",
    "capped",
    "diagnostics",
    "fenced",
    "tail",
    "tool_title",
]

ToolContent = ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent

RESULT_CHARS = 8000
"""Most characters of a tool result shown in the editor (the model sees all)."""

_KINDS: dict[str, ToolKind] = {
    "read": "read",
    "search": "search",
    "edit": "edit",
    "execute": "execute",
    "fetch": "fetch",
}


def acp_kind(kind: str) -> ToolKind:
    """The ACP tool kind for one of ours (``other`` for anything unknown)."""
    return _KINDS.get(kind, "other")


def tool_title(name: str, summary: str, arguments: dict[str, Any]) -> str:
    """A short human title for a tool call card."""
    path = arguments.get("path")
    verbs = {"read_file": "Read", "write_file": "Write", "edit_file": "Edit"}
    if name in verbs and isinstance(path, str):
        return f"{verbs[name]} {path}"
    if name == "shell" and summary:
        return summary
    return f"{name} {summary}".strip()


def fenced(text: str, language: str = "") -> str:
    """``text`` as a Markdown code block whose fence cannot clash with its content."""
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{fence}{language}\n{body}{fence}"


def capped(text: str) -> str:
    """``text``, cut after ``RESULT_CHARS`` characters with a note of how many more."""
    if len(text) <= RESULT_CHARS:
        return text
    return f"{text[:RESULT_CHARS]}\n[… {len(text) - RESULT_CHARS} more characters]"


def tail(text: str) -> str:
    """The last ``RESULT_CHARS`` characters of ``text``, with a note of how many came before."""
    if len(text) <= RESULT_CHARS:
        return text
    return f"[… {len(text) - RESULT_CHARS} characters before]\n{text[-RESULT_CHARS:]}"


def diagnostics(items: list[p.Diagnostic]) -> str:
    """An edit's diagnostics, one per line, as the model read them."""
    return "Diagnostics after this change:\n" + "\n".join(
        f"{d.path}:{d.line}:{d.column}: {d.severity}: {d.message}" for d in items
    )
