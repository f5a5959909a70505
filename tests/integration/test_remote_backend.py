"""OpenAIBackend against a real loopback HTTP server replaying scripted streams."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from contextlib import aclosing
from typing import Any, TypeVar

import pytest

from clover_code.engine.base import ChatRequest, ToolSpec
from clover_code.engine.events import (
    BlockCommitted,
    ContentDelta,
    EngineEvent,
    Failed,
    Finished,
    ReasoningDelta,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from clover_code.engine.remote.backend import OpenAIBackend, api_root
from clover_code.engine.remote.retry import BackoffPolicy, parse_retry_after
from clover_code.errors import (
    AuthError,
    ContextOverflow,
    EngineError,
    EngineUnavailable,
    ModelNotFound,
    StreamInterrupted,
)
from tests.integration.sse_server import (
    MODELS_PATH,
    ScriptedResponse,
    ScriptedServer,
    Send,
    Step,
    encode_event,
    error_response,
    json_response,
    sse_response,
)
from tests.integration.stream_shapes import LlamaCppStream, SGLangStream, chunk
from tests.waiting import within

E = TypeVar("E")

READ_FILE = ToolSpec(
    "read_file",
    "Read a file.",
    {
        "type": "object",
        "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["path"],
    },
)
REQUEST = ChatRequest(messages=[{"role": "user", "content": "hi"}], tools=[READ_FILE])


def make_backend(server: ScriptedServer, **options: Any) -> OpenAIBackend:
    options.setdefault("backoff_base", 0.01)
    return OpenAIBackend(server.base_url, "test-model", **options)


class RecordedBackoff(BackoffPolicy):
    """The backend's own policy, remembering each delay it chose before a retry."""

    def __init__(self, policy: BackoffPolicy) -> None:
        super().__init__(policy.max_retries, policy.base, policy.cap, policy.rng)
        self.delays: list[float] = []

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        chosen = super().delay(attempt, retry_after)
        self.delays.append(chosen)
        return chosen


async def collect(backend: OpenAIBackend, request: ChatRequest = REQUEST) -> list[EngineEvent]:
    try:
        return [event async for event in backend.stream(request)]
    finally:
        await backend.aclose()


def of(events: Sequence[EngineEvent], kind: type[E]) -> list[E]:
    return [e for e in events if isinstance(e, kind)]


def text_of(events: Sequence[EngineEvent], kind: type[ReasoningDelta | ContentDelta]) -> str:
    return "".join(e.text for e in of(events, kind))


def failure(events: Sequence[EngineEvent]) -> Failed:
    (failed,) = of(events, Failed)
    return failed


def finished(events: Sequence[EngineEvent]) -> str:
    assert isinstance(events[-1], Finished), events[-1]
    assert len(of(events, Finished)) == 1
    return events[-1].reason


BLOCKS = [f"block {i} " + "word " * 20 for i in range(6)]


# -- shapes of real servers --------------------------------------------------------


async def test_sglang_blocks_keep_their_boundaries(scripted_server: ScriptedServer) -> None:
    stream = SGLangStream().reasoning(*BLOCKS[:2]).content(*BLOCKS[2:])
    scripted_server.enqueue(sse_response(stream.chunks()))
    events = await collect(make_backend(scripted_server))

    blocks = of(events, BlockCommitted)
    assert [b.text for b in blocks] == BLOCKS
    assert [b.block for b in blocks] == list(range(6))
    assert all(b.token_count == 32 for b in blocks)
    assert text_of(events, ReasoningDelta) == "".join(BLOCKS[:2])
    # the parser of "auto" mode trims the answer's outer whitespace
    assert text_of(events, ContentDelta) == "".join(BLOCKS[2:]).rstrip()
    assert of(events, Usage) == [Usage(57, 6 * 32)]
    assert finished(events) == "stop"


