"""Engine events: what a ``Backend`` streams for one model response.

The streaming unit is the block. ``BlockCommitted`` carries the raw text of a
finished block (never changed afterwards); the parsed view of the same output
arrives as ``ReasoningDelta`` / ``ContentDelta`` / ``ToolCall*`` events. A
stream always ends with exactly one ``Finished`` (``Failed`` may precede it).

These are plain slotted dataclasses rather than pydantic models: a backend may
emit tens of thousands of them per second and they never cross a process
boundary (the agent turns them into protocol events).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from clover_code.errors import EngineError
from clover_code.protocol.confidence import TokenPiece

FinishReason = Literal["stop", "tool_calls", "length", "cancelled", "interrupted", "error"]


@dataclass(slots=True)
class BlockDraft:
    """One denoising step inside the block being generated (optional)."""

    block: int
    step: int
    tokens: list[str]
    masked: list[bool]
    confidences: list[float] | None = None


@dataclass(slots=True)
class BlockCommitted:
    """A finished block: its raw text, token count and denoising steps.

    ``pieces`` cut ``text`` into its tokens with the confidence and step each was
    filled with (None: the engine does not know them)."""

    block: int
    text: str
    token_count: int
    steps: int | None = None
    pieces: list[TokenPiece] | None = None


@dataclass(slots=True)
class ReasoningDelta:
    """Thinking text."""

    text: str


@dataclass(slots=True)
class ContentDelta:
    """Answer text shown to the user."""

    text: str


@dataclass(slots=True)
class ToolCallStart:
    """The model began a tool call (``index`` orders calls within a response)."""

    index: int
    id: str
    name: str


@dataclass(slots=True)
class ToolCallArgs:
    """A fragment of the call's arguments as JSON text (for live display only)."""

    index: int
    delta: str


@dataclass(slots=True)
class ToolCallEnd:
    """A complete tool call. ``error`` says why the arguments could not be read."""

    index: int
    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


@dataclass(slots=True)
class Usage:
    """Token counts as reported by the engine (or counted locally)."""

    prompt_tokens: int
    completion_tokens: int
    experts_per_layer: float | None = None
    """Mean distinct routed experts per MoE layer per block (local MoE engines)."""
    cached_tokens: int = 0
    """Prompt tokens served from the server's prompt cache (OpenAI's
    ``prompt_tokens_details.cached_tokens``), priced apart."""


@dataclass(slots=True)
class Failed:
    """The response failed; ``partial`` is true when output had already begun."""

    error: EngineError
    partial: bool = False


@dataclass(slots=True)
class ImagesDropped:
    """The server refused the request's images (the model takes none): it is being
    asked again without them. ``reason`` is the server's refusal, in a sentence."""

    reason: str


@dataclass(slots=True)
class Finished:
    """End of the response."""

    reason: FinishReason


EngineEvent = (
    BlockDraft
    | BlockCommitted
    | ReasoningDelta
    | ContentDelta
    | ToolCallStart
    | ToolCallArgs
    | ToolCallEnd
    | Usage
    | ImagesDropped
    | Failed
    | Finished
)
