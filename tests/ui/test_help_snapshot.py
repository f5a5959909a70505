"""Snapshot of /help at 80 columns: commands and keys in two columns, a long
description wrapping under its own column."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.pilot import Pilot

from clover_code.ui.app import CloverApp
from clover_code.ui.widgets.notice_line import NoticeLine
from tests.ui import scenes
from tests.ui.fakes_ui import replay_app
from tests.ui.test_flows import until
from tests.ui.test_snapshots import settle

SnapCompare = Callable[..., bool]


async def show_help(pilot: Pilot[Any]) -> None:
    await settle(pilot)
    app = pilot.app
    assert isinstance(app, CloverApp)
    app.composer.input.insert("/help")
    await pilot.press("enter")
    await until(
        pilot,
        lambda: any("Keys:" in n.text for n in app.query(NoticeLine)),
        message="the help",
    )
    app.transcript.scroll_end(animate=False)
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()


def test_help_at_80_columns(snap_compare: SnapCompare) -> None:
    assert snap_compare(replay_app(scenes.OPEN), terminal_size=(80, 50), run_before=show_help)
