"""Snapshots of each main state (pytest-textual-snapshot); update with --snapshot-update.

The session is a replay of fixed protocol events, the clock is frozen and the
cursor does not blink, so each picture is the same on every run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from textual.pilot import Pilot

from clover_code.ui.app import CloverApp
from tests.ui import scenes
from tests.ui.fakes_ui import replay_app

SnapCompare = Callable[..., bool]


def with_turn(events: list[Any], prompt: str = "fix add in calc.py") -> CloverApp:
    app = replay_app(scenes.OPEN, [events])
    app._snapshot_prompt = prompt  # type: ignore[attr-defined]
    return app


async def send_prompt(pilot: Pilot[Any]) -> None:
    app = pilot.app
    assert isinstance(app, CloverApp)
    await pilot.pause(0.1)
    app.composer.input.insert(getattr(app, "_snapshot_prompt", "hello"))
    await pilot.press("enter")
    await pilot.pause(0.4)
    await pilot.wait_for_scheduled_animations()
    assert app.is_running and app._exception is None, "the app crashed"


async def settle(pilot: Pilot[Any]) -> None:
    await pilot.pause(0.2)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["narrow", "wide"])
def test_empty_session(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    assert snap_compare(replay_app(scenes.OPEN), terminal_size=size, run_before=settle)


def test_streaming_half_denoised(snap_compare: SnapCompare) -> None:
    app = with_turn(scenes.streaming())
    assert snap_compare(app, terminal_size=(100, 30), run_before=send_prompt)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["narrow", "wide"])
def test_tool_card_with_diff(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    app = with_turn(scenes.tool_with_diff())
    assert snap_compare(app, terminal_size=size, run_before=send_prompt)


def test_approval_modal(snap_compare: SnapCompare) -> None:
    app = with_turn(scenes.approval(), "build a wheel")
    assert snap_compare(app, terminal_size=(100, 30), run_before=send_prompt)


def test_engine_error(snap_compare: SnapCompare) -> None:
    app = with_turn(scenes.error(), "explain calc.py")
    assert snap_compare(app, terminal_size=(100, 30), run_before=send_prompt)
