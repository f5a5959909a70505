"""Live speed of the current response and token totals for the session."""

from __future__ import annotations

from clover_code import protocol as p
from clover_code.protocol.cost import CostTally, money
from clover_code.ui.clock import Clock
from clover_code.ui.widgets.status_bar import Speed

INSTANT_SECONDS = 0.25
"""A response generated faster than this has no rate worth showing."""
INSTANT_TOKENS = 16
"""Nor does one this short (a cached or one-word reply)."""


def _instant(report: p.UsageReport) -> bool:
    rate = report.tokens_per_second or 0.0
    tokens = report.completion_tokens
    return tokens < INSTANT_TOKENS or rate <= 0 or tokens / rate < INSTANT_SECONDS


class TurnStats:
    """Counts committed blocks as they arrive; usage reports replace the estimate."""

    def __init__(self) -> None:
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.responses = 0
        self.subagents: list[p.SubagentRun] = []
        """What each child agent (task call) of the session cost, as it ended."""
        self._experts: float | None = None
        self.cost = CostTally()
        """The money the session spent (its children and summaries included)."""
        self.reset()

    def new_session(self) -> None:
        """Another session opened here (a fork, a resume): its counts start at zero."""
        self.prompt_tokens = self.completion_tokens = self.responses = 0
        self.subagents = []
        self._experts = None
        self.cost = CostTally()
        self.reset()

    def reset(self) -> None:
        """A new turn begins."""
        self._first: float | None = None
        self._last = 0.0
        self._tokens = 0
        self._blocks = 0
        self._steps = 0
        self._step_tokens = 0
        self._reported: p.UsageReport | None = None

    def committed(self, event: p.BlockCommitted) -> None:
        """Count a committed block."""
        now = Clock.now()
        if self._first is None:
            self._first = now
        self._last = now
        self._tokens += event.token_count
        self._blocks += 1
        self._reported = None
        if event.steps:
            self._steps += event.steps
            self._step_tokens += event.token_count

    def finished_call(self, done: p.ToolCallFinished) -> None:
        """A tool call ended: a task call's child agent is counted."""
        if isinstance(done.display, p.SubagentRun):
            self.subagents.append(done.display)

    def background_finished(self, done: p.BackgroundTaskFinished) -> None:
        """A child agent started in the background ended: it is counted."""
        self.subagents.append(done.display)

    def subagents_report(self) -> str:
        """One line per child agent: agent, tokens, cost, time, how it ended."""
        return "\n".join(
            f"  {c.agent} ({c.call_id}): {c.tokens:,} tokens, "
            f"{'cost unknown' if c.cost is None else money(c.cost)}, "
            f"{c.duration_s:.1f}s, {c.status}"
            for c in self.subagents
        )

    def usage(self, report: p.UsageReport) -> None:
        """A response ended with its usage."""
        self._reported = report
        if report.experts_per_layer is not None:
            self._experts = report.experts_per_layer
        self.prompt_tokens = report.prompt_tokens
        self.completion_tokens += report.completion_tokens
        self.responses += 1

    @property
    def experts_per_layer(self) -> float | None:
        """Distinct experts per MoE layer per block of the latest response, when reported."""
        return self._experts

    def speed(self) -> Speed:
        """Tokens/s, blocks/s and tokens per forward pass, as well as known."""
        per_forward = self._step_tokens / self._steps if self._steps else None
        report = self._reported
        if report is not None and report.tokens_per_forward is not None:
            per_forward = report.tokens_per_forward
        if report is not None and report.tokens_per_second is not None:
            if _instant(report):
                return Speed(None, None, None)
            return Speed(
                report.tokens_per_second,
                report.blocks_per_second,
                per_forward,
                report.experts_per_layer,
            )
        if report is not None and report.completion_tokens < INSTANT_TOKENS:
            return Speed(None, None, None)
        if self._first is None or self._blocks < 2:
            return Speed(None, None, per_forward)
        elapsed = max(Clock.now(), self._last) - self._first
        if elapsed < 0.25:  # too short to be a rate worth showing
            return Speed(None, None, per_forward)
        return Speed(self._tokens / elapsed, self._blocks / elapsed, per_forward)
