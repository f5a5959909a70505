"""Images sent with a prompt, against the scripted OpenAI-compatible server.

What the server receives is read off the wire: a model that takes images gets
the prompt as content parts (the text, then each image as a data URL); a model
whose ``[models]`` entry says ``vision = false`` gets the text alone at once;
a model whose server refuses images (a 400 naming them) is asked again without
them, is remembered as text-only for the session, and the user hears one
sentence each time. The conversation keeps the images throughout.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from clover_code import protocol as p
from clover_code.agent.open import SessionOptions, load, open_session
from clover_code.agent.permissions.approval import RefuseApprover
from clover_code.agent.session import Session
from clover_code.config.load import load_settings
from clover_code.config.settings import Settings
from clover_code.engine.messages import IMAGE_LEFT_OUT
from tests.integration.sse_server import ScriptedServer, error_response, sse_response
from tests.integration.stream_shapes import SGLangStream

pytestmark = pytest.mark.integration

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
"""The start of a PNG file: what tells the type is the bytes, not the name."""


def _answer(text: str) -> Any:
    return sse_response(SGLangStream().content(text).chunks())


def _settings(tmp_path: Path, server: ScriptedServer, **overrides: Any) -> Settings:
    values = {
        "sessions_dir": tmp_path / "sessions",
        "repo_map_tokens": 0,
        "sandbox": "none",
        "base_url": server.base_url,
        **overrides,
    }
    return load_settings(values, user_config=tmp_path / "no-user-config.toml", env={})


async def _session(settings: Settings, repo: Path, events: list[p.Event], **more: Any) -> Session:
    options = SessionOptions(
        emit=events.append, approver=RefuseApprover(), approval_mode="auto-edit", **more
    )
    return await open_session(settings, repo, options)


def _shot(name: str = "shot.png") -> p.ImageAttachment:
    return p.ImageAttachment.of("image/png", PNG, name)


def _user_content(request: Any) -> Any:
    """The content of the last user message a chat request carried."""
    users = [m for m in request.json()["messages"] if m["role"] == "user"]
    return users[-1]["content"]


def _warnings(events: list[p.Event]) -> list[str]:
    """The warnings about images (the host-shell one of --sandbox none aside)."""
    return [
        e.text
        for e in events
        if isinstance(e, p.Notice) and e.level == "warning" and "image" in e.text
    ]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    return root


async def test_a_model_that_takes_images_gets_them_as_content_parts(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    scripted_server.enqueue(_answer("A red square."))
    events: list[p.Event] = []
    settings = _settings(tmp_path, scripted_server, models={"test-model": {"vision": True}})
    session = await _session(settings, repo, events)
    big = PNG + bytes(3 * 2**20)  # its base64 alone would be a million "tokens"
    try:
        shot = p.ImageAttachment.of("image/png", big, "shot.png")
        finished = await session.run_turn(p.UserInput(text="what is this?", images=(shot,)))
    finally:
        await session.close()
    assert finished.status == "completed"
    url = "data:image/png;base64," + base64.b64encode(big).decode()
    assert _user_content(scripted_server.chat_requests[0]) == [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": url}},
    ]
    # The default max_tokens counts the image as a few tokens, not as its base64.
    assert scripted_server.chat_requests[0].json()["max_tokens"] == 32_768
    assert _warnings(events) == []
    kept = load(session.transcript.path).messages
    assert kept[0]["content"] == _user_content(scripted_server.chat_requests[0])


async def test_vision_false_sends_the_text_alone_and_says_so(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    scripted_server.enqueue(_answer("I cannot see it."))
    events: list[p.Event] = []
    settings = _settings(tmp_path, scripted_server, models={"test-model": {"vision": False}})
    session = await _session(settings, repo, events)
    try:
        await session.run_turn(p.UserInput(text="what is this?", images=(_shot(),)))
    finally:
        await session.close()
    assert len(scripted_server.chat_requests) == 1
    assert _user_content(scripted_server.chat_requests[0]) == f"what is this?\n\n{IMAGE_LEFT_OUT}"
    [warning] = _warnings(events)
    assert "takes no images (its [models] entry says vision = false)" in warning
    assert "shot.png" in warning
    # Nothing is lost: the conversation still holds the image.
    kept = load(session.transcript.path).messages
    assert kept[0]["content"][1]["type"] == "image_url"


async def test_a_server_that_refuses_images_is_asked_again_without_them_and_remembered(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    scripted_server.enqueue(
        error_response(400, "this model does not support image input"),
        _answer("Without the picture: fine."),
        _answer("Again fine."),
    )
    events: list[p.Event] = []
    session = await _session(_settings(tmp_path, scripted_server), repo, events)
    try:
        first = await session.run_turn(p.UserInput(text="look", images=(_shot("a.png"),)))
        assert first.status == "completed"
        assert first.final_text == "Without the picture: fine."
        refused, retried = scripted_server.chat_requests
        assert _user_content(refused)[1]["type"] == "image_url"
        assert _user_content(retried) == f"look\n\n{IMAGE_LEFT_OUT}"
        [refusal] = _warnings(events)
        assert "refused the images for the model 'test-model'" in refusal
        assert "does not support image input" in refusal
        assert "sent again without them" in refusal

        events.clear()
        await session.run_turn(p.UserInput(text="and this?", images=(_shot("b.png"),)))
    finally:
        await session.close()
    # Remembered: the next image is not sent at all, and one sentence says why.
    third = scripted_server.chat_requests[2]
    assert "image_url" not in json.dumps(third.json()["messages"])
    assert len(scripted_server.chat_requests) == 3
    [left_out] = _warnings(events)
    assert "its server refused images earlier in this session" in left_out
    assert "b.png" in left_out


async def test_a_refusal_that_does_not_name_images_is_an_error(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    scripted_server.enqueue(error_response(400, "bad temperature"))
    events: list[p.Event] = []
    session = await _session(_settings(tmp_path, scripted_server), repo, events)
    try:
        finished = await session.run_turn(p.UserInput(text="look", images=(_shot(),)))
    finally:
        await session.close()
    assert finished.status == "failed"
    assert len(scripted_server.chat_requests) == 1
    errors = [e.message for e in events if isinstance(e, p.ErrorEvent)]
    assert any("bad temperature" in e for e in errors)


async def test_a_resumed_session_sends_the_kept_image_again(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    scripted_server.enqueue(_answer("A square."), _answer("Still a square."))
    settings = _settings(tmp_path, scripted_server, models={"test-model": {"vision": True}})
    first = await _session(settings, repo, [])
    try:
        await first.run_turn(p.UserInput(text="what is this?", images=(_shot(),)))
    finally:
        await first.close()
    again = await _session(settings, repo, [], resume=first.transcript.path)
    try:
        await again.run_turn("and its colour?")
    finally:
        await again.close()
    messages = scripted_server.chat_requests[1].json()["messages"]
    assert messages[1]["content"][1]["type"] == "image_url"
    assert messages[-1] == {"role": "user", "content": "and its colour?"}
