"""``/model`` and ``@image`` mentions in the app.

The flows run the real app around a real session whose remote backend talks to
the scripted OpenAI-compatible server over a socket: what the server receives is
read off the wire. The picker's snapshot uses the replaying stand-in session, so
its pixels stay the same from run to run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import OptionList

from clover_code import protocol as p
from clover_code.ui.app import CloverApp
from clover_code.ui.run import session_factory
from clover_code.ui.widgets.model_picker import ModelPicker
from clover_code.ui.widgets.notice_line import NoticeLine
from tests.integration.sse_server import ScriptedServer, sse_response
from tests.integration.stream_shapes import SGLangStream
from tests.ui import scenes
from tests.ui.fakes_ui import make_repo, replay_app, ui_settings
from tests.ui.test_flows import SIZE, answers, type_and_send, until
from tests.ui.test_snapshots import SIZES, settle

SnapCompare = Callable[..., bool]

PNG = b"\x89PNG\r\n\x1a\n" + bytes(40)

MODELS = {
    "fast": {"id": "qwen3-coder-30b", "context_window": 65_536},
    "eyes": {"id": "vl-model", "vision": True},
}


def notes(app: CloverApp) -> str:
    return "\n".join(n.text for n in app.query(NoticeLine))


def _answer(text: str) -> Any:
    return sse_response(SGLangStream().content(text).chunks())


@pytest.fixture
async def server() -> AsyncIterator[ScriptedServer]:
    server = ScriptedServer(models=["small-model", "qwen3-coder-30b", "vl-model"])
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def _app(tmp_path: Path, server: ScriptedServer) -> tuple[CloverApp, Path]:
    repo = make_repo(tmp_path / "repo")
    settings = ui_settings(
        tmp_path, base_url=server.base_url, model="small-model", models=MODELS, repo_map_tokens=0
    )
    app = CloverApp(session_factory(settings, repo), cwd=repo, sessions_dir=None, git_status=False)
    return app, repo


async def test_the_picker_switches_the_model_for_the_next_request(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.enqueue(_answer("On the fast one."))
    app, _repo = _app(tmp_path, server)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "/model")
        await until(pilot, lambda: isinstance(app.screen, ModelPicker), message="the picker")
        rows = app.screen.query_one(OptionList)
        labels = [str(rows.get_option_at_index(i).prompt) for i in range(rows.option_count)]
        assert [label.lstrip("● ").split()[0] for label in labels] == [
            "small-model",
            "fast",
            "eyes",
        ]
        assert labels[0].startswith("●") and not labels[1].startswith("●")
        assert "qwen3-coder-30b  65.5k ctx" in labels[1] and "vl-model  images" in labels[2]
        await pilot.press("down", "enter")
        await until(pilot, lambda: "Model fast (qwen3-coder-30b)" in notes(app))
        assert "a 65,536-token window" in notes(app)
        assert app.status_bar.model == "qwen3-coder-30b"
        await type_and_send(pilot, "hello")
        await until(pilot, lambda: "On the fast one." in answers(app))
    assert [r.json()["model"] for r in server.chat_requests] == ["qwen3-coder-30b"]


async def test_model_name_and_an_image_mention(tmp_path: Path, server: ScriptedServer) -> None:
    server.enqueue(_answer("A tiny picture."))
    app, repo = _app(tmp_path, server)
    (repo / "shots").mkdir()
    (repo / "shots" / "bug.png").write_bytes(PNG)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "/model nope")
        await until(pilot, lambda: "does not serve the model 'nope'" in notes(app))
        await type_and_send(pilot, "/model eyes")
        await until(pilot, lambda: "Model eyes (vl-model)" in notes(app))
        assert "it takes images" in notes(app)

        await type_and_send(pilot, "what is wrong in @missing.png?")
        await until(pilot, lambda: "the image missing.png does not exist" in notes(app))
        assert "it is back in the prompt box" in notes(app)
        assert app.composer.input.text == "what is wrong in @missing.png?"
        app.composer.input.clear()

        await type_and_send(pilot, "what is wrong in @shots/bug.png?")
        await until(pilot, lambda: "A tiny picture." in answers(app))
        assert "Attached shots/bug.png." in notes(app)
    [request] = server.chat_requests
    assert request.json()["model"] == "vl-model"
    content = request.json()["messages"][-1]["content"]
    assert content[0] == {"type": "text", "text": "what is wrong in @shots/bug.png?"}
    assert content[1]["image_url"]["url"].startswith("data:image/png;base64,iVBORw0KGgo")


async def model_picker(pilot: Pilot[Any]) -> None:
    await settle(pilot)
    app = pilot.app
    assert isinstance(app, CloverApp)
    app.replay.model_options = [  # type: ignore[attr-defined]
        p.ModelOption(name="clover-35b-a3b", id="clover-35b-a3b", current=True),
        p.ModelOption(name="fast", id="qwen3-coder-30b", context_window=65_536, vision=False),
        p.ModelOption(name="eyes", id="qwen2.5-vl-7b", context_window=32_768, vision=True),
        p.ModelOption(name="old", id="retired-model", served=False),
    ]
    await type_and_send(pilot, "/model")
    await until(pilot, lambda: isinstance(app.screen, ModelPicker), message="the picker")
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()


@SIZES
def test_model_picker(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    assert snap_compare(replay_app(scenes.OPEN), terminal_size=size, run_before=model_picker)
