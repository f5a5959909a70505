"""Vim mode on the prompt, through Pilot key presses on the real app: every motion,
operator, count and command the mode offers."""

from __future__ import annotations

from typing import Any

import pytest

from clover_code import protocol as p
from clover_code.ui.app import CloverApp
from clover_code.ui.options import AppOptions
from tests.ui import scenes
from tests.ui.fakes_ui import replay_app
from tests.ui.test_flows import until

TEXT = "alpha beta_2 gamma\n  delta.epsilon zeta\nlast line"

# (keys pressed in normal mode, cursor before, text after, cursor after, mode after)
CASES: list[tuple[str, tuple[int, int], str, tuple[int, int], str]] = [
    ("l", (0, 0), TEXT, (0, 1), "normal"),
    ("3l", (0, 0), TEXT, (0, 3), "normal"),
    ("h", (0, 3), TEXT, (0, 2), "normal"),
    ("j", (0, 2), TEXT, (1, 2), "normal"),
    ("2j", (0, 2), TEXT, (2, 2), "normal"),
    ("k", (1, 4), TEXT, (0, 4), "normal"),
    ("w", (0, 0), TEXT, (0, 6), "normal"),
    ("2w", (0, 0), TEXT, (0, 13), "normal"),
    ("w", (0, 13), TEXT, (1, 2), "normal"),  # across the line break, past the indent
    ("w", (1, 2), TEXT, (1, 7), "normal"),  # "." is a word of its own
    ("b", (0, 13), TEXT, (0, 6), "normal"),
    ("2b", (0, 13), TEXT, (0, 0), "normal"),
    ("e", (0, 0), TEXT, (0, 4), "normal"),
    ("3e", (0, 0), TEXT, (0, 17), "normal"),
    ("0", (1, 5), TEXT, (1, 0), "normal"),
    ("$", (0, 2), TEXT, (0, 17), "normal"),
    ("G", (0, 3), TEXT, (2, 3), "normal"),
    ("gg", (2, 3), TEXT, (0, 3), "normal"),
    ("2G", (0, 0), TEXT, (1, 0), "normal"),
    ("x", (0, 0), TEXT[1:], (0, 0), "normal"),
    ("3x", (0, 0), TEXT[3:], (0, 0), "normal"),
    ("dw", (0, 0), TEXT.replace("alpha ", "", 1), (0, 0), "normal"),
    ("d2w", (0, 0), TEXT.replace("alpha beta_2 ", "", 1), (0, 0), "normal"),
    ("2dw", (0, 0), TEXT.replace("alpha beta_2 ", "", 1), (0, 0), "normal"),
    ("dw", (0, 13), TEXT.replace(" gamma", " ", 1), (0, 12), "normal"),  # stops at the line end
    ("de", (0, 0), TEXT.replace("alpha", "", 1), (0, 0), "normal"),
    ("db", (0, 6), TEXT.replace("alpha ", "", 1), (0, 0), "normal"),
    ("d$", (0, 6), TEXT.replace("beta_2 gamma", "", 1), (0, 5), "normal"),
    ("d0", (0, 6), TEXT.replace("alpha ", "", 1), (0, 0), "normal"),
    ("dl", (0, 0), TEXT[1:], (0, 0), "normal"),
    ("dh", (0, 1), TEXT[1:], (0, 0), "normal"),
    ("dd", (1, 3), "alpha beta_2 gamma\nlast line", (1, 0), "normal"),
    ("2dd", (0, 3), "last line", (0, 0), "normal"),
    ("dd", (2, 3), "alpha beta_2 gamma\n  delta.epsilon zeta", (1, 2), "normal"),
    ("dj", (0, 0), "last line", (0, 0), "normal"),
    ("dk", (1, 0), "last line", (0, 0), "normal"),
    ("dG", (1, 0), "alpha beta_2 gamma", (0, 0), "normal"),
    ("dgg", (1, 0), "last line", (0, 0), "normal"),
    ("cw", (0, 0), TEXT.replace("alpha", "", 1), (0, 0), "insert"),
    ("c2w", (0, 0), TEXT.replace("alpha beta_2", "", 1), (0, 0), "insert"),
    ("cc", (1, 4), "alpha beta_2 gamma\n\nlast line", (1, 0), "insert"),
    ("c$", (0, 6), TEXT.replace("beta_2 gamma", "", 1), (0, 6), "insert"),
    (
        "yyp",
        (0, 0),
        "alpha beta_2 gamma\nalpha beta_2 gamma\n" + TEXT.split("\n", 1)[1],
        (1, 0),
        "normal",
    ),
    (
        "2yyjp",
        (0, 0),
        "alpha beta_2 gamma\n  delta.epsilon zeta\nalpha beta_2 gamma\n"
        "  delta.epsilon zeta\nlast line",
        (2, 0),
        "normal",
    ),
    ("ywp", (0, 0), "aalpha lpha beta_2 gamma\n" + TEXT.split("\n", 1)[1], (0, 6), "normal"),
    ("xp", (0, 0), "lapha beta_2 gamma\n" + TEXT.split("\n", 1)[1], (0, 1), "normal"),
    ("ddp", (0, 0), "  delta.epsilon zeta\nalpha beta_2 gamma\nlast line", (1, 0), "normal"),
    ("x3p", (0, 0), "laaapha beta_2 gamma\n" + TEXT.split("\n", 1)[1], (0, 3), "normal"),
    ("ddu", (1, 0), TEXT, None, "normal"),
    ("xxu", (0, 0), TEXT[1:], None, "normal"),
    ("xx2u", (0, 0), TEXT, None, "normal"),
    ("i", (0, 3), TEXT, (0, 3), "insert"),
    ("a", (0, 3), TEXT, (0, 4), "insert"),
    ("A", (0, 3), TEXT, (0, 18), "insert"),
    ("I", (1, 8), TEXT, (1, 2), "insert"),
    ("o", (0, 3), "alpha beta_2 gamma\n\n" + TEXT.split("\n", 1)[1], (1, 0), "insert"),
    ("O", (1, 3), "alpha beta_2 gamma\n\n" + TEXT.split("\n", 1)[1], (1, 0), "insert"),
]
"""Where the cursor ends after undo is the editor's (None: not checked)."""

