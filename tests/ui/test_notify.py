"""When the app notifies and how: the terminal's channel and bytes, and the waits that
start, signal (a ``Notify`` op to the session) and end, in the real app."""

from __future__ import annotations

from typing import Any

import pytest
from textual import events

from clover_code import protocol as p
from clover_code.ui.app import CloverApp
from clover_code.ui.notify import notification_sequence, terminal_channel
from clover_code.ui.options import AppOptions
from tests.ui import scenes
from tests.ui.fakes_ui import replay_app
from tests.ui.test_flows import until


@pytest.mark.parametrize(
    ("mode", "env", "channel"),
    [
        ("auto", {"TERM_PROGRAM": "iTerm.app"}, "osc9"),
        ("auto", {"TERM_PROGRAM": "WezTerm"}, "osc9"),
        ("auto", {"TERM_PROGRAM": "ghostty", "TERM": "xterm-ghostty"}, "osc9"),
        ("auto", {"WT_SESSION": "x", "TERM": "xterm-256color"}, "osc9"),
        ("auto", {"TERM": "xterm-kitty"}, "osc99"),
        ("auto", {"TERM": "foot"}, "osc777"),
        ("auto", {"TERM": "rxvt-unicode-256color"}, "osc777"),
        ("auto", {"TERM": "xterm-256color"}, "bell"),
        ("auto", {"TERM_PROGRAM": "vscode"}, "bell"),
        # Inside tmux TERM_PROGRAM says tmux; the outer terminal's own variables remain.
        ("auto", {"TERM_PROGRAM": "tmux", "TMUX": "/tmp/t,1,0", "LC_TERMINAL": "iTerm2"}, "osc9"),
        ("auto", {"TERM_PROGRAM": "tmux", "TMUX": "/tmp/t,1,0", "KITTY_WINDOW_ID": "3"}, "osc99"),
        ("auto", {"TERM_PROGRAM": "tmux", "TMUX": "/tmp/t,1,0"}, "bell"),
        ("osc", {"TERM": "xterm-256color"}, "osc777"),
        ("osc", {"TERM_PROGRAM": "WezTerm"}, "osc9"),
        ("bell", {"TERM_PROGRAM": "WezTerm"}, "bell"),
        ("off", {"TERM_PROGRAM": "WezTerm"}, None),
    ],
)
def test_the_channel_follows_the_terminal(mode: Any, env: dict[str, str], channel: Any) -> None:
    assert terminal_channel(mode, env) == channel


def test_the_sequences_and_their_tmux_wrapping() -> None:
    assert notification_sequence("osc9", "t", "m", tmux=False) == "\x1b]9;t: m\a"
    assert notification_sequence("osc777", "t;x", "m", tmux=False) == "\x1b]777;notify;t,x;m\a"
    assert notification_sequence("osc99", "t", "m", tmux=False) == (
        "\x1b]99;i=clover:d=0;t\x1b\\\x1b]99;i=clover:p=body;m\x1b\\"
    )
    assert notification_sequence("bell", "t", "m", tmux=True) == "\a"
    assert notification_sequence("osc9", "t", "m", tmux=True) == (
        "\x1bPtmux;\x1b\x1b]9;t: m\a\x1b\\"
    )


def test_no_control_character_reaches_the_sequence() -> None:
    hostile = "use \x1b]52;c;cHduZWQ=\x07 \x9b31m now\n"
    sequence = notification_sequence("osc9", "clover-code", hostile, tmux=False)
    body = sequence[len("\x1b]9;") : -1]
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in body), repr(body)


def app_with(turns: list[list[Any]], after: float, **more: Any) -> CloverApp:
    options = AppOptions(notify="bell", notify_after=after, environ={}, **more)
    return replay_app(scenes.OPEN, turns, options=options)


async def send(pilot: Any, text: str) -> None:
    app = pilot.app
    await until(pilot, lambda: app.started is not None, message="the session to open")
    app.composer.input.insert(text)
    await pilot.press("enter")


def notified(app: CloverApp) -> list[p.Notify]:
    return [op for op in app.replay.ops if isinstance(op, p.Notify)]  # type: ignore[attr-defined]


async def test_a_turn_end_notifies_once_the_wait_lasts() -> None:
    app = app_with([scenes.tool_with_diff()], after=0.05)
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "fix add")
        await until(pilot, lambda: bool(notified(app)), message="the wait to be signalled")
        (op,) = notified(app)
        assert op.notification_type == "idle_prompt" and op.title == "clover-code"
        assert op.message == "The turn finished; clover-code is waiting for your input."


async def test_while_the_terminal_is_away_the_turn_end_notifies_at_once() -> None:
    app = app_with([scenes.tool_with_diff()], after=600)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.started is not None, message="the session to open")
        app.post_message(events.AppBlur())  # the terminal reported: focus lost
        await until(pilot, lambda: not app.app_focus, message="the app to know it")
        app.composer.input.insert("fix add")
        app.composer.input.submit()  # not a key press: a key would mean the user is back
        await until(pilot, lambda: bool(notified(app)), message="a notification while away")
        assert app.extras.notifier.waiting == ["idle"]


