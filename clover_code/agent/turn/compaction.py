"""Compaction: replace older turns with a structured summary written by the model.

The system prompt (with AGENTS.md) is never part of the history, so it always
survives. The user's first request is carried verbatim, the todo list is
carried as it stands, and the most recent messages are kept as they are; only
the middle is summarised. The result is always a valid conversation: it never
separates a tool call from its result.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import aclosing
from importlib import resources
from typing import Any

from clover_code.agent.turn.context import TokenCounter
from clover_code.engine import events as ev
from clover_code.engine.base import Backend, ChatRequest, Message
from clover_code.engine.messages import content_text, image_count, tool_calls
from clover_code.errors import ContextOverflow, EngineError

SUMMARY_HEADER = "[The earlier part of this session was compacted.]"
TOOL_RESULT_CHARS = 2_000
FIRST_REQUEST_CHARS = 8_000


def compaction_prompt() -> str:
    """Instructions for the summarising request (package data)."""
    return resources.files("clover_code").joinpath("prompts/compact.md").read_text("utf-8")


def cut_point(messages: Sequence[Message], counter: TokenCounter, keep_tokens: int) -> int:
    """The index where the kept tail starts: the earliest message boundary whose
    tail fits ``keep_tokens``. A boundary is a user message or an assistant
    message (never a tool result, which must follow its call)."""
    best = len(messages)
    size = 0
    for index in range(len(messages) - 1, 0, -1):
        size += counter.messages(messages[index : index + 1])
        if size > keep_tokens:
            break
        if messages[index]["role"] in ("user", "assistant"):
            best = index
    return best


def render_for_summary(messages: Sequence[Message]) -> str:
    """The part to summarise as plain text, with long tool results shortened."""
    lines = []
    for message in messages:
        role: str = message["role"]
        text = content_text(message)
        if images := image_count(message):
            text += f"\n[{images} image{'s' if images > 1 else ''} attached]"
        if role == "tool" and len(text) > TOOL_RESULT_CHARS:
            text = text[:TOOL_RESULT_CHARS] + f"\n[... {len(text) - TOOL_RESULT_CHARS} more ...]"
        if text.startswith(SUMMARY_HEADER):
            role = "earlier summary"
        lines.append(f"### {role}\n{text}")
        for call in tool_calls(message):
            function = call.get("function", {})
            lines.append(f"(tool call) {function.get('name')}({function.get('arguments')})")
    return "\n\n".join(lines)


def first_request(messages: Sequence[Message]) -> str:
    """The user's first request of the session, verbatim, carried through every summary."""
    for message in messages:
        if message["role"] != "user":
            continue
        text = content_text(message)
        if text.startswith(SUMMARY_HEADER):
            marker = "The user's first request, verbatim:\n"
            start = text.find(marker)
            end = text.find("\n\n## ", start)
            if start >= 0:
                return text[start + len(marker) : end if end > 0 else None].strip()
            continue
        return text[:FIRST_REQUEST_CHARS]
    return ""


async def summarise(backend: Backend, old: Sequence[Message]) -> str:
    """Ask the model for the structured summary of ``old``."""
    rendered = render_for_summary(old)
    request = ChatRequest(
        messages=[
            {"role": "system", "content": compaction_prompt()},
            {"role": "user", "content": "The conversation to summarise:\n\n" + rendered},
        ],
        tools=[],
        enable_thinking=False,
    )
    parts: list[str] = []
    async with aclosing(backend.stream(request)) as stream:
        async for event in stream:
            if isinstance(event, ev.ContentDelta):
                parts.append(event.text)
            elif isinstance(event, ev.Failed):
                raise EngineError(f"compaction failed: {event.error}")
    summary = "".join(parts).strip()
    if not summary:
        raise EngineError("compaction failed: the model returned an empty summary.")
    return summary


def build_history(
    summary: str, first: str, todo: Sequence[dict[str, Any]], kept: Sequence[Message]
) -> list[Message]:
    """The compacted conversation: the summary message, then the kept tail."""
    parts = [SUMMARY_HEADER]
    if first:
        parts.append(f"The user's first request, verbatim:\n{first}")
    parts.append(summary)
    if todo:
        parts.append("## Current todo list (authoritative)\n" + json.dumps(list(todo), indent=1))
    content = "\n\n".join(parts)
    history: list[Message] = [{"role": "user", "content": content}]
    if not kept or kept[0]["role"] == "user":
        history.append({"role": "assistant", "content": "Understood; I will continue from here."})
    history.extend(kept)
    return history


async def compact(
    backend: Backend,
    messages: Sequence[Message],
    counter: TokenCounter,
    *,
    keep_tokens: int,
    todo: Sequence[dict[str, Any]] = (),
) -> tuple[list[Message], str]:
    """The compacted history and the summary; ``ContextOverflow`` when nothing can go."""
    cut = cut_point(messages, counter, keep_tokens)
    if cut == len(messages) and messages and counter.messages(messages[-1:]) > keep_tokens:
        # The newest message alone is too big to keep: summarise everything before it.
        cut = len(messages) - 1
        while cut > 0 and messages[cut]["role"] == "tool":
            cut -= 1
    old, kept = (
        list(messages[:cut]),
        [fit_tool_result(m, counter, keep_tokens) for m in messages[cut:]],
    )
    if not any(m["role"] == "assistant" for m in old):
        # Only the user's request is older than the tail: a summary of it would be
        # no shorter (and would cost a request for nothing).
        raise ContextOverflow(
            "the conversation does not fit the context window and has nothing left to "
            "summarise; start a new session (/clear) or ask for a smaller step."
        )
    summary = await summarise(backend, old)
    history = build_history(summary, first_request(messages), todo, kept)
    if counter.messages(history) >= counter.messages(messages):
        raise ContextOverflow(
            "compacting would not make the conversation smaller; start a new session "
            "(/clear) or ask for a smaller step."
        )
    return history, summary


def fit_tool_result(message: Message, counter: TokenCounter, limit: int) -> Message:
    """``message``, with a tool result over ``limit`` tokens cut to fit (head and tail
    kept, a note in between saying how much was left out)."""
    if message["role"] != "tool":
        return message
    text = str(message.get("content") or "")
    size = counter.messages([message])
    if size <= limit or not text:
        return message
    keep = max(200, int(len(text) * limit / size * 0.9))
    head, tail = text[: keep * 2 // 3], text[len(text) - keep // 3 :]
    omitted = len(text) - len(head) - len(tail)
    note = f"\n[... {omitted:,} characters cut so the conversation fits the context window ...]\n"
    return {**message, "content": head + note + tail}
