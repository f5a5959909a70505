"""The line above the prompt while a turn runs: what the agent is doing, for how long,
and how to stop it.

It stays from ``TurnStarted`` to ``TurnFinished`` whatever the stream does, so
a stream that stalls never looks like a finished answer; after
``STALL_SECONDS`` without an event it says how long nothing has arrived.
"""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.timer import Timer
from textual.widgets import Static

from clover_code import protocol as p
from clover_code.ui.clock import Clock, spinner_frame
from clover_code.ui.css import sibling_css
from clover_code.ui.text import clean

STALL_SECONDS = 30.0
"""Seconds without any event after which the line says the stream is quiet."""


def elapsed_text(seconds: float) -> str:
    """``7s``, ``2m 05s``, ``1h 02m``."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    return f"{whole // 3600}h {whole % 3600 // 60:02d}m"


def activity(event: p.Event, current: str) -> str:
    """What the agent is doing after ``event`` (``current`` when the event says nothing new)."""
    if isinstance(event, p.TurnStarted):
        return "waiting for the model"
    if isinstance(event, p.ReasoningDelta):
        return "reasoning"
    if isinstance(event, p.BlockDraft):
        return f"denoising block {event.block + 1}"
    if isinstance(event, p.ContentDelta):
        return "writing"
    if isinstance(event, p.ToolCallStarted):
        if event.name == "shell":
            command = clean(str(event.arguments.get("command", event.summary)))
            return f"running `{command.splitlines()[0] if command else ''}`"
        return f"{event.name} {clean(event.summary)}".strip()
    if isinstance(event, p.ApprovalRequested):
        return f"waiting for your approval ({event.name})"
    if isinstance(event, p.ToolCallFinished | p.UsageReport):
        return "waiting for the model"
    return current


class WorkingLine(Static):
    """Spinner, activity, elapsed time, stall warning and the way out (Esc)."""

    DEFAULT_CSS = sibling_css(__file__)

    doing: reactive[str] = reactive("")

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.started_at = 0.0
        self.last_event_at = 0.0
        self._timer: Timer | None = None
        self.shown = Text()
        """The line as last drawn."""

    def on_mount(self) -> None:
        self.display = False

    def start(self) -> None:
        """A turn began."""
        self.started_at = self.last_event_at = Clock.now()
        self.doing = "waiting for the model"
        self.display = True
        if self._timer is None:
            self._timer = self.set_interval(0.25, self._tick)
        self._tick()

    def saw(self, *events: p.Event) -> None:
        """Events of the running turn arrived (the line is redrawn once for them all)."""
        doing = self.doing
        for event in events:
            doing = activity(event, doing)
        self.last_event_at = Clock.now()
        self.doing = doing

    def stop(self) -> None:
        """The turn ended: the line goes away."""
        self.display = False
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    @property
    def stalled_for(self) -> float:
        """Seconds since the last event (0 while they keep coming)."""
        quiet = Clock.now() - self.last_event_at
        return quiet if quiet >= STALL_SECONDS else 0.0

    def watch_doing(self) -> None:
        self._tick()

    def _tick(self) -> None:
        if not self.display:
            return
        now = Clock.now()
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(f"{spinner_frame()} ", style="bold cyan")
        line.append(self.doing, style="bold")
        line.append(f" · {elapsed_text(now - self.started_at)}", style="dim")
        if self.stalled_for:
            line.append(f" · no output for {elapsed_text(self.stalled_for)}", style="bold yellow")
        line.append(" · ", style="dim")
        line.append("Esc", style="bold")
        line.append(" to interrupt", style="dim")
        self.shown = line
        self.update(line, layout=False)  # one line, always: no need to lay out the screen
