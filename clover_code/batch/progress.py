"""The batch's progress: a live bar on a terminal, a line per finished task elsewhere.

On a terminal the bar is redrawn in place every second (so the elapsed time
and ETA move while a long task runs) and each finished task is printed above
it; in a log (CI) each finished task is one line with the same counts. The
rate counts this run's finished tasks only, so a resumed batch's ETA is not
flattered by what an earlier run did.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import AsyncIterator
from typing import TextIO

from clover_code.batch.runner import BatchRecord

BAR_WIDTH = 24
REDRAW_S = 1.0

_TROUBLE = ("failed", "limit", "output_limit", "timeout", "crashed")


def clock(seconds: float) -> str:
    """``42s``, ``3m 07s`` or ``2h 05m``."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m {seconds % 60:02d}s"
    return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"


def status_line(
    done: int, total: int, running: int, trouble: int, elapsed: float, *, bar: bool
) -> str:
    """Counts, rate and ETA (and a bar): ``[####----] 3/8 · 2 running · 1 failed ·
    4.0 tasks/min · 1m 15s elapsed · ETA 1m 15s``."""
    parts = [f"{done}/{total}"]
    if bar:
        filled = BAR_WIDTH * done // total if total else BAR_WIDTH
        parts[0] = f"[{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {parts[0]}"
    if running:
        parts.append(f"{running} running")
    if trouble:
        parts.append(f"{trouble} not completed")
    if done and elapsed > 0:
        rate = done / elapsed
        parts.append(f"{rate * 60:.1f} tasks/min")
    parts.append(f"{clock(elapsed)} elapsed")
    if done and elapsed > 0 and done < total:
        parts.append(f"ETA {clock((total - done) / (done / elapsed))}")
    return " · ".join(parts)


class Progress:
    """Reports each finished task and keeps the counts; ``live()`` draws the bar."""

    def __init__(self, total: int, jobs: int, err: TextIO, tty: bool | None = None) -> None:
        self.total, self.jobs, self.err = total, jobs, err
        self.tty = err.isatty() if tty is None else tty
        self.started = time.monotonic()
        self.records: list[BatchRecord] = []
        self.outcomes: Counter[str] = Counter()
        self._drawn = False

    @property
    def done(self) -> int:
        """Tasks finished in this run."""
        return len(self.records)

    def line(self, *, bar: bool) -> str:
        """The status line as of now."""
        running = min(self.jobs, self.total - self.done)
        trouble = sum(self.outcomes[o] for o in _TROUBLE)
        elapsed = time.monotonic() - self.started
        return status_line(self.done, self.total, running, trouble, elapsed, bar=bar)

    def __call__(self, record: BatchRecord) -> None:
        self.records.append(record)
        self.outcomes[record.outcome] += 1
        tests = (
            ""
            if record.tests_passed is None
            else (", tests passed" if record.tests_passed else ", tests failed")
        )
        what = f"{record.id}: {record.outcome}{tests} ({clock(record.duration_s)})"
        if self.tty:
            self._clear()
            self.err.write(what + "\n")
            self.draw()
        else:
            self.err.write(f"[{self.done}/{self.total}] {what} | {self.line(bar=False)}\n")
        self.err.flush()

    def draw(self) -> None:
        """Redraw the bar in place (a terminal only)."""
        if not self.tty:
            return
        self.err.write("\r\x1b[2K" + self.line(bar=True))
        self.err.flush()
        self._drawn = True

    def _clear(self) -> None:
        if self._drawn:
            self.err.write("\r\x1b[2K")
            self._drawn = False

    def finish(self) -> None:
        """Leave the terminal on a fresh line under the last bar."""
        if self.tty and self._drawn:
            self.err.write("\n")
            self.err.flush()
            self._drawn = False

    @contextlib.asynccontextmanager
    async def live(self) -> AsyncIterator[None]:
        """Keep the bar moving while the batch runs."""

        async def tick() -> None:
            while True:
                self.draw()
                await asyncio.sleep(REDRAW_S)

        ticker = asyncio.ensure_future(tick()) if self.tty else None
        try:
            yield
        finally:
            if ticker is not None:
                ticker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await ticker
            self.finish()
