"""A resumed session's earlier messages, drawn in the transcript before it goes on.

Prompts and answers come from the conversation; each tool call is drawn as the
card it was, from the events the transcript recorded for it (its diff, shaded
by the confidences it was written with when the view is on, its child agent's
calls, its result). A call with no recorded events (a transcript written
before events were kept) is one line naming it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from clover_code import protocol as p
from clover_code.ui.widgets.transcript import Transcript

if TYPE_CHECKING:
    from clover_code.protocol.recorded_calls import RecordedCall

__all__ = ["show_history"]


def _start_call(transcript: Transcript, call: RecordedCall) -> None:
    """Draw a recorded call's card, and its child agent's calls."""
    transcript.add_tool(call.started)
    for child in call.children:
        transcript.subagent_event(child)


def _end_call(transcript: Transcript, call: RecordedCall, answer: str) -> None:
    """Finish a recorded call's card. One whose end was never written (the process
    died) shows ``answer``, what the conversation holds for it, as cancelled."""
    finished = call.finished or p.ToolCallFinished(
        call_id=call.started.call_id, name=call.started.name, status="cancelled", result=answer
    )
    transcript.tool_finished(finished)
    if call.background is not None:
        transcript.background_finished(call.background)


def show_history(transcript: Transcript, path: Path) -> None:
    """Draw the earlier messages of the session stored at ``path``."""
    from clover_code.agent.open import load
    from clover_code.engine.base import content_text, image_count, tool_calls
    from clover_code.errors import CloverError
    from clover_code.protocol.recorded_calls import RecordedCalls, recorded_events

    try:
        loaded = load(path)
    except CloverError as exc:
        transcript.add_note(str(exc), "error")
        return
    calls = RecordedCalls(recorded_events(loaded.events))
    open_calls: dict[str, RecordedCall] = {}  # drawn, waiting for their answer
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
                recorded = calls.take(call_id)
                if recorded is not None:
                    _start_call(transcript, recorded)
                    open_calls[call_id] = recorded
                else:
                    name = call.get("function", {}).get("name", "?")
                    transcript.add_note(f"(called {name})")
        elif role == "tool":
            ended = open_calls.pop(str(message.get("tool_call_id")), None)
            if ended is not None:
                _end_call(transcript, ended, content_text(message))
    transcript.end_turn()
