"""The events of a model response as it streams: its text, blocks and cost in tokens.

Reasoning and answer text come as deltas; a block-diffusion engine also reports
each denoising step (``BlockDraft``) and each finished block (``BlockCommitted``),
with the fill confidences of its tokens where the engine knows them. After the
response, ``UsageReport`` says what it took. Members of ``Event``
(``events.py``), re-exported by ``clover_code.protocol``.
"""

# Annotations are objects here, not text (no ``from __future__ import annotations``):
# pydantic reads every field's, and text would be compiled and evaluated at each start.

from typing import Literal

from clover_code.protocol.base import _Event


class BlockDraft(_Event):
    """One denoising step of the block being generated; ``None`` marks a mask."""

    type: Literal["block_draft"] = "block_draft"
    block: int
    step: int
    tokens: list[str | None]
    confidences: list[float] | None = None


class BlockCommitted(_Event):
    """A finished block of model output; its text never changes afterwards."""

    type: Literal["block_committed"] = "block_committed"
    block: int
    text: str = ""
    """The block's raw text (headless stream-json leaves it out: the deltas carry the text)."""
    token_count: int
    steps: int | None = None
    confidence: str | None = None
    """Each token's fill confidence, step and length in the text, compactly
    (``protocol/confidence.py``); None where the engine does not know them."""


class AnswerConfidence(_Event):
    """After a response: the fill confidence of each token of its answer text (the
    response's ``ContentDelta`` texts joined), compactly (``protocol/confidence.py``)."""

    type: Literal["answer_confidence"] = "answer_confidence"
    confidence: str


class AnswerConfidenceDelta(_Event):
    """While a response streams: the fill confidences of the answer text found in its
    committed blocks since the last one, compactly; each continues where the one before
    ended (``AnswerConfidence`` holds them all once the response is over)."""

    type: Literal["answer_confidence_delta"] = "answer_confidence_delta"
    confidence: str


class ReasoningDelta(_Event):
    """Thinking text."""

    type: Literal["reasoning_delta"] = "reasoning_delta"
    text: str


class ContentDelta(_Event):
    """Answer text."""

    type: Literal["content_delta"] = "content_delta"
    text: str


class UsageReport(_Event):
    """Token accounting after a model response."""

    type: Literal["usage"] = "usage"
    prompt_tokens: int
    completion_tokens: int
    context_window: int
    tokens_per_second: float | None = None
    blocks_per_second: float | None = None
    tokens_per_forward: float | None = None
    """Tokens per denoising forward pass, for a backend that reports steps per block."""
    experts_per_layer: float | None = None
    """Mean distinct routed experts per MoE layer per block (the local hf engine)."""
    cached_tokens: int = 0
    """Prompt tokens the server read from its prompt cache (0: none reported)."""
    cost: float | None = None
    """What the response cost, from the model's price per million tokens (``pricing``);
    0 on a local engine; null when the model has no price."""
