"""The streamed answer: split into segments safely, and equal to a one-shot render."""

from __future__ import annotations

from textual.app import App, ComposeResult

from clover_code.ui.widgets.answer import Answer, render_plain, safe_split
from tests.ui.fakes_ui import long_markdown


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


class AnswerApp(App[None]):
    def compose(self) -> ComposeResult:
        self.answer = Answer()
        yield self.answer


async def test_streamed_in_small_pieces_equals_one_shot() -> None:
    text = long_markdown(6000)
    app = AnswerApp()
    async with app.run_test(size=(90, 30)) as pilot:
        for start in range(0, len(text), 97):
            app.answer.write(text[start : start + 97])
            if start % 970 == 0:
                await pilot.pause(0.1)
        await pilot.pause()
        assert app.answer.text == text
        segments = app.answer.segments
        assert len(segments) > 2
        width = app.answer.content_region.width
        assert render_plain(segments, width) == render_plain([text], width)
