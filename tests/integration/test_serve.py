"""End to end over loopback: remote backend -> clover-code serve -> tiny stand-in model."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from clover_code.engine.base import ChatRequest, ToolSpec
from clover_code.engine.events import (
    BlockCommitted,
    BlockDraft,
    ContentDelta,
    Failed,
    Finished,
    ReasoningDelta,
    ToolCallEnd,
    Usage,
)
from clover_code.engine.local.hf import HFBackend, HFOptions
from clover_code.engine.remote.backend import OpenAIBackend
from clover_code.errors import ContextOverflow
from clover_code.serve.app import build_app
from tests.tiny_model import build_tiny_checkpoint, script_by_position, script_text
from tests.waiting import async_wait_until, within

pytestmark = pytest.mark.integration

TEXT = (
    "let me look</think>\n\nListing now.\n<tool_call>\n<function=ls>\n<parameter=path>\n"
    "src\n</parameter>\n</function>\n</tool_call>"
)
KEY = "test-serve-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
LS = ToolSpec("ls", "list", {"type": "object", "properties": {"path": {"type": "string"}}})


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "ckpt")


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _serving(backend: HFBackend, drafts: bool) -> AsyncIterator[str]:
    port = _port()
    config = uvicorn.Config(
        build_app(backend, api_key=KEY, drafts=drafts), port=port, log_level="warning"
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    await async_wait_until(
        lambda: server.started or task.done(), message=f"the server to listen on port {port}"
    )
    if task.done():
        task.result()  # serve() failed: its error, not a hang
        raise AssertionError(f"the server on port {port} stopped before it started")
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        await task


def _list_src(**options: Any) -> ChatRequest:
    return ChatRequest([{"role": "user", "content": "list src"}], [LS], **options)


async def _remote_events(url: str, request: ChatRequest) -> list[Any]:
    """Everything clover-code's remote backend makes of one response from ``url``."""
    remote = OpenAIBackend(url, api_key=KEY, block_size=8, max_retries=0)
    try:
        return [e async for e in remote.stream(request)]
    finally:
        await remote.aclose()


@pytest.fixture
async def served(checkpoint: Path, request: pytest.FixtureRequest) -> AsyncIterator[str]:
    backend = HFBackend(str(checkpoint), HFOptions(block_size=8, context_window=2048))
    script_text(backend, TEXT)
    async for url in _serving(backend, drafts=getattr(request, "param", False)):
        yield url


@pytest.mark.parametrize("served", [True], indirect=True)
async def test_remote_backend_streams_blocks_drafts_and_tool_call(served: str) -> None:
    remote = OpenAIBackend(served, api_key=KEY, block_size=8, max_retries=0)
    try:
        events: list[Any] = [e async for e in remote.stream(_list_src())]
    finally:
        await remote.aclose()
    assert not [e for e in events if isinstance(e, Failed)], events
    drafts = [e for e in events if isinstance(e, BlockDraft)]
    assert drafts and drafts[0].step == 1 and len(drafts[0].tokens) == len(drafts[0].masked)
    blocks = [e for e in events if isinstance(e, BlockCommitted)]
    assert len(blocks) > 3
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    content = "".join(e.text for e in events if isinstance(e, ContentDelta))
    assert reasoning == "let me look" and content.strip() == "Listing now."
    call = next(e for e in events if isinstance(e, ToolCallEnd))
    assert (call.name, call.arguments) == ("ls", {"path": "src"})
    assert events[-1] == Finished("tool_calls")
    assert remote.model == "ckpt"


async def test_non_streaming_completion_and_models(served: str) -> None:
    async with httpx.AsyncClient(timeout=120, headers=AUTH) as client:
        models = (await client.get(f"{served}/models")).json()
        assert [m["id"] for m in models["data"]] == ["ckpt"]
        body = {
            "model": "ckpt",
            "messages": [{"role": "user", "content": "list src"}],
            "tools": [LS.openai()],
        }
        reply = (await client.post(f"{served}/chat/completions", json=body)).json()
    message = reply["choices"][0]["message"]
    assert message["reasoning_content"] == "let me look"
    assert message["tool_calls"][0]["function"]["name"] == "ls"
    assert reply["choices"][0]["finish_reason"] == "tool_calls"
    assert reply["usage"]["completion_tokens"] > 0


async def test_no_drafts_unless_asked(served: str) -> None:
    events = await _remote_events(served, ChatRequest([{"role": "user", "content": "x"}]))
    assert not [e for e in events if isinstance(e, BlockDraft)]
    assert [e for e in events if isinstance(e, BlockCommitted)]


