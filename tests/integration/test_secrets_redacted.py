"""No secret leaves a headless run: a model server echoes the request's key back.

A hostile (or merely verbose) server answers 401 with the ``Authorization``
header in its error text, or the model repeats the key in its answer; the key
must appear in no sink: stdout (text, json, stream-json), stderr, the
transcript on disk.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

from tests.integration.sse_server import (
    MODELS_PATH,
    RecordedRequest,
    ScriptedResponse,
    ScriptedServer,
    error_response,
    json_response,
)
from tests.integration.test_headless_e2e import repo as repo  # the fixture
from tests.integration.test_headless_e2e import run_clover, sglang

pytestmark = pytest.mark.integration


def echo_authorization(server: ScriptedServer) -> None:
    """Models are listed; every chat request is refused with its own header quoted."""

    def answer(request: RecordedRequest) -> ScriptedResponse:
        if request.path == MODELS_PATH:
            return json_response({"object": "list", "data": [{"id": "test-model"}]})
        sent = request.headers.get("authorization", "")
        return error_response(401, f"invalid credentials in header 'Authorization: {sent}'")

    server.responder = answer


def everything_written(home: Path, *streams: str) -> str:
    """The run's streams and every file it left under its data and config homes."""
    files = [f.read_text(errors="replace") for f in sorted(home.rglob("*")) if f.is_file()]
    return "\n".join([*streams, *files])


@pytest.mark.parametrize("output_format", ["text", "json", "stream-json"])
async def test_a_401_echoing_the_key_leaks_it_nowhere(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path, output_format: str
) -> None:
    key = f"sk-test-{secrets.token_hex(16)}"
    echo_authorization(scripted_server)
    home = tmp_path / "home"
    code, out, err = await run_clover(
        repo,
        *("--task", "hi", "--base-url", scripted_server.base_url, "--api-key", key),
        *("--output-format", output_format, "--max-turns", "1"),
        home=home,
    )
    assert code == 3, err
    # The server did see the key, and said it back.
    assert any(r.headers.get("authorization") == f"Bearer {key}" for r in scripted_server.requests)
    assert "invalid credentials" in out + err and "[REDACTED]" in out + err
    assert key not in everything_written(home, out, err)
    assert list(home.rglob("*.jsonl")), "the session's transcript was never written"
    if output_format != "text":
        result = json.loads(out.strip().splitlines()[-1])
        assert result["type"] == "result" and "[REDACTED]" in result["error"]


async def test_a_key_from_the_environment_is_masked_in_the_models_answer(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    key = f"env-key-{secrets.token_hex(16)}"
    scripted_server.enqueue(sglang(lambda s: s.content(f"Your key is {key}, keep it safe.")))
    home = tmp_path / "home"
    code, out, err = await run_clover(
        repo,
        *("--task", "what is my key?", "--base-url", scripted_server.base_url),
        *("--output-format", "stream-json"),
        home=home,
        extra_env={"CLOVER_API_KEY": key},
    )
    assert code == 0, err
    assert any(r.headers.get("authorization") == f"Bearer {key}" for r in scripted_server.requests)
    result = json.loads(out.strip().splitlines()[-1])
    assert result["result"] == "Your key is [REDACTED], keep it safe."
    assert key not in everything_written(home, out, err)
