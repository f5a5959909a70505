"""Pacing for redraws that the model's stream drives (the answer, the denoising view).

A stream can ask for redraws far faster than a busy machine can draw them; each
one drawn in the same frame as a key's echo delays that echo by its cost. A
``Pacer`` lets one redraw be on its way to the screen at a time, folds every
request that comes meanwhile into the next one, and after a redraw reaches the
screen waits ``gap`` times as long as that redraw took before starting the
next (and at least ``min_interval`` between starts). On an idle machine a
redraw takes a frame or two, so text still reaches the screen with the next
frames; on a saturated one the stream gets 1 / (1 + gap) of the loop (two
thirds for the answer, half for the denoising view) and keys the rest, where
an unpaced stream would otherwise take all of it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.timer import Timer
from textual.widget import Widget


class Pacer:
    """Runs ``redraw`` for ``widget`` when asked, paced as the module says (``gap``: the
    pause after a redraw, as a share of the time it took to reach the screen)."""

    def __init__(
        self, widget: Widget, redraw: Callable[[], None], min_interval: float, gap: float = 1.0
    ) -> None:
        self._widget = widget
        self._gap = gap
        self._redraw = redraw
        self._min_interval = min_interval
        self._next = 0.0
        """The earliest start of the next redraw (monotonic seconds)."""
        self._timer: Timer | None = None
        self._in_flight = False
        self._asked = False
        """A request came while a redraw was on its way."""

    @property
    def pending(self) -> bool:
        """A requested redraw has not reached the screen yet."""
        return self._timer is not None or self._in_flight or self._asked

    def request(self) -> None:
        """Something changed: redraw now, or when the pace allows."""
        if self._in_flight:
            self._asked = True
        elif self._timer is None:
            self._start_when_due()

    def cancel(self) -> None:
        """Forget a waiting request (the widget was reset)."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self._asked = False

    def _start_when_due(self) -> None:
        wait = self._next - time.monotonic()
        if wait > 0:
            self._timer = self._widget.set_timer(wait, self._start)
        else:
            self._start()

    def _start(self) -> None:
        self._timer = None
        started = time.monotonic()
        self._in_flight = True
        self._redraw()
        if not self._widget.call_after_refresh(self._drawn, started):
            self._drawn(started)  # the widget is closing: nothing will be drawn

    def _drawn(self, started: float) -> None:
        now = time.monotonic()
        self._in_flight = False
        self._next = max(started + self._min_interval, now + self._gap * (now - started))
        if self._asked:
            self._asked = False
            self._start_when_due()