async def test_prompt_over_the_context_limit_is_one_clear_error(served: str) -> None:
    events = await _remote_events(served, ChatRequest([{"role": "user", "content": "y" * 5000}]))
    failed = next(e for e in events if isinstance(e, Failed))
    assert isinstance(failed.error, ContextOverflow)
    assert "context window" in str(failed.error)


def test_serve_main_without_a_checkpoint_is_one_sentence_and_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from clover_code.serve.main import main

    assert main(["--model-path", str(tmp_path)]) == 3
    err = capsys.readouterr().err.strip()
    assert err.startswith("clover-code serve: ") and "not a Hugging Face checkpoint" in err
    assert len(err.splitlines()) == 1


def test_serve_main_needs_a_model_path(capsys: pytest.CaptureFixture[str]) -> None:
    from clover_code.serve.main import main

    assert main([]) == 2
    assert "--model-path" in capsys.readouterr().err


async def test_a_client_can_ask_for_drafts_per_request(served: str) -> None:
    body = {
        "messages": [{"role": "user", "content": "x"}],
        "stream": True,
        "clover": {"drafts": True},
    }
    async with (
        httpx.AsyncClient(timeout=120, headers=AUTH) as client,
        client.stream("POST", f"{served}/chat/completions", json=body) as response,
    ):
        text = (await response.aread()).decode()
    assert '"clover_draft"' in text and text.rstrip().endswith("data: [DONE]")


@pytest.mark.parametrize("served", [True], indirect=True)
async def test_drafts_give_each_remote_block_its_denoising_steps(served: str) -> None:
    events = await _remote_events(served, _list_src())
    drafts = [e for e in events if isinstance(e, BlockDraft)]
    blocks = [e for e in events if isinstance(e, BlockCommitted)]
    assert all(b.steps for b in blocks), blocks
    # The last block holds only the tool call's closing tags, which the server
    # parses away: it still arrives, with its tokens and steps (and, from the
    # block's clover_block, its raw text).
    assert sum(b.steps or 0 for b in blocks) == len(drafts)
    assert blocks[-1].text == "</tool_call>" and blocks[-1].token_count > 0


@pytest.mark.parametrize("served", [True], indirect=True)
async def test_drafts_bring_each_blocks_raw_text_and_fill_confidences(served: str) -> None:
    events = await _remote_events(served, _list_src())
    blocks = [e for e in events if isinstance(e, BlockCommitted)]
    # The model's own text, block by block, each cut into its tokens' pieces.
    assert "".join(b.text for b in blocks) == TEXT
    for block in blocks:
        assert block.pieces is not None and sum(p.chars for p in block.pieces) == len(block.text)
        # 0.99, sent as its level of 0.05: [0.95, 1], read back as its middle
        assert all(p.step == 1 and p.confidence == 0.975 for p in block.pieces)


async def test_request_stop_strings_end_the_answer_through_serve(served: str) -> None:
    events = await _remote_events(served, _list_src(stop=("now.",)))
    content = "".join(e.text for e in events if isinstance(e, ContentDelta))
    assert content.strip() == "Listing"
    assert not [e for e in events if isinstance(e, ToolCallEnd)]
    assert events[-1] == Finished("stop")


async def test_stop_as_one_string_and_bad_stop_values(served: str) -> None:
    base = {"messages": [{"role": "user", "content": "list src"}], "tools": [LS.openai()]}
    async with httpx.AsyncClient(timeout=120, headers=AUTH) as client:
        url = f"{served}/chat/completions"
        reply = (await client.post(url, json={**base, "stop": "look"})).json()
        assert reply["choices"][0]["message"]["reasoning_content"].strip() == "let me"
        assert reply["choices"][0]["finish_reason"] == "stop"
        for bad in (7, ["a", 3], ["a", "b", "c", "d", "e"], ""):
            response = await client.post(url, json={**base, "stop": bad})
            assert response.status_code == 400
            message = response.json()["error"]["message"]
            assert message.startswith("invalid request: stop must be"), message


async def test_request_penalties_are_checked(served: str) -> None:
    base = {"messages": [{"role": "user", "content": "x"}]}
    async with httpx.AsyncClient(timeout=120, headers=AUTH) as client:
        url = f"{served}/chat/completions"
        ok = await client.post(url, json={**base, "presence_penalty": 0.5, "max_tokens": 8})
        assert ok.status_code == 200
        for key, bad, floor in (("presence_penalty", -1, "0"), ("repetition_penalty", 0.5, "1")):
            response = await client.post(url, json={**base, key: bad})
            assert response.status_code == 400
            assert response.json()["error"]["message"] == (
                f"invalid request: {key} must be a number of at least {floor}"
            )


