"""Snapshot: the prompt's slash completion with the session's custom commands (80x24)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from clover_code.agent.extensions.commands import CustomCommand
from clover_code.ui.app import CloverApp
from clover_code.ui.bridge import Emit, SessionLike
from tests.ui import scenes
from tests.ui.fakes_ui import ReplaySession
from tests.ui.test_snapshots import settle

SnapCompare = Callable[..., bool]


def _command(name: str, description: str, hint: str) -> CustomCommand:
    return CustomCommand(
        name=name,
        description=description,
        argument_hint=hint,
        allowed_tools=None,
        body="",
        path=Path(f"/work/demo/.clover/commands/{name}.md"),
        source="project",
    )


def app_with_commands() -> CloverApp:
    async def factory(emit: Emit, resume: Path | None) -> SessionLike:
        session = ReplaySession(emit, scenes.OPEN, [])
        session.commands = [  # type: ignore[attr-defined]
            _command("recheck", "Review a file for bugs", "FILE"),
            _command("frontend:lint", "Lint the web front end", ""),
        ]
        return session

    return CloverApp(factory, cwd=Path("/work/demo"), sessions_dir=None, git_status=False)


async def type_slash_r(pilot: Pilot[Any]) -> None:
    await settle(pilot)
    app = pilot.app
    assert isinstance(app, CloverApp)
    app.composer.input.insert("/r")
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()


def test_custom_command_completion(snap_compare: SnapCompare) -> None:
    assert snap_compare(app_with_commands(), terminal_size=(80, 24), run_before=type_slash_r)
