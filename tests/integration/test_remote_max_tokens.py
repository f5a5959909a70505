"""The remote backend's default max_tokens, on the wire to a real loopback server."""

from __future__ import annotations

from typing import Any

import pytest

from clover_code.engine.base import ChatRequest
from clover_code.engine.events import ContentDelta, EngineEvent, Failed
from clover_code.engine.remote.backend import OpenAIBackend
from clover_code.engine.remote.max_tokens import MAX_TOKENS_CAP, default_max_tokens
from clover_code.errors import ContextOverflow
from tests.integration.sse_server import ScriptedServer, error_response, sse_response
from tests.integration.stream_shapes import SGLangStream

pytestmark = pytest.mark.integration

REQUEST = ChatRequest(messages=[{"role": "user", "content": "hi"}])


def answer(text: str = "ok") -> Any:
    return sse_response(SGLangStream().content(text).chunks())


async def stream_all(backend: OpenAIBackend, request: ChatRequest = REQUEST) -> list[EngineEvent]:
    return [event async for event in backend.stream(request)]


def sent_max_tokens(server: ScriptedServer) -> list[int | None]:
    return [r.json().get("max_tokens") for r in server.chat_requests]


def test_default_is_the_window_left_capped() -> None:
    assert default_max_tokens(131_072, 2_000) == MAX_TOKENS_CAP
    assert default_max_tokens(40_000, 30_000) == 10_000
    assert default_max_tokens(8_192, 9_000) == 1


async def test_the_window_left_after_a_long_prompt(scripted_server: ScriptedServer) -> None:
    backend = OpenAIBackend(scripted_server.base_url, "test-model", context_window=40_000)
    long = ChatRequest(messages=[{"role": "user", "content": "word " * 20_000}])
    scripted_server.enqueue(answer(), answer())
    try:
        await stream_all(backend, long)
        await stream_all(backend, ChatRequest(messages=REQUEST.messages, max_tokens=99))
    finally:
        await backend.aclose()
    first, second = sent_max_tokens(scripted_server)
    # 100,000 characters are estimated generously, so the answer gets less than
    # the cap and less than what a 4-characters-a-token guess would leave.
    assert first is not None and 1 < first < 40_000 - 100_000 // 4
    assert second == 99


async def test_no_window_no_default(scripted_server: ScriptedServer) -> None:
    backend = OpenAIBackend(scripted_server.base_url, "test-model")
    scripted_server.enqueue(answer())
    try:
        await stream_all(backend)
    finally:
        await backend.aclose()
    assert sent_max_tokens(scripted_server) == [None]


async def test_a_server_that_refuses_the_default_is_asked_without_it(
    scripted_server: ScriptedServer,
) -> None:
    backend = OpenAIBackend(scripted_server.base_url, "test-model", context_window=131_072)
    scripted_server.enqueue(
        error_response(400, "max_tokens is too large: 32768. This model supports at most 4096."),
        answer("first"),
        answer("second"),
    )
    try:
        first = await stream_all(backend)
        second = await stream_all(backend)
    finally:
        await backend.aclose()
    assert [e.text for e in first if isinstance(e, ContentDelta)] == ["first"]
    assert [e.text for e in second if isinstance(e, ContentDelta)] == ["second"]
    assert sent_max_tokens(scripted_server) == [MAX_TOKENS_CAP, None, None]


async def test_a_window_the_server_names_is_learned(scripted_server: ScriptedServer) -> None:
    backend = OpenAIBackend(scripted_server.base_url, "test-model", context_window=131_072)
    too_long = (
        "This model's maximum context length is 8192 tokens. However, you requested "
        "32800 tokens (32 in the messages, 32768 in the completion)."
    )
    scripted_server.enqueue(error_response(400, too_long), answer(), answer())
    try:
        await stream_all(backend)
        await stream_all(backend)
    finally:
        await backend.aclose()
    first, retried, later = sent_max_tokens(scripted_server)
    assert (first, retried) == (MAX_TOKENS_CAP, None)
    assert later is not None and later < 8192


async def test_a_prompt_that_does_not_fit_still_fails_once_asked_without(
    scripted_server: ScriptedServer,
) -> None:
    backend = OpenAIBackend(scripted_server.base_url, "test-model", context_window=131_072)
    overflow = "the request exceeds the available context size"
    scripted_server.enqueue(error_response(400, overflow), error_response(400, overflow))
    try:
        events = await stream_all(backend)
    finally:
        await backend.aclose()
    failures = [e for e in events if isinstance(e, Failed)]
    assert len(failures) == 1 and isinstance(failures[0].error, ContextOverflow)
    assert sent_max_tokens(scripted_server) == [MAX_TOKENS_CAP, None]
