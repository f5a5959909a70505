"""One line at the bottom: engine and model, speed, context, sandbox, approvals, git.

All of it arrives as reactive attributes set by the app; nothing here asks
the core or runs a program.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from clover_code.ui.css import sibling_css
from clover_code.ui.text import human_count


@dataclass(frozen=True, slots=True)
class Speed:
    """Rates of the current (or last) model response."""

    tokens_per_second: float | None = None
    blocks_per_second: float | None = None
    tokens_per_forward: float | None = None


class StatusBar(Static):
    """The status line."""

    DEFAULT_CSS = sibling_css(__file__)

    engine: reactive[str] = reactive("")
    model: reactive[str] = reactive("connecting…")
    speed: reactive[Speed] = reactive(Speed)
    context_used: reactive[int] = reactive(0)
    context_window: reactive[int] = reactive(131_072)
    sandbox: reactive[str] = reactive("")
    approval: reactive[str] = reactive("")
    branch: reactive[str] = reactive("")
    dirty: reactive[bool] = reactive(False)
    busy: reactive[bool] = reactive(False)

    def render(self) -> Text:
        wide = self.size.width >= 110
        sep = ("  │  ", "dim") if wide else (" │ ", "dim")
        out = Text(no_wrap=True, overflow="ellipsis")
        out.append(f"{self.engine}:" if self.engine else "", style="dim")
        out.append(self.model, style="bold")
        s = self.speed
        if s.tokens_per_second is not None:
            out.append(*sep)
            out.append(f"{s.tokens_per_second:,.0f} tok/s")
            if s.blocks_per_second is not None and wide:
                out.append(f" {s.blocks_per_second:,.1f} blk/s", style="dim")
            if s.tokens_per_forward is not None and wide:
                out.append(f" {s.tokens_per_forward:.1f} tok/fwd", style="dim")
        if self.context_used:
            share = 100 * self.context_used / max(1, self.context_window)
            out.append(*sep)
            style = "bold red" if share > 90 else "yellow" if share > 70 else ""
            out.append(f"ctx {share:.0f}%", style=style)
            if wide:
                out.append(f" {human_count(self.context_used)}", style="dim")
        if self.sandbox:
            out.append(*sep)
            host = self.sandbox in ("host", "none")
            label = ("sandbox " if wide else "") + self.sandbox + (" ⚠" if host else "")
            out.append(label, style="bold black on yellow" if host else "")
        if self.approval:
            out.append(*sep)
            out.append(self.approval, style="bold red" if self.approval == "full-auto" else "")
        if self.branch:
            out.append(*sep)
            out.append(f"⎇ {self.branch}" + ("*" if self.dirty else ""))
        return out
