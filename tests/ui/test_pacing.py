"""Redraws driven by the stream are paced: folded together while one is on its way,
spaced by a minimum interval, and the newest state is the one drawn."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Static

from clover_code import protocol as p
from clover_code.ui.pacing import Pacer
from clover_code.ui.widgets.denoise import DenoiseView
from tests.ui.test_bad_input import rendered
from tests.ui.test_flows import until


class Counted(Static):
    """A widget whose paced redraws are counted."""

    def __init__(self, min_interval: float) -> None:
        super().__init__("")
        self.redraws = 0
        self.value = 0
        self.pacer = Pacer(self, self._redraw, min_interval)

    def _redraw(self) -> None:
        self.redraws += 1
        self.update(str(self.value))


class PacedApp(App[None]):
    def __init__(self, min_interval: float) -> None:
        super().__init__()
        self.counted = Counted(min_interval)

    def compose(self) -> ComposeResult:
        yield self.counted


async def test_requests_while_a_redraw_is_on_its_way_become_one_redraw() -> None:
    app = PacedApp(0.0)
    async with app.run_test() as pilot:
        counted = app.counted
        for value in range(1, 51):  # fifty changes before the loop runs again
            counted.value = value
            counted.pacer.request()
        assert counted.redraws == 1 and counted.pacer.pending
        await until(pilot, lambda: not counted.pacer.pending, message="the paced redraws")
        assert counted.redraws == 2  # the first, then one for the other 49
        assert str(counted.render()) == "50"


async def test_a_redraw_waits_for_the_minimum_interval() -> None:
    app = PacedApp(3600.0)
    async with app.run_test() as pilot:
        counted = app.counted
        counted.pacer.request()
        await until(pilot, lambda: counted.redraws == 1 and not counted.pacer.pending)
        counted.value = 7
        counted.pacer.request()
        await pilot.pause(0.1)
        assert counted.redraws == 1 and counted.pacer.pending  # an hour to go
        counted.pacer.cancel()
        assert not counted.pacer.pending


def draft(block: int, step: int, filled: int) -> p.BlockDraft:
    tokens: list[str | None] = [f"t{i} " if i < filled else None for i in range(8)]
    return p.BlockDraft(block=block, step=step, tokens=tokens)


class DenoiseApp(App[None]):
    def compose(self) -> ComposeResult:
        self.view = DenoiseView()
        yield self.view


async def test_denoise_view_draws_the_newest_draft_and_skips_the_rest() -> None:
    app = DenoiseApp()
    async with app.run_test(size=(100, 10)) as pilot:
        view = app.view
        for step in range(1, 9):
            view.show(draft(0, step, step))
        await until(pilot, lambda: not view.pending, message="the drafts to be drawn")
        assert view.drafts_seen == 8
        assert "step 8 · 8/8" in rendered(view)
        view.commit(0)
        await until(pilot, lambda: not view.pending, message="the commit to be drawn")
        assert rendered(view) == "" and view.display
