"""The money a session spent: in the status bar once above zero, and in /cost with each
child agent's share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.pilot import Pilot

from clover_code import protocol as p
from clover_code.ui.app import CloverApp
from clover_code.ui.widgets.notice_line import NoticeLine
from tests.ui import scenes
from tests.ui.fakes_ui import replay_app
from tests.ui.test_flows import until
from tests.ui.test_snapshots import send_prompt

SnapCompare = Callable[..., bool]


def priced_turn() -> list[Any]:
    """A turn on a priced model whose child agent also spent money."""
    child = p.SubagentRun(
        call_id="t1", agent="explore", tokens=900, duration_s=4.2, status="completed", cost=0.0031
    )
    child_usage = p.UsageReport(
        prompt_tokens=3000, completion_tokens=900, context_window=131072, cost=0.0031
    )
    return [
        p.TurnStarted(turn=1, text="find the bug"),
        p.ToolCallStarted(
            call_id="t1", name="task", kind="other", arguments={}, summary="explore: find it"
        ),
        p.SubagentEvent(parent_call_id="t1", agent="explore", event=child_usage),
        p.ToolCallFinished(
            call_id="t1", name="task", status="ok", result="in calc.py", display=child
        ),
        p.ContentDelta(text="The bug is in calc.py."),
        p.BlockCommitted(block=0, text="x", token_count=8, steps=2),
        p.UsageReport(
            prompt_tokens=5210,
            completion_tokens=180,
            context_window=131072,
            cached_tokens=4096,
            cost=0.0390,
        ),
        p.TurnFinished(turn=1, status="completed", final_text="The bug is in calc.py."),
    ]


async def ask_cost(pilot: Pilot[Any]) -> None:
    await send_prompt(pilot)
    app = pilot.app
    assert isinstance(app, CloverApp)
    app.composer.input.insert("/cost")
    await pilot.press("enter")
    await until(
        pilot,
        lambda: any("Child agents" in str(n.text) for n in app.query(NoticeLine)),
        message="the /cost notes",
    )
    await pilot.pause()


def test_cost_in_the_status_bar_and_in_slash_cost(snap_compare: SnapCompare) -> None:
    app = replay_app(scenes.OPEN, [priced_turn()])
    app._snapshot_prompt = "find the bug"  # type: ignore[attr-defined]
    assert snap_compare(app, terminal_size=(110, 30), run_before=ask_cost)


async def test_cost_notes_name_the_total_and_each_child() -> None:
    app = replay_app(scenes.OPEN, [priced_turn()])
    app._snapshot_prompt = "find the bug"  # type: ignore[attr-defined]
    async with app.run_test(size=(110, 30)) as pilot:
        await ask_cost(pilot)
        notes = "\n".join(str(n.text) for n in app.query(NoticeLine))
        assert "Cost: $0.04, child agents included." in notes
        assert "explore (t1): 900 tokens, $0.0031, 4.2s, completed" in notes
        assert "$0.04" in str(app.status_bar.render())


async def test_an_unpriced_model_has_no_cost_in_the_bar_and_says_how_to_price_it() -> None:
    turn = [
        e.model_copy(update={"cost": None}) if isinstance(e, p.UsageReport) else e
        for e in scenes.tool_with_diff()
    ]
    app = replay_app(scenes.OPEN, [turn])
    async with app.run_test(size=(110, 30)) as pilot:
        await send_prompt(pilot)
        app.composer.input.insert("/cost")
        await pilot.press("enter")
        await until(
            pilot, lambda: any("This session" in str(n.text) for n in app.query(NoticeLine))
        )
        notes = "\n".join(str(n.text) for n in app.query(NoticeLine))
        assert 'Cost: unknown: add [pricing."clover-35b-a3b"]' in notes
        assert "$" not in str(app.status_bar.render())
