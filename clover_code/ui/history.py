"""A resumed session's earlier messages, drawn in the transcript before it goes on."""

from __future__ import annotations

from pathlib import Path

from clover_code.ui.widgets.transcript import Transcript

__all__ = ["show_history"]


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
                name = call.get("function", {}).get("name", "?")
                transcript.add_note(f"(called {name})")
    transcript.end_turn()
