"""``/export [md|html] [FILE]`` in the app: the session written out, and a line saying where."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from clover_code.config.settings import Settings
from clover_code.ui.app import CloverApp
from tests.fakes import ScriptedBackend, text_response
from tests.paths import UNIT_FIXTURES
from tests.ui import scenes
from tests.ui.fakes_ui import replay_app, scripted_app
from tests.ui.test_commands_plan_rewind import notes
from tests.ui.test_flows import answers, type_and_send, until
from tests.ui.test_snapshots import settle

SnapCompare = Callable[..., bool]
SIZE = (100, 30)


async def test_export_writes_the_session_where_asked(repo: Path, settings: Settings) -> None:
    backend = ScriptedBackend([text_response("It adds.", reasoning="Read calc.py first.")])
    app = scripted_app(backend, repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "what does add do?")
        await until(pilot, lambda: not app.turn_running and "It adds." in answers(app))
        await type_and_send(pilot, "/export html docs/add session.html")
        await until(pilot, lambda: "Exported this session" in notes(app))
        assert "Exported this session as HTML to docs/add session.html." in notes(app)
        page = (repo / "docs" / "add session.html").read_text()
        assert page.startswith("<!DOCTYPE html>") and "Read calc.py first." in page

        assert app.started is not None
        await type_and_send(pilot, "/export")
        default = f"clover-{app.started.session_id}.md"
        await until(pilot, lambda: f"as Markdown to {default}." in notes(app))
        assert "## User\n\nwhat does add do?" in (repo / default).read_text()

        (repo / "a-file").write_text("not a directory")
        await type_and_send(pilot, "/export a-file/x.md")
        await until(pilot, lambda: "choose a file where you may write" in notes(app))
        assert f"could not write {repo / 'a-file' / 'x.md'}: " in notes(app)


def test_export_snapshot(snap_compare: SnapCompare, tmp_path: Path) -> None:
    stored = scenes.STARTED.model_copy(
        update={"transcript": str(UNIT_FIXTURES / "transcripts" / "session.jsonl")}
    )
    app = replay_app([stored, *scenes.OPEN[1:]], cwd=tmp_path)

    async def export(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        assert isinstance(pilot.app, CloverApp)
        await type_and_send(pilot, "/export html notes.html")
        await until(pilot, lambda: "Exported this session" in notes(pilot.app))
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 16), run_before=export)
    assert (tmp_path / "notes.html").read_text().startswith("<!DOCTYPE html>")
