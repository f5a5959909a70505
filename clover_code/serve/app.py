"""The OpenAI-compatible ASGI app (starlette + sse-starlette) over one ``Backend``.

Endpoints: ``GET /v1/models`` and ``POST /v1/chat/completions`` (streaming
and not, tools, reasoning as ``reasoning_content``). A stream carries one SSE
chunk per committed block: that block's reasoning, content and finished tool
calls (each call's arguments as one JSON text), plus cumulative ``usage``
when ``stream_options.continuous_usage_stats`` asks for it.

Drafts extension (opt-in): when the request has ``"clover": {"drafts":
true}`` or the server was started with ``--drafts``, each denoising step is
sent as a chunk with empty ``choices`` and a ``clover_draft`` object
``{"block", "step", "tokens", "masked", "confidences"}``. Clients that do not
know it skip it (it looks like a usage chunk); clover-code's remote backend
turns it into ``BlockDraft`` events, so a laptop TUI shows the denoising of a
GPU box live.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from clover_code.engine.base import (
    CONTROL_KEYS,
    Backend,
    ChatRequest,
    ToolSpec,
    control_value,
)
from clover_code.engine.events import (
    BlockCommitted,
    BlockDraft,
    ContentDelta,
    EngineEvent,
    Failed,
    Finished,
    ReasoningDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from clover_code.errors import ContextOverflow, EngineError, EngineUnavailable

__all__ = ["build_app"]


def build_app(backend: Backend, *, drafts: bool = False) -> Starlette:
    """The server app for ``backend``; ``drafts`` sends drafts to every streaming client."""

    async def models(_: Request) -> Response:
        entry = {"id": backend.model, "object": "model", "created": 0, "owned_by": "clover-code"}
        return JSONResponse({"object": "list", "data": [entry]})

    async def chat(request: Request) -> Response:
        try:
            body = await request.json()
            chat_request = _chat_request(body)
        except KeyError as exc:
            return _error(400, f"invalid request: the field {exc} is missing")
        except (ValueError, TypeError) as exc:
            return _error(400, f"invalid request: {exc}")
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        if not body.get("stream"):
            return await _complete(backend, chat_request, completion_id)
        want_drafts = drafts or bool((body.get("clover") or {}).get("drafts"))
        options = body.get("stream_options") or {}
        chunks = _stream(backend, chat_request, completion_id, want_drafts, options)
        return EventSourceResponse(chunks, ping=15)

    return Starlette(
        routes=[
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/chat/completions", chat, methods=["POST"]),
        ]
    )


def _chat_request(body: dict[str, Any]) -> ChatRequest:
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        raise ValueError("messages must be a non-empty list")
    tools = []
    for tool in body.get("tools") or []:
        function = tool["function"]
        tools.append(
            ToolSpec(
                function["name"], function.get("description", ""), function.get("parameters") or {}
            )
        )
    choice = body.get("tool_choice", "auto")
    if choice == "none":
        tools = []  # the model is not shown any tools
    elif choice not in ("auto", None):
        raise ValueError(
            "tool_choice must be 'auto' or 'none' (block diffusion cannot force a call)"
        )
    if body.get("n", 1) != 1:
        raise ValueError("n must be 1 (one completion per request)")
    kwargs = body.get("chat_template_kwargs") or {}
    max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
    return ChatRequest(
        messages=messages,
        tools=tools,
        max_tokens=int(max_tokens) if max_tokens else None,
        temperature=body.get("temperature"),
        enable_thinking=bool(kwargs.get("enable_thinking", True)),
        stop=_stop_strings(body.get("stop")),
        controls=_controls(body),
    )


def _controls(body: dict[str, Any]) -> dict[str, float]:
    """The request's penalties (OpenAI's presence/frequency, and repetition_penalty)."""
    controls: dict[str, float] = {}
    for key in CONTROL_KEYS:
        if body.get(key) is None:
            continue
        value = control_value(key, body[key])
        if value is None:
            low = "1" if key == "repetition_penalty" else "0"
            raise ValueError(f"{key} must be a number of at least {low}")
        controls[key] = value
    return controls


def _stop_strings(value: Any) -> tuple[str, ...]:
    """The request's ``stop``: a string or a list of up to 4 strings (as OpenAI's API)."""
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if (
        not isinstance(value, list)
        or len(value) > 4
        or not all(isinstance(s, str) and s for s in value)
    ):
        raise ValueError("stop must be a non-empty string or a list of up to 4 non-empty strings")
    return tuple(value)


class _Block:
    """Parsed output gathered until the block that carries it is committed."""

    def __init__(self) -> None:
        self.reasoning: list[str] = []
        self.content: list[str] = []
        self.calls: list[dict[str, Any]] = []

    def reset(self) -> None:
        self.reasoning, self.content, self.calls = [], [], []

    def add(self, event: EngineEvent) -> None:
        if isinstance(event, ReasoningDelta):
            self.reasoning.append(event.text)
        elif isinstance(event, ContentDelta):
            self.content.append(event.text)
        elif isinstance(event, ToolCallEnd):
            self.calls.append(
                {
                    "index": event.index,
                    "id": event.id,
                    "type": "function",
                    "function": {
                        "name": event.name,
                        "arguments": json.dumps(event.arguments, ensure_ascii=False),
                    },
                }
            )

    def delta(self) -> dict[str, Any]:
        delta: dict[str, Any] = {}
        if self.reasoning:
            delta["reasoning_content"] = "".join(self.reasoning)
        if self.content:
            delta["content"] = "".join(self.content)
        if self.calls:
            delta["tool_calls"] = self.calls
        self.reset()
        return delta


def _chunk(
    cid: str, model: str, delta: dict[str, Any], finish: str | None = None
) -> dict[str, Any]:
    return {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


async def _stream(
    backend: Backend,
    request: ChatRequest,
    cid: str,
    drafts: bool,
    options: dict[str, Any],
) -> AsyncGenerator[str, None]:
    model = backend.model
    pending = _Block()
    tokens = 0
    continuous = bool(options.get("continuous_usage_stats"))
    usage: Usage | None = None
    first = True
    async with aclosing(backend.stream(request)) as events:
        async for event in events:
            if isinstance(event, BlockDraft):
                if drafts:
                    draft = {
                        "block": event.block,
                        "step": event.step,
                        "tokens": event.tokens,
                        "masked": event.masked,
                        "confidences": event.confidences,
                    }
                    yield json.dumps({"id": cid, "choices": [], "clover_draft": draft})
            elif isinstance(event, BlockCommitted):
                delta = pending.delta()
                if first:
                    delta = {"role": "assistant", **delta}
                    first = False
                tokens += event.token_count
                if not delta:
                    continue
                chunk = _chunk(cid, model, delta)
                if continuous:
                    chunk["usage"] = {"completion_tokens": tokens}
                yield json.dumps(chunk, ensure_ascii=False)
            elif isinstance(event, Usage):
                usage = event
            elif isinstance(event, Failed):
                yield json.dumps({"error": {"message": event.error.message}})
                return
            elif isinstance(event, Finished):
                delta = pending.delta()
                finish = "tool_calls" if event.reason == "tool_calls" else event.reason
                yield json.dumps(_chunk(cid, model, delta, finish), ensure_ascii=False)
            else:
                pending.add(event)
    if usage is not None and options.get("include_usage"):
        yield json.dumps({"id": cid, "choices": [], "usage": _usage(usage)})
    yield "[DONE]"


async def _complete(backend: Backend, request: ChatRequest, cid: str) -> Response:
    gathered = _Block()
    usage: Usage | None = None
    reason = "stop"
    async with aclosing(backend.stream(request)) as events:
        async for event in events:
            if isinstance(event, Failed):
                return _failure(event.error)
            if isinstance(event, Usage):
                usage = event
            elif isinstance(event, Finished):
                reason = event.reason
            elif not isinstance(event, BlockDraft | BlockCommitted | ToolCallStart):
                gathered.add(event)
    delta = gathered.delta()
    message: dict[str, Any] = {"role": "assistant", "content": delta.get("content", "")}
    if "reasoning_content" in delta:
        message["reasoning_content"] = delta["reasoning_content"]
    if "tool_calls" in delta:
        message["tool_calls"] = [
            {k: v for k, v in call.items() if k != "index"} for call in delta["tool_calls"]
        ]
    body: dict[str, Any] = {
        "id": cid,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": backend.model,
        "choices": [{"index": 0, "message": message, "finish_reason": reason}],
    }
    if usage is not None:
        body["usage"] = _usage(usage)
    return JSONResponse(body)


def _usage(usage: Usage) -> dict[str, Any]:
    body: dict[str, Any] = {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
    }
    if usage.experts_per_layer is not None:
        # An extension: mean distinct routed experts per MoE layer per block.
        body["experts_per_layer"] = round(usage.experts_per_layer, 2)
    return body


def _failure(error: EngineError) -> Response:
    if isinstance(error, ContextOverflow):
        return _error(400, error.message, "context_length_exceeded")
    if isinstance(error, EngineUnavailable):
        return _error(503, error.message)
    return _error(500, error.message)


def _error(status: int, message: str, code: str | None = None) -> Response:
    return JSONResponse(
        {"error": {"message": message, "type": "invalid_request_error", "code": code}},
        status_code=status,
    )
