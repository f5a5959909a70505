"""One tool call: name and key arguments, a spinner while it runs, then its result.

Edits show their diff (and the problems a language server found after them),
shell commands their exit code, duration and output;
long output is cut to a few lines and a click (or Enter when focused)
shows more.
"""

from __future__ import annotations

from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.reactive import reactive
from textual.timer import Timer
from textual.widgets import Static

from clover_code import protocol as p
from clover_code.ui.clock import spinner_frame
from clover_code.ui.css import MUTED, sibling_css
from clover_code.ui.text import clean, cut_lines, looks_binary
from clover_code.ui.widgets.diagnostic_lines import DiagnosticLines
from clover_code.ui.widgets.diff_view import DiffView

SHORT_LINES = 6
LONG_LINES = 400
LIVE_LINES = 6
LIVE_CHARS = 20_000

# Theme variables, so the card reads well in every theme.
_ICONS = {
    "ok": ("✓", "$text-success"),
    "error": ("✗", "$text-error"),
    "denied": ("⊘", "$text-warning"),
}
_ICONS["cancelled"] = ("■", "$text-warning")


def failed(done: p.ToolCallFinished) -> bool:
    """Whether the call failed: an error, or a command that exited non-zero or was killed."""
    if done.status == "error":
        return True
    run = done.display
    return done.status == "ok" and (
        isinstance(run, p.CommandRun) and (run.exit_code != 0 or run.timed_out)
    )


def diff_of(display: p.ToolDisplay | None) -> str:
    """The diff an edit or a patch made ("" for other results)."""
    return display.diff if isinstance(display, p.FileEdit | p.PatchApplied) else ""


def headline(name: str, summary: str, arguments: dict[str, Any]) -> str:
    """What the card's first line says after the tool name."""
    if name == "shell":
        return str(arguments.get("command", summary))
    return summary


class ToolCard(Vertical, can_focus=True):
    """A tool call; update it with ``output`` and ``finish``."""

    DEFAULT_CSS = sibling_css(__file__)
    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "expand", "Expand", show=False)]
    """enter: show more (or less) of the output."""

    status: reactive[str] = reactive("running")
    expanded: reactive[bool] = reactive(False)

    def __init__(self, started: p.ToolCallStarted) -> None:
        super().__init__(classes=f"kind-{started.kind}")
        self.call_id = started.call_id
        self.tool_name = started.name
        self.started = started
        self.live = ""
        self.finished: p.ToolCallFinished | None = None
        self._title = Static("", classes="tool-title", markup=False)
        self._body = Static("", classes="tool-body", markup=False)
        self._diff: DiffView | None = None
        self.shaded = False
        """The confidence view is on (the diff's added lines are shaded token by token)."""
        self._spin: Timer | None = None

    def compose(self) -> ComposeResult:
        yield self._title
        yield self._body

    def on_mount(self) -> None:
        self._render_title()
        if self.finished is None:
            self._spin = self.set_interval(0.1, self._render_title)
        else:
            self._show_finished()

    def _render_title(self) -> None:
        if self.finished is None:
            icon = (f"{spinner_frame()} ", "bold $text-accent")
        else:
            shown = "error" if failed(self.finished) else self.finished.status
            mark, colour = _ICONS.get(shown, ("?", "$text"))
            icon = (f"{mark} ", f"bold {colour}")
        text = clean(headline(self.tool_name, self.started.summary, self.started.arguments))
        footer = self._footer(self.finished) if self.finished is not None else ""
        line = Content.assemble(
            icon,
            (self.tool_name, "bold"),
            " " + text.replace("\n", " ⏎ ")[:300],
            (footer, MUTED),
        )
        self._title.update(line)

    @staticmethod
    def _footer(done: p.ToolCallFinished) -> str:
        parts: list[str] = []
        run = done.display
        if isinstance(run, p.CommandRun):
            parts.append("killed" if run.exit_code is None else f"exit {run.exit_code}")
            if run.timed_out:
                parts.append("timed out")
        elif isinstance(run, p.JobReport):
            state = f"exit {run.exit_code}" if run.state == "exited" else run.state
            parts.append(f"job {run.job_id} {state}")
        if done.duration >= 0.05:
            parts.append(f"{done.duration:.1f}s")
        if done.status in ("denied", "cancelled"):
            parts.append(done.status)
        return f"  ({', '.join(parts)})" if parts else ""

    def output(self, text: str) -> None:
        """Live output of the running command: the last few lines are shown."""
        self.live = (self.live + text)[-LIVE_CHARS:]
        lines = clean(self.live).splitlines()[-LIVE_LINES:]
        self._body.update(Content.styled("\n".join(lines), MUTED))

    def shade(self, on: bool) -> None:
        """Shade (or not) the diff's added tokens by the confidence they were filled with."""
        self.shaded = on
        if self._diff is not None:
            self._diff.mark(on)

    def finish(self, done: p.ToolCallFinished) -> None:
        """The call ended: show its status and result."""
        self.finished = done
        self.status = done.status
        if self.is_mounted:
            self._show_finished()

    def _show_finished(self) -> None:
        assert self.finished is not None
        done = self.finished
        if self._spin is not None:
            self._spin.stop()
        self._render_title()
        diff = diff_of(done.display)
        if diff and done.status == "ok":
            self._body.display = False
            self._diff = DiffView(
                diff, short_lines=40, confidence=done.low_confidence, marked=self.shaded
            )
            self.mount(self._diff)
            if isinstance(done.display, p.FileEdit | p.PatchApplied) and done.display.diagnostics:
                self.mount(DiagnosticLines(done.display.diagnostics))
        else:
            self._show_result()

    def _show_result(self) -> None:
        assert self.finished is not None
        result = self.finished.result
        if self.finished.status == "ok" and self.started.kind in ("read", "search"):
            # the model reads these; the user only needs the one-line summary
            first = clean(result).strip().splitlines()
            self._body.update(Content.styled(first[0][:200] if first else "", MUTED))
            return
        if looks_binary(result):
            binary = f"[binary output, {len(result):,} characters, not shown]"
            self._body.update(Content.styled(binary, "$text-warning"))
            return
        limit = LONG_LINES if self.expanded else SHORT_LINES
        lines, left_out = cut_lines(clean(result).rstrip("\n"), limit)
        body = Content.styled("\n".join(lines), "$text-error" if failed(self.finished) else "")
        if left_out:
            hint = "click or Enter to show more" if not self.expanded else "cut"
            body = body.append_text(f"\n… {left_out:,} more lines ({hint})", f"italic {MUTED}")
        self._body.update(body)

    def action_expand(self) -> None:
        """Show more or less of the result."""
        self.expanded = not self.expanded

    def on_click(self) -> None:
        self.action_expand()

    def watch_expanded(self) -> None:
        if self.finished is None:
            return
        if self._diff is not None:
            self._diff.toggle()
        else:
            self._show_result()