async def test_tool_choice_none_hides_the_tools_and_forcing_is_refused(served: str) -> None:
    from clover_code.serve.request import chat_request, parse_body

    base = {"messages": [{"role": "user", "content": "list src"}], "tools": [LS.openai()]}
    assert chat_request(parse_body(json.dumps(base).encode())).tools == [LS]
    none = {**base, "tool_choice": "none"}
    assert chat_request(parse_body(json.dumps(none).encode())).tools == []
    async with httpx.AsyncClient(timeout=120, headers=AUTH) as client:
        url = f"{served}/chat/completions"
        assert (await client.post(url, json={**base, "tool_choice": "none"})).status_code == 200
        forced = {"type": "function", "function": {"name": "ls"}}
        for extra in ({"tool_choice": "required"}, {"tool_choice": forced}, {"n": 2}):
            response = await client.post(url, json={**base, **extra})
            assert response.status_code == 400
            assert response.json()["error"]["message"].startswith("invalid request: ")


async def test_a_client_that_goes_away_stops_the_generation(checkpoint: Path) -> None:
    # The random stand-in never gets confident: one token per step, so 4,000
    # tokens would take minutes. The client leaves after the first chunk.
    backend = HFBackend(str(checkpoint), HFOptions(block_size=8, context_window=8192))
    async for url in _serving(backend, drafts=False):
        body = {
            "messages": [{"role": "user", "content": "x"}],
            "stream": True,
            "max_tokens": 4000,
        }
        async with (
            httpx.AsyncClient(timeout=120, headers=AUTH) as client,
            client.stream("POST", f"{url}/chat/completions", json=body) as response,
        ):
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    break
        await async_wait_until(lambda: not backend.busy, message="the abandoned generation to stop")
        assert backend.last_stats is not None and backend.last_stats.tokens < 4000
        # The engine is free for the next client at once.
        async with httpx.AsyncClient(timeout=120, headers=AUTH) as client:
            reply = await client.post(
                f"{url}/chat/completions", json={**body, "stream": False, "max_tokens": 8}
            )
        assert reply.status_code == 200
        assert reply.json()["usage"]["completion_tokens"] == 8


async def test_concurrent_requests_share_the_engines_forwards(checkpoint: Path) -> None:
    backend = HFBackend(str(checkpoint), HFOptions(block_size=8, context_window=2048))
    widths = script_by_position(backend)
    bodies = [
        {"messages": [{"role": "user", "content": "hi " * k}], "max_tokens": 16} for k in (1, 5)
    ]
    async for url in _serving(backend, drafts=False):
        async with httpx.AsyncClient(timeout=120, headers=AUTH) as client:
            alone = [(await client.post(f"{url}/chat/completions", json=b)).json() for b in bodies]
            widths.clear()
            replies = await asyncio.gather(
                *(client.post(f"{url}/chat/completions", json=b) for b in bodies)
            )
    together = [r.json() for r in replies]
    assert [r["choices"][0]["message"] for r in together] == [
        r["choices"][0]["message"] for r in alone
    ]
    assert all(r["usage"]["completion_tokens"] == 16 for r in together)
    assert max(widths) == 2


async def test_malformed_requests_are_one_sentence_each(served: str) -> None:
    url = f"{served}/chat/completions"
    cases = [
        (b"{not json", "invalid request: "),
        (b'{"model": "x"}', "invalid request: the field 'messages' is missing"),
        (b'{"messages": []}', "invalid request: messages must be a non-empty list"),
        (
            b'{"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]}',
            "invalid request: the field 'function' is missing",
        ),
    ]
    async with httpx.AsyncClient(timeout=60, headers=AUTH) as client:
        for body, expected in cases:
            response = await client.post(
                url, content=body, headers={"content-type": "application/json"}
            )
            assert response.status_code == 400
            message = response.json()["error"]["message"]
            assert message.startswith(expected) and "\n" not in message, message


