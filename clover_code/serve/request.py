"""What ``serve`` accepts: one schema for a chat completion request, and the
body read within a size and time limit.

Anything the schema does not describe is refused with one sentence (HTTP
400) before it reaches the engine: a ``max_tokens`` that is not a whole
number in range (``Infinity``, ``-5``, ``1e300``, ``"12"``, ``true``), a
temperature that is NaN or negative, options that are not objects, messages
that are not message objects. Fields OpenAI clients send that the engine
has no use for (``top_p``, ``user``...) are ignored, as OpenAI-compatible
servers do.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
)
from starlette.requests import Request

from clover_code.engine.base import CONTROL_KEYS, ChatRequest, ToolSpec, control_value

__all__ = ["BadRequest", "BodyLimits", "ChatBody", "chat_request", "parse_body", "read_body"]

MAX_TOKENS = 1 << 20
"""The largest ``max_tokens`` taken (far past any context window)."""


class BadRequest(Exception):
    """A request refused with ``status`` and one sentence."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass(frozen=True, slots=True)
class BodyLimits:
    """How much of a request body is read, and for how long."""

    max_bytes: int = 16 << 20
    read_timeout: float = 30.0


class _Open(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _Message(BaseModel):
    model_config = ConfigDict(extra="allow")  # tool_calls, tool_call_id, name... go on as sent

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: StrictStr | list[dict[str, Any]] | None = None


class _Function(_Open):
    name: StrictStr = Field(min_length=1)
    description: StrictStr = ""
    parameters: dict[str, Any] | None = None


class _Tool(_Open):
    type: Literal["function"] = "function"
    function: _Function


class _TemplateOptions(_Open):
    enable_thinking: StrictBool = True


class _StreamOptions(_Open):
    include_usage: StrictBool = False
    continuous_usage_stats: StrictBool = False


class _CloverOptions(_Open):
    drafts: StrictBool = False
    remask_below: Annotated[StrictFloat | StrictInt, Field(ge=0, le=1)] | None = None
    remask_rounds: Annotated[StrictInt, Field(ge=1, le=8)] | None = None


Tokens = Annotated[StrictInt, Field(ge=1, le=MAX_TOKENS)]
Penalty = StrictInt | StrictFloat | None


class ChatBody(_Open):
    """A ``POST /v1/chat/completions`` body."""

    messages: list[_Message] = Field(min_length=1)
    model: StrictStr | None = None
    tools: list[_Tool] | None = None
    tool_choice: Literal["auto", "none"] | None = None
    n: Literal[1] = 1
    stream: StrictBool = False
    stream_options: _StreamOptions | None = None
    chat_template_kwargs: _TemplateOptions | None = None
    clover: _CloverOptions | None = None
    max_tokens: Tokens | None = None
    max_completion_tokens: Tokens | None = None
    temperature: Annotated[StrictFloat | StrictInt, Field(ge=0, le=2)] | None = None
    stop: StrictStr | list[StrictStr] | None = None
    repetition_penalty: Penalty = None
    presence_penalty: Penalty = None
    frequency_penalty: Penalty = None

    @field_validator("stop")
    @classmethod
    def _stop(cls, value: str | list[str] | None) -> str | list[str] | None:
        values = [value] if isinstance(value, str) else value
        if values is not None and (len(values) > 4 or not all(values)):
            raise ValueError(
                "stop must be a non-empty string or a list of up to 4 non-empty strings"
            )
        return value

    @field_validator(*CONTROL_KEYS)
    @classmethod
    def _penalty(cls, value: float | None, info: Any) -> float | None:
        if value is not None and control_value(info.field_name, value) is None:
            low = "1" if info.field_name == "repetition_penalty" else "0"
            raise ValueError(f"{info.field_name} must be a number of at least {low}")
        return value


_SENTENCES = {
    "tool_choice": "tool_choice must be 'auto' or 'none' (block diffusion cannot force a call)",
    "n": "n must be 1 (one completion per request)",
    "max_tokens": f"max_tokens must be a whole number from 1 to {MAX_TOKENS}",
    "max_completion_tokens": f"max_completion_tokens must be a whole number from 1 to {MAX_TOKENS}",
    "temperature": "temperature must be a number from 0 to 2",
    "stop": "stop must be a non-empty string or a list of up to 4 non-empty strings",
    "clover.remask_below": "clover.remask_below must be a number from 0 to 1",
    "clover.remask_rounds": "clover.remask_rounds must be a whole number from 1 to 8",
}


def _sentence(error: ValidationError) -> str:
    """The first problem of ``error`` as one sentence."""
    first = error.errors(include_url=False)[0]
    loc = [str(part) for part in first["loc"]]
    if first["type"] == "missing":
        return f"the field '{loc[-1]}' is missing"
    if first["type"] == "value_error":
        return str(first["msg"]).removeprefix("Value error, ")
    if ".".join(loc[:2]) in _SENTENCES:
        return _SENTENCES[".".join(loc[:2])]
    if loc and loc[0] in _SENTENCES:
        return _SENTENCES[loc[0]]
    if loc == ["messages"] and first["type"] == "too_short":
        return "messages must be a non-empty list"
    where = ".".join(loc) or "the body"
    return f"{where}: {str(first['msg']).rstrip('.').lower()}"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_body(raw: bytes) -> ChatBody:
    """``raw`` as a checked request; ``BadRequest`` says what is wrong."""
    try:
        data = json.loads(raw, parse_constant=_no_constant)
    except RecursionError:
        raise BadRequest("invalid request: the body is nested too deeply") from None
    except ValueError as exc:
        raise BadRequest(f"invalid request: the body is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise BadRequest("invalid request: the body must be a JSON object")
    try:
        return ChatBody.model_validate(data)
    except ValidationError as exc:
        raise BadRequest(f"invalid request: {_sentence(exc)}") from None
    except RecursionError:
        raise BadRequest("invalid request: the body is nested too deeply") from None


async def read_body(request: Request, limits: BodyLimits) -> bytes:
    """The whole body, refused past ``limits.max_bytes`` (413) or when it takes
    longer than ``limits.read_timeout`` seconds to arrive (408)."""
    too_big = BadRequest(f"the body is larger than {limits.max_bytes} bytes", status=413)
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limits.max_bytes:
        raise too_big
    parts: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(limits.read_timeout):
            async for part in request.stream():
                size += len(part)
                if size > limits.max_bytes:
                    raise too_big
                parts.append(part)
    except TimeoutError:
        raise BadRequest(
            f"the body did not arrive within {limits.read_timeout:g} seconds", status=408
        ) from None
    return b"".join(parts)


def chat_request(body: ChatBody) -> ChatRequest:
    """The engine's request for a checked ``body`` (messages as the client sent them)."""
    tools = [
        ToolSpec(t.function.name, t.function.description, t.function.parameters or {})
        for t in body.tools or []
    ]
    if body.tool_choice == "none":
        tools = []  # the model is not shown any tools
    stop = body.stop if body.stop is None or isinstance(body.stop, list) else [body.stop]
    controls = {
        key: float(value) for key in CONTROL_KEYS if (value := getattr(body, key)) is not None
    }
    template = body.chat_template_kwargs or _TemplateOptions()
    clover = body.clover or _CloverOptions()
    return ChatRequest(
        messages=[m.model_dump(exclude_unset=True) for m in body.messages],
        tools=tools,
        max_tokens=body.max_completion_tokens or body.max_tokens,
        temperature=None if body.temperature is None else float(body.temperature),
        enable_thinking=template.enable_thinking,
        stop=tuple(stop or ()),
        controls=controls,
        remask_below=None if clover.remask_below is None else float(clover.remask_below),
        remask_rounds=clover.remask_rounds,
    )
