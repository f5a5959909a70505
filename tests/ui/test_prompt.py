"""The prompt: history, completion of commands and files, keys, slash commands."""

from __future__ import annotations

from pathlib import Path

from clover_code import protocol as p
from clover_code.ui.app import CloverApp
from clover_code.ui.clock import Clock
from clover_code.ui.file_index import FileIndex, fuzzy_score
from clover_code.ui.widgets.notice_line import NoticeLine
from tests.ui import scenes
from tests.ui.fakes_ui import replay_app
from tests.ui.test_flows import until

SIZE = (100, 30)


def notes(app: CloverApp) -> str:
    return "\n".join(n.text for n in app.query(NoticeLine))


async def test_history_walks_back_and_forth() -> None:
    app = replay_app(scenes.OPEN, [[], []])
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.composer.input
        for text in ("first", "second"):
            prompt.insert(text)
            await pilot.press("enter")
        prompt.insert("draft")
        await pilot.press("up")
        assert prompt.text == "second"
        await pilot.press("up")
        assert prompt.text == "first"
        await pilot.press("down", "down")
        assert prompt.text == "draft"


async def test_newline_keys_do_not_send() -> None:
    app = replay_app(scenes.OPEN)
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.composer.input
        prompt.insert("line one")
        await pilot.press("ctrl+j")
        prompt.insert("line two")
        assert prompt.text == "line one\nline two"
        await pilot.press("enter")
        await until(pilot, lambda: bool(app.bridge.sent))
        assert app.bridge.sent[-1] == p.UserInput(text="line one\nline two")


async def test_slash_completion_and_help() -> None:
    app = replay_app(scenes.OPEN)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("/", "c")
        menu = app.composer.menu

        def ids() -> list[str | None]:
            return [menu.get_option_at_index(i).id for i in range(menu.option_count)]

        await until(pilot, lambda: bool(ids()), message="the completion menu")
        assert ids() == ["/compact", "/clear", "/cost"]
        await pilot.press("down", "tab")
        assert app.composer.input.text == "/clear "
        assert not menu.display
        app.composer.input.load_text("")
        app.composer.input.insert("/help")
        await pilot.press("enter")
        await until(pilot, lambda: "/resume [ID|--all]" in notes(app), message="the help text")
        assert "Esc interrupt" in notes(app)


async def test_at_completes_workspace_files(tmp_path: Path) -> None:
    app = replay_app(scenes.OPEN)
    async with app.run_test(size=SIZE) as pilot:
        app.composer.files = FileIndex(["src/clover/app.py", "README.md", "docs/apple.md"])
        app.composer.input.insert("look at @clap")
        await until(
            pilot, lambda: app.composer.menu.option_count > 0, message="the file completion menu"
        )
        assert app.composer.menu.get_option_at_index(0).id == "@src/clover/app.py"
        await pilot.press("enter")
        assert app.composer.input.text == "look at @src/clover/app.py "


def test_file_index_respects_gitignore(repo: Path) -> None:
    (repo / ".gitignore").write_text("build/\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.py").write_text("")
    index = FileIndex.build(repo)
    assert "calc.py" in index.paths and "build/out.py" not in index.paths
    assert fuzzy_score("cpy", "calc.py") is not None and fuzzy_score("zz", "calc.py") is None


async def test_approval_mode_cycles_and_is_sent() -> None:
    app = replay_app(scenes.OPEN)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.status_bar.approval == "ask")
        await pilot.press("shift+tab")
        await until(pilot, lambda: bool(app.bridge.sent))
        assert app.bridge.sent[-1] == p.SetApprovalMode(mode="auto-edit")
        assert app.status_bar.approval == "auto-edit"
        app.composer.input.insert("/approval read-only")
        await pilot.press("enter")
        await until(pilot, lambda: app.bridge.sent[-1] == p.SetApprovalMode(mode="read-only"))


async def test_diff_compact_clear_send_ops_and_render_replies() -> None:
    app = replay_app(scenes.OPEN)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        for command in ("/diff", "/compact", "/clear"):
            app.composer.input.insert(command)
            await pilot.press("enter")
        await until(pilot, lambda: len(app.bridge.sent) == 3)
        assert [op.type for op in app.bridge.sent] == ["show_diff", "compact", "clear_history"]
        app.bridge.emit(p.DiffReport(diff=scenes.DIFF, files=["calc.py"]))
        app.bridge.emit(p.Compacted(summary="s", tokens_before=9000, tokens_after=1200))
        app.bridge.emit(p.UndoDone(turns=1, files=["calc.py"]))
        await until(
            pilot, lambda: "Undid the last turn" in notes(app), message="the three replies drawn"
        )
        text = notes(app)
        assert "Changes this session (calc.py)" in text
        assert "9,000 → 1,200" in text and "Undid the last turn: restored calc.py" in text


