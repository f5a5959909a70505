"""Reading a transcript back: the conversation and the events, from any format.

A crash can only tear the last line (records are appended whole); a torn or
unreadable last line is dropped, never the session. Damage before it is one
sentence. ``transcript_format.py`` says what each record holds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clover_code.agent.transcript_format import Entry, Expander, check_format
from clover_code.engine.messages import Message, tool_calls
from clover_code.errors import UsageError


@dataclass(slots=True)
class LoadedSession:
    """What ``load`` recovers from a transcript file."""

    meta: dict[str, Any]
    messages: list[Message] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    dropped_torn_line: bool = False
    interrupted: int = 0
    """Tool calls that had no result (the process died during them), now answered."""
    model: str | None = None
    """The model the session last switched to (a ``[models]`` name or an id); None
    when it never switched."""
    answer_confidence: dict[int, str] = field(default_factory=dict)
    """The recorded fill confidences of answers: index in ``messages`` of an assistant
    message -> its content's ``answer_confidence`` (the compact form)."""


@dataclass(frozen=True, slots=True)
class Reading:
    """A transcript as read: the session, and what a writer appending to it needs."""

    session: LoadedSession
    recorded: list[Message]
    """The conversation as the file has it (before interrupted calls are answered)."""
    lines: int
    """Whole lines (records) kept."""
    size: int
    """Bytes up to the end of the last whole line (a torn line starts there)."""
    format: int
    """The format of the last records (1 for a file written before formats were numbered)."""
    timeline: list[Entry]
    """Every message and event in the order they were recorded."""


def read_records(data: bytes, path: Path) -> Reading:
    """Read a transcript's bytes (``path`` names it in errors).

    A last line without its newline, or one that does not parse, is torn: a
    record counts once its newline is written."""
    whole = data.rfind(b"\n") + 1
    lines = data[:whole].split(b"\n")[:-1]
    dropped = whole < len(data)
    meta: dict[str, Any] | None = None
    found_format = 1
    model: str | None = None
    expander = Expander(str(path))
    size = kept = 0
    for number, line in enumerate(lines):
        try:
            record = json.loads(line)
            if not isinstance(record, dict):
                raise ValueError("not a record")
        except ValueError:
            if number == len(lines) - 1:
                dropped = True
                break
            raise _damaged(path, number) from None
        kind = record.get("kind")
        if number == 0:
            if kind != "meta":
                break
            check_format(record, str(path))
            meta, found_format = record, int(record.get("format", 1))
        elif kind == "format":
            check_format(record, str(path))
            found_format = int(record["format"])
        elif kind == "model":
            model = str(record.get("name") or record.get("model") or "") or None
        else:
            try:
                expander.feed(number, record)
            except (KeyError, TypeError, ValueError):
                raise _damaged(path, number) from None
        size += len(line) + 1
        kept += 1
    if meta is None:
        raise UsageError(f"session file {path} has no session header; it cannot be resumed.")
    recorded = expander.messages
    messages, interrupted = answer_interrupted(recorded)
    session = LoadedSession(meta, messages, expander.events, dropped, interrupted, model)
    session.answer_confidence = _answer_confidence(expander.timeline, messages)
    return Reading(session, recorded, kept, size, found_format, expander.timeline)


def _answer_confidence(timeline: list[Entry], messages: list[Message]) -> dict[int, str]:
    """Which of ``messages`` have recorded confidences: a response's ``answer_confidence``
    is recorded just before the assistant message holding that answer. (A message
    rewritten by a compaction is a new one, and has none.)"""
    found: dict[int, str] = {}
    pending: str | None = None
    for kind, item in timeline:
        if kind == "event":
            if item.get("type") == "answer_confidence":
                confidence = item.get("confidence")
                pending = confidence if isinstance(confidence, str) else None
            continue
        if kind == "message" and item.get("role") == "assistant" and pending is not None:
            found[id(item)] = pending
        pending = None
    return {index: found[id(m)] for index, m in enumerate(messages) if id(m) in found}


def _damaged(path: Path, number: int) -> UsageError:
    return UsageError(
        f"session file {path} is damaged at line {number + 1}; "
        "start a new session or repair the file."
    )


def load(path: Path) -> LoadedSession:
    """Read a transcript; a torn or corrupt last line is dropped, never the session."""
    return read(path).session


def read(path: Path) -> Reading:
    """Read the transcript at ``path`` (``UsageError`` when there is none to read)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"session file {path} does not exist.") from None
    except OSError as exc:
        raise UsageError(f"session file {path} cannot be read ({exc.strerror}).") from None
    return read_records(raw, path)


INTERRUPTED = (
    "[interrupted: clover-code stopped while this tool call ran, so it has no result; "
    "it may have run in part. Check its effects before running it again.]"
)
"""The result given on load to a tool call that never got one (the process was killed)."""


def answer_interrupted(messages: list[Message]) -> tuple[list[Message], int]:
    """``messages`` with a result after every assistant tool call that has none (a strict
    server rejects tool calls with no results after them), and how many were added."""
    out: list[Message] = []
    pending: list[str] = []
    added = 0

    def answer_pending() -> None:
        nonlocal added
        for call_id in pending:
            out.append({"role": "tool", "tool_call_id": call_id, "content": INTERRUPTED})
            added += 1
        pending.clear()

    for message in messages:
        answered = message.get("tool_call_id")
        if message.get("role") == "tool" and answered in pending:
            pending.remove(str(answered))
            out.append(message)
            continue
        answer_pending()
        out.append(message)
        if message.get("role") == "assistant":
            calls = tool_calls(message)
            pending[:] = [str(c["id"]) for c in calls if isinstance(c, dict) and c.get("id")]
    answer_pending()
    return out, added
