"""OpenAIBackend against a real, independent peer: llama-cpp-python's server.

The server (started once per session by the ``llama_server`` fixture) serves
Gemma-3-270M, an autoregressive model that streams about one token per chunk,
so these tests also prove the block grouping on real output.
"""

from __future__ import annotations

import asyncio

import pytest

from clover_code.engine.base import ChatRequest
from clover_code.engine.events import (
    BlockCommitted,
    ContentDelta,
    EngineEvent,
    Failed,
    Finished,
    ReasoningDelta,
    Usage,
)
from clover_code.engine.remote.backend import OpenAIBackend
from clover_code.errors import ContextOverflow, ModelNotFound
from tests.integration.llama_peer import LlamaServer
from tests.waiting import within

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

PROMPT = ChatRequest(
    messages=[{"role": "user", "content": "Write the numbers from one to twenty in words."}],
    max_tokens=64,
    temperature=0.0,
    enable_thinking=False,
)


async def stream_all(backend: OpenAIBackend, request: ChatRequest) -> list[EngineEvent]:
    return [event async for event in backend.stream(request)]


async def test_streams_a_real_completion(llama_server: LlamaServer) -> None:
    backend = OpenAIBackend(llama_server.base_url, None, block_size=8, raw_parsing="never")
    try:
        await backend.check()
        events = await stream_all(backend, PROMPT)
    finally:
        await backend.aclose()

    # check() picked the one model the server serves
    assert backend.model
    assert not [e for e in events if isinstance(e, Failed)], events[-2:]
    finished = events[-1]
    assert isinstance(finished, Finished) and finished.reason in ("stop", "length")

    text = "".join(e.text for e in events if isinstance(e, ReasoningDelta | ContentDelta))
    blocks = [e for e in events if isinstance(e, BlockCommitted)]
    assert text.strip(), "the model produced no text"
    assert "".join(b.text for b in blocks) == text
    assert [b.block for b in blocks] == list(range(len(blocks)))
    # a token-by-token server is grouped into blocks of block_size tokens
    assert len(blocks) >= 2
    assert all(b.token_count == 8 for b in blocks[:-1])

    # llama-cpp-python sends no usage in streams (as of 0.3.x) and the backend
    # never invents a prompt count; when a version does send it, it must agree.
    usages = [e for e in events if isinstance(e, Usage)]
    counted = sum(b.token_count for b in blocks)
    assert 0 < counted <= 64
    if usages:
        (usage,) = usages
        assert usage.prompt_tokens > 0
        assert usage.completion_tokens == counted


async def test_default_parsing_on_a_real_server(llama_server: LlamaServer) -> None:
    backend = OpenAIBackend(llama_server.base_url, None)
    try:
        await backend.check()
        events = await stream_all(backend, PROMPT)
    finally:
        await backend.aclose()

    assert "".join(e.text for e in events if isinstance(e, ContentDelta)).strip()
    assert isinstance(events[-1], Finished) and events[-1].reason in ("stop", "length")


async def test_check_rejects_a_model_the_server_lacks(llama_server: LlamaServer) -> None:
    backend = OpenAIBackend(llama_server.base_url, "no-such-model")
    try:
        with pytest.raises(ModelNotFound, match="gemma"):
            await backend.check()
    finally:
        await backend.aclose()


async def test_cancelled_stream_leaves_the_server_usable(llama_server: LlamaServer) -> None:
    backend = OpenAIBackend(llama_server.base_url, None, block_size=4)
    long_request = ChatRequest(
        messages=[{"role": "user", "content": "Tell a very long story about a lighthouse."}],
        max_tokens=2000,
        temperature=0.0,
        enable_thinking=False,
    )
    try:
        await backend.check()
        first_block = asyncio.Event()

        async def consume() -> None:
            async for event in backend.stream(long_request):
                if isinstance(event, BlockCommitted):
                    first_block.set()

        task = asyncio.create_task(consume())
        await within(first_block.wait(), message="the first block from the real server")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

        # the server stopped generating for the closed stream and serves the next one
        events = await within(stream_all(backend, PROMPT), message="the whole real completion")
    finally:
        await backend.aclose()
    assert isinstance(events[-1], Finished) and events[-1].reason in ("stop", "length")


async def test_context_overflow_from_a_real_server(llama_server: LlamaServer) -> None:
    backend = OpenAIBackend(llama_server.base_url, None, backoff_base=0.01)
    too_long = ChatRequest(
        messages=[{"role": "user", "content": "lighthouse " * 6000}],
        max_tokens=16,
        enable_thinking=False,
    )
    try:
        await backend.check()
        events = await stream_all(backend, too_long)
    finally:
        await backend.aclose()

    (failed,) = [e for e in events if isinstance(e, Failed)]
    assert isinstance(failed.error, ContextOverflow), failed.error
    assert isinstance(events[-1], Finished) and events[-1].reason == "error"
