"""Snapshots of each main state (pytest-textual-snapshot); update with --snapshot-update.

The session is a replay of fixed protocol events, the clock is frozen and the
cursor does not blink, so each picture is the same on every run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from clover_code.ui.app import CloverApp
from clover_code.ui.options import AppOptions
from clover_code.ui.widgets.answer import Answer
from tests.ui import scenes
from tests.ui.fakes_ui import replay_app
from tests.ui.test_flows import until

SnapCompare = Callable[..., bool]


def with_turn(
    events: list[Any], prompt: str = "fix add in calc.py", options: AppOptions | None = None
) -> CloverApp:
    app = replay_app(scenes.OPEN, [events], options=options)
    app._snapshot_prompt = prompt  # type: ignore[attr-defined]
    return app


async def drawn(pilot: Pilot[Any], what: str) -> None:
    """Wait until every replayed event reached the app and is painted.

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
    await until(
        pilot,
        lambda: (
            not any(a.pending for a in app.query(Answer)) and not app.transcript.denoise.pending
        ),
        message=f"{what} to be painted",
    )
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


SIZES = pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])


@SIZES
def test_working_line_running_a_command(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    app = with_turn(scenes.running_command(), "run the tests")
    assert snap_compare(app, terminal_size=size, run_before=send_prompt)


async def queue_two(pilot: Pilot[Any]) -> None:
    await send_prompt(pilot)
    app = pilot.app
    assert isinstance(app, CloverApp)
    for text in ("then update the changelog", "and open a pull request"):
        app.composer.input.insert(text)
        await pilot.press("enter")
    await pilot.pause(0.2)


@SIZES
def test_queued_prompts(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    app = with_turn(scenes.running_command(), "run the tests")
    assert snap_compare(app, terminal_size=size, run_before=queue_two)


@SIZES
def test_edit_approval_long_diff(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    app = with_turn(scenes.edit_approval(), "make it fast")
    assert snap_compare(app, terminal_size=size, run_before=send_prompt)


@SIZES
def test_failed_command_card(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    app = with_turn(scenes.failed_command(), "run the tests")
    assert snap_compare(app, terminal_size=size, run_before=send_prompt)


@SIZES
def test_status_bar_long_model(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    app = replay_app([scenes.LONG_MODEL], [scenes.tool_with_diff()])
    assert snap_compare(app, terminal_size=size, run_before=send_prompt)


def test_status_bar_local_moe_engine(snap_compare: SnapCompare) -> None:
    """A local MoE engine's rates: tokens per forward and routed experts per layer."""
    app = replay_app([scenes.LONG_MODEL], [scenes.local_moe_turn()])
    assert snap_compare(app, terminal_size=(160, 40), run_before=send_prompt)


def waiting_app() -> CloverApp:
    """An app whose server is still loading (the connection is refused)."""
    from clover_code.errors import EngineUnavailable

    async def factory(emit: object, resume: object) -> Any:
        raise EngineUnavailable(
            "cannot reach the model server at http://localhost:30000/v1 (connection refused)"
        )

    return CloverApp(factory, cwd=Path("/work/demo"), sessions_dir=None, git_status=False)


async def type_while_waiting(pilot: Pilot[Any]) -> None:
    app = pilot.app
    assert isinstance(app, CloverApp)
    await pilot.pause(0.3)
    app.composer.input.insert("fix the failing test")
    await pilot.press("enter")
    await pilot.pause(0.2)


@SIZES
def test_waiting_for_the_server(
    snap_compare: SnapCompare, size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    from clover_code.ui import app as app_module

    monkeypatch.setattr(app_module, "delay", lambda attempt: 60.0)  # no retry mid-picture
    assert snap_compare(waiting_app(), terminal_size=size, run_before=type_while_waiting)


def picker_app(tmp_path: Path) -> CloverApp:
    """An app with three earlier sessions of its directory (and one elsewhere)."""
    from clover_code.agent.transcript import Transcript

    repo = Path("/work/demo")  # not on disk: the workspace root is the directory itself
    sessions = tmp_path / "sessions"
    other = Transcript.create(sessions, {"id": "20260104-090000-ffffff", "cwd": "/srv/other"})
    other.message({"role": "user", "content": "not listed without --all"})
    other.close()
    prompts = ["fix the failing test in calc.py", "add a --verbose flag", "explain the parser"]
    for day, prompt in enumerate(prompts, 1):
        meta = {"id": f"2026010{day}-09{day}000-abcde{day}", "cwd": str(repo)}
        transcript = Transcript.create(sessions, meta)
        transcript.message({"role": "user", "content": prompt})
        transcript.close()
    app = replay_app(scenes.OPEN, cwd=repo)
    app.sessions_dir = sessions
    return app


async def open_picker(pilot: Pilot[Any]) -> None:
    app = pilot.app
    assert isinstance(app, CloverApp)
    await pilot.pause(0.2)
    app.composer.input.insert("/sessions")
    await pilot.press("enter")
    await pilot.pause(0.3)


@SIZES
def test_session_picker(snap_compare: SnapCompare, size: tuple[int, int], tmp_path: Path) -> None:
    app = picker_app(tmp_path)
    assert snap_compare(app, terminal_size=size, run_before=open_picker)


@SIZES
def test_checkpoint_question(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    warning = (
        "/home/u is your home directory: undo would copy every file under it before each turn."
    )
    started = scenes.STARTED.model_copy(update={"checkpoint_warning": warning})
    assert snap_compare(replay_app([started]), terminal_size=size, run_before=settle)


def test_long_answer_in_parts(snap_compare: SnapCompare) -> None:
    app = with_turn(scenes.long_answer(), "explain the parser")
    assert snap_compare(app, terminal_size=(100, 40), run_before=send_prompt)
