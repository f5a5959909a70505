"""web_fetch in the app: the approval modal names the URL, and a domain allow
rule lets the fetch run without asking (real Session, a real page server)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from clover_code.ui.widgets.approval import ApprovalScreen, key_hints
from clover_code.ui.widgets.tool_card import ToolCard
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.integration.web_pages import PageServer
from tests.ui.fakes_ui import scripted_app, ui_settings
from tests.ui.test_flows import SIZE, type_and_send, until


@pytest.fixture
def pages() -> Iterator[PageServer]:
    server = PageServer("127.0.0.1", "docs")
    yield server
    server.close()


def _backend(url: str) -> ScriptedBackend:
    return ScriptedBackend([tool_response(("web_fetch", {"url": url})), text_response("Read it.")])


async def test_the_modal_asks_about_a_fetch(repo: Path, tmp_path: Path, pages: PageServer) -> None:
    settings = ui_settings(tmp_path, web_allow_private=True)
    backend = _backend(pages.url("/page"))
    app = scripted_app(backend, repo, settings, approval="auto-edit")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "read the docs")
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        screen = app.screen
        assert isinstance(screen, ApprovalScreen)
        assert screen.request.name == "web_fetch" and screen.request.kind == "fetch"
        assert pages.url("/page") in screen.request.summary
        assert "allow once" in str(key_hints(screen.request))
        assert pages.hits == []  # nothing is fetched before the answer
        await pilot.press("y")
        await until(pilot, lambda: not app.turn_running)
        cards = list(app.query(ToolCard))
        assert cards and cards[-1].tool_name == "web_fetch" and cards[-1].status == "ok"
    assert pages.hits == [(f"127.0.0.1:{pages.port}", "/page")]
    seen = str(backend.requests[1].messages[-1]["content"])
    assert "<untrusted-content" in seen and "# Install" in seen


async def test_an_allow_rule_fetches_without_asking(
    repo: Path, tmp_path: Path, pages: PageServer
) -> None:
    settings = ui_settings(
        tmp_path,
        web_allow_private=True,
        permissions={"allow": {"web_fetch": ["127.0.0.1"]}},
    )
    backend = _backend(pages.url("/json"))
    app = scripted_app(backend, repo, settings, approval="ask")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "read the json")
        await until(pilot, lambda: not app.turn_running and len(backend.requests) == 2)
        assert not isinstance(app.screen, ApprovalScreen)
    assert pages.hits == [(f"127.0.0.1:{pages.port}", "/json")]
