"""Switching models mid-session against the scripted OpenAI-compatible server.

``SetModel`` takes a ``[models]`` name or a server id; the next request asks for
the new model, with the context window its entry gives or the server reports;
the switch is recorded, so a resumed session goes on with it. A model the
server does not serve is refused with one sentence and the session stays.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clover_code import protocol as p
from clover_code.agent.open import SessionOptions, fork_session, open_session
from clover_code.agent.permissions.approval import RefuseApprover
from clover_code.agent.session import Session
from clover_code.config.load import load_settings
from clover_code.config.settings import Settings
from tests.integration.sse_server import (
    MODELS_PATH,
    RecordedRequest,
    ScriptedResponse,
    ScriptedServer,
    error_response,
    json_response,
    sse_response,
)
from tests.integration.stream_shapes import SGLangStream

pytestmark = pytest.mark.integration

SERVED = [
    {"id": "small-model", "object": "model"},
    {"id": "qwen3-coder-30b", "object": "model", "max_model_len": 65_536},
    {"id": "vl-model", "object": "model"},
]


def _models(request: RecordedRequest) -> ScriptedResponse:
    """What the server lists: three models, one reporting its window (as vLLM does)."""
    if request.method == "GET" and request.path == MODELS_PATH:
        return json_response({"object": "list", "data": SERVED})
    return error_response(400, f"nothing queued for {request.method} {request.path}")


def _answer(text: str) -> Any:
    return sse_response(SGLangStream().content(text).chunks())


@pytest.fixture
def server(scripted_server: ScriptedServer) -> ScriptedServer:
    scripted_server.responder = _models
    return scripted_server


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    return root


def _settings(tmp_path: Path, server: ScriptedServer, **overrides: Any) -> Settings:
    values = {
        "sessions_dir": tmp_path / "sessions",
        "repo_map_tokens": 0,
        "sandbox": "none",
        "base_url": server.base_url,
        "model": "small-model",
        "context_window": 32_768,
        "models": {
            "fast": {"id": "qwen3-coder-30b"},
            "eyes": {"id": "vl-model", "vision": True, "context_window": 16_384},
            "gone": {"id": "retired-model"},
        },
        **overrides,
    }
    return load_settings(values, user_config=tmp_path / "no-user-config.toml", env={})


async def _session(settings: Settings, repo: Path, events: list[p.Event], **more: Any) -> Session:
    options = SessionOptions(
        emit=events.append, approver=RefuseApprover(), approval_mode="auto-edit", **more
    )
    return await open_session(settings, repo, options)


def _changes(events: list[p.Event]) -> list[p.ModelChanged]:
    return [e for e in events if isinstance(e, p.ModelChanged)]


async def test_set_model_asks_the_new_model_from_the_next_request(
    server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    server.enqueue(_answer("small"), _answer("fast"), _answer("eyes"))
    events: list[p.Event] = []
    session = await _session(_settings(tmp_path, server), repo, events)
    try:
        await session.run_turn("one")
        await session.submit(p.SetModel(model="fast"))
        [changed] = _changes(events)
        # The server reports the window of qwen3-coder-30b (max_model_len).
        assert (changed.model, changed.name, changed.context_window) == (
            "qwen3-coder-30b",
            "fast",
            65_536,
        )
        assert changed.vision is None
        await session.run_turn("two")
        await session.submit(p.SetModel(model="vl-model"))  # an id its entry names
        await session.run_turn("three")
        usage = [e for e in events if isinstance(e, p.UsageReport)]
    finally:
        await session.close()
    asked = [r.json()["model"] for r in server.chat_requests]
    assert asked == ["small-model", "qwen3-coder-30b", "vl-model"]
    # The second request kept the whole conversation, on the new model.
    assert [m["content"] for m in server.chat_requests[1].json()["messages"][1:]] == [
        "one",
        "small",
        "two",
    ]
    assert [u.context_window for u in usage] == [32_768, 65_536, 16_384]
    last = _changes(events)[-1]
    assert (last.name, last.context_window, last.vision) == ("eyes", 16_384, True)


async def test_a_model_the_server_does_not_serve_is_refused_and_the_session_stays(
    server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    server.enqueue(_answer("still small"))
    events: list[p.Event] = []
    session = await _session(_settings(tmp_path, server), repo, events)
    try:
        await session.submit(p.SetModel(model="gone"))
        await session.submit(p.SetModel(model="no-such-model"))
        await session.run_turn("hello")
    finally:
        await session.close()
    errors = [e.message for e in events if isinstance(e, p.ErrorEvent)]
    assert len(errors) == 2
    assert "does not serve the model 'retired-model' ('gone' in [models])" in errors[0]
    assert "'small-model', 'qwen3-coder-30b', 'vl-model'" in errors[0]
    assert errors[0].endswith("so the session stays on 'small-model'.")
    assert "'no-such-model'" in errors[1]
    assert _changes(events) == []
    assert server.chat_requests[0].json()["model"] == "small-model"


async def test_a_resumed_or_forked_session_goes_on_with_the_model_it_switched_to(
    server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    server.enqueue(_answer("on fast"), _answer("resumed"), _answer("forked"))
    settings = _settings(tmp_path, server)
    first = await _session(settings, repo, [])
    try:
        await first.submit(p.SetModel(model="fast"))
        await first.run_turn("one")
    finally:
        await first.close()
    events: list[p.Event] = []
    again = await _session(settings, repo, events, resume=first.transcript.path)
    try:
        assert [c.name for c in _changes(events)] == ["fast"]
        await again.run_turn("two")
    finally:
        await again.close()
    fork = fork_session(first.transcript.path, settings.resolved_sessions_dir())
    forked = await _session(settings, repo, [], resume=fork)
    try:
        await forked.run_turn("three")
    finally:
        await forked.close()
    assert [r.json()["model"] for r in server.chat_requests] == ["qwen3-coder-30b"] * 3


async def test_a_resumed_session_whose_model_is_gone_says_so_and_goes_on(
    server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    settings = _settings(tmp_path, server)
    first = await _session(settings, repo, [])
    try:
        await first.submit(p.SetModel(model="fast"))
    finally:
        await first.close()
    SERVED.pop(1)  # the server no longer serves qwen3-coder-30b
    try:
        events: list[p.Event] = []
        again = await _session(settings, repo, events, resume=first.transcript.path)
        await again.close()
    finally:
        SERVED.insert(1, {"id": "qwen3-coder-30b", "object": "model", "max_model_len": 65_536})
    notes = [e.text for e in events if isinstance(e, p.Notice) and "switched" in e.text]
    assert len(notes) == 1
    assert "had switched to the model fast" in notes[0]
    assert notes[0].endswith("It goes on with small-model.")
    assert _changes(events) == []


async def test_models_lists_the_served_and_the_configured(
    server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    session = await _session(_settings(tmp_path, server), repo, [])
    try:
        options, note = await session.models()
    finally:
        await session.close()
    assert note is None
    rows = [(o.name, o.id, o.current, o.served, o.context_window, o.vision) for o in options]
    assert rows == [
        ("small-model", "small-model", True, True, None, None),
        ("fast", "qwen3-coder-30b", False, True, 65_536, None),
        ("eyes", "vl-model", False, True, 16_384, True),
        ("gone", "retired-model", False, False, None, None),
    ]


async def test_an_alias_given_at_start_asks_for_its_id_with_its_window(
    server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    server.enqueue(_answer("hi"))
    events: list[p.Event] = []
    session = await _session(_settings(tmp_path, server, model="eyes"), repo, events)
    try:
        await session.run_turn("hello")
    finally:
        await session.close()
    assert server.chat_requests[0].json()["model"] == "vl-model"
    [usage] = [e for e in events if isinstance(e, p.UsageReport)]
    assert usage.context_window == 16_384


async def test_a_window_only_llama_cpp_reports_is_read_from_props(
    server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    props = {"default_generation_settings": {"n_ctx": 8_192}}
    server.enqueue(json_response(props), path="/props")
    events: list[p.Event] = []
    session = await _session(_settings(tmp_path, server, model="fast"), repo, events)
    try:
        await session.submit(p.SetModel(model="small-model"))
    finally:
        await session.close()
    [changed] = _changes(events)
    assert (changed.model, changed.context_window) == ("small-model", 8_192)
    assert server.pending("/props") == 0
