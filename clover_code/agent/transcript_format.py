"""The transcript's record format, and how a record refers to an earlier line
instead of repeating what that line holds.

Every line is one JSON object with a ``kind``. Format 2 (this version's):

- ``meta`` (line 1): ``format`` (2; absent in format 1), ``id``, ``cwd``, ``model``...
- ``message``: one chat message (``message``), appended to the conversation.
- ``tool_result``: a tool message whose content is the result of the
  ``tool_call_finished`` event ``from`` lines up (a negative offset): the
  output a tool returned is stored once, in the event, when the model saw
  the same text (a long output cut for the model is stored in both, as the
  texts differ).
- ``event``: a protocol event (``event``) for replay. A ``tool_call_started``
  or ``approval_requested`` event with ``arguments_from`` has no
  ``arguments``: they are those of its call in the assistant message that
  many lines up (stored there once, as the call's JSON text). A
  ``tool_call_finished`` event with ``diff_from`` has no ``diff`` in its
  ``display``: it is the diff of the ``approval_requested`` event that many
  lines up (the change made was the change shown).
- ``history``: the conversation rewritten whole (``messages``).
- ``history_edit``: the conversation rewritten as its first ``keep``
  messages, then ``messages``, then its last ``tail`` ones (compaction keeps
  the recent turns, an undo cuts the end, a resume answers a call).
- ``format``: the records after it are of that format (written when a newer
  version appends to an older file).

A reader skips kinds it does not know, so a new kind of record that older
readers may ignore needs no new format number; a change that an older reader
would read wrongly does, and a reader refuses a format newer than its own.
Format 1 (before this version) had only ``meta``, ``message``, ``event`` and
``history``; it still loads.
"""

from __future__ import annotations

import json
from typing import Any

from clover_code.engine.messages import Message, tool_calls
from clover_code.errors import UsageError

FORMAT = 2
"""The record format this version writes (and the newest it reads)."""

_ARGUMENT_EVENTS = frozenset({"tool_call_started", "approval_requested"})


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
    """The writer's side: turns each record into the line to write, referring to an
    earlier line where that line already holds the same text.

    Works on records already redacted, so what it compares is what is on disk.
    ``lines`` counts the file's lines (each record is one); ``history`` is the
    conversation as a reader rebuilds it from the file.
    """

    def __init__(self, history: list[Message] | None = None, lines: int = 0) -> None:
        self.lines = lines
        self.history: list[Message] = list(history or [])
        self._calls: tuple[int, dict[str, Any]] = (-1, {})
        """The line of the last assistant message with tool calls, and its calls."""
        self._results: dict[str, tuple[int, str]] = {}
        """Call id -> the line and result of its ``tool_call_finished`` event, until a
        tool message answers it."""
        self._diffs: dict[str, tuple[int, str]] = {}
        """Call id -> the line and diff of its ``approval_requested`` event, until the
        call finishes."""

    def message(self, message: Message) -> dict[str, Any]:
        """The record for ``message`` (a ``tool_result`` where the event holds its text)."""
        self.history.append(message)
        role = message.get("role")
        if role == "tool":
            found = self._results.pop(str(message.get("tool_call_id")), None)
            if found is not None and found[1] == message.get("content"):
                return self._line({"kind": "tool_result", "from": found[0] - self.lines})
        elif role == "assistant" and tool_calls(message):
            self._calls = (self.lines, _parsed_calls(message))
        return self._line({"kind": "message", "message": message})

    def event(self, event: dict[str, Any]) -> dict[str, Any]:
        """The record for ``event`` (without arguments its call's message holds)."""
        kind, call_id = event.get("type"), str(event.get("call_id"))
        if kind == "tool_call_finished":
            if isinstance(event.get("result"), str):
                self._results[call_id] = (self.lines, event["result"])
            shown = self._diffs.pop(call_id, None)
            display = event.get("display")
            if shown is not None and isinstance(display, dict) and display.get("diff") == shown[1]:
                rest = {k: v for k, v in display.items() if k != "diff"}
                record = {"kind": "event", "event": {**event, "display": rest}}
                return self._line({**record, "diff_from": shown[0] - self.lines})
            return self._line({"kind": "event", "event": event})
        if kind == "approval_requested" and isinstance(event.get("diff"), str):
            self._diffs[call_id] = (self.lines, event["diff"])
        if kind in _ARGUMENT_EVENTS and "arguments" in event:
            line, calls = self._calls
            if call_id in calls and _json(calls[call_id]) == _json(event["arguments"]):
                rest = {k: v for k, v in event.items() if k != "arguments"}
                return self._line(
                    {"kind": "event", "event": rest, "arguments_from": line - self.lines}
                )
        return self._line({"kind": "event", "event": event})

    def rewrite(self, messages: list[Message]) -> dict[str, Any]:
        """The record for the conversation rewritten to ``messages``: what changed only."""
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
            return self._line({"kind": "history", "messages": messages})
        middle = messages[keep : len(messages) - tail]
        return self._line({"kind": "history_edit", "keep": keep, "messages": middle, "tail": tail})

    def other(self, record: dict[str, Any]) -> dict[str, Any]:
        """Any other record, written as it is."""
        return self._line(record)

    def _line(self, record: dict[str, Any]) -> dict[str, Any]:
        self.lines += 1
        return record


