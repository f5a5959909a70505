"""A conversation as Markdown: prompts and replies as they were written, reasoning as a
quote, each tool call with its arguments, result and diff in fenced blocks."""

from __future__ import annotations

import json
import re
from typing import Any

from clover_code.agent.export.conversation import Call, Conversation, Note, Prompt, grouped

__all__ = ["to_markdown"]

_TICKS = re.compile(r"`{3,}")


def _fenced(text: str, language: str = "") -> str:
    """``text`` in a code fence longer than any run of backticks inside it."""
    longest = max((len(run) for run in _TICKS.findall(text)), default=2)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text.rstrip(chr(10))}\n{fence}"


def _arguments(arguments: Any) -> str:
    if isinstance(arguments, str):
        return _fenced(arguments)
    return _fenced(json.dumps(arguments, indent=2, ensure_ascii=False), "json")


def _quoted(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.splitlines())


def _call(call: Call) -> list[str]:
    summary = f" — {call.summary}" if call.summary else ""
    lines = [f"#### Tool call `{call.name}`{summary}", "", _arguments(call.arguments), ""]
    if call.output is None:
        lines += ["No result was recorded (the session stopped during this call).", ""]
    else:
        lines += [f"Result ({call.status or 'ok'}):", "", _fenced(call.output), ""]
    if call.diff:
        lines += ["Diff:", "", _fenced(call.diff, "diff"), ""]
    return lines


def to_markdown(conversation: Conversation) -> str:
    """``conversation`` as one Markdown document."""
    c = conversation
    lines = [f"# clover-code session {c.session_id}", ""]
    lines += [f"- Directory: `{c.cwd}`", f"- Model: `{c.model}`"]
    lines += [f"- Started: {c.started}"] if c.started else []
    lines += [f"- Forked from: {c.forked_from}"] if c.forked_from else []
    lines.append("")
    for item in grouped(c.items):
        if isinstance(item, Prompt):
            lines += ["## User", "", item.text, ""]
        elif isinstance(item, list):
            lines += ["## Assistant", ""]
            for reply in item:
                if reply.reasoning:
                    lines += ["> **Reasoning**", ">", _quoted(reply.reasoning), ""]
                if reply.text:
                    lines += [reply.text, ""]
                for call in reply.calls:
                    lines += _call(call)
        elif isinstance(item, Note):
            label = "Error" if item.level == "error" else "Note"
            lines += [_quoted(f"**{label}:** {item.text}"), ""]
    return "\n".join(lines).rstrip("\n") + "\n"
