"""Bad input: tiny terminals, huge diffs and pastes, binary output, wide characters,
an engine that drops mid-block. Each is handled without a crash and says what was cut."""

from __future__ import annotations

import asyncio
from pathlib import Path

from clover_code import protocol as p
from clover_code.config.settings import Settings
from clover_code.engine import events as ev
from clover_code.errors import StreamInterrupted
from clover_code.ui.widgets.answer import Answer
from clover_code.ui.widgets.diff_view import DiffView
from clover_code.ui.widgets.notice_line import NoticeLine
from clover_code.ui.widgets.tool_card import ToolCard
from clover_code.ui.widgets.user_message import UserMessage
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.ui import scenes
from tests.ui.fakes_ui import draft_steps, replay_app, scripted_app
from tests.ui.test_flows import answers, type_and_send, until


def rendered(widget: object) -> str:
    """The plain text a Static-like widget shows."""
    content = widget.render()  # type: ignore[attr-defined]
    return str(getattr(content, "plain", content))


async def test_tiny_terminal_while_streaming() -> None:
    app = replay_app(scenes.OPEN, [scenes.streaming()])
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "fix add")
        await until(pilot, lambda: app.transcript.denoise.display, message="the denoise view")
        for size in ((40, 10), (1, 1), (40, 10)):
            await pilot.resize_terminal(*size)
            await until(pilot, lambda s=size: app.size == s, message=f"the resize to {size}")
            await pilot.pause()
        assert app.is_running and app._exception is None
        assert app.transcript.denoise.display
        app.composer.input.insert("still typing")
        assert app.composer.input.text == "still typing"


async def test_five_megabyte_line_in_a_diff_is_cut() -> None:
    line = "x" * 5_000_000
    diff = f"--- a/big.txt\n+++ b/big.txt\n@@ -1 +1 @@\n-{line}\n+{line}y\n"
    turn = [
        p.TurnStarted(turn=1, text="t"),
        p.ToolCallStarted(call_id="c", name="write_file", kind="edit", arguments={}, summary="big"),
        p.ToolCallFinished(
            call_id="c",
            name="write_file",
            status="ok",
            result="ok",
            display=p.FileEdit(path="big.txt", diff=diff),
        ),
        p.TurnFinished(turn=1, status="completed"),
    ]
    app = replay_app(scenes.OPEN, [turn])
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "write it")
        await until(
            pilot,
            lambda: (
                bool(app.query(DiffView))
                and "more characters cut" in rendered(app.query_one(DiffView))
            ),
            message="the diff with its long line cut",
        )
        shown = rendered(app.query_one(DiffView))
        assert len(shown) < 5_000


async def test_binary_command_output(repo: Path, settings: Settings) -> None:
    command = "head -c 4000 /dev/urandom; printf '\\033[31mred\\033[0m'"
    backend = ScriptedBackend(
        [tool_response(("shell", {"command": command})), text_response("Done.")]
    )
    app = scripted_app(backend, repo, settings, approval="full-auto")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "dump")
        await until(pilot, lambda: "Done." in answers(app))
        card = app.query_one(ToolCard)
        body = rendered(card.query_one(".tool-body"))
        assert "binary output" in body and "not shown" in body
        assert "\x1b" not in body


async def test_one_megabyte_paste_is_sent_whole_and_shown_cut() -> None:
    from textual import events

    app = replay_app(scenes.OPEN, [[p.TurnStarted(turn=1, text="x")]])
    pasted = "\n".join(f"line {i} " + "é" * 40 for i in range(20_000))
    assert len(pasted) > 1_000_000
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.started is not None, message="the session to open")
        app.composer.input.insert("summarise: ")
        app.composer.input.post_message(events.Paste(pasted))
        await until(
            pilot, lambda: "[pasted text #1:" in app.composer.input.text, message="the paste"
        )
        assert len(app.composer.input.text) < 200
        await pilot.press("enter")
        await until(pilot, lambda: bool(app.query(UserMessage)))
        sent = app.bridge.sent[-1]
        assert isinstance(sent, p.UserInput) and sent.text == "summarise: " + pasted
        shown = rendered(app.query_one(UserMessage))
        assert "more lines" in shown and len(shown) < 5_000


async def test_unicode_and_wide_characters() -> None:
    wide = "修正しました 🎉 — naïve café ½ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 \u200b\u202e"
    tokens: list[str | None] = ["修正", None, "🎉", " ", None, "café"]
    turn = [
        p.TurnStarted(turn=1, text=wide),
        p.ReasoningDelta(text=wide),
        p.ContentDelta(text=wide + "\n\n| 列 | 🎉 |\n|---|---|\n| ü | 全角 |\n"),
        p.BlockCommitted(block=0, text=wide, token_count=20),
        p.BlockDraft(block=1, step=1, tokens=tokens),
    ]
    app = replay_app(scenes.OPEN, [turn])
    async with app.run_test(size=(60, 20)) as pilot:
        await type_and_send(pilot, wide)
        await until(pilot, lambda: wide in answers(app), message="the wide answer")
        await until(
            pilot, lambda: "修正" in rendered(app.transcript.denoise), message="the wide draft"
        )
        await pilot.resize_terminal(33, 12)
        await until(pilot, lambda: app.size == (33, 12), message="the resize")
        await pilot.pause()
        assert app.is_running and app._exception is None


async def test_engine_disconnects_mid_block(repo: Path, settings: Settings) -> None:
    drafts = draft_steps(0, ["Hal", "f ", "a ", "blo", "ck"], 3)
    drafts_drawn = asyncio.Event()  # the stream breaks only once the drafts are on screen
    backend = ScriptedBackend(
        [
            [
                *drafts[:2],
                drafts_drawn,
                ev.Failed(StreamInterrupted("the stream broke after 0 blocks; try again."), True),
                ev.Finished("error"),
            ]
        ]
    )
    app = scripted_app(backend, repo, settings)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "hello")
        denoise = app.transcript.denoise
        await until(
            pilot, lambda: denoise.drafts_seen >= 1 and denoise.display, message="the drafts"
        )
        drafts_drawn.set()
        await until(pilot, lambda: not app.turn_running)
        assert not denoise.display  # the half block does not linger
        notes = [str(n.text) for n in app.query(NoticeLine)]
        assert any("the stream broke" in n for n in notes)
        assert not app.query(Answer) or "Half" not in answers(app)
