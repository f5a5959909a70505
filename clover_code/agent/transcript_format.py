"""The transcript's record format: what each line holds, and how a line refers to an
earlier one instead of repeating what that line holds.

Every line is one JSON object with a ``kind``. Format 2 (this version's):

- ``meta`` (line 1): ``format`` (2; absent in format 1), ``id``, ``cwd``, ``model``...
- ``message``: one chat message (``message``), appended to the conversation.
- ``tool_result``: a tool call's end, stored once: its ``tool_call_finished``
  event (``event``, without ``result``) and the text the model got back
  (``content``), which is both the tool message's content and the event's
  result. (Where a long output was cut for the model, the event read back
  holds the cut text the model saw; the whole is in the session's
  ``.outputs`` folder.) With ``diff_from``, the event's ``display`` has no
  ``diff``: it is the diff of the ``approval_requested`` event that many
  lines up (the change made was the change shown).
- ``event``: a protocol event (``event``) for replay. A ``tool_call_started``
  or ``approval_requested`` event with ``arguments_from`` has no
  ``arguments``: they are those of its call in the assistant message that
  many lines up (stored there once, as the call's JSON text).
- ``history``: the conversation rewritten whole (``messages``).
- ``history_edit``: the conversation rewritten as its first ``keep``
  messages, then ``messages``, then its last ``tail`` ones (compaction keeps
  the recent turns, an undo cuts the end, a resume answers a call).
- ``format``: the records after it are of that format (written when a newer
  version appends to an older file).

References only point up, so every prefix of a file reads whole. A reader
skips kinds it does not know, so a new kind of record that older readers may
ignore needs no new format number; a change that an older reader would read
wrongly does, and a reader refuses a format newer than its own. Format 1
(before this version) had only ``meta``, ``message``, ``event`` and
``history``, with each tool result in both its event and its message; it
still loads.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from clover_code.engine.messages import Message, tool_calls
from clover_code.errors import UsageError

FORMAT = 2
"""The record format this version writes (and the newest it reads)."""

_ARGUMENT_EVENTS = frozenset({"tool_call_started", "approval_requested"})
_TOOL_MESSAGE_KEYS = {"role", "tool_call_id", "content"}

Record = dict[str, Any]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _parsed_calls(message: Message) -> dict[str, Any]:
    """Call id -> arguments (parsed) of an assistant message's tool calls that parse."""
    calls: dict[str, Any] = {}
    for call in tool_calls(message):
        try:
            calls[call["id"]] = json.loads(call["function"]["arguments"])
        except (KeyError, TypeError, ValueError):
            continue  # a reference needs arguments that read back the same
    return calls


class Condenser:
    """The writer's side: turns what the session records into the lines to write.

    Works on records already redacted, so what it compares is what is on disk.
    A ``tool_call_finished`` event is held until the tool message answering its
    call comes (the two become one ``tool_result`` line); ``flush`` gives the
    held ones that no message answered, as plain events. ``lines`` counts the
    file's lines; ``history`` is the conversation as a reader rebuilds it.
    """

    def __init__(self, history: list[Message] | None = None, lines: int = 0) -> None:
        self.lines = lines
        self.history: list[Message] = list(history or [])
        self._calls: tuple[int, dict[str, Any]] = (-1, {})
        """The line of the last assistant message with tool calls, and its calls."""
        self._held: dict[str, Record] = {}
        """Call id -> its ``tool_call_finished`` event, until a tool message answers it."""
        self._diffs: dict[str, tuple[int, str]] = {}
        """Call id -> the line and diff of its ``approval_requested`` event."""

    def message(self, message: Message) -> list[Record]:
        """The lines for ``message``."""
        self.history.append(message)
        role = message.get("role")
        if role == "tool" and set(message) == _TOOL_MESSAGE_KEYS:
            # (a message with more keys than a reader rebuilds is written as it is)
            call_id = str(message.get("tool_call_id"))
            finished = self._held.pop(call_id, None)
            if finished is not None:
                return [self._tool_result(call_id, finished, message.get("content"))]
        elif role == "assistant" and tool_calls(message):
            self._calls = (self.lines, _parsed_calls(message))
        return [self._line({"kind": "message", "message": message})]

    def event(self, event: Record) -> list[Record]:
        """The lines for ``event`` (none yet for a finished call: it waits for its message)."""
        kind, call_id = event.get("type"), str(event.get("call_id"))
        if kind == "tool_call_finished":
            earlier = self._held.pop(call_id, None)  # a reused id that no message answered
            self._held[call_id] = event
            return [self._line({"kind": "event", "event": earlier})] if earlier else []
        if kind == "approval_requested" and isinstance(event.get("diff"), str):
            self._diffs[call_id] = (self.lines, event["diff"])
        if kind in _ARGUMENT_EVENTS and "arguments" in event:
            line, calls = self._calls
            if call_id in calls and _json(calls[call_id]) == _json(event["arguments"]):
                rest = {k: v for k, v in event.items() if k != "arguments"}
                return [
                    self._line(
                        {"kind": "event", "event": rest, "arguments_from": line - self.lines}
                    )
                ]
        return [self._line({"kind": "event", "event": event})]

    def flush(self) -> list[Record]:
        """The held events no tool message answered, as plain events."""
        held, self._held = list(self._held.values()), {}
        return [self._line({"kind": "event", "event": event}) for event in held]

    def rewrite(self, messages: list[Message]) -> list[Record]:
        """The line for the conversation rewritten to ``messages``: what changed only."""
        old = self.history
        keep = 0
        most = min(len(old), len(messages))
        while keep < most and old[keep] == messages[keep]:
            keep += 1
        tail = 0
        while tail < most - keep and old[-1 - tail] == messages[-1 - tail]:
            tail += 1
        self.history = list(messages)
        if keep == 0 and tail == 0:
            return [self._line({"kind": "history", "messages": messages})]
        middle = messages[keep : len(messages) - tail]
        return [
            self._line({"kind": "history_edit", "keep": keep, "messages": middle, "tail": tail})
        ]

    def other(self, record: Record) -> list[Record]:
        """Any other record, written as it is."""
        return [self._line(record)]

    def _tool_result(self, call_id: str, finished: Record, content: object) -> Record:
        event = {k: v for k, v in finished.items() if k != "result"}
        record: Record = {"kind": "tool_result", "event": event, "content": content}
        shown = self._diffs.pop(call_id, None)
        display = event.get("display")
        if shown is not None and isinstance(display, dict) and display.get("diff") == shown[1]:
            event["display"] = {k: v for k, v in display.items() if k != "diff"}
            record["diff_from"] = shown[0] - self.lines
        return self._line(record)

    def _line(self, record: Record) -> Record:
        self.lines += 1
        return record


