"""The ``Backend`` protocol every engine implements, the request it takes and the
events it streams (re-exported: this interface module is all an adapter of the
engine, such as the OpenAI-compatible server, imports)."""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from clover_code.engine.events import BlockCommitted as BlockCommitted
from clover_code.engine.events import BlockDraft as BlockDraft
from clover_code.engine.events import ContentDelta as ContentDelta
from clover_code.engine.events import EngineEvent as EngineEvent
from clover_code.engine.events import Failed as Failed
from clover_code.engine.events import Finished as Finished
from clover_code.engine.events import ReasoningDelta as ReasoningDelta
from clover_code.engine.events import ToolCallArgs as ToolCallArgs
from clover_code.engine.events import ToolCallEnd as ToolCallEnd
from clover_code.engine.events import ToolCallStart as ToolCallStart
from clover_code.engine.events import Usage as Usage
from clover_code.engine.messages import AssistantMessage as AssistantMessage
from clover_code.engine.messages import ClientMessage as ClientMessage
from clover_code.engine.messages import ContentPart as ContentPart
from clover_code.engine.messages import FunctionCall as FunctionCall
from clover_code.engine.messages import Message as Message
from clover_code.engine.messages import SystemMessage as SystemMessage
from clover_code.engine.messages import ToolCallItem as ToolCallItem
from clover_code.engine.messages import ToolMessage as ToolMessage
from clover_code.engine.messages import UserMessage as UserMessage
from clover_code.engine.messages import content_text as content_text
from clover_code.engine.messages import image_count as image_count
from clover_code.engine.messages import tool_calls as tool_calls
from clover_code.errors import EngineError


class EngineWarning(str):
    """A line of ``Backend.notices`` saying that something asked for is not done (a
    setting this engine cannot apply): the session says it as a warning, which
    headless JSON keeps among its ``warnings``."""

    __slots__ = ()

    @staticmethod
    def level_of(line: str) -> Literal["info", "warning"]:
        """How a notice line is said: as a warning when it is an ``EngineWarning``."""
        return "warning" if isinstance(line, EngineWarning) else "info"


CONTROL_KEYS = ("repetition_penalty", "presence_penalty", "frequency_penalty")
"""Decoding controls a request (or a checkpoint's generation_config.json) may set."""


def control_value(key: str, value: object) -> float | None:
    """``value`` as a float when it is a valid setting of control ``key``, else None."""
    low = 1.0 if key == "repetition_penalty" else 0.0
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= low else None


@dataclass(slots=True)
class ToolSpec:
    """A tool offered to the model: its name, description and JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]

    def openai(self) -> dict[str, Any]:
        """The tool in the OpenAI ``tools`` request shape."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass(slots=True)
class ChatRequest:
    """One model call: the conversation so far and the tools on offer."""

    messages: Sequence[Message | ClientMessage]
    """The system prompt and the history (``serve``: a client's messages as sent)."""
    tools: list[ToolSpec] = field(default_factory=list)
    max_tokens: int | None = None
    temperature: float | None = None
    enable_thinking: bool = True
    stop: tuple[str, ...] = ()
    """Stop strings: the response ends before the first of them (not included)."""
    model: str | None = None
    """Another model the same server serves, for this request only (remote engines;
    a subagent whose definition names one). None: the backend's own model."""
    controls: dict[str, float] = field(default_factory=dict)
    """Decoding controls for this request only: ``repetition_penalty``,
    ``presence_penalty``, ``frequency_penalty`` (a remote server gets them in the body)."""
    remask_below: float | None = None
    """Re-denoising for this request only (``serve``: a client's ``clover`` extension):
    the confidence below which a finished block's positions are denoised again; None:
    the engine's own."""
    remask_rounds: int | None = None
    """With ``remask_below``: rounds a block may take, at most; None: the engine's own."""


@runtime_checkable
class Backend(Protocol):
    """Something that turns a ``ChatRequest`` into a stream of engine events.

    ``stream`` never raises for engine trouble: it yields ``Failed`` and then
    ``Finished``, and keeps that ``Failed``'s error as ``failure``. Cancelling the
    consuming task closes the stream at once.
    """

    name: str
    model: str
    block_size: int

    @property
    def notices(self) -> Sequence[str]:
        """What the engine says once, when it is loaded (a local engine's decoder
        choice, what its path cannot do: an ``EngineWarning`` when a setting asked for
        it); empty for most."""
        ...

    @property
    def failure(self) -> EngineError | None:
        """The engine error the last failed response ended with (None while none
        failed): headless tells a refused key (exit 3) from other trouble by it."""
        ...

    def stream(self, request: ChatRequest) -> AsyncGenerator[EngineEvent, None]:
        """Stream one response."""
        ...

    async def check(self) -> None:
        """Raise an ``EngineError`` if the engine cannot serve ``model``."""
        ...

    async def aclose(self) -> None:
        """Release connections, processes and GPU memory."""
        ...
