"""One line at the bottom: engine and model, speed, context, money spent, background
jobs and agents, sandbox, approvals, git.

All of it arrives as reactive attributes set by the app; nothing here asks
the core or runs a program. A status-line command's line (``custom``, from
``ui/statusline.py``) takes the place of the engine, model, speed, context,
money and branch; the background jobs and agents, the approval mode and the
sandbox always stay, so no command can hide them. In vim mode the prompt's mode
is shown first.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from clover_code.protocol.cost import money
from clover_code.ui.css import sibling_css
from clover_code.ui.text import human_count


@dataclass(frozen=True, slots=True)
class Speed:
    """Rates of the current (or last) model response."""

    tokens_per_second: float | None = None
    blocks_per_second: float | None = None
    tokens_per_forward: float | None = None
    experts_per_layer: float | None = None
    """Distinct routed experts per MoE layer per block (a local MoE engine, or serve)."""


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
    jobs: reactive[int] = reactive(0)
    """Background jobs running (``/jobs`` lists them)."""
    cost: reactive[float | None] = reactive(None)
    """Money the session spent (shown once above zero; ``/cost`` says more)."""
    background: reactive[int] = reactive(0)
    """Child agents running in the background (they go on between turns)."""
    custom: reactive[Text | None] = reactive(None)
    """The status-line command's line (None: the built-in one)."""
    editor_mode: reactive[str] = reactive("")
    """The prompt's vim mode (NORMAL, INSERT), or "" outside vim mode."""

    def render(self) -> Text:
        wide = self.size.width >= 110
        width = max(20, self.size.width - 2)  # the padding
        sep = ("  │  ", "dim") if wide else (" │ ", "dim")
        mode = Text(f"{self.editor_mode} ", style="bold reverse") if self.editor_mode else None
        if mode is not None:
            width -= len(mode)
        if self.custom is not None:
            return self._with_custom(self.custom, width, sep, mode)
        # (priority, text): when the line is too long, the lowest priorities go first;
        # the approval mode and the sandbox always stay.
        parts: list[tuple[int, Text]] = []
        s = self.speed
        if s.tokens_per_second is not None:
            rate = Text(f"{s.tokens_per_second:,.0f} tok/s")
            if s.blocks_per_second is not None and wide:
                rate.append(f" {s.blocks_per_second:,.1f} blk/s", style="dim")
            if s.tokens_per_forward is not None and wide:
                rate.append(f" {s.tokens_per_forward:.1f} tok/fwd", style="dim")
            if s.experts_per_layer is not None and wide:
                rate.append(f" {s.experts_per_layer:.1f} exp/layer", style="dim")
            parts.append((1, rate))
        if self.context_used:
            share = 100 * self.context_used / max(1, self.context_window)
            style = "bold red" if share > 90 else "yellow" if share > 70 else ""
            ctx = Text(f"ctx {share:.0f}%", style=style)
            if wide:
                ctx.append(f" {human_count(self.context_used)} tok", style="dim")
            parts.append((3, ctx))
        if self.cost:
            parts.append((4, Text(money(self.cost))))
        parts += self._jobs(wide) + self._kept(wide)
        if self.branch:
            parts.append((2, Text(f"⎇ {self.branch}" + ("*" if self.dirty else ""))))
        engine = f"{self.engine}:" if self.engine else ""

        def room(kept: list[tuple[int, Text]]) -> int:
            return width - len(engine) - sum(len(t) + len(sep[0]) for _, t in kept)

        while room(parts) < MIN_MODEL and any(priority < 9 for priority, _ in parts):
            lowest = min(priority for priority, _ in parts)
            parts = [(q, t) for q, t in parts if q != lowest]
        out = Text(no_wrap=True, overflow="ellipsis")
        if mode is not None:
            out.append_text(mode)
        out.append(engine, style="dim")
        out.append(shorten_middle(self.model, max(MIN_MODEL, room(parts))), style="bold")
        for _, text in parts:
            out.append(*sep)
            out.append_text(text)
        return out

    def _jobs(self, wide: bool) -> list[tuple[int, Text]]:
        """Background jobs and agents: what still runs, shown beside any status line."""
        parts: list[tuple[int, Text]] = []
        if self.jobs:
            label = f"{self.jobs} job" + ("s" if self.jobs > 1 else "")
            parts.append((5, Text(label + (" running" if wide else ""), style="bold cyan")))
        if self.background:
            many = "s" if self.background > 1 else ""
            label = f"{self.background} background agent{many}" if wide else f"{self.background} bg"
            parts.append((8, Text(label, style="bold cyan")))
        return parts

    def _kept(self, wide: bool) -> list[tuple[int, Text]]:
        """The parts that always stay: the sandbox and the approval mode."""
        parts: list[tuple[int, Text]] = []
        if self.sandbox:
            host = self.sandbox in ("host", "none")
            label = ("sandbox " if wide else "") + self.sandbox + (" ⚠" if host else "")
            parts.append((9, Text(label, style="bold black on yellow" if host else "")))
        if self.approval:
            style = "bold red" if self.approval == "full-auto" else ""
            parts.append((9, Text(self.approval, style=style)))
        return parts

    def _with_custom(
        self, custom: Text, width: int, sep: tuple[str, str], mode: Text | None
    ) -> Text:
        wide = self.size.width >= 110
        kept = self._jobs(wide) + self._kept(wide)  # jobs still run beside any line
        room = width - sum(len(t) + len(sep[0]) for _, t in kept)
        line = custom.copy()
        line.truncate(max(MIN_MODEL, room), overflow="ellipsis")
        out = Text(no_wrap=True, overflow="ellipsis")
        if mode is not None:
            out.append_text(mode)
        out.append_text(line)
        for _, text in kept:
            out.append(*sep)
            out.append_text(text)
        return out


MIN_MODEL = 12
"""The fewest columns the model id is cut to before other parts are dropped."""


def shorten_middle(text: str, limit: int) -> str:
    """``text`` cut in the middle to at most ``limit`` characters (the ends say the most:
    the family and the size or quantisation)."""
    if len(text) <= limit:
        return text
    if limit < 5:
        return text[:limit]
    head = (limit - 1) // 2
    tail = limit - 1 - head
    return f"{text[:head]}…{text[-tail:]}"
