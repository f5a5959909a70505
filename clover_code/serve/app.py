"""The OpenAI-compatible ASGI app (starlette + sse-starlette) over one ``Backend``.

Every request carries the server's API key (``Authorization: Bearer KEY``),
loopback included, and a body is checked against one schema
(``serve/request.py``) before it reaches the engine.

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
import secrets
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
    Backend,
    BlockCommitted,
    BlockDraft,
    ChatRequest,
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
from clover_code.protocol.confidence import encode_pieces
from clover_code.serve.request import BadRequest, BodyLimits, parse_body, read_body
from clover_code.serve.request import chat_request as request_for

__all__ = ["build_app"]


def build_app(
    backend: Backend,
    *,
    api_key: str,
    drafts: bool = False,
    limits: BodyLimits | None = None,
) -> Starlette:
    """The server app for ``backend``; every request must carry ``api_key`` as
    ``Authorization: Bearer``; ``drafts`` sends drafts to every streaming client."""
    expected = f"Bearer {api_key}".encode()
    body_limits = limits or BodyLimits()

    def authorized(request: Request) -> bool:
        given = request.headers.get("authorization", "").encode()
        return secrets.compare_digest(given, expected)

    async def models(request: Request) -> Response:
        if not authorized(request):
            return _unauthorized()
        entry = {"id": backend.model, "object": "model", "created": 0, "owned_by": "clover-code"}
        return JSONResponse({"object": "list", "data": [entry]})

    async def chat(request: Request) -> Response:
        if not authorized(request):
            return _unauthorized()
        try:
            body = parse_body(await read_body(request, body_limits))
        except BadRequest as exc:
            return _error(exc.status, exc.message)
        chat_request = request_for(body)
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        if not body.stream:
            return await _complete(backend, chat_request, completion_id)
        want_drafts = drafts or (body.clover is not None and body.clover.drafts)
        options = body.stream_options
        continuous = options is not None and options.continuous_usage_stats
        usage = options is not None and options.include_usage
        chunks = _stream(backend, chat_request, completion_id, want_drafts, continuous, usage)
        return EventSourceResponse(chunks, ping=15)

    return Starlette(
        routes=[
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/chat/completions", chat, methods=["POST"]),
        ]
    )


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
    continuous: bool,
    include_usage: bool,
) -> AsyncGenerator[str, None]:
    model = backend.model
    pending = _Block()
    tokens = 0
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
                if drafts and event.pieces is not None:
                    block = {"text": event.text, "confidence": encode_pieces(event.pieces)}
                    yield json.dumps(
                        {"id": cid, "choices": [], "clover_block": block}, ensure_ascii=False
                    )
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
    if usage is not None and include_usage:
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


def _unauthorized() -> Response:
    return _error(
        401,
        "a valid API key is needed: send Authorization: Bearer KEY with the key the "
        "server printed at start (or set with --api-key / CLOVER_SERVE_API_KEY)",
        "invalid_api_key",
    )


def _error(status: int, message: str, code: str | None = None) -> Response:
    return JSONResponse(
        {"error": {"message": message, "type": "invalid_request_error", "code": code}},
        status_code=status,
    )
