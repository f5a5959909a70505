"""The default ``max_tokens`` of a remote request, and learning from a server that refuses it.

A request without ``max_tokens`` gets what the context window leaves after the
prompt (estimated), at most ``MAX_TOKENS_CAP``, so one runaway answer cannot
stream for minutes. A server that rejects that default (a hosted model with a
smaller output limit, a server with a smaller window) is asked again at once
without it; a window size the server names in its error is remembered.
"""

from __future__ import annotations

import json
import re
from typing import Any

from clover_code.engine.messages import IMAGE_TOKENS, image_count, text_only
from clover_code.engine.remote.retry import is_context_overflow

__all__ = ["MAX_TOKENS_CAP", "OutputLimit", "default_max_tokens", "estimate_prompt_tokens"]

MAX_TOKENS_CAP = 32_768
"""The most tokens one response may take when no ``max_tokens`` is set."""

# Servers that name their window when a request does not fit: vLLM ("maximum
# context length is N"), SGLang ("maximum context length of N").
_WINDOW_IN_ERROR = r"(?i)maximum context length (?:is|of) (\d+)"  # compiled when one is met


def default_max_tokens(context_window: int, prompt_tokens: int) -> int:
    """``max_tokens`` for a request that sets none: the window left, capped."""
    return max(1, min(context_window - prompt_tokens, MAX_TOKENS_CAP))


def estimate_prompt_tokens(body: dict[str, Any]) -> int:
    """A generous token estimate of a request's messages and tools (3 characters a token;
    an image as ``IMAGE_TOKENS``, whatever the length of its base64)."""
    images = sum(image_count(m) for m in body["messages"])
    messages = text_only(body["messages"]) if images else body["messages"]
    size = len(json.dumps(messages, ensure_ascii=False))
    size += len(json.dumps(body.get("tools", []), ensure_ascii=False))
    return size // 3 + 16 + images * IMAGE_TOKENS


class OutputLimit:
    """One backend's default ``max_tokens``, adjusted by what the server says."""

    def __init__(self, context_window: int | None) -> None:
        self.context_window = context_window
        """Tokens of prompt + response; None means no default is sent."""
        self.server_decides = False
        """The server refused a default naming max_tokens: send none from then on."""

    def default_for(self, body: dict[str, Any]) -> int | None:
        """The ``max_tokens`` to send with ``body`` when the request set none."""
        if self.context_window is None or self.server_decides:
            return None
        return default_max_tokens(self.context_window, estimate_prompt_tokens(body))

    def refused(self, status: int, message: str) -> bool:
        """Whether a rejected request was about the default (then learn from the message)."""
        if status not in (400, 413, 422):
            return False
        lowered = message.lower()
        if "max_tokens" in lowered or "max_completion_tokens" in lowered:
            self.server_decides = True
            return True
        if not is_context_overflow(message):
            return False
        named = re.search(_WINDOW_IN_ERROR, message)
        if named is not None and self.context_window is not None:
            self.context_window = min(self.context_window, int(named.group(1)))
        return True