class Expander:
    """The reader's side: rebuilds the conversation and the events from the records,
    filling in what a record refers to. Records are fed in file order, each with its
    0-based line number; ``UsageError`` for a reference to nothing."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.messages: list[Message] = []
        self.events: list[dict[str, Any]] = []
        self._results: dict[int, dict[str, Any]] = {}
        """Line -> a ``tool_call_finished`` event on it."""
        self._calls: dict[int, Message] = {}
        """Line -> an assistant message with tool calls on it."""
        self._asked: dict[int, dict[str, Any]] = {}
        """Line -> an ``approval_requested`` event on it."""

    def feed(self, line: int, record: dict[str, Any]) -> None:
        """Take one record (``meta`` and unknown kinds are left to the caller)."""
        kind = record.get("kind")
        if kind == "message":
            message: Message = record["message"]
            if message.get("role") == "assistant" and message.get("tool_calls"):
                self._calls[line] = message
            self.messages.append(message)
        elif kind == "tool_result":
            event = self._results.get(line + int(record["from"]))
            if event is None:
                raise self._damaged(line)
            content = event["result"]
            self.messages.append(
                {"role": "tool", "tool_call_id": str(event["call_id"]), "content": content}
            )
        elif kind == "event":
            event = self._event(line, record)
            if event.get("type") == "tool_call_finished":
                self._results[line] = event
            elif event.get("type") == "approval_requested":
                self._asked[line] = event
            self.events.append(event)
        elif kind == "history":
            self.messages = list(record["messages"])
        elif kind == "history_edit":
            keep, tail = int(record["keep"]), int(record["tail"])
            if keep + tail > len(self.messages):
                raise self._damaged(line)
            end = self.messages[len(self.messages) - tail :] if tail else []
            self.messages = self.messages[:keep] + list(record["messages"]) + end

    def _event(self, line: int, record: dict[str, Any]) -> dict[str, Any]:
        """An event record's event, with what it refers to filled in."""
        event: dict[str, Any] = record["event"]
        if "arguments_from" in record:
            holder = self._calls.get(line + int(record["arguments_from"]))
            calls = _parsed_calls(holder) if holder is not None else {}
            if event.get("call_id") not in calls:
                raise self._damaged(line)
            event = {**event, "arguments": calls[event["call_id"]]}
        if "diff_from" in record:
            asked = self._asked.get(line + int(record["diff_from"]))
            if asked is None or not isinstance(event.get("display"), dict):
                raise self._damaged(line)
            event = {**event, "display": {**event["display"], "diff": asked["diff"]}}
        return event

    def _damaged(self, line: int) -> UsageError:
        return UsageError(
            f"session file {self.name} is damaged at line {line + 1} (it refers to a line "
            "that is not there); start a new session or repair the file."
        )


def check_format(record: dict[str, Any], name: str) -> None:
    """Refuse a ``meta`` or ``format`` record of a format newer than this version's."""
    found = record.get("format", 1)
    if not isinstance(found, int) or found > FORMAT:
        raise UsageError(
            f"session file {name} was written by a newer clover-code (transcript format "
            f"{found}; this one reads up to {FORMAT}); update clover-code to open it."
        )
