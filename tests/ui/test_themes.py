"""Themes: the setting, the command palette (and the choice saved to the user config),
and the diff, tool-card and denoising colours readable in every one of Textual's themes
(snapshots in a light and a dark theme)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.theme import BUILTIN_THEMES
from textual.widget import Widget

from clover_code import protocol as p
from clover_code.config.load import load_settings
from clover_code.config.settings import user_config_path
from clover_code.config.user_file import set_user_value
from clover_code.errors import ConfigError
from clover_code.ui.options import AppOptions, check_options
from clover_code.ui.widgets.denoise import DenoiseView
from clover_code.ui.widgets.diff_view import DiffView
from clover_code.ui.widgets.tool_card import ToolCard
from tests.ui import scenes
from tests.ui.fakes_ui import replay_app
from tests.ui.test_flows import until
from tests.ui.test_snapshots import SnapCompare, send_prompt, with_turn

MIN_CONTRAST = 3.0
"""WCAG's least contrast for large text and for the parts of a user interface."""

DIFF = """--- a/app.py
+++ b/app.py
@@ -1,3 +1,3 @@
 def add(a, b):  # adds
-    return a - b, "minus", 1
+    return a + b, "plus", 2
 @decorated
"""


def _luminance(rgb: tuple[int, int, int]) -> float:
    def channel(value: int) -> float:
        v = value / 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = rgb
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    """The WCAG contrast ratio of two colours (1 to 21)."""
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def card(status: str, result: str, display: Any = None) -> ToolCard:
    started = p.ToolCallStarted(
        call_id=status, name="shell", kind="execute", arguments={"command": "make"}, summary="make"
    )
    widget = ToolCard(started)
    widget.finish(
        p.ToolCallFinished(
            call_id=status, name="shell", status=status, result=result, display=display
        )
    )
    return widget


class Gallery(App[None]):
    """A diff, tool cards of each outcome and a draft being denoised, on the app's colours."""

    CSS = "Screen { background: $background; }"

    def compose(self) -> ComposeResult:
        yield DiffView(DIFF)
        yield card("ok", "built")
        yield card("error", "make: *** [all] Error 1")
        yield card("denied", "denied by the user")
        denoise = DenoiseView()
        yield denoise

    def on_mount(self) -> None:
        self.query_one(DenoiseView).show(
            p.BlockDraft(
                block=0,
                step=2,
                tokens=["sure", " thing", None, " done"],
                confidences=[0.99, 0.85, 0.0, 0.5],
            )
        )


def _drawing(text: str) -> bool:
    """Box drawing and block characters: a card's border, not text to read."""
    return all(0x2500 <= ord(c) <= 0x259F for c in text.strip())


def worst(widget: Widget) -> tuple[float, str]:
    """The least contrast of any text the widget draws, and that text."""
    lowest = (99.0, "")
    for strip in widget.render_lines(widget.region.reset_offset):
        for segment in strip:
            style = segment.style
            if not segment.text.strip() or _drawing(segment.text):
                continue
            if style is None or style.color is None:
                continue
            if style.bgcolor is None:
                continue
            ratio = contrast(style.color.get_truecolor(), style.bgcolor.get_truecolor())
            lowest = min(lowest, (ratio, segment.text))
    return lowest


async def test_diff_cards_and_drafts_are_readable_in_every_theme() -> None:
    app = Gallery()
    failures: list[str] = []
    async with app.run_test(size=(90, 30)) as pilot:
        for name in sorted(BUILTIN_THEMES):
            if name.startswith("ansi-"):
                continue  # the terminal's own palette: its colours are the terminal's
            app.theme = name
            await pilot.pause()
            for widget in [
                app.query_one(DiffView),
                *app.query(".tool-title, .tool-body"),  # a card's own lines
                app.query_one(DenoiseView),
            ]:
                ratio, text = worst(widget)
                if ratio < MIN_CONTRAST:
                    kind = type(widget).__name__
                    failures.append(f"{name}: {kind} draws {text!r} at contrast {ratio:.2f}")
    assert not failures, "\n".join(failures)


async def test_the_colours_follow_a_change_of_theme() -> None:
    app = Gallery()
    async with app.run_test(size=(90, 30)) as pilot:
        diff = app.query_one(DiffView)

        def added_background() -> Any:
            line = diff.render_lines(diff.region.reset_offset)[5]
            return next(s.style.bgcolor for s in line if s.text.strip() == "return")

        app.theme = "textual-dark"
        await pilot.pause()
        dark = added_background()
        app.theme = "textual-light"
        await pilot.pause()
        assert added_background() != dark


async def test_the_theme_setting_is_applied() -> None:
    app = replay_app(scenes.OPEN, options=AppOptions(theme="nord"))
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.started is not None, message="the session to open")
        assert app.theme == "nord"


def test_an_unknown_theme_is_one_sentence() -> None:
    with pytest.raises(ConfigError, match="theme 'solarised' is not one of the app's themes"):
        check_options(AppOptions(theme="solarised"), {})


async def test_a_theme_picked_in_the_palette_is_saved_to_the_user_config(tmp_path: Path) -> None:
    config = user_config_path()
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('# mine\nmodel = "m"\n\n[keys]\nquit = "ctrl+x"\n')
    options = AppOptions(save_theme=lambda name: set_user_value(config, "theme", name))
    app = replay_app(scenes.OPEN, options=options)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.started is not None, message="the session to open")
        await pilot.press("ctrl+p")
        await pilot.press(*"theme")
        await pilot.pause(0.3)
        await pilot.press("enter")  # Theme: change the current theme
        await pilot.pause(0.3)
        await pilot.press(*"gruvbox")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await until(pilot, lambda: app.theme == "gruvbox", message="the theme to change")
        await until(pilot, lambda: "gruvbox" in config.read_text(), message="it to be saved")
    assert (
        config.read_text() == '# mine\nmodel = "m"\n\ntheme = "gruvbox"\n[keys]\nquit = "ctrl+x"\n'
    )
    settings = load_settings(user_config=config, env={})
    assert settings.theme == "gruvbox" and settings.keys == {"quit": "ctrl+x"}


THEMES = pytest.mark.parametrize("theme", ["textual-light", "nord"], ids=["light", "dark"])


@THEMES
def test_tool_card_with_a_diff_in_theme(snap_compare: SnapCompare, theme: str) -> None:
    app = with_turn(scenes.tool_with_diff(), options=AppOptions(theme=theme))
    assert snap_compare(app, terminal_size=(100, 30), run_before=send_prompt)


@THEMES
def test_failed_command_card_in_theme(snap_compare: SnapCompare, theme: str) -> None:
    app = with_turn(scenes.failed_command(), "run the tests", AppOptions(theme=theme))
    assert snap_compare(app, terminal_size=(100, 30), run_before=send_prompt)


@THEMES
def test_denoising_view_in_theme(snap_compare: SnapCompare, theme: str) -> None:
    app = with_turn(scenes.streaming(), options=AppOptions(theme=theme))
    assert snap_compare(app, terminal_size=(100, 30), run_before=send_prompt)


async def test_the_theme_from_the_settings_is_not_written_back() -> None:
    saved: list[str] = []
    app = replay_app(scenes.OPEN, options=AppOptions(theme="nord", save_theme=saved.append))
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.started is not None, message="the session to open")
        await pilot.pause()
        assert app.theme == "nord" and saved == []
        app.theme = "gruvbox"  # as the palette sets it
        await until(pilot, lambda: saved == ["gruvbox"], message="the pick to be saved")
