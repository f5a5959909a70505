"""The conversation, typed: the four kinds of chat message, in OpenAI's form.

The turn loop keeps a list of them, the transcript records them, compaction
rewrites them and the engines send them (a remote server takes them as JSON,
a local engine renders them with the checkpoint's chat template). Re-exported
by ``engine.base``.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "IMAGE_LEFT_OUT",
    "IMAGE_TOKENS",
    "AssistantMessage",
    "ClientMessage",
    "ContentPart",
    "FunctionCall",
    "ImagePart",
    "ImageURL",
    "Message",
    "SystemMessage",
    "TextPart",
    "ToolCallItem",
    "ToolMessage",
    "UserMessage",
    "content_text",
    "data_url",
    "image_count",
    "image_part",
    "text_only",
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


class TextPart(TypedDict):
    """Text, as one part of a user message that carries images."""

    type: Literal["text"]
    text: str


class ImageURL(TypedDict):
    """Where an image part's bytes are: a ``data:`` URL holding them."""

    url: str


class ImagePart(TypedDict):
    """An image, as one part of a user message (OpenAI's ``image_url`` part)."""

    type: Literal["image_url"]
    image_url: ImageURL


ContentPart = TextPart | ImagePart
"""One part of a user message that carries images."""


class UserMessage(TypedDict):
    """The user's input (or a summary standing in for compacted turns): a string, or
    its text and images as parts when images were attached."""

    role: Literal["user"]
    content: str | list[ContentPart]


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


IMAGE_TOKENS = 1_500
"""Tokens an image is counted as before the server says (a generous estimate: a
1024-pixel square is 800 to 1,400 tokens for the common vision models)."""

IMAGE_LEFT_OUT = "[an image was attached here; this model takes no images, so it was left out]"
"""What stands in for an image in a request to a model that takes none."""


def data_url(media_type: str, data: str) -> str:
    """The ``data:`` URL of base64 ``data`` of type ``media_type``."""
    return f"data:{media_type};base64,{data}"


def image_part(media_type: str, data: str) -> ImagePart:
    """The part that carries one image (base64 ``data`` of type ``media_type``)."""
    return {"type": "image_url", "image_url": {"url": data_url(media_type, data)}}


def content_text(message: Message) -> str:
    """The text of a message's content (a message with images: its text parts)."""
    content = message.get("content")
    if isinstance(content, list):
        return "".join(part["text"] for part in content if part["type"] == "text")
    return str(content or "")


def image_count(message: Message) -> int:
    """How many images a message carries."""
    content = message.get("content")
    if not isinstance(content, list):
        return 0
    return sum(1 for part in content if part["type"] == "image_url")


def text_only(messages: list[Message]) -> list[Message]:
    """``messages`` with each image replaced by a sentence saying it was left out (for
    a model that takes no images); messages without images are the same objects."""
    out: list[Message] = []
    for message in messages:
        if message["role"] != "user" or not isinstance(message["content"], list):
            out.append(message)
            continue
        texts = [p["text"] if p["type"] == "text" else IMAGE_LEFT_OUT for p in message["content"]]
        out.append({"role": "user", "content": "\n\n".join(t for t in texts if t)})
    return out
