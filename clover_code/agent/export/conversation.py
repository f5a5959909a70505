"""A stored session as the conversation it was: prompts, replies with their reasoning,
and each tool call with its arguments, result and diff, in the order they happened
(the turns a compaction summarised included), every text without secrets."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from clover_code.agent.transcript_load import INTERRUPTED, read
from clover_code.engine.messages import Message, tool_calls
from clover_code.redact import redact, redact_tree

__all__ = ["Call", "Conversation", "Note", "Prompt", "Reply", "grouped", "read_conversation"]


@dataclass(slots=True)
class Call:
    """One tool call and what came of it."""

    id: str
    name: str
    arguments: Any
    """The arguments, parsed (the raw text where they do not parse as JSON)."""
    summary: str = ""
    status: str | None = None
    """ok, error, denied, cancelled or interrupted; None when no result was recorded."""
    output: str | None = None
    """The text the model got back."""
    diff: str | None = None
    """For an edit or a patch: the change it made, as a unified diff."""


@dataclass(slots=True)
class Prompt:
    """What the user sent."""

    text: str


@dataclass(slots=True)
class Reply:
    """One model response: its reasoning, its text and the tools it called."""

    text: str
    reasoning: str = ""
    calls: list[Call] = field(default_factory=list)


@dataclass(slots=True)
class Note:
    """Something that happened besides the conversation (an error, a compaction...)."""

    text: str
    level: Literal["info", "error"] = "info"


Item = Prompt | Reply | Note


def grouped(items: list[Item]) -> list[Prompt | list[Reply] | Note]:
    """``items`` with each run of replies (the steps of one answer) as one list."""
    out: list[Prompt | list[Reply] | Note] = []
    for item in items:
        if isinstance(item, Reply):
            last = out[-1] if out else None
            if isinstance(last, list):
                last.append(item)
            else:
                out.append([item])
        else:
            out.append(item)
    return out


@dataclass(slots=True)
class Conversation:
    """A session, ready to be written out."""

    session_id: str
    cwd: str
    model: str
    started: str
    """``2026-01-01 09:30 UTC``, or '' when the id does not say."""
    forked_from: str | None
    items: list[Item]


def _started(session_id: str) -> str:
    try:
        when = datetime.strptime(session_id[:15], "%Y%m%d-%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        return ""
    return when.strftime("%Y-%m-%d %H:%M UTC")


def _arguments(text: str) -> Any:
    try:
        return redact_tree(json.loads(text))
    except ValueError:
        return redact(text)


_FAILED = ("error:", "denied:", "refused:", "cancelled:")


class _Builder:
    """Walks a session's timeline into items."""

    def __init__(self) -> None:
        self.items: list[Item] = []
        self.waiting: dict[str, list[Call]] = {}
        """Call id -> calls with that id (servers may reuse one) awaiting their result."""

    def _call(self, call_id: str, *, take: bool = False) -> Call | None:
        queue = self.waiting.get(call_id) or []
        if not queue:
            return None
        return queue.pop(0) if take else queue[0]

    def message(self, message: Message) -> None:
        role = message.get("role")
        content = message.get("content")
        text = redact(content) if isinstance(content, str) else ""
        if role == "user":
            self.items.append(Prompt(text))
        elif role == "assistant":
            reasoning = message.get("reasoning_content")
            reply = Reply(text, redact(reasoning) if isinstance(reasoning, str) else "")
            for item in tool_calls(message):
                function = item.get("function", {})
                call = Call(
                    str(item.get("id", "")),
                    redact(str(function.get("name", "tool"))),
                    _arguments(str(function.get("arguments", ""))),
                )
                reply.calls.append(call)
                self.waiting.setdefault(call.id, []).append(call)
            self.items.append(reply)
        elif role == "tool":
            answered = self._call(str(message.get("tool_call_id", "")), take=True)
            if answered is not None:
                answered.output = text
                if answered.status is None:
                    answered.status = "error" if text.startswith(_FAILED) else "ok"
                if text == INTERRUPTED:
                    answered.status = "interrupted"

    def event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "tool_call_started":
            call = self._call(str(event.get("call_id", "")))
            if call is not None:
                call.summary = redact(str(event.get("summary", "")))
        elif kind == "tool_call_finished":
            call = self._call(str(event.get("call_id", "")))
            if call is not None:
                call.status = str(event.get("status", "")) or None
                display = event.get("display")
                diff = display.get("diff") if isinstance(display, dict) else None
                call.diff = redact(diff) if isinstance(diff, str) and diff else None
        elif kind == "compacted":
            summary = redact(str(event.get("summary", "")))
            lead = "The conversation was compacted; the model went on from this summary:"
            self.items.append(Note(f"{lead}\n\n{summary}"))
        elif kind == "undo_done":
            files = ", ".join(str(f) for f in event.get("files") or []) or "no files"
            self.items.append(Note(f"Undo: {redact(files)} put back."))
        elif kind == "error":
            self.items.append(Note(redact(str(event.get("message", ""))), "error"))
        elif kind == "notice":
            self.items.append(Note(redact(str(event.get("text", "")))))
        elif kind == "turn_finished" and event.get("status") not in (None, "completed"):
            self.items.append(Note(f"The turn ended: {event.get('status')}."))


def read_conversation(path: Path) -> Conversation:
    """The session stored at ``path`` (``UsageError`` when it cannot be read)."""
    reading = read(path)
    builder = _Builder()
    for kind, value in reading.timeline:
        if kind == "message":
            builder.message(value)
        elif kind == "event":
            builder.event(value)
    meta = reading.session.meta
    session_id = redact(str(meta.get("id", path.stem)))
    forked = meta.get("forked_from")
    return Conversation(
        session_id=session_id,
        cwd=redact(str(meta.get("cwd", ""))),
        model=redact(str(meta.get("model", ""))),
        started=_started(session_id),
        forked_from=redact(str(forked)) if forked else None,
        items=builder.items,
    )
