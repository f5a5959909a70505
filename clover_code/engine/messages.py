"""The conversation, typed: the four kinds of chat message, in OpenAI's form.

The turn loop keeps a list of them, the transcript records them, compaction
rewrites them and the engines send them (a remote server takes them as JSON,
a local engine renders them with the checkpoint's chat template). Re-exported
by ``engine.base``.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "AssistantMessage",
    "ClientMessage",
    "FunctionCall",
    "Message",
    "SystemMessage",
    "ToolCallItem",
    "ToolMessage",
    "UserMessage",
    "tool_calls",
]


class FunctionCall(TypedDict):
    """The function an assistant's tool call names."""

    name: str
    arguments: str
    """The arguments as JSON text."""


class ToolCallItem(TypedDict):
    """One tool call of an assistant message."""

    id: str
    type: Literal["function"]
    function: FunctionCall


class SystemMessage(TypedDict):
    """The system prompt (sent first with each request, never kept in the history)."""

    role: Literal["system"]
    content: str


class UserMessage(TypedDict):
    """The user's input (or a summary standing in for compacted turns)."""

    role: Literal["user"]
    content: str


class AssistantMessage(TypedDict):
    """What one model response produced: its text, reasoning and tool calls."""

    role: Literal["assistant"]
    content: str
    reasoning_content: NotRequired[str]
    """Kept in the transcript; left out of what is sent back to the model."""
    tool_calls: NotRequired[list[ToolCallItem]]


class ToolMessage(TypedDict):
    """The result of one tool call, answering the call with ``tool_call_id``."""

    role: Literal["tool"]
    tool_call_id: str
    content: str


Message = SystemMessage | UserMessage | AssistantMessage | ToolMessage
"""One chat message of the conversation."""

ClientMessage = dict[str, Any]
"""A message as an OpenAI client sent it to ``serve`` (a ``developer`` role, content
parts, a ``name``...): handed to the chat template as it came, never read by the core."""


def tool_calls(message: Message) -> list[ToolCallItem]:
    """The tool calls of an assistant message (none for the other kinds)."""
    if message["role"] != "assistant":
        return []
    return message.get("tool_calls") or []
