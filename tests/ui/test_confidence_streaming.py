"""The answer shaded by fill confidence while it streams: tints on screen as the first
block commits (a real session, the model scripted), the streamed answer drawn
exactly as a one-shot shaded render of its text, and its segments, joined, the
one-shot shading of the text whatever way the text and pieces arrive."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Static

from clover_code.config.settings import Settings
from clover_code.engine import events as ev
from clover_code.protocol.confidence import TokenPiece
from clover_code.ui.confidence import ShadedStream, shaded_content
from clover_code.ui.options import AppOptions
from clover_code.ui.text import clean
from clover_code.ui.widgets.answer import Answer
from clover_code.ui.widgets.answer_parts import AnswerPart, ShadedPart
from tests.fakes import ScriptedBackend
from tests.ui.fakes_ui import scripted_app
from tests.ui.test_answer import cells
from tests.ui.test_flows import type_and_send, until

WORDS = ["the", "fix", "adds", "both", "numbers;", "the", "test", "checks", "a", "sign\n"]
CONFIDENCES = (0.99, 0.3, 0.97, 0.7, 0.99, 0.45, 0.93)


def tokens(count: int) -> list[tuple[str, float]]:
    """``count`` tokens of a text with a newline every few words, each with a confidence
    (some below 0.5, some below 0.9, most sure)."""
    out = []
    for i in range(count):
        word = WORDS[i % len(WORDS)]
        out.append((word if word.endswith("\n") else word + " ", CONFIDENCES[i % 7]))
    return out


def blocks(count: int, size: int = 8) -> list[list[tuple[str, float]]]:
    every = tokens(count * size)
    return [every[i : i + size] for i in range(0, len(every), size)]


def pieces_of(parts: list[tuple[str, float]]) -> list[TokenPiece]:
    return [TokenPiece(len(text), confidence, 1) for text, confidence in parts]


def tinted(content: Content) -> list[tuple[str, str]]:
    return [(content.plain[s.start : s.end], str(s.style)) for s in content.spans]


def tint_per_char(content: Content) -> list[tuple[str, str]]:
    """Each character and its tint ("" for none), newlines left out: a line of a
    ``Content`` draws no newline, so a tint there shows nowhere."""
    tints = [""] * len(content.plain)
    for span in content.spans:
        for i in range(span.start, min(span.end, len(tints))):
            tints[i] = str(span.style)
    return [(c, tint) for c, tint in zip(content.plain, tints, strict=True) if c != "\n"]


async def test_the_answer_is_shaded_before_the_response_ends(
    repo: Path, settings: Settings
) -> None:
    first_block = asyncio.Event()
    response: list[Any] = []
    for number, parts in enumerate(blocks(12)):
        text = "".join(t for t, _ in parts)
        response += [ev.BlockCommitted(number, text, len(parts), 2, pieces=pieces_of(parts))]
        response += [ev.ContentDelta(text)]
        if number == 0:
            response.append(first_block)  # the model is still writing
    response += [ev.Usage(100, 96), ev.Finished("stop")]
    backend = ScriptedBackend([response])
    app = scripted_app(backend, repo, settings, options=AppOptions(shade_confidence=True))
    async with app.run_test(size=(100, 40)) as pilot:
        await until(pilot, lambda: app.started is not None, message="the session")
        await type_and_send(pilot, "fix add")

        def shaded() -> Answer | None:
            found = [a for a in app.query(Answer) if a.shaded and not a.pending]
            return found[0] if found else None

        await until(pilot, lambda: shaded() is not None, message="the shaded first block")
        answer = shaded()
        assert answer is not None and app.turn_running  # the response goes on
        drawn = answer.shaded_text
        assert drawn is not None
        assert tinted(drawn) == [
            ("fix ", "on $error-muted"),
            ("both ", "on $warning-muted"),
            ("the ", "on $error-muted"),
        ]
        part = answer.query(ShadedPart).last()
        lines = [part.render_line(y).text for y in range(part.size.height)]
        assert lines[0].startswith("the fix adds both")
        first = part.render_line(0)
        cells_ = [(c, seg.style.bgcolor if seg.style else None) for seg in first for c in seg.text]
        plain = cells_[0][1]  # "the", sure: no tint
        assert "".join(c for c, bg in cells_ if bg != plain) == "fix both the "
        assert not any(markdown.display for markdown in answer.query(AnswerPart))

        first_block.set()
        await until(pilot, lambda: not app.turn_running, message="the end of the turn")
        await until(pilot, lambda: not answer.pending, message="the last paint")
        assert answer.pieces is not None
        whole = shaded_content(answer.raw, answer.pieces, below=0.5)
        drawn = answer.shaded_text
        assert drawn is not None and drawn.plain == whole.plain  # cut, then joined: the same
        assert tint_per_char(drawn) == tint_per_char(whole)
        assert len(answer.query(ShadedPart)) > 1


class SideBySide(App[None]):
    """A shaded answer streamed in blocks (left) beside its one-shot render (right)."""

    CSS = """
    Answer, #whole { width: 1fr; }
    #whole { height: auto; padding: 0 1 0 2; }
    """

    def __init__(self, streamed: Answer, whole: Content) -> None:
        super().__init__()
        self.streamed = streamed
        self.whole = Vertical(Static(whole), id="whole")

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield self.streamed
            yield self.whole


async def test_streamed_shading_draws_as_the_one_shot_render() -> None:
    parts = tokens(900)
    parts[100] = ("a\x1b[31mred\x1b[0m\r\n", 0.2)  # escapes and a CR cleaned piece by piece
    raw = "".join(t for t, _ in parts)
    pieces = pieces_of(parts)
    answer = Answer()
    app = SideBySide(answer, shaded_content(raw, pieces, below=0.5))
    async with app.run_test(size=(160, 300)) as pilot:
        answer.shade(True, below=0.5)
        assert not answer.shaded  # no confidences yet: Markdown
        at = 0
        for number, start in enumerate(range(0, len(parts), 13)):
            block = parts[start : start + 13]
            answer.write("".join(t for t, _ in block))
            # pieces come after their text, sometimes in a later frame
            answer.add_confidence(pieces[at : start + 13 - 4 * (number % 2)])
            at = start + 13 - 4 * (number % 2)
            if number == 0:
                answer.shade(True, below=0.5)
            if number % 3 == 0:
                await pilot.pause()
        answer.add_confidence(pieces[at:])
        answer.set_confidence(pieces)  # the response's pieces, all: the same, nothing redrawn
        await until(pilot, lambda: not answer.pending, message="the last paint")
        await pilot.pause()
        assert answer.shaded and len(answer.query(ShadedPart)) >= 3
        assert answer.region.height == app.whole.region.height
        assert cells(app, answer) == cells(app, app.whole)


def test_segments_joined_are_the_one_shot_shading() -> None:
    rng = random.Random(5)
    alphabet = ["a", "bc", " ", "\n", "\n\n", "déf", "\t", "\x1b[1m", "\r\n", "long" * 30]
    for _ in range(30):
        parts = [(rng.choice(alphabet), rng.random()) for _ in range(rng.randint(0, 400))]
        raw = "".join(t for t, _ in parts)
        pieces = pieces_of(parts)
        stream = ShadedStream(below=0.5, segment_chars=rng.choice((5, 40, 200)))
        given = 0
        while given < len(pieces):
            given = min(len(pieces), given + rng.randint(1, 40))
            text = raw[: sum(p.chars for p in pieces[:given]) + rng.randint(0, 3)]
            stream.take(text, pieces[:given])
            joined = Content("\n").join([*stream.sealed, stream.open_segment(text)])
            covered = shaded_content(text[: stream.covered], pieces[: stream.taken], below=0.5)
            assert joined.plain == covered.plain + clean(text[stream.covered :])
            assert tint_per_char(joined)[: len(tint_per_char(covered))] == tint_per_char(covered)
        whole = Content("\n").join([*stream.sealed, stream.open_segment(raw)])
        expected = shaded_content(raw, pieces, below=0.5)
        assert whole.plain == expected.plain
        assert tint_per_char(whole) == tint_per_char(expected)
