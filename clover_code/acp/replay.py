"""A stored transcript -> the ACP updates that show it again (``session/load``).

The chat messages give the text (user turns, reasoning, answers) and the
order of tool calls; the recorded protocol events add what the messages do
not keep: each call's kind, title and final status, and edit diffs. The
last usage report and todo list are sent at the end, so the editor shows
the session as it was left.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from acp import (
    image_block,
    update_agent_message_text,
    update_agent_thought_text,
    update_user_message,
    update_user_message_text,
)

from clover_code import protocol as p
from clover_code.acp.updates import EventMapper, Update
from clover_code.agent.open import INTERRUPTED, LoadedSession
from clover_code.engine.base import ContentPart, ToolCallItem, tool_calls
from clover_code.protocol.recorded_calls import RecordedCall, RecordedCalls, recorded_events

__all__ = ["replay_updates"]

_FAILED_PREFIXES = ("error:", "denied:", "refused:", "cancelled:")


def _arguments(call: ToolCallItem) -> dict[str, Any]:
    text = call.get("function", {}).get("arguments", "{}")
    try:
        value = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _user_part(part: ContentPart) -> Update:
    """One part of a user message that carried images, as the editor shows it."""
    if part["type"] == "text":
        return update_user_message_text(part["text"])
    media, _, data = part["image_url"]["url"].removeprefix("data:").partition(";base64,")
    return update_user_message(image_block(data, media))


def replay_updates(loaded: LoadedSession, root: Path) -> list[Update]:
    """The updates that replay ``loaded`` in the editor, oldest first."""
    events = recorded_events(loaded.events)
    calls = RecordedCalls(events)
    mapper = EventMapper(
        root, needs_approval=lambda _kind: False, take_edit=lambda _path: None, log=lambda _m: None
    )
    updates: list[Update] = []
    unanswered: dict[str, RecordedCall | None] = {}  # calls shown started, not yet closed
    for message in loaded.messages:
        role = message.get("role")
        content = message.get("content")
        if role == "user" and isinstance(content, str) and content:
            updates.append(update_user_message_text(content))
        elif role == "user" and isinstance(content, list):  # its text, then its images
            updates += [_user_part(part) for part in content]
        elif role == "assistant":
            reasoning = message.get("reasoning_content")
            if isinstance(reasoning, str) and reasoning:
                updates.append(update_agent_thought_text(reasoning))
            if isinstance(content, str) and content:
                updates.append(update_agent_message_text(content))
            for call in tool_calls(message):
                call_id = str(call.get("id", ""))
                recorded = calls.take(call_id)
                start = (
                    recorded.started
                    if recorded
                    else p.ToolCallStarted(
                        call_id=call_id,
                        name=str(call.get("function", {}).get("name", "tool")),
                        kind="other",
                        arguments=_arguments(call),
                        summary="",
                    )
                )
                updates += mapper.feed(start)
                unanswered[call_id] = recorded
        elif role == "tool":
            call_id = str(message.get("tool_call_id", ""))
            recorded = unanswered.pop(call_id, None)
            end = recorded.finished if recorded else None
            if end is None:
                text = content if isinstance(content, str) else ""
                failed = text.startswith(_FAILED_PREFIXES) or text == INTERRUPTED
                end = p.ToolCallFinished(
                    call_id=call_id, name="", status="error" if failed else "ok", result=text
                )
            updates += mapper.feed(end)
    for call_id in unanswered:  # never left in progress in the editor
        gone = p.ToolCallFinished(call_id=call_id, name="", status="error", result=INTERRUPTED)
        updates += mapper.feed(gone)
    usage = [e for e in events if isinstance(e, p.UsageReport)]
    todo = [e for e in events if isinstance(e, p.TodoUpdated)]
    for last in usage[-1:] + todo[-1:]:
        updates += mapper.feed(last)
    return updates
