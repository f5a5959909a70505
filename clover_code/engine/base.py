"""The ``Backend`` protocol every engine implements, and the request it takes."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from clover_code.engine.events import EngineEvent

Message = dict[str, Any]
"""One chat message in OpenAI form: role, content, tool_calls, tool_call_id, reasoning_content."""


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

    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    max_tokens: int | None = None
    temperature: float | None = None
    enable_thinking: bool = True
    stop: tuple[str, ...] = ()
    """Stop strings: the response ends before the first of them (not included)."""


@runtime_checkable
class Backend(Protocol):
    """Something that turns a ``ChatRequest`` into a stream of engine events.

    ``stream`` never raises for engine trouble: it yields ``Failed`` and then
    ``Finished``. Cancelling the consuming task closes the stream at once.
    """

    name: str
    model: str
    block_size: int

    def stream(self, request: ChatRequest) -> AsyncGenerator[EngineEvent, None]:
        """Stream one response."""
        ...

    async def check(self) -> None:
        """Raise an ``EngineError`` if the engine cannot serve ``model``."""
        ...

    async def aclose(self) -> None:
        """Release connections, processes and GPU memory."""
        ...