_KEY_NAMES = {"$": "dollar_sign"}


def vim_app() -> CloverApp:
    return replay_app(scenes.OPEN, options=AppOptions(editor_mode="vim"))


async def run_case(pilot: Any, keys: str, cursor: tuple[int, int]) -> None:
    app = pilot.app
    prompt = app.composer.input
    prompt.load_text(TEXT)
    prompt.vim.insert_mode()
    await pilot.press("escape")  # to normal mode
    prompt.move_cursor(cursor)
    prompt.vim.register = ""
    prompt.history.clear()
    await pilot.press(*[_KEY_NAMES.get(k, k) for k in keys])
    await pilot.pause()


async def test_every_motion_operator_and_count() -> None:
    app = vim_app()
    failures: list[str] = []
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.started is not None, message="the session to open")
        prompt = app.composer.input
        assert prompt.vim is not None
        for keys, cursor, text, after, mode in CASES:
            await run_case(pilot, keys, cursor)
            got = (prompt.text, prompt.cursor_location, prompt.vim.mode)
            want = (text, after if after is not None else got[1], mode)
            if got != want:
                failures.append(f"{keys!r} at {cursor}: got {got!r}, want {want!r}")
    assert not failures, "\n".join(failures)


async def test_insert_mode_types_escape_leaves_it_and_the_status_bar_says_which() -> None:
    app = vim_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.started is not None, message="the session to open")
        prompt = app.composer.input
        await until(pilot, lambda: app.status_bar.editor_mode == "INSERT", message="INSERT shown")
        await pilot.press("h", "i", "x")
        assert prompt.text == "hix" and prompt.vim.mode == "insert"
        await pilot.press("escape")
        assert prompt.vim.mode == "normal" and prompt.cursor_location == (0, 2)
        await until(pilot, lambda: app.status_bar.editor_mode == "NORMAL", message="NORMAL")
        await pilot.press("x")  # a command now, not text
        assert prompt.text == "hi"
        await pilot.press("enter")  # sends from normal mode; the next prompt starts in insert
        replay = app.replay  # type: ignore[attr-defined]
        await until(
            pilot,
            lambda: any(isinstance(op, p.UserInput) and op.text == "hi" for op in replay.ops),
            message="the prompt to be sent",
        )
        assert prompt.vim.mode == "insert" and prompt.text == ""


async def test_escape_in_normal_mode_still_interrupts_a_turn() -> None:
    app = replay_app(scenes.OPEN, [scenes.running_command()], options=AppOptions(editor_mode="vim"))
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.started is not None, message="the session to open")
        app.composer.input.insert("run the tests")
        await pilot.press("enter")
        await until(pilot, lambda: app.turn_running, message="the turn to start")
        await pilot.press("escape")  # insert -> normal: not an interrupt yet
        replay = app.replay  # type: ignore[attr-defined]
        assert not any(isinstance(op, p.Interrupt) for op in replay.ops)
        await pilot.press("d")  # a pending operator: Escape cancels it
        await pilot.press("escape")
        assert app.composer.input.vim.pending == ""
        assert not any(isinstance(op, p.Interrupt) for op in replay.ops)
        await pilot.press("escape")
        await until(
            pilot,
            lambda: any(isinstance(op, p.Interrupt) for op in replay.ops),
            message="Escape in normal mode to interrupt the turn",
        )


@pytest.mark.parametrize("editor_mode", ["default"])
async def test_without_vim_mode_letters_are_text(editor_mode: str) -> None:
    app = replay_app(scenes.OPEN, options=AppOptions(editor_mode=editor_mode))
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.started is not None, message="the session to open")
        await pilot.press("escape", "d", "d")
        assert app.composer.input.text == "dd" and app.composer.input.vim is None
        assert app.status_bar.editor_mode == ""


async def test_help_lists_the_vim_keys_and_your_keys() -> None:
    from clover_code.ui.widgets.notice_line import NoticeLine

    options = AppOptions(editor_mode="vim", keymap={"interrupt": "ctrl+g"})
    app = replay_app(scenes.OPEN, options=options)
    async with app.run_test(size=(100, 40)) as pilot:
        await until(pilot, lambda: app.started is not None, message="the session to open")
        app.composer.input.insert("/help")
        app.composer.input.submit()
        await until(
            pilot,
            lambda: any("Vim mode:" in n.text for n in app.query(NoticeLine)),
            message="the help",
        )
        (shown,) = [n.text for n in app.query(NoticeLine) if "Vim mode:" in n.text]
        assert "ctrl+g stop the running turn (Escape)" in shown
        assert "h j k l w b e 0 $ gg G" in shown


async def _normal_mode_with_text(pilot: Any) -> None:
    from tests.ui.test_snapshots import settle

    await settle(pilot)
    await pilot.press(*"fix the parser")
    await pilot.press("escape", "b")
    await until(pilot, lambda: pilot.app.status_bar.editor_mode == "NORMAL", message="normal mode")
    await pilot.pause()


def test_the_status_bar_shows_the_vim_mode(snap_compare: Any) -> None:
    assert snap_compare(vim_app(), terminal_size=(100, 24), run_before=_normal_mode_with_text)
