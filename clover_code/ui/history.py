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


def _draw_call(
    transcript: Transcript, call: RecordedCall, call_id: str, result: str | None
) -> None:
    """Draw a recorded call as its card. One that never finished (the process died)
    shows ``result``, the answer the conversation holds for it, as cancelled."""
    transcript.add_tool(call.started)
    for child in call.children:
        transcript.subagent_event(child)
    finished = call.finished or p.ToolCallFinished(
        call_id=call_id, name=call.started.name, status="cancelled", result=result or ""
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
                recorded = calls.take(call_id)
                if recorded is not None:
                    _draw_call(transcript, recorded, call_id, results.get(call_id))
                else:
                    name = call.get("function", {}).get("name", "?")
                    transcript.add_note(f"(called {name})")
    transcript.end_turn()
