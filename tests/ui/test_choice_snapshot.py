"""Snapshots of the two choice questions: the one after a plan and the /rewind picker.

Each answer is a one-line button whose label must show (Textual's own button style
draws borders that would leave empty outlines)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.pilot import Pilot

from clover_code.ui.app import CloverApp
from clover_code.ui.plan_question import ask_about_plan
from clover_code.ui.widgets.choice import ChoiceScreen
from tests.ui import scenes
from tests.ui.fakes_ui import replay_app
from tests.ui.test_flows import until
from tests.ui.test_snapshots import SIZES, settle

SnapCompare = Callable[..., bool]

PLAN = """\
PLAN:
1. In calc.py, make add return a + b instead of a - b.
2. Add tests/test_calc.py with a test of add(2, 3) == 5.
3. Run python3 -m pytest -q and check it passes."""


async def choices_drawn(pilot: Pilot[Any]) -> None:
    app = pilot.app
    await until(
        pilot,
        lambda: isinstance(app.screen, ChoiceScreen) and bool(app.screen.query("Button")),
        message="the question to be drawn",
    )
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()


async def plan_question(pilot: Pilot[Any]) -> None:
    await settle(pilot)
    app = pilot.app
    assert isinstance(app, CloverApp)
    ask_about_plan(app, app.transcript, app.status_bar, PLAN)
    await choices_drawn(pilot)


async def rewind_picker(pilot: Pilot[Any]) -> None:
    await settle(pilot)
    app = pilot.app
    assert isinstance(app, CloverApp)
    app.turn_files.extend([["calc.py"], ["tests/test_calc.py", "calc.py"]])
    app.composer.input.insert("/rewind 2")
    await pilot.press("enter")
    await choices_drawn(pilot)


@SIZES
def test_plan_question(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    assert snap_compare(replay_app(scenes.OPEN), terminal_size=size, run_before=plan_question)


@SIZES
def test_rewind_picker(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    assert snap_compare(replay_app(scenes.OPEN), terminal_size=size, run_before=rewind_picker)