@pytest.mark.parametrize("grace", [60.0, 0.0])
async def test_leaving_just_after_the_turn_ended_notifies_then(
    grace: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The turn ends while the terminal has focus; the focus report that follows comes
    # within the grace (the user left before they could see it) or after it (they saw it).
    monkeypatch.setattr("clover_code.ui.notify.FOCUS_GRACE", grace)
    app = app_with([scenes.tool_with_diff()], after=600)
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "fix add")
        await until(pilot, lambda: app.extras.notifier.waiting == ["idle"], message="a wait")
        assert notified(app) == []
        app.post_message(events.AppBlur())
        await until(pilot, lambda: not app.app_focus, message="the app to know it")
        await pilot.pause()
        assert len(notified(app)) == (1 if grace else 0)
        assert app.extras.notifier.waiting == ["idle"]


async def test_typing_ends_the_wait_and_nothing_is_signalled() -> None:
    app = app_with([scenes.tool_with_diff()], after=600)
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "fix add")
        await until(pilot, lambda: app.extras.notifier.waiting == ["idle"], message="a wait")
        await pilot.press("t")
        assert app.extras.notifier.waiting == []
        assert notified(app) == []


async def test_an_approval_waits_until_it_is_answered() -> None:
    app = app_with([scenes.approval()], after=600)
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "build a wheel")
        await until(
            pilot,
            lambda: any(k.startswith("approval:") for k in app.extras.notifier.waiting),
            message="the approval's wait",
        )
        await pilot.press("y")
        await until(
            pilot,
            lambda: not any(k.startswith("approval:") for k in app.extras.notifier.waiting),
            message="the answer to end the wait",
        )
        assert notified(app) == []


async def test_an_approval_asked_while_away_is_signalled_with_the_tool() -> None:
    app = app_with([scenes.approval()], after=600)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.started is not None, message="the session to open")
        app.post_message(events.AppBlur())
        await until(pilot, lambda: not app.app_focus, message="the app to know it")
        app.composer.input.insert("build a wheel")
        app.composer.input.submit()
        await until(pilot, lambda: bool(notified(app)), message="the approval's notification")
        (op,) = notified(app)
        assert op.notification_type == "permission_prompt"
        assert op.message == "clover-code needs your permission to use shell."


async def test_an_interrupted_turn_or_a_queued_prompt_does_not_wait() -> None:
    interrupted = [p.TurnStarted(turn=1, text="x"), p.TurnFinished(turn=1, status="interrupted")]
    app = app_with([interrupted], after=0)
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "x")
        await until(pilot, lambda: not app.turn_running and app.turn_prompts, message="the turn")
        assert app.extras.notifier.waiting == [] and notified(app) == []
    # A prompt queued while the turn ran starts the next turn: nobody waits between them,
    # so only the second turn's end is signalled.
    app = app_with([scenes.running_command(), scenes.tool_with_diff()], after=0)
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "run the tests")
        await until(pilot, lambda: app.turn_running, message="the first turn")
        app.composer.input.insert("then fix add")
        await pilot.press("enter")
        app.bridge.emit(p.TurnFinished(turn=1, status="completed"))
        replay = app.replay  # type: ignore[attr-defined]
        await until(
            pilot,
            lambda: (
                len([op for op in replay.ops if isinstance(op, p.UserInput)]) == 2
                and not app.turn_running
                and bool(notified(app))
            ),
            message="the queued prompt's turn to run and end",
        )
        assert len(notified(app)) == 1


def _background_child_asks() -> list[Any]:
    """A turn starts a background child whose write waits for approval; the turn ends."""
    task_args = {"description": "note it", "prompt": "...", "agent": "general"}
    write_args = {"path": "notes.txt", "content": "x\n"}
    write = p.ToolCallStarted(
        call_id="w1", name="write_file", kind="edit", arguments=write_args, summary="notes.txt"
    )
    return [
        p.TurnStarted(turn=1, text="go"),
        p.ToolCallStarted(
            call_id="t1", name="task", kind="other", arguments=task_args, summary="note it"
        ),
        p.ToolCallFinished(
            call_id="t1",
            name="task",
            status="ok",
            result="Started the general agent in the background as task-1.",
            display=p.BackgroundTask(task_id="task-1", agent="general"),
        ),
        p.SubagentEvent(parent_call_id="t1", agent="general", event=write),
        p.ApprovalRequested(
            request_id="r9",
            call_id="w1",
            name="write_file",
            kind="edit",
            summary="notes.txt",
            arguments=write_args,
        ),
        p.TurnFinished(turn=1, status="completed", final_text="Started."),
    ]


async def test_a_background_childs_approval_still_waits_after_the_turn() -> None:
    app = app_with([_background_child_asks()], after=600)
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "go")
        await until(pilot, lambda: not app.turn_running and app.turn_prompts, message="the turn")
        # The dialog stays, and so does its wait: it is signalled if left unanswered.
        assert sorted(app.extras.notifier.waiting) == ["approval:r9", "idle"]
        await pilot.press("y")  # a key: the user is here, so the prompt's wait ends too
        await until(
            pilot,
            lambda: app.extras.notifier.waiting == [],
            message="the answer to end the wait",
        )
        assert notified(app) == []
