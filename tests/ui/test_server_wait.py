"""A model server that is not up yet: the app keeps the prompt, retries and opens the
session once the server answers (the real remote backend over a real socket)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.errors import AuthError, EngineUnavailable, ModelNotFound
from clover_code.ui import app as app_module
from clover_code.ui.app import CloverApp
from clover_code.ui.run import session_factory
from clover_code.ui.server_wait import delay, not_ready
from clover_code.ui.widgets.notice_line import NoticeLine
from tests.integration.llama_peer import free_port
from tests.integration.sse_server import ScriptedServer, sse_response
from tests.integration.stream_shapes import SGLangStream
from tests.ui.fakes_ui import make_repo, ui_settings
from tests.ui.test_flows import SIZE, answers, type_and_send, until


def notes(app: CloverApp) -> str:
    return "\n".join(n.text for n in app.query(NoticeLine))


async def test_the_app_waits_for_a_starting_server_and_keeps_the_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app_module, "delay", lambda attempt: 60.0)  # only /retry retries here
    port = free_port()
    repo = make_repo(tmp_path / "repo")
    settings = ui_settings(tmp_path, base_url=f"http://127.0.0.1:{port}/v1", max_retries=0)
    app = CloverApp(session_factory(settings, repo), cwd=repo, sessions_dir=None, git_status=False)
    server = ScriptedServer()
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: "not ready" in notes(app), timeout=20)
            assert "Retrying in 60 s (attempt 1)" in notes(app)
            assert app.status_bar.model == "waiting for the server…"
            await type_and_send(pilot, "hello there")  # kept while the server loads
            assert "hello there" in [m.text for m in app.query("UserMessage")]  # type: ignore[attr-defined]
            await type_and_send(pilot, "/retry")
            await until(pilot, lambda: "attempt 2" in notes(app), timeout=20)
            await server.start(port=port)
            server.enqueue(sse_response(SGLangStream().content("Hi back").chunks()))
            await type_and_send(pilot, "/retry")
            await until(pilot, lambda: app.started is not None, timeout=20)
            assert "answered after 2 retries" in notes(app)
            await until(pilot, lambda: "Hi back" in answers(app), timeout=20)
            sent = server.chat_requests[0].json()["messages"][-1]["content"]
            assert "hello there" in str(sent)
            assert [type(op) for op in app.bridge.sent] == [p.UserInput]
    finally:
        await server.stop()


async def test_one_retry_is_said_in_the_singular(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app_module, "delay", lambda attempt: 60.0)
    port = free_port()
    repo = make_repo(tmp_path / "repo")
    settings = ui_settings(tmp_path, base_url=f"http://127.0.0.1:{port}/v1", max_retries=0)
    app = CloverApp(session_factory(settings, repo), cwd=repo, sessions_dir=None, git_status=False)
    server = ScriptedServer()
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: "not ready" in notes(app), timeout=20)
            await server.start(port=port)
            await type_and_send(pilot, "/retry")
            await until(pilot, lambda: app.started is not None, timeout=20)
            assert "answered after 1 retry." in notes(app)
    finally:
        await server.stop()


def test_which_failures_are_worth_waiting_for() -> None:
    assert not_ready(EngineUnavailable("cannot reach the model server at http://x (refused)"))
    assert not_ready(
        EngineUnavailable("the server at x did not list its models (HTTP 503: loading)")
    )
    assert not_ready(ModelNotFound("the server at x serves no models; load a model into it first"))
    assert not not_ready(AuthError("the server at x refused the API key (HTTP 401)"))
    assert not not_ready(ModelNotFound("x does not serve the model 'y'"))
    assert not not_ready(EngineUnavailable("No model engine is configured."))
    assert [delay(n) for n in (1, 2, 3, 6, 20)] == [1.0, 2.0, 4.0, 30.0, 30.0]


async def test_retry_with_a_session_open_sends_the_last_prompt_again() -> None:
    from tests.ui import scenes
    from tests.ui.fakes_ui import replay_app

    app = replay_app(scenes.OPEN, [scenes.error(), []])
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "/retry")
        assert "Nothing to retry" in notes(app)
        await type_and_send(pilot, "explain calc.py")
        await until(pilot, lambda: not app.turn_running and len(app.bridge.sent) == 1)
        await type_and_send(pilot, "/retry")
        await until(pilot, lambda: len(app.bridge.sent) == 2)
        assert app.bridge.sent == [p.UserInput(text="explain calc.py")] * 2
