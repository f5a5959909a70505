"""The streamed answer: split into segments safely, and drawn as a one-shot render is."""

from __future__ import annotations

from typing import Any

from rich.color import Color
from textual.app import App, ComposeResult
from textual.containers import Horizontal
from textual.widget import Widget

from clover_code.ui.widgets.answer import PART_CHARS, Answer, AnswerPart, render_plain, safe_split
from tests.ui.fakes_ui import long_markdown
from tests.ui.test_flows import until

Cell = tuple[str, Color | None, Any]


def test_every_safe_split_renders_as_the_whole() -> None:
    text = long_markdown(3000)
    cuts = 0
    for start in range(0, len(text), 37):
        cut = safe_split(text, start)
        if cut is not None:
            cuts += 1
            assert render_plain([text[: cut - 2], text[cut:]], 70) == render_plain([text], 70)
    assert cuts > 10


def test_no_split_inside_a_fence() -> None:
    text = "intro\n\n```\ncode\n\nmore code\n```\n\nafter"
    cut = safe_split(text, 0)
    assert cut == text.index("after")


class SideBySide(App[None]):
    """A streamed answer (left) beside the same text written at once (right)."""

    CSS = "Answer { width: 1fr; }"

    def __init__(self, streamed: Answer, whole: Answer) -> None:
        super().__init__()
        self.streamed, self.whole = streamed, whole

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield self.streamed
            yield self.whole


def cells(app: App[Any], widget: Widget) -> list[list[Cell]]:
    """What the screen shows in the widget's region: character, background, and for a
    visible character its colour and attributes."""
    region = widget.region
    strips = app.screen._compositor.render_strips()
    out = []
    for y in range(region.y, region.bottom):
        line: list[Cell] = []
        for segment in strips[y].crop(region.x, region.right):
            style = segment.style
            assert style is not None
            ink = None if not segment.text.strip() else (style.color, style.bold, style.italic)
            line += [(char, style.bgcolor, ink if char != " " else None) for char in segment.text]
        out.append(line)
    return out


async def test_streamed_in_blocks_draws_as_a_one_shot_render() -> None:
    text = long_markdown(6000)
    app = SideBySide(Answer(), Answer(text))
    async with app.run_test(size=(180, 400)) as pilot:
        for number, start in enumerate(range(0, len(text), 97)):
            app.streamed.write(text[start : start + 97])
            if number % 3 == 0:  # some blocks come in the same frame, some in frames of their own
                await pilot.pause()
        await until(pilot, lambda: not app.streamed.pending, message="the last paint")
        await pilot.pause()
        assert app.streamed.text == app.whole.text == text
        assert app.streamed.drawn_segments == app.streamed.segments
        assert len(app.streamed.segments) > 10  # closed segments, in several parts
        assert len(app.streamed.query(AnswerPart)) >= len(text) // PART_CHARS
        assert app.whole.segments == [text]
        assert app.streamed.region.height == app.whole.region.height < 400
        assert cells(app, app.streamed) == cells(app, app.whole)


async def test_text_written_before_the_answer_is_mounted_keeps_its_order() -> None:
    text = long_markdown(6000)
    early, late = text[:4500], text[4500:]
    streamed = Answer()
    for start in range(0, len(early), 97):  # parts are made before there is a screen
        streamed.write(early[start : start + 97])
    app = SideBySide(streamed, Answer(text))
    async with app.run_test(size=(180, 400)) as pilot:
        streamed.write(late)
        await until(pilot, lambda: not streamed.pending, message="the last paint")
        await pilot.pause()
        assert streamed.text == text
        assert streamed.drawn_segments == streamed.segments
        assert len(streamed.query(AnswerPart)) > 2
        assert cells(app, streamed) == cells(app, app.whole)
        width = streamed.content_region.width
        assert render_plain(streamed.segments, width) == render_plain([text], width)