async def test_request_body_carries_the_options(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(sse_response(SGLangStream().content("ok").chunks()))
    request = ChatRequest(
        messages=[{"role": "user", "content": "hi"}],
        tools=[READ_FILE],
        max_tokens=123,
        temperature=0.25,
        enable_thinking=False,
        stop=("END",),
    )
    await collect(make_backend(scripted_server, api_key="sk-test"), request)

    (sent,) = scripted_server.chat_requests
    body = sent.json()
    assert body["model"] == "test-model"
    assert body["stream"] is True
    assert body["stream_options"]["include_usage"] is True
    assert body["max_tokens"] == 123
    assert body["temperature"] == 0.25
    assert body["stop"] == ["END"]
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert body["tools"] == [READ_FILE.openai()]
    assert body["messages"] == request.messages
    assert sent.headers["authorization"] == "Bearer sk-test"


async def test_penalties_are_sent_and_a_notice_says_what_the_server_may_skip(
    scripted_server: ScriptedServer,
) -> None:
    from clover_code.config.settings import Settings
    from clover_code.engine.select import build_backend

    scripted_server.enqueue(sse_response(SGLangStream().content("ok").chunks()))
    settings = Settings(
        base_url=scripted_server.base_url,
        model="test-model",
        repetition_penalty=1.1,
        end_bias_after=100,
        max_retries=0,
    )
    backend = build_backend(settings)
    assert isinstance(backend, OpenAIBackend)
    request = ChatRequest([{"role": "user", "content": "hi"}], controls={"presence_penalty": 0.5})
    await collect(backend, request)
    body = scripted_server.chat_requests[0].json()
    assert (body["repetition_penalty"], body["presence_penalty"]) == (1.1, 0.5)
    assert "frequency_penalty" not in body
    sent, unapplied = backend.notices
    assert "repetition_penalty is sent" in sent and "dLLM mode skips its sampler" in sent
    assert "does not apply end_bias_after" in unapplied
    plain = build_backend(Settings(base_url=scripted_server.base_url))
    assert isinstance(plain, OpenAIBackend) and plain.notices == ()
    await plain.aclose()


async def test_token_stream_is_grouped_by_block_size(scripted_server: ScriptedServer) -> None:
    text = "lorem ipsum dolor sit amet " * 20
    stream = LlamaCppStream().content(text)
    scripted_server.enqueue(sse_response(stream.chunks()))
    events = await collect(make_backend(scripted_server, block_size=8))

    blocks = of(events, BlockCommitted)
    assert "".join(b.text for b in blocks) == text
    assert text_of(events, ContentDelta) == text.rstrip()
    assert [b.token_count for b in blocks[:-1]] == [8] * (len(blocks) - 1)
    assert sum(b.token_count for b in blocks) == stream.tokens
    assert 0 < blocks[-1].token_count <= 8
    assert of(events, Usage) == [Usage(31, stream.tokens)]
    assert finished(events) == "stop"


async def test_reasoning_tokens_are_grouped_too(scripted_server: ScriptedServer) -> None:
    stream = LlamaCppStream().reasoning("let me think about it " * 10).content("answer")
    scripted_server.enqueue(sse_response(stream.chunks()))
    events = await collect(make_backend(scripted_server))

    assert text_of(events, ReasoningDelta) == "let me think about it " * 10
    assert text_of(events, ContentDelta) == "answer"
    assert "".join(b.text for b in of(events, BlockCommitted)) == stream.text


# -- tool calls ---------------------------------------------------------------------


@pytest.mark.parametrize("whole", [False, True], ids=["per-parameter", "whole-json"])
async def test_sglang_tool_call(scripted_server: ScriptedServer, whole: bool) -> None:
    stream = SGLangStream().content("I will read it.")
    call_id = stream.tool_call("read_file", {"path": "src/a.py", "limit": 40}, whole=whole)
    scripted_server.enqueue(sse_response(stream.chunks()))
    events = await collect(make_backend(scripted_server))

    assert of(events, ToolCallStart) == [ToolCallStart(0, call_id, "read_file")]
    args = "".join(a.delta for a in of(events, ToolCallArgs))
    assert json.loads(args) == {"path": "src/a.py", "limit": 40}
    assert of(events, ToolCallEnd) == [
        ToolCallEnd(0, call_id, "read_file", {"path": "src/a.py", "limit": 40})
    ]
    # argument text is model output: it is in the blocks
    assert "".join(b.text for b in of(events, BlockCommitted)) == stream.text
    assert finished(events) == "tool_calls"


async def test_llama_tool_call_fragments(scripted_server: ScriptedServer) -> None:
    stream = LlamaCppStream().content("Reading.")
    first = stream.tool_call("read_file", {"path": "a.py"}, fragment=3)
    second = stream.tool_call("read_file", {"path": "b.py", "limit": 5}, fragment=4)
    # llama.cpp can say "stop" after a call; the calls decide the reason
    scripted_server.enqueue(sse_response(stream.chunks(finish_reason="stop")))
    events = await collect(make_backend(scripted_server))

    assert [(s.index, s.id) for s in of(events, ToolCallStart)] == [(0, first), (1, second)]
    assert len(of(events, ToolCallArgs)) > 4
    assert [(e.index, e.arguments, e.error) for e in of(events, ToolCallEnd)] == [
        (0, {"path": "a.py"}, None),
        (1, {"path": "b.py", "limit": 5}, None),
    ]
    assert finished(events) == "tool_calls"


async def test_invalid_tool_arguments_become_a_tool_error(scripted_server: ScriptedServer) -> None:
    stream = LlamaCppStream()
    stream.tool_call("read_file", '{"path": "a.py", "limit": ')
    scripted_server.enqueue(sse_response(stream.chunks()))
    events = await collect(make_backend(scripted_server))

    (end,) = of(events, ToolCallEnd)
    assert end.arguments == {}
    assert end.error is not None
    assert end.error.startswith("arguments of tool read_file are not valid JSON")
    assert not of(events, Failed)
    assert finished(events) == "tool_calls"


async def test_unknown_tool_passes_through(scripted_server: ScriptedServer) -> None:
    stream = SGLangStream()
    stream.tool_call("launch_rocket", {"target": "moon"})
    scripted_server.enqueue(sse_response(stream.chunks()))
    events = await collect(make_backend(scripted_server))

    (end,) = of(events, ToolCallEnd)
    assert (end.name, end.arguments, end.error) == ("launch_rocket", {"target": "moon"}, None)


# -- raw Qwen3 text (a server without reasoning / tool parsers) ----------------------------

RAW_BLOCKS = [
    "The user wants a file read. ",
    "I should call the tool.\n</think>\n\nLet me look.",
    "\n\n<tool_call>\n<function=read_file>\n<parameter=path>\nsrc/a.py\n</parameter>\n",
    "<parameter=limit>\n40\n</parameter>\n</function>\n</tool_call>",
]


async def test_raw_qwen3_text_is_parsed(scripted_server: ScriptedServer) -> None:
    stream = SGLangStream().content(*RAW_BLOCKS)
    scripted_server.enqueue(sse_response(stream.chunks(finish_reason="stop")))
    events = await collect(make_backend(scripted_server, raw_parsing="always"))

    assert text_of(events, ReasoningDelta).strip() == (
        "The user wants a file read. I should call the tool."
    )
    assert text_of(events, ContentDelta).strip() == "Let me look."
    (end,) = of(events, ToolCallEnd)
    assert (end.name, end.arguments, end.error) == (
        "read_file",
        {"path": "src/a.py", "limit": 40},
        None,
    )
    # the blocks carry the raw text, tags and all
    assert [b.text for b in of(events, BlockCommitted)] == RAW_BLOCKS
    assert finished(events) == "tool_calls"


async def test_auto_parsing_reads_tags_in_content(scripted_server: ScriptedServer) -> None:
    stream = SGLangStream().content("<think>hmm</think>Sure.", *RAW_BLOCKS[2:])
    scripted_server.enqueue(sse_response(stream.chunks(finish_reason="stop")))
    events = await collect(make_backend(scripted_server))

    assert text_of(events, ReasoningDelta) == "hmm"
    assert text_of(events, ContentDelta).strip() == "Sure."
    assert [e.name for e in of(events, ToolCallEnd)] == ["read_file"]


async def test_never_parsing_passes_content_through(scripted_server: ScriptedServer) -> None:
    stream = SGLangStream().content(*RAW_BLOCKS)
    scripted_server.enqueue(sse_response(stream.chunks()))
    events = await collect(make_backend(scripted_server, raw_parsing="never"))

    assert text_of(events, ContentDelta) == "".join(RAW_BLOCKS)
    assert not of(events, ToolCallEnd)
    assert finished(events) == "stop"


# -- faults ------------------------------------------------------------------------------


async def test_drop_after_output_keeps_the_partial_answer(scripted_server: ScriptedServer) -> None:
    stream = SGLangStream().content(*BLOCKS)
    # the role chunk plus three blocks, then the connection drops
    scripted_server.enqueue(sse_response(stream.chunks(), drop_after=4))
    events = await collect(make_backend(scripted_server))

    assert [b.text for b in of(events, BlockCommitted)] == BLOCKS[:3]
    assert text_of(events, ContentDelta) == "".join(BLOCKS[:3]).rstrip()
    failed = failure(events)
    assert isinstance(failed.error, StreamInterrupted)
    assert failed.partial
    assert "dropped after 3 blocks" in str(failed.error)
    assert scripted_server.base_url in str(failed.error)
    assert finished(events) == "interrupted"
    # never a silent retry once output has begun
    assert len(scripted_server.chat_requests) == 1


async def test_drop_mid_tool_call_does_not_hand_over_a_truncated_call(
    scripted_server: ScriptedServer,
) -> None:
    stream = LlamaCppStream().content("ok")
    stream.tool_call("read_file", {"path": "a.py", "limit": 5}, fragment=3)
    scripted_server.enqueue(sse_response(stream.chunks(), drop_after=8))
    events = await collect(make_backend(scripted_server))

    (end,) = of(events, ToolCallEnd)
    assert end.error is not None and "stream broke" in end.error
    assert finished(events) == "interrupted"


async def test_drop_before_output_is_retried(scripted_server: ScriptedServer) -> None:
    stream = SGLangStream().content(*BLOCKS[:2])
    scripted_server.enqueue(
        sse_response(stream.chunks(), drop_after=1),  # only the empty role chunk
        sse_response(stream.chunks()),
    )
    events = await collect(make_backend(scripted_server))

    assert not of(events, Failed)
    assert [b.text for b in of(events, BlockCommitted)] == BLOCKS[:2]
    assert len(scripted_server.chat_requests) == 2


async def test_429_honours_retry_after(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(
        error_response(429, "slow down", retry_after="1"),
        sse_response(SGLangStream().content("done").chunks()),
    )
    backend = make_backend(scripted_server)
    backend.backoff = waits = RecordedBackoff(backend.backoff)
    events = await collect(backend)

    assert waits.delays == [1.0]  # the server's Retry-After, not the 0.01 s backoff
    assert text_of(events, ContentDelta) == "done"
    assert finished(events) == "stop"
    assert len(scripted_server.chat_requests) == 2


async def test_retry_after_is_capped_by_backoff_max(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(
        error_response(503, "overloaded", retry_after="3600"),
        sse_response(SGLangStream().content("done").chunks()),
    )
    backend = make_backend(scripted_server, backoff_max=0.2)
    backend.backoff = waits = RecordedBackoff(backend.backoff)
    events = await collect(backend)

    assert waits.delays == [0.2]
    assert text_of(events, ContentDelta) == "done"


async def test_500_then_success(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(
        error_response(500, "internal error"),
        sse_response(SGLangStream().content("fine").chunks()),
    )
    events = await collect(make_backend(scripted_server))

    assert text_of(events, ContentDelta) == "fine"
    assert not of(events, Failed)
    assert len(scripted_server.chat_requests) == 2


async def test_retries_run_out(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(*[error_response(503, "model is loading")] * 3)
    events = await collect(make_backend(scripted_server, max_retries=2))

    error = failure(events).error
    assert type(error) is EngineError
    assert "HTTP 503" in str(error) and "model is loading" in str(error)
    assert finished(events) == "error"
    assert len(scripted_server.chat_requests) == 3


async def test_unreachable_server_is_retried_then_reported(closed_port_url: str) -> None:
    backend = OpenAIBackend(closed_port_url, "m", max_retries=2, backoff_base=0.01)
    events = await collect(backend)

    error = failure(events).error
    assert isinstance(error, EngineUnavailable)
    assert closed_port_url in str(error) and "after 3 attempts" in str(error)
    assert finished(events) == "error"


async def test_invalid_json_before_output(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(sse_response([chunk({"role": "assistant"}), b"{not json"]))
    events = await collect(make_backend(scripted_server))

    failed = failure(events)
    assert type(failed.error) is EngineError and not failed.partial
    assert "malformed stream chunk" in str(failed.error)
    assert finished(events) == "error"
    assert len(scripted_server.chat_requests) == 1


async def test_invalid_json_after_output_keeps_what_arrived(
    scripted_server: ScriptedServer,
) -> None:
    chunks = SGLangStream().content(*BLOCKS[:2]).chunks()
    scripted_server.enqueue(
        sse_response([*chunks[:3], b'{"choices": [{"delta": {"cont', *chunks[3:]])
    )
    events = await collect(make_backend(scripted_server))

    assert [b.text for b in of(events, BlockCommitted)] == BLOCKS[:2]
    failed = failure(events)
    assert isinstance(failed.error, StreamInterrupted) and failed.partial
    assert "partial answer is kept" in str(failed.error)
    assert finished(events) == "interrupted"


async def test_context_overflow_is_not_retried(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(
        error_response(
            400,
            "This model's maximum context length is 4096 tokens. However, you requested 5000.",
        )
    )
    events = await collect(make_backend(scripted_server))

    error = failure(events).error
    assert isinstance(error, ContextOverflow)
    assert "context window" in str(error)
    assert finished(events) == "error"
    assert len(scripted_server.chat_requests) == 1


async def test_context_overflow_inside_the_stream(scripted_server: ScriptedServer) -> None:
    error_chunk = {"error": {"message": "the request exceeds the available context size"}}
    scripted_server.enqueue(sse_response([error_chunk]))
    events = await collect(make_backend(scripted_server))

    assert isinstance(failure(events).error, ContextOverflow)
    assert finished(events) == "error"


async def test_401_is_an_auth_error(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(error_response(401, "invalid api key"))
    events = await collect(make_backend(scripted_server))

    error = failure(events).error
    assert isinstance(error, AuthError)
    assert "CLOVER_API_KEY" in str(error)
    assert len(scripted_server.chat_requests) == 1


async def test_404_model_is_model_not_found(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(error_response(404, "The model `test-model` does not exist."))
    events = await collect(make_backend(scripted_server))

    assert isinstance(failure(events).error, ModelNotFound)
    assert len(scripted_server.chat_requests) == 1


async def test_stream_closed_without_an_end_is_interrupted(scripted_server: ScriptedServer) -> None:
    chunks = SGLangStream().content(*BLOCKS[:2]).chunks()
    # a well-framed body that simply stops: no finish_reason, no [DONE]
    scripted_server.enqueue(sse_response(chunks[:3], done=False))
    events = await collect(make_backend(scripted_server))

    assert [b.text for b in of(events, BlockCommitted)] == BLOCKS[:2]
    assert isinstance(failure(events).error, StreamInterrupted)
    assert finished(events) == "interrupted"


# -- the wire ------------------------------------------------------------------------------


async def test_sse_comments_crlf_and_multiline_data(scripted_server: ScriptedServer) -> None:
    first = json.dumps(chunk({"content": "Hello"}))
    steps: list[Step] = [
        Send(b": keep-alive\r\n\r\n"),
        Send(b"data: " + first.encode() + b"\r\n\r\n"),
        Send(b'data: {"choices": [{"index": 0,\ndata:  "delta": {"content": " world"}}]}\n\n'),
        Send(b'data:{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'),
        Send(b"data: [DONE]\n\n"),
    ]
    scripted_server.enqueue(ScriptedResponse(steps=steps, content_type="text/event-stream"))
    events = await collect(make_backend(scripted_server))

    assert text_of(events, ContentDelta) == "Hello world"
    assert finished(events) == "stop"


async def test_connection_is_reused(scripted_server: ScriptedServer) -> None:
    for _ in range(3):
        scripted_server.enqueue(sse_response(SGLangStream().content("hi").chunks()))
    backend = make_backend(scripted_server)
    for _ in range(3):
        async with aclosing(backend.stream(REQUEST)) as stream:
            assert [e async for e in stream][-1] == Finished("stop")
    await backend.aclose()
    assert scripted_server.connections == 1


async def test_cancelling_the_consumer_closes_the_connection(
    scripted_server: ScriptedServer,
) -> None:
    stream = SGLangStream().content(*BLOCKS[:2])
    scripted_server.enqueue(sse_response(stream.chunks()[:3], hold=True))
    backend = make_backend(scripted_server)
    got_output = asyncio.Event()

    async def consume() -> None:
        async for event in backend.stream(REQUEST):
            if isinstance(event, BlockCommitted):
                got_output.set()

    task = asyncio.create_task(consume())
    await within(got_output.wait(), message="the first committed block")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await scripted_server.wait_for_disconnect(), "the connection stayed open"
    await backend.aclose()


async def test_closing_the_stream_closes_the_connection(scripted_server: ScriptedServer) -> None:
    stream = SGLangStream().content(*BLOCKS[:2])
    scripted_server.enqueue(sse_response(stream.chunks()[:3], hold=True))
    backend = make_backend(scripted_server)
    async with aclosing(backend.stream(REQUEST)) as events:
        async for event in events:
            if isinstance(event, BlockCommitted):
                break
    assert await scripted_server.wait_for_disconnect(), "the connection stayed open"
    await backend.aclose()


# -- check() -------------------------------------------------------------------------------


async def test_check_picks_the_first_served_model(scripted_server: ScriptedServer) -> None:
    scripted_server.models = ["clover-35b", "other"]
    backend = OpenAIBackend(scripted_server.root_url)  # no /v1: it is appended
    await backend.check()
    await backend.aclose()
    assert backend.model == "clover-35b"
    assert scripted_server.requests[0].path == MODELS_PATH


async def test_stream_without_a_model_checks_first(scripted_server: ScriptedServer) -> None:
    scripted_server.models = ["served"]
    scripted_server.enqueue(sse_response(SGLangStream().content("hi").chunks()))
    events = await collect(OpenAIBackend(scripted_server.base_url + "/"))

    assert finished(events) == "stop"
    assert scripted_server.chat_requests[0].json()["model"] == "served"


async def test_check_missing_model_names_the_served_ones(scripted_server: ScriptedServer) -> None:
    scripted_server.models = ["a-model", "b-model"]
    backend = OpenAIBackend(scripted_server.base_url, "clover")
    with pytest.raises(ModelNotFound, match="'a-model', 'b-model'"):
        await backend.check()
    await backend.aclose()


async def test_check_401(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(error_response(401, "no"), path=MODELS_PATH)
    backend = OpenAIBackend(scripted_server.base_url, "m", api_key="wrong")
    with pytest.raises(AuthError, match=r"refused the API key.*CLOVER_API_KEY"):
        await backend.check()
    await backend.aclose()


async def test_check_not_an_openai_server(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(json_response({"hello": "world"}), path=MODELS_PATH)
    backend = OpenAIBackend(scripted_server.base_url, "m")
    with pytest.raises(EngineUnavailable, match="not an OpenAI model list"):
        await backend.check()
    await backend.aclose()


async def test_check_unreachable(closed_port_url: str) -> None:
    backend = OpenAIBackend(closed_port_url, "m")
    with pytest.raises(EngineUnavailable) as info:
        await backend.check()
    await backend.aclose()
    assert closed_port_url in str(info.value)
    assert "--base-url" in str(info.value)


# -- small pure pieces -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "given",
    ["http://h:1", "http://h:1/", "http://h:1/v1", "http://h:1/v1/", " http://h:1/v1 "],
)
def test_api_root(given: str) -> None:
    assert api_root(given) == "http://h:1/v1"


def test_api_root_keeps_a_path_prefix() -> None:
    assert api_root("https://proxy.example/openai") == "https://proxy.example/openai/v1"


def test_retry_after_forms() -> None:
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after("0.5") == 0.5
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    from datetime import UTC, datetime

    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("Wed, 01 Jan 2025 12:00:03 GMT", now=now) == 3.0
    assert parse_retry_after("Wed, 01 Jan 2025 11:00:00 GMT", now=now) == 0.0


async def test_read_timeout_after_output_is_interrupted(scripted_server: ScriptedServer) -> None:
    stream = SGLangStream().content(*BLOCKS[:2])
    scripted_server.enqueue(sse_response(stream.chunks()[:3], hold=True))
    # Long enough that a stalled machine does not time out before the first blocks arrive.
    events = await collect(make_backend(scripted_server, read_timeout=1.0))

    assert [b.text for b in of(events, BlockCommitted)] == BLOCKS[:2]
    error = failure(events).error
    assert isinstance(error, StreamInterrupted)
    assert "timed out" in str(error) and "after 2 blocks" in str(error)
    assert finished(events) == "interrupted"
    assert len(scripted_server.chat_requests) == 1


async def test_block_chunks_without_usage_keep_their_boundaries(
    scripted_server: ScriptedServer,
) -> None:
    chunks = SGLangStream().content(*BLOCKS).chunks()
    for c in chunks[:-1]:  # a server that reports usage only at the end
        del c["usage"]
    scripted_server.enqueue(sse_response(chunks))
    events = await collect(make_backend(scripted_server))

    assert [b.text for b in of(events, BlockCommitted)] == BLOCKS
    assert of(events, Usage) == [Usage(57, 6 * 32)]


async def test_a_long_token_does_not_split_a_token_stream(scripted_server: ScriptedServer) -> None:
    # A run of indentation is one token in many vocabularies.
    stream = LlamaCppStream().content("a b c d e f g h i j k l").content(" " * 40 + "x")
    stream.content(" m n o p q r s t u v w x y z")
    scripted_server.enqueue(sse_response(stream.chunks()))
    events = await collect(make_backend(scripted_server, block_size=16))

    blocks = of(events, BlockCommitted)
    assert "".join(b.text for b in blocks) == stream.text
    assert not any(b.text == " " * 40 + "x" for b in blocks)


async def test_llama_cpp_error_line_mid_stream(scripted_server: ScriptedServer) -> None:
    chunks = SGLangStream().content(BLOCKS[0]).chunks()
    steps: list[Step] = [
        Send(encode_event(chunks[0])),
        Send(encode_event(chunks[1])),
        Send(b'error: {"code": 500, "message": "slot crashed", "type": "server_error"}\n\n'),
    ]
    scripted_server.enqueue(ScriptedResponse(steps=steps, content_type="text/event-stream"))
    events = await collect(make_backend(scripted_server))

    assert [b.text for b in of(events, BlockCommitted)] == [BLOCKS[0]]
    failed = failure(events)
    assert isinstance(failed.error, StreamInterrupted) and failed.partial
    assert "slot crashed" in str(failed.error)
    assert finished(events) == "interrupted"


async def test_drop_after_the_finish_chunk_is_a_normal_end(scripted_server: ScriptedServer) -> None:
    chunks = SGLangStream().content(BLOCKS[0]).chunks()
    # everything up to finish_reason arrives; the usage chunk and [DONE] do not
    scripted_server.enqueue(sse_response(chunks, drop_after=len(chunks) - 1))
    events = await collect(make_backend(scripted_server))

    assert not of(events, Failed)
    assert [b.text for b in of(events, BlockCommitted)] == [BLOCKS[0]]
    assert finished(events) == "stop"


async def test_a_server_that_does_not_stream(scripted_server: ScriptedServer) -> None:
    message = {
        "role": "assistant",
        "content": "Reading it.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
            }
        ],
    }
    completion = {
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 12, "total_tokens": 21},
    }
    scripted_server.enqueue(json_response(completion))
    events = await collect(make_backend(scripted_server))

    assert text_of(events, ContentDelta) == "Reading it."
    assert of(events, ToolCallEnd) == [ToolCallEnd(0, "call_1", "read_file", {"path": "a.py"})]
    assert of(events, Usage) == [Usage(9, 12)]
    assert len(of(events, BlockCommitted)) == 1
    assert finished(events) == "tool_calls"


async def test_an_empty_stream_is_asked_again_without_streaming(
    scripted_server: ScriptedServer,
) -> None:
    # llama-cpp-python answers a streamed request that fails at once with an
    # empty 200 stream; only the unstreamed request tells why.
    scripted_server.enqueue(
        sse_response([], done=False),
        error_response(400, "Requested tokens (6010) exceed context window of 4096"),
    )
    events = await collect(make_backend(scripted_server))

    assert isinstance(failure(events).error, ContextOverflow)
    first, second = (r.json() for r in scripted_server.chat_requests)
    assert first["stream"] is True and second["stream"] is False
    assert "stream_options" not in second
