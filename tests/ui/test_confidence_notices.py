"""The app against a real server that reports no fill confidences and cannot re-denoise
(the scripted SGLang-shaped server on loopback): with the confidence view on, that
confidences are off is said once, and that ``remask_below`` is off is said once, as a
warning, however many responses come."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clover_code.protocol.confidence import NO_CONFIDENCE
from clover_code.ui.app import CloverApp
from clover_code.ui.options import AppOptions
from clover_code.ui.run import session_factory
from clover_code.ui.widgets.notice_line import NoticeLine
from tests.integration.sse_server import ScriptedServer, sse_response
from tests.integration.stream_shapes import SGLangStream
from tests.ui.fakes_ui import make_repo, ui_settings
from tests.ui.test_flows import SIZE, answers, type_and_send, until


async def test_each_is_said_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = ScriptedServer()
    await server.start()
    try:
        replies = ("First answer.", "Second answer.", "Third answer.")
        for text in replies:
            server.enqueue(sse_response(SGLangStream().content(text).chunks()))
        repo = make_repo(tmp_path / "repo")
        settings = ui_settings(tmp_path, base_url=server.base_url, remask_below=0.9)
        app = CloverApp(
            session_factory(settings, repo),
            cwd=repo,
            sessions_dir=None,
            git_status=False,
            options=AppOptions(shade_confidence=True),
        )
        toasts: list[str] = []
        notify = app.notify

        def noted(message: str, **kwargs: Any) -> None:
            toasts.append(message)
            notify(message, **kwargs)

        monkeypatch.setattr(app, "notify", noted)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.started is not None, message="the session")
            for prompt, reply in zip(("one", "two", "three"), replies, strict=True):
                await type_and_send(pilot, prompt)
                await until(
                    pilot,
                    lambda reply=reply: reply in answers(app) and not app.turn_running,
                    message=f"the reply to {prompt}",
                )
            assert len(server.chat_requests) == 3
            warnings = [n.text for n in app.query(NoticeLine) if n.level == "warning"]
            assert sum("Re-denoising (remask_below) is off" in w for w in warnings) == 1
            assert toasts.count(NO_CONFIDENCE) == 1
    finally:
        await server.stop()
