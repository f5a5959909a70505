"""The terminal that ``ui_stream.py``'s apps draw to, the keys it presses, and how its
frames are read.

``FrameDriver`` is a non-headless driver, so an app encodes every frame as it
would for a real terminal; it keeps each write with its time and the region of
the focused widget. ``analyse`` replays the writes into a character grid, a
frame at a time: a block is on screen when its marker word (``zq0042``) is on
the grid, or a later block's is; a key is echoed when the focused widget
shows the text typed up to it, or later text. ``press_keys`` types like a
terminal's input thread: a round of characters, then Ctrl+U; each round
starts with its own two characters, so no two states of the field within
thousands of keys look alike, and a state shows which key it follows.
"""

from __future__ import annotations

import bisect
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from rich.cells import get_character_cell_size
from textual import events
from textual.app import App
from textual.drivers.headless_driver import HeadlessDriver
from textual.geometry import Region

KEY_EVERY = 0.05
"""Seconds between two key presses."""
ROUND_KEYS = 8
"""Characters typed before Ctrl+U clears the field."""
MARKER = re.compile(r"zq(\d{4})")
"""The word each block of the stream carries (``zq`` and its number)."""
KEYS = "QZXJKVWYHGFMNBPTRLSDCE0123456789"
"""The characters keys type (less any the empty field shows)."""


@dataclass
class Run:
    """What one app measured in one phase."""

    arrivals: list[float] = field(default_factory=list)
    presses: list[tuple[float, str | None]] = field(default_factory=list)
    """(time, the field's text after it) per key; None for Ctrl+U."""
    frames: list[tuple[float, str, Region | None]] = field(default_factory=list)
    cpu: float = 0.0
    wall: float = 0.0
    finished: bool = False
    """The app had the whole answer before the time limit."""
    equal: bool | None = None
    shown: list[float] = field(default_factory=list)
    echoes: list[float] = field(default_factory=list)


class FrameDriver(HeadlessDriver):
    """A terminal for the benchmark: the app renders every frame as for a real one, and
    each write is kept with its time and where the focused widget was."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.frames: list[tuple[float, str, Region | None]] = []

    @property
    def is_headless(self) -> bool:
        return False

    def write(self, data: str) -> None:
        try:
            focused = self._app.focused
            region = focused.region if focused is not None else None
        except Exception:  # no screen, or the widget is not on its map this frame
            region = None
        self.frames.append((time.perf_counter(), data, region))


_CONTROL = re.compile(r"(\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\n|\r)")


class Grid:
    """The character grid of a terminal fed the app's writes (text only, no styles)."""

    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.rows = [[" "] * width for _ in range(height)]
        self.x = self.y = 0

    def feed(self, data: str) -> None:
        for part in _CONTROL.split(data):
            if not part:
                continue
            if part == "\n":
                self.x, self.y = 0, min(self.height - 1, self.y + 1)
            elif part == "\r":
                self.x = 0
            elif part.startswith("\x1b["):
                self._control(part[2:-1], part[-1])
            elif not part.startswith("\x1b"):
                self._text(part)

    def _control(self, params: str, final: str) -> None:
        if final == "H":
            row, _, col = params.partition(";")
            self.y = max(0, min(self.height - 1, int(row or 1) - 1))
            self.x = max(0, int(col or 1) - 1)

    def _text(self, text: str) -> None:
        row = self.rows[self.y]
        if text.isascii():
            end = min(self.width, self.x + len(text))
            row[self.x : end] = text[: end - self.x]
            self.x += len(text)
            return
        for char in text:
            cells = get_character_cell_size(char)
            if self.x + cells <= self.width:
                row[self.x] = char
                for extra in range(1, cells):
                    row[self.x + extra] = ""
            self.x += cells

    def text(self) -> str:
        return "\n".join("".join(row) for row in self.rows)

    def region_text(self, region: Region) -> str:
        rows = self.rows[region.y : region.y + region.height]
        return "".join("".join(row[region.x : region.x + region.width]) for row in rows)


def analyse(run: Run, alphabet: str, size: tuple[int, int]) -> None:
    """Replay the run's frames; fill in when each block was shown and each key echoed."""
    grid = Grid(*size)
    states: dict[str, list[int]] = {}
    for index, (_, state) in enumerate(run.presses):
        if state is not None:
            states.setdefault(state, []).append(index)
    echoed = 0  # presses before this index have been seen
    shown: list[float] = []
    for at, data, region in run.frames:
        grid.feed(data)
        markers = [int(m) for m in MARKER.findall(grid.text())]
        top = min(max(markers, default=-1), len(run.arrivals) - 1)
        while len(shown) <= top:
            shown.append(at)
        if region is None:
            continue
        value = "".join(c for c in grid.region_text(region) if c in alphabet)
        candidates = states.get(value, [])
        where = bisect.bisect_left(candidates, echoed)
        if where < len(candidates) and run.presses[candidates[where]][0] <= at:
            last = candidates[where]
            for pressed, state in run.presses[echoed : last + 1]:
                if state is not None:
                    run.echoes.append(at - pressed)
            echoed = last + 1
    run.shown = [s - a for s, a in zip(shown, run.arrivals, strict=False)]


def press_keys(driver: FrameDriver, run: Run, alphabet: str, stop: threading.Event) -> None:
    """Press a key every ``KEY_EVERY`` s, as a terminal's input thread would."""
    letters, n = alphabet[: ROUND_KEYS - 2], len(alphabet)
    due = time.perf_counter()
    index = 0
    while not stop.is_set():
        round_no, at = divmod(index, ROUND_KEYS + 1)
        typed = alphabet[round_no % n] + alphabet[round_no // n % n] + letters
        if at == ROUND_KEYS:
            key: events.Key = events.Key("ctrl+u", "\x15")
            state = None
        else:
            key = events.Key(typed[at], typed[at])
            state = typed[: at + 1]
        run.presses.append((time.perf_counter(), state))
        driver.process_message(key)
        index += 1
        due += KEY_EVERY
        time.sleep(max(0.0, due - time.perf_counter()))


def field_look(app: App[Any], size: tuple[int, int]) -> str:
    """What the focused widget shows now (its placeholder: keys never type those characters)."""
    focused = app.focused
    if focused is None:
        return ""
    grid = Grid(*size)
    update = app.screen._compositor.render_update(full=True)
    assert update is not None
    grid.feed(update.render_segments(app.console))
    return grid.region_text(focused.region)