async def test_ctrl_c_twice_quits(monkeypatch: object) -> None:
    app = replay_app(scenes.OPEN)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+c")
        # The first press was handled (it noted the time) and did not quit.
        await until(
            pilot, lambda: app._last_ctrl_c == Clock.now(), message="the first Ctrl+C handled"
        )
        await pilot.pause()
        assert app.is_running and app.return_value is None
        Clock.frozen = 1001.0
        await pilot.press("ctrl+c")
        await until(pilot, lambda: app.return_value is not None, message="the app to quit")
    assert app.return_value == 0


async def test_unknown_command_says_so() -> None:
    app = replay_app(scenes.OPEN)
    async with app.run_test(size=SIZE) as pilot:
        app.composer.input.insert("/frobnicate now")
        await pilot.press("escape", "enter")
        await until(
            pilot, lambda: "unknown command /frobnicate" in notes(app), message="the notice"
        )
        assert not app.bridge.sent


async def test_the_palette_runs_a_slash_command() -> None:
    app = replay_app(scenes.OPEN)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await pilot.press("ctrl+p")
        await until(pilot, lambda: len(app.screen_stack) > 1)
        await pilot.press(*"/cost", "enter")
        await until(pilot, lambda: "This session:" in notes(app))


async def test_keys_scroll_the_transcript_while_the_prompt_has_focus() -> None:
    app = replay_app(scenes.OPEN)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.started is not None)
        for n in range(60):
            app.transcript.add_note(f"note {n}")
        transcript = app.transcript
        await until(pilot, lambda: transcript.max_scroll_y > 40, message="a long transcript")
        transcript.scroll_end(animate=False)
        await pilot.pause()
        assert app.composer.input.has_focus
        bottom = transcript.scroll_y
        assert bottom == transcript.max_scroll_y

        await pilot.press("shift+pageup")
        await until(pilot, lambda: transcript.scroll_y < bottom, message="Shift+PageUp")
        await pilot.press("ctrl+home")
        await until(pilot, lambda: transcript.scroll_y == 0, message="Ctrl+Home")
        await pilot.press("pagedown")
        await until(pilot, lambda: transcript.scroll_y > 0, message="PageDown")
        await pilot.press("ctrl+end")
        await until(pilot, lambda: transcript.scroll_y == transcript.max_scroll_y)
        await pilot.press("pageup")
        await until(pilot, lambda: transcript.scroll_y < transcript.max_scroll_y)
        assert app.composer.input.has_focus and app.composer.input.text == ""


async def test_page_keys_page_through_a_prompt_taller_than_its_box() -> None:
    app = replay_app(scenes.OPEN)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.started is not None)
        for n in range(60):
            app.transcript.add_note(f"note {n}")
        prompt = app.composer.input
        prompt.insert("\n".join(f"line {n}" for n in range(40)))
        await until(pilot, lambda: prompt.max_scroll_y > 0, message="a tall prompt")
        transcript = app.transcript
        transcript.scroll_end(animate=False)
        await pilot.pause()
        bottom, row = transcript.scroll_y, prompt.cursor_location[0]
        await pilot.press("pageup")
        await until(pilot, lambda: prompt.cursor_location[0] < row, message="the prompt's cursor")
        assert transcript.scroll_y == bottom
        await pilot.press("shift+pageup")  # always the transcript
        await until(pilot, lambda: transcript.scroll_y < bottom, message="Shift+PageUp")


async def test_f2_hides_and_shows_the_denoising_view() -> None:
    app = replay_app(scenes.OPEN)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        denoise = app.transcript.denoise
        assert denoise.enabled
        await pilot.press("f2")
        await until(pilot, lambda: not denoise.enabled, message="F2 to hide the view")
        assert [str(n.message) for n in app._notifications] == ["Denoising view off."]
        await pilot.press("f2")
        await until(pilot, lambda: denoise.enabled, message="F2 to show it again")
