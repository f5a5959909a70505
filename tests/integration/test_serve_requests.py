"""What ``clover-code serve`` lets in, against the real server over loopback: a key
on every request, one schema for every body, a cap on body size and read time.

The tables are the attack classes; each case is one request the server must
refuse with one sentence, and after every table the server still answers a
good request.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import uvicorn

from clover_code.engine.local.hf import HFBackend, HFOptions
from clover_code.serve.app import build_app
from clover_code.serve.request import BodyLimits
from tests.tiny_model import build_tiny_checkpoint
from tests.waiting import async_wait_until

pytestmark = pytest.mark.integration

KEY = "serve-requests-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
GOOD = {"messages": [{"role": "user", "content": "x"}], "max_tokens": 4}
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> HFBackend:
    checkpoint = build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "ckpt")
    return HFBackend(str(checkpoint), HFOptions(block_size=8, context_window=2048))


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _serving(backend: HFBackend, limits: BodyLimits | None = None) -> AsyncIterator[str]:
    port = _port()
    app = build_app(backend, api_key=KEY, limits=limits)
    server = uvicorn.Server(uvicorn.Config(app, port=port, log_level="warning"))
    task = asyncio.create_task(server.serve())
    await async_wait_until(lambda: server.started or task.done(), message="serve to listen")
    assert not task.done(), "the server stopped before it started"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


@pytest.fixture
async def served(backend: HFBackend) -> AsyncIterator[str]:
    async for url in _serving(backend):
        yield url


async def _still_answers(client: httpx.AsyncClient, base: str) -> None:
    reply = await client.post(f"{base}/v1/chat/completions", json=GOOD, headers=AUTH)
    assert reply.status_code == 200, reply.text
    assert reply.json()["usage"]["completion_tokens"] == 4


BAD_KEYS: list[dict[str, str]] = [
    {},
    {"Authorization": ""},
    {"Authorization": "Bearer"},
    {"Authorization": "Bearer wrong"},
    {"Authorization": f"Bearer {KEY}x"},
    {"Authorization": f"Bearer {KEY[:-1]}"},
    {"Authorization": KEY},
    {"Authorization": f"Basic {KEY}"},
    {"X-Api-Key": KEY},
]


async def test_every_request_needs_the_key_loopback_included(served: str) -> None:
    async with httpx.AsyncClient(timeout=60, trust_env=False) as client:
        for headers in BAD_KEYS:
            for response in (
                await client.get(f"{served}/v1/models", headers=headers),
                await client.post(f"{served}/v1/chat/completions", json=GOOD, headers=headers),
            ):
                assert response.status_code == 401, (headers, response.text)
                message = response.json()["error"]["message"]
                assert "API key" in message and "\n" not in message
                assert KEY not in response.text
        assert (await client.get(f"{served}/v1/models", headers=AUTH)).status_code == 200
        await _still_answers(client, served)


M = '"messages": [{"role": "user", "content": "x"}]'
BAD_BODIES: list[tuple[str, str]] = [
    # max_tokens: not a whole number in range
    (f'{{{M}, "max_tokens": Infinity}}', "Infinity is not a JSON number"),
    (f'{{{M}, "max_tokens": -Infinity}}', "-Infinity is not a JSON number"),
    (f'{{{M}, "max_tokens": NaN}}', "NaN is not a JSON number"),
    (f'{{{M}, "max_tokens": -5}}', "max_tokens must be a whole number"),
    (f'{{{M}, "max_tokens": 0}}', "max_tokens must be a whole number"),
    (f'{{{M}, "max_tokens": 1e300}}', "max_tokens must be a whole number"),
    (f'{{{M}, "max_tokens": 4.5}}', "max_tokens must be a whole number"),
    (f'{{{M}, "max_tokens": "12"}}', "max_tokens must be a whole number"),
    (f'{{{M}, "max_tokens": true}}', "max_tokens must be a whole number"),
    (f'{{{M}, "max_tokens": 99999999999999999999}}', "max_tokens must be a whole number"),
    (f'{{{M}, "max_completion_tokens": [8]}}', "max_completion_tokens must be a whole"),
    # temperature: NaN, negative, not a number
    (f'{{{M}, "temperature": NaN}}', "NaN is not a JSON number"),
    (f'{{{M}, "temperature": -0.5}}', "temperature must be a number from 0 to 2"),
    (f'{{{M}, "temperature": 1e308}}', "temperature must be a number from 0 to 2"),
    (f'{{{M}, "temperature": "hot"}}', "temperature must be a number from 0 to 2"),
    (f'{{{M}, "temperature": false}}', "temperature must be a number from 0 to 2"),
    # options that must be objects (or booleans inside them)
    (f'{{{M}, "chat_template_kwargs": 5}}', "chat_template_kwargs"),
    (f'{{{M}, "chat_template_kwargs": {{"enable_thinking": "no"}}}}', "enable_thinking"),
    (f'{{{M}, "clover": 5}}', "clover"),
    (f'{{{M}, "clover": {{"drafts": "yes"}}}}', "clover.drafts"),
    (f'{{{M}, "stream": true, "stream_options": 5}}', "stream_options"),
    (f'{{{M}, "stream_options": {{"include_usage": 1}}}}', "stream_options.include_usage"),
    (f'{{{M}, "stream": "yes"}}', "stream"),
    (f'{{{M}, "tools": 5}}', "tools"),
    (f'{{{M}, "tools": [{{"type": "function", "function": {{"name": 7}}}}]}}', "name"),
    (f'{{{M}, "tools": [{{"function": {{"name": "f", "parameters": 3}}}}]}}', "parameters"),
    (f'{{{M}, "tool_choice": "required"}}', "tool_choice must be 'auto' or 'none'"),
    (f'{{{M}, "n": 2}}', "n must be 1"),
    (f'{{{M}, "model": 5}}', "model"),
    (f'{{{M}, "presence_penalty": NaN}}', "NaN is not a JSON number"),
    (f'{{{M}, "frequency_penalty": "1"}}', "frequency_penalty"),
    # messages: not message objects
    ('{"messages": [1, 2, 3]}', "messages.0"),
    ('{"messages": "hello"}', "messages"),
    ('{"messages": [{"content": "x"}]}', "the field 'role' is missing"),
    ('{"messages": [{"role": "wizard", "content": "x"}]}', "messages.0.role"),
    ('{"messages": [{"role": "user", "content": 5}]}', "messages.0.content"),
    ('{"messages": [null]}', "messages.0"),
    ('{"messages": {}}', "messages"),
    # not an object at all, or not JSON
    ("[1, 2]", "the body must be a JSON object"),
    ("5", "the body must be a JSON object"),
    ('"text"', "the body must be a JSON object"),
    ("", "the body is not JSON"),
    ("{", "the body is not JSON"),
    ("\xff\xfe", "the body is not JSON"),
    ('{"messages": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
]


async def test_every_bad_body_is_400_with_one_sentence(served: str) -> None:
    url = f"{served}/v1/chat/completions"
    headers = {**AUTH, "content-type": "application/json"}
    async with httpx.AsyncClient(timeout=60, trust_env=False) as client:
        for body, expected in BAD_BODIES:
            raw = body.encode("utf-8", "surrogateescape") if body != "\xff\xfe" else b"\xff\xfe"
            response = await client.post(url, content=raw, headers=headers)
            assert response.status_code == 400, (body[:80], response.status_code, response.text)
            message = response.json()["error"]["message"]
            assert message.startswith("invalid request: "), message
            assert expected in message, (body[:80], message)
            assert "\n" not in message and "Traceback" not in message
        await _still_answers(client, served)


async def _chunks(data: bytes) -> AsyncIterator[bytes]:
    """``data`` in pieces, sent without a Content-Length (chunked)."""
    for start in range(0, len(data), 512):
        yield data[start : start + 512]


async def test_a_body_past_the_size_cap_is_refused_and_the_server_answers_on(
    backend: HFBackend,
) -> None:
    cap = 4096
    async for base in _serving(backend, BodyLimits(max_bytes=cap, read_timeout=30)):
        url = f"{base}/v1/chat/completions"
        big = json.dumps({**GOOD, "messages": [{"role": "user", "content": "y" * cap}]})
        async with httpx.AsyncClient(timeout=60, trust_env=False) as client:
            declared = await client.post(url, content=big, headers=AUTH)
            assert declared.status_code == 413
            assert f"larger than {cap} bytes" in declared.json()["error"]["message"]

            chunked = await client.post(url, content=_chunks(big.encode()), headers=AUTH)
            assert chunked.status_code == 413
            await _still_answers(client, base)


async def test_a_body_that_never_arrives_is_refused_and_the_server_answers_on(
    backend: HFBackend,
) -> None:
    async for base in _serving(backend, BodyLimits(read_timeout=0.5)):
        port = int(base.rsplit(":", 1)[1])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        # Headers announce 1,000 bytes; 10 come, then nothing.
        writer.write(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + f"Authorization: Bearer {KEY}\r\n".encode()
            + b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
            + b'{"message'
        )
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 60)
        assert head.startswith(b"HTTP/1.1 408"), head
        writer.close()
        async with httpx.AsyncClient(timeout=60, trust_env=False) as client:
            await _still_answers(client, base)


def test_serve_reads_the_projects_own_config(tmp_path: Path) -> None:
    """Settings load with the repository root: a bad project value is named."""
    repo = tmp_path / "repo"
    (repo / ".clover").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / ".clover" / "config.toml").write_text('serve_port = "not a port"\n')
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path)}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-m", "clover_code", "serve", "--model-path", str(tmp_path)],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "serve_port" in done.stderr and "config.toml" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
