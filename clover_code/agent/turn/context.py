"""The context budget: counting tokens, keeping tool output in bounds, and
deciding when the conversation must be compacted.

Long tool output is kept out of the window by ``tools.spill.OutputSpill``.

The model's window (131,072 tokens for Clover) is shared by the prompt and the
response. Counts come from the server's usage report when it sends one (the
exact prompt size of the last request), from a local tokenizer when the
engine has one, and otherwise from an estimate that errs on the large side.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from clover_code.engine.base import Message
from clover_code.engine.messages import IMAGE_TOKENS, content_text, image_count, tool_calls

CHARS_PER_TOKEN = 3.2
"""Code tokenises denser than prose; a low ratio over-counts, which is the safe side."""

MESSAGE_OVERHEAD = 8
"""Tokens a chat template adds around each message (role markers, separators)."""


def estimate_tokens(text: str) -> int:
    """A conservative token estimate for ``text`` without a tokenizer."""
    return int(len(text) / CHARS_PER_TOKEN) + 1


def message_text(message: Message) -> str:
    """All the text of a message that reaches the model (its images aside)."""
    parts = [content_text(message)]
    for call in tool_calls(message):
        function = call.get("function", {})
        parts.append(str(function.get("name", "")))
        parts.append(str(function.get("arguments", "")))
    return "".join(parts)


@dataclass
class TokenCounter:
    """Counts the tokens of a conversation, preferring what the engine reported.

    ``anchor`` is the server-reported prompt size of the last request and
    ``anchor_messages`` how many messages that request carried; messages added
    since are counted with ``count_text`` (a local tokenizer) or estimated.
    """

    count_text: Callable[[str], int] = estimate_tokens
    anchor: int = 0
    anchor_messages: int = 0

    def messages(self, messages: Sequence[Message]) -> int:
        """Tokens of ``messages`` as the model will see them (an image as ``IMAGE_TOKENS``)."""
        return sum(
            self.count_text(message_text(m)) + MESSAGE_OVERHEAD + IMAGE_TOKENS * image_count(m)
            for m in messages
        )

    def prompt(self, system: str, messages: Sequence[Message], tools: Sequence[Any]) -> int:
        """Tokens of a whole request: system prompt, tool schemas and history."""
        if self.anchor and self.anchor_messages <= len(messages):
            return self.anchor + self.messages(messages[self.anchor_messages :])
        schemas = json.dumps([getattr(t, "parameters", t) for t in tools])
        fixed = self.count_text(system) + self.count_text(schemas) + MESSAGE_OVERHEAD
        return fixed + self.messages(messages)

    def reported(self, prompt_tokens: int, message_count: int) -> None:
        """Record the engine's count for a request that carried ``message_count`` messages."""
        if prompt_tokens > 0:
            self.anchor, self.anchor_messages = prompt_tokens, message_count

    def reset(self) -> None:
        """Forget the engine's count (the history was rewritten)."""
        self.anchor = self.anchor_messages = 0


@dataclass
class Budget:
    """Where the window is spent: ``compact_at`` is the prompt size that triggers compaction."""

    window: int
    response_reserve: int
    threshold: float = 0.85

    @property
    def prompt_limit(self) -> int:
        """The largest prompt that still leaves room for a full response."""
        return max(1024, self.window - self.response_reserve)

    @property
    def compact_at(self) -> int:
        """Prompt size at which older turns are summarised."""
        return int(self.prompt_limit * self.threshold)
