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
from clover_code.ui.widgets.answer import Answer
from tests.ui import scenes
from tests.ui.fakes_ui import replay_app
from tests.ui.test_flows import until

SnapCompare = Callable[..., bool]


def with_turn(events: list[Any], prompt: str = "fix add in calc.py") -> CloverApp:
    app = replay_app(scenes.OPEN, [events])
    app._snapshot_prompt = prompt  # type: ignore[attr-defined]
    return app


async def drawn(pilot: Pilot[Any], what: str) -> None:
    """Wait until every replayed event reached the app and every answer is painted.

    The bridge hands events over in batches: none queued and the last batch
    handled means the app has them all. No fixed pause: a busy machine draws late.
    """
    app = pilot.app
    assert isinstance(app, CloverApp)
    bridge = app.bridge
    await until(
        pilot,
        lambda: not bridge._queue and bridge._handled.is_set(),
        message=f"{what} to reach the app",
    )
    for answer in app.query(Answer):
        await answer.settle()
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()
    assert app.is_running and app._exception is None, "the app crashed"


async def send_prompt(pilot: Pilot[Any]) -> None:
    app = pilot.app
    assert isinstance(app, CloverApp)
    await until(pilot, lambda: app.started is not None, message="the session to open")
    app.composer.input.insert(getattr(app, "_snapshot_prompt", "hello"))
    await pilot.press("enter")
    replay = app.replay  # type: ignore[attr-defined]
    await until(
        pilot,
        lambda: any(getattr(op, "type", "") == "user_input" for op in replay.ops),
        message="the prompt to be sent",
    )
    await drawn(pilot, "the replayed turn")


async def settle(pilot: Pilot[Any]) -> None:
    await until(pilot, lambda: pilot.app.started is not None, message="the session to open")
    await drawn(pilot, "the session's opening events")


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
