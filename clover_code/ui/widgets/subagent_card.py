"""A ``task`` call's card: the child agent's live progress under the usual tool card.

While the child works, a progress line names its agent, how many tool calls
and blocks it has made and the tool it is running now; Enter (or a click)
expands the card to the list of its tool calls and the tail of its answer so
far. When the child ends, the card shows its answer like any tool result. A
child started in the background goes on after its task call returned: its
card stays live (``in_background``) until the child's own end arrives.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from clover_code import protocol as p
from clover_code.ui.css import sibling_css
from clover_code.ui.text import clean
from clover_code.ui.widgets.tool_card import ToolCard

LOG_LINES = 40
"""Most child tool calls listed when expanded (the newest)."""
TEXT_TAIL = 600
"""Characters of the child's answer shown when expanded."""


class SubagentCard(ToolCard):
    """A task call; ``child`` feeds it the child's events."""

    DEFAULT_CSS = sibling_css(__file__)

    def __init__(self, started: p.ToolCallStarted) -> None:
        super().__init__(started)
        self.agent = str(started.arguments.get("agent") or "explore")
        self.current: str | None = None
        self.calls = 0
        self.blocks = 0
        self.tokens = 0
        self.steps: list[str] = []
        self._step_of: dict[str, int] = {}
        self.text = ""
        self.task_id: str | None = None
        """Set while the child runs in the background (its task call returned)."""
        self._progress = Static("", classes="subagent-progress", markup=False)
        self._log = Static("", classes="subagent-log", markup=False)

    def compose(self) -> ComposeResult:
        yield self._title
        yield self._progress
        yield self._log
        yield self._body

    def on_mount(self) -> None:
        super().on_mount()
        self._render_progress()

    def child(self, event: p.Event) -> None:
        """One event of the child agent."""
        if isinstance(event, p.ToolCallStarted):
            line = f"{event.name} {clean(event.summary)}".strip().replace("\n", " ")[:200]
            self.current = line
            self.calls += 1
            self._step_of[event.call_id] = len(self.steps)
            self.steps.append(f"… {line}")
        elif isinstance(event, p.ToolCallFinished):
            index = self._step_of.pop(event.call_id, None)
            if index is not None:
                mark = "✓" if event.status == "ok" else "✗"
                self.steps[index] = mark + self.steps[index][1:]
            self.current = None
        elif isinstance(event, p.BlockCommitted):
            self.blocks += 1
            self.tokens += event.token_count
        elif isinstance(event, p.ContentDelta):
            self.text = (self.text + event.text)[-TEXT_TAIL:]
        else:
            return
        self._render_progress()

    def in_background(self, task_id: str) -> None:
        """The task call returned at once: the child goes on as ``task_id``."""
        self.task_id = task_id
        self._render_progress()

    def background_ended(self, done: p.ToolCallFinished) -> None:
        """The background child ended: show its answer as the call's result."""
        self.task_id = None
        self.finish(done)
        self._render_progress()

    def _render_progress(self) -> None:
        parts = [self.agent, f"{self.calls} tool calls", f"{self.blocks} blocks"]
        if self.task_id is not None:
            parts.insert(1, f"in the background as {self.task_id}")
        if (self.finished is None or self.task_id is not None) and self.current:
            parts.append(f"now: {self.current}")
        self._progress.update(Text(" · ".join(parts), style="dim", no_wrap=True))
        self._log.display = self.expanded
        if self.expanded:
            lines = self.steps[-LOG_LINES:]
            if self.text.strip() and (self.finished is None or self.task_id is not None):
                lines.append("answer so far: " + clean(self.text).strip())
            self._log.update(Text("\n".join(lines) or "(nothing yet)", style="dim"))

    def watch_expanded(self) -> None:
        self._render_progress()
        super().watch_expanded()