Entry = tuple[Literal["message", "event", "rewrite"], Any]
"""One step of a session in file order: a message appended to the conversation, an
event, or the conversation rewritten (to the messages given)."""


class Expander:
    """The reader's side: rebuilds the conversation and the events from the records,
    filling in what a record refers to. Records are fed in file order, each with its
    0-based line number; ``UsageError`` for a reference to nothing. ``timeline`` has
    every message and event in the order they were recorded (for an export: the
    conversation as it went, before any compaction)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.messages: list[Message] = []
        self.events: list[Record] = []
        self.timeline: list[Entry] = []
        self._calls: dict[int, Message] = {}
        """Line -> an assistant message with tool calls on it."""
        self._asked: dict[int, Record] = {}
        """Line -> an ``approval_requested`` event on it."""

    def feed(self, line: int, record: Record) -> None:
        """Take one record (``meta`` and unknown kinds are left to the caller)."""
        kind = record.get("kind")
        if kind == "message":
            message: Message = record["message"]
            if message.get("role") == "assistant" and message.get("tool_calls"):
                self._calls[line] = message
            self._message(message)
        elif kind == "tool_result":
            content = record["content"]
            event = {**self._with_diff(line, record, record["event"]), "result": content}
            self._event(event)
            call_id = str(event["call_id"])
            self._message({"role": "tool", "tool_call_id": call_id, "content": content})
        elif kind == "event":
            event = self._with_arguments(line, record, record["event"])
            if event.get("type") == "approval_requested":
                self._asked[line] = event
            self._event(event)
        elif kind == "history":
            self._rewrite(list(record["messages"]))
        elif kind == "history_edit":
            keep, tail = int(record["keep"]), int(record["tail"])
            if keep + tail > len(self.messages):
                raise self._damaged(line)
            end = self.messages[len(self.messages) - tail :] if tail else []
            self._rewrite(self.messages[:keep] + list(record["messages"]) + end)

    def _message(self, message: Message) -> None:
        self.messages.append(message)
        self.timeline.append(("message", message))

    def _event(self, event: Record) -> None:
        self.events.append(event)
        self.timeline.append(("event", event))

    def _rewrite(self, messages: list[Message]) -> None:
        self.messages = messages
        self.timeline.append(("rewrite", messages))

    def _with_arguments(self, line: int, record: Record, event: Record) -> Record:
        if "arguments_from" not in record:
            return event
        holder = self._calls.get(line + int(record["arguments_from"]))
        calls = _parsed_calls(holder) if holder is not None else {}
        if event.get("call_id") not in calls:
            raise self._damaged(line)
        return {**event, "arguments": calls[event["call_id"]]}

    def _with_diff(self, line: int, record: Record, event: Record) -> Record:
        if "diff_from" not in record:
            return event
        asked = self._asked.get(line + int(record["diff_from"]))
        if asked is None or not isinstance(event.get("display"), dict):
            raise self._damaged(line)
        return {**event, "display": {**event["display"], "diff": asked["diff"]}}

    def _damaged(self, line: int) -> UsageError:
        return UsageError(
            f"session file {self.name} is damaged at line {line + 1} (it refers to a line "
            "that is not there); start a new session or repair the file."
        )


def check_format(record: Record, name: str) -> None:
    """Refuse a ``meta`` or ``format`` record of a format newer than this version's."""
    found = record.get("format", 1)
    if not isinstance(found, int) or found > FORMAT:
        raise UsageError(
            f"session file {name} was written by a newer clover-code (transcript format "
            f"{found}; this one reads up to {FORMAT}); update clover-code to open it."
        )
