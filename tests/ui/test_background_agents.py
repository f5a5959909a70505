"""Background child agents in the app: the status bar counts them, their cards stay live
after the turn, their questions outlive it, and quitting while they run asks twice."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clover_code import protocol as p
from clover_code.config.settings import Settings
from clover_code.ui.widgets.approval import ApprovalScreen
from clover_code.ui.widgets.subagent_card import SubagentCard
from tests.fakes import text_response, tool_response
from tests.routed_backend import RoutedBackend
from tests.ui import scenes
from tests.ui.fakes_ui import replay_app, scripted_app
from tests.ui.test_flows import SIZE, answers, type_and_send, until
from tests.ui.test_snapshots import send_prompt

SnapCompare = Callable[..., bool]


def _bg(prompt: str, agent: str = "explore") -> tuple[str, dict[str, Any]]:
    args = {"description": "look around", "prompt": prompt, "agent": agent, "background": True}
    return "task", args


async def test_a_background_child_runs_on_after_the_turn_and_quitting_asks_twice(
    repo: Path, settings: Settings
) -> None:
    gate = asyncio.Event()
    backend = RoutedBackend(
        {
            "look": [tool_response(_bg("CHILD")), text_response("It runs in the background.")],
            "CHILD": [
                tool_response(("read_file", {"path": "calc.py"})),
                [gate, *text_response("calc.py subtracts.")],
            ],
        }
    )
    app = scripted_app(backend, repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "look")
        await until(pilot, lambda: "in the background" in answers(app) and not app.turn_running)
        card = app.query_one(SubagentCard)
        await until(pilot, lambda: card.calls == 1)
        assert card.task_id == "task-1" and card.finished is None
        assert app.status_bar.background == 1
        assert "1 bg" in str(app.status_bar.render())
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert app.is_running  # the first press only says what quitting would stop
        gate.set()
        await until(pilot, lambda: card.finished is not None)
        assert card.finished is not None and card.finished.status == "ok"
        assert "calc.py subtracts." in card.finished.result and card.task_id is None
        assert app.status_bar.background == 0
        assert "bg" not in str(app.status_bar.render())
        assert [c.agent for c in app.stats.subagents] == ["explore"]


async def test_a_background_childs_question_outlives_the_parents_turn(
    repo: Path, settings: Settings
) -> None:
    write = ("write_file", {"path": "notes.txt", "content": "from the child\n"})
    backend = RoutedBackend(
        {
            "go": [
                tool_response(_bg("CHILD", agent="general")),
                text_response("Started."),
            ],
            "CHILD": [tool_response(write), text_response("Wrote it.")],
        }
    )
    app = scripted_app(backend, repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "go")
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await until(pilot, lambda: "Started." in answers(app) and not app.turn_running)
        assert isinstance(app.screen, ApprovalScreen)  # still asking: the child goes on
        await pilot.press("y")
        card = app.query_one(SubagentCard)
        await until(pilot, lambda: card.finished is not None)
        assert (repo / "notes.txt").read_text() == "from the child\n"


def _background_scene() -> list[Any]:
    started = p.ToolCallStarted(
        call_id="t1",
        name="task",
        kind="other",
        arguments={"description": "find the callers of add", "prompt": "...", "agent": "explore"},
        summary="explore: find the callers of add",
    )
    child_read = p.ToolCallStarted(
        call_id="r1", name="grep", kind="search", arguments={"pattern": "add("}, summary="add("
    )
    return [
        p.TurnStarted(turn=1, text="fix add in calc.py"),
        p.ContentDelta(text="I'll have a helper look for the callers meanwhile."),
        p.BlockCommitted(block=0, text="x", token_count=16, steps=4),
        started,
        p.ToolCallFinished(
            call_id="t1",
            name="task",
            status="ok",
            result="Started the explore agent in the background as task-1.",
            display=p.BackgroundTask(task_id="task-1", agent="explore"),
        ),
        p.SubagentEvent(parent_call_id="t1", agent="explore", event=child_read),
        p.ContentDelta(text="\n\nWhile it looks, I'll fix `add`."),
        p.BlockCommitted(block=1, text="x", token_count=16, steps=4),
        p.TurnFinished(turn=1, status="completed", final_text="..."),
    ]


def test_background_agent_snapshot(snap_compare: SnapCompare) -> None:
    app = replay_app(scenes.OPEN, [_background_scene()])
    app._snapshot_prompt = "fix add in calc.py"  # type: ignore[attr-defined]
    assert snap_compare(app, terminal_size=(120, 26), run_before=send_prompt)
