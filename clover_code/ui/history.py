"""A resumed session's earlier messages, drawn in the transcript before it goes on.

Prompts and answers come from the conversation; each tool call is drawn as the
card it was, from the events the transcript recorded for it (its diff, shaded
by the confidences it was written with when the view is on, its child agent's
calls, its result). A call with no recorded events (a transcript written
before events were kept) is one line naming it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from clover_code import protocol as p
from clover_code.ui.widgets.transcript import Transcript

__all__ = ["show_history"]


@dataclass(slots=True)
class _Call:
    """The recorded events of one tool call."""

    started: p.ToolCallStarted
    finished: p.ToolCallFinished | None = None
    children: list[p.SubagentEvent] = field(default_factory=list)
    background: p.BackgroundTaskFinished | None = None


class _RecordedCalls:
    """The recorded events of a session's tool calls, in order, by call id (a server
    may give the calls of each response the same ids: each start begins a new call)."""

    def __init__(self, events: Iterable[dict[str, Any]]) -> None:
        self._calls: dict[str, deque[_Call]] = {}
        self._latest: dict[str, _Call] = {}
        for event in events:
            try:
                self._add(event)
            except ValidationError:
                continue  # a shape this version cannot read: that call is drawn as a line

    def _add(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "tool_call_started":
            call = _Call(p.ToolCallStarted.model_validate(event))
            self._latest[call.started.call_id] = call
            self._calls.setdefault(call.started.call_id, deque()).append(call)
            return
        call_id = event.get("parent_call_id" if kind == "subagent_event" else "call_id")
        latest = self._latest.get(str(call_id))
        if latest is None:
            return
        if kind == "tool_call_finished":
            latest.finished = p.ToolCallFinished.model_validate(event)
        elif kind == "subagent_event":
            latest.children.append(p.SubagentEvent.model_validate(event))
        elif kind == "background_task_finished":
            latest.background = p.BackgroundTaskFinished.model_validate(event)

    def draw(self, transcript: Transcript, call_id: str, result: str | None) -> bool:
        """Draw the next call ``call_id`` as its card; False when none of its events
        was kept. A call that never finished (the process died) shows ``result``, the
        answer the conversation holds for it, as cancelled."""
        waiting = self._calls.get(call_id)
        if not waiting:
            return False
        call = waiting.popleft()
        transcript.add_tool(call.started)
        for child in call.children:
            transcript.subagent_event(child)
        finished = call.finished or p.ToolCallFinished(
            call_id=call_id, name=call.started.name, status="cancelled", result=result or ""
        )
        transcript.tool_finished(finished)
        if call.background is not None:
            transcript.background_finished(call.background)
        return True


def show_history(transcript: Transcript, path: Path) -> None:
    """Draw the earlier messages of the session stored at ``path``."""
    from clover_code.agent.open import load
    from clover_code.engine.base import content_text, image_count, tool_calls
    from clover_code.errors import CloverError

    try:
        loaded = load(path)
    except CloverError as exc:
        transcript.add_note(str(exc), "error")
        return
    calls = _RecordedCalls(loaded.events)
    results = {
        str(message.get("tool_call_id")): content_text(message)
        for message in loaded.messages
        if message.get("role") == "tool"
    }
    for index, message in enumerate(loaded.messages):
        role, content = message.get("role"), message.get("content") or ""
        if role == "user" and isinstance(content, str):
            transcript.add_user(content)
        elif role == "user":  # a prompt with images
            transcript.add_user(content_text(message))
            images = image_count(message)
            transcript.add_note(f"({images} image{'s' if images > 1 else ''} attached)")
        elif role == "assistant":
            if isinstance(content, str) and content:
                confidence = loaded.answer_confidence.get(index)
                transcript.add_past_answer(content, confidence)
            for call in tool_calls(message):
                call_id = str(call.get("id"))
                if not calls.draw(transcript, call_id, results.get(call_id)):
                    name = call.get("function", {}).get("name", "?")
                    transcript.add_note(f"(called {name})")
    transcript.end_turn()
