"""Snapshot of the start-up question about the project's untrusted settings."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from clover_code.ui.app import CloverApp
from clover_code.ui.bridge import Emit, SessionLike
from clover_code.ui.widgets.trust import TrustQuestion
from tests.ui import scenes
from tests.ui.fakes_ui import ReplaySession

SnapCompare = Callable[..., bool]


def trust_app() -> CloverApp:
    async def factory(emit: Emit, resume: Path | None) -> SessionLike:
        return ReplaySession(emit, scenes.OPEN, [])

    question = TrustQuestion(
        [
            (
                "/work/demo/.clover/config.toml",
                ['approval = "full-auto"', 'sandbox = "none"', "permissions.allow"],
            ),
            ("/work/demo/.mcp.json", ["mcpServers (docs)"]),
        ],
        accept=lambda: None,
    )
    return CloverApp(factory, cwd=Path("/work/demo"), git_status=False, trust=question)


async def settle(pilot: Pilot[Any]) -> None:
    await pilot.pause(0.2)


def test_trust_question(snap_compare: SnapCompare) -> None:
    assert snap_compare(trust_app(), terminal_size=(100, 30), run_before=settle)