async def test_the_serve_command_loads_answers_and_stops_on_ctrl_c(
    checkpoint: Path, tmp_path: Path
) -> None:
    import os
    import signal
    import sys

    port = _port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOVER_")}
    env["XDG_CONFIG_HOME"] = str(tmp_path)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "clover_code",
        "serve",
        "--model-path",
        str(checkpoint),
        "--port",
        str(port),
        "--block-size",
        "8",
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    assert proc.stderr is not None
    lines: list[str] = []
    try:
        async with asyncio.timeout(120):
            while not lines or " on http://" not in lines[-1]:
                lines.append((await proc.stderr.readline()).decode())
                assert lines[-1], "".join(lines)
        assert lines[0].startswith(f"clover-code serve: loading {checkpoint} with the hf engine")
        # No key given: a random one, printed once, that every client must send.
        printed = [line for line in lines if "Authorization: Bearer " in line]
        assert len(printed) == 1, lines
        key = printed[0].split("Authorization: Bearer ", 1)[1].split()[0]
        assert len(key) >= 32
        url = f"http://127.0.0.1:{port}/v1"
        async with httpx.AsyncClient(timeout=60) as anonymous:
            assert (await anonymous.get(f"{url}/models")).status_code == 401
        headers = {"Authorization": f"Bearer {key}"}
        async with httpx.AsyncClient(timeout=60, headers=headers) as client:
            assert (await client.get(f"{url}/models")).json()["data"][0]["id"] == "ckpt"
            body = {"messages": [{"role": "user", "content": "x"}], "max_tokens": 8}
            reply = await client.post(f"{url}/chat/completions", json=body)
            assert reply.json()["usage"]["completion_tokens"] == 8
    finally:
        proc.send_signal(signal.SIGINT)
        code = await within(proc.wait(), message="serve to exit on Ctrl+C")
    assert code in (0, 130), (code, "".join(lines))


async def test_the_serve_command_streams_with_expert_selection(tmp_path: Path) -> None:
    import json
    import os
    import signal
    import sys

    checkpoint = build_tiny_checkpoint(tmp_path / "moe", experts=64, top_k=4, router_scale=100.0)
    port = _port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOVER_")}
    env["XDG_CONFIG_HOME"] = str(tmp_path)
    env["CLOVER_SERVE_API_KEY"] = KEY
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "clover_code",
        "serve",
        "--engine",
        "hf",
        "--model-path",
        str(checkpoint),
        "--port",
        str(port),
        "--block-size",
        "8",
        "--expert-mass",
        "0.9",
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    assert proc.stderr is not None
    lines: list[str] = []
    try:
        async with asyncio.timeout(120):
            while not lines or " on http://" not in lines[-1]:
                lines.append((await proc.stderr.readline()).decode())
                assert lines[-1], "".join(lines)
        assert any("Decoding with clover-code's block-diffusion loop" in line for line in lines)
        body = {
            "messages": [{"role": "user", "content": "x"}],
            "max_tokens": 16,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        chunks: list[dict[str, Any]] = []
        async with (
            httpx.AsyncClient(timeout=60, headers=AUTH) as client,
            client.stream("POST", f"http://127.0.0.1:{port}/v1/chat/completions", json=body) as r,
        ):
            async for line in r.aiter_lines():
                if line.startswith("data: ") and line != "data: [DONE]":
                    chunks.append(json.loads(line.removeprefix("data: ")))
        assert [c for c in chunks if c.get("choices") and c["choices"][0]["finish_reason"]]
        usage = chunks[-1]["usage"]
        assert 1 <= usage["completion_tokens"] <= 16
        assert 1 <= usage["experts_per_layer"] <= 64
        # clover-code's remote client carries it on (stream-json, the status bar, OTel).
        request = ChatRequest([{"role": "user", "content": "x"}], max_tokens=16)
        events = await _remote_events(f"http://127.0.0.1:{port}/v1", request)
        reported = [e for e in events if isinstance(e, Usage)]
        assert reported and reported[-1].experts_per_layer is not None
        assert 1 <= reported[-1].experts_per_layer <= 64
    finally:
        proc.send_signal(signal.SIGINT)
        code = await asyncio.wait_for(proc.wait(), 60)
    assert code in (0, 130), (code, "".join(lines))


async def test_a_remote_client_asks_serve_to_re_denoise(checkpoint: Path) -> None:
    backend = HFBackend(str(checkpoint), HFOptions(block_size=8, context_window=2048))
    script_text(backend, TEXT, unsure=True)  # every other position below 0.95
    async for url in _serving(backend, drafts=True):  # drafts: each block's steps
        runs = []
        for remask in (None, (0.95, 1)):
            remote = OpenAIBackend(url, api_key=KEY, block_size=8, max_retries=0, remask=remask)
            try:
                await remote.check()
                assert remote.notices == ()  # serve re-denoises: nothing is off
                runs.append([e async for e in remote.stream(_list_src())])
            finally:
                await remote.aclose()
    off, on = runs
    text = [
        [e.text for e in events if isinstance(e, ContentDelta | ReasoningDelta)] for events in runs
    ]
    assert text[0] == text[1] and "".join(text[0])
    steps = [sum(e.steps or 0 for e in ev if isinstance(e, BlockCommitted)) for ev in runs]
    # The script's unsure positions are masked again and denoised once more in each block.
    assert steps[1] > steps[0], steps
    assert off[-1] == on[-1] == Finished("tool_calls")
