"""A stored session's tool calls as its events recorded them, for front ends that show
the session again (the app's resume, ACP's ``session/load``).

The conversation gives the order of the calls; the recorded events give what
it does not keep: each call's kind, summary, display (an edit's diff and its
confidences), final status, and a child agent's events. Calls are taken in
order per id, since a server that sends no ids reuses ``call_0`` in every
response: each start begins a new call.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from clover_code.protocol.events import EVENT_ADAPTER, Event, SubagentEvent
from clover_code.protocol.tool_events import (
    BackgroundTaskFinished,
    ToolCallFinished,
    ToolCallStarted,
)

__all__ = ["RecordedCall", "RecordedCalls", "recorded_events"]


def recorded_events(raw: Iterable[dict[str, Any]]) -> list[Event]:
    """The events of a transcript that this version can read (others are left out: the
    conversation still tells the story)."""
    events: list[Event] = []
    for item in raw:
        try:
            events.append(EVENT_ADAPTER.validate_python(item))
        except ValidationError:
            continue
    return events


@dataclass(slots=True)
class RecordedCall:
    """The recorded events of one tool call."""

    started: ToolCallStarted
    finished: ToolCallFinished | None = None
    """None: its end was never written (the process died during it)."""
    children: list[SubagentEvent] = field(default_factory=list)
    """A ``task`` call's child agent's events, in order."""
    background: BackgroundTaskFinished | None = None
    """A child that went on in the background: how it ended."""


class RecordedCalls:
    """The recorded calls of a session, taken in order per call id."""

    def __init__(self, events: Iterable[Event]) -> None:
        self._calls: dict[str, deque[RecordedCall]] = {}
        latest: dict[str, RecordedCall] = {}
        for event in events:
            if isinstance(event, ToolCallStarted):
                call = latest[event.call_id] = RecordedCall(event)
                self._calls.setdefault(event.call_id, deque()).append(call)
            elif isinstance(event, ToolCallFinished) and event.call_id in latest:
                latest[event.call_id].finished = event
            elif isinstance(event, SubagentEvent) and event.parent_call_id in latest:
                latest[event.parent_call_id].children.append(event)
            elif isinstance(event, BackgroundTaskFinished) and event.call_id in latest:
                latest[event.call_id].background = event

    def take(self, call_id: str) -> RecordedCall | None:
        """The next recorded call with this id; None when no more were recorded."""
        waiting = self._calls.get(call_id)
        return waiting.popleft() if waiting else None
