"""What a headless run's result needs, gathered from the protocol events as they pass."""

from __future__ import annotations

from typing import Any

from clover_code import protocol as p
from clover_code.outcome.result import (
    REASON_FOR_EXIT,
    EditReport,
    ExitReason,
    ResultStatus,
    ResultUsage,
    SubagentUsage,
    TaskResult,
)
from clover_code.protocol.cost import CostTally


class RunRecord:
    """Listens to every event of a run and builds the ``TaskResult`` at its end."""

    def __init__(self) -> None:
        self.session_id: str | None = None
        self.transcript: str | None = None
        self.tool_calls = 0
        self.requests = 0
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self._answer: list[str] = []
        self._answer_done = False
        self._prompt_tokens = 0
        self._completion_tokens = 0
        self._context_window = 0
        self._timed_tokens = 0.0
        self._stream_seconds = 0.0
        self._forward_tokens = 0.0
        self._forwards = 0.0
        self.subagents: list[SubagentUsage] = []
        self.edits: list[EditReport] = []
        self._blocks = 0
        self._steps = 0
        self._cached_tokens = 0
        self.cost = CostTally()
        """The money the run's requests (its children's and summaries included) cost."""
        self._turn_status: p.TurnStatus | None = None

    def __call__(self, event: p.Event) -> None:
        self.cost.see(event)
        if isinstance(event, p.SessionStarted):
            self.session_id, self.transcript = event.session_id, event.transcript
        elif isinstance(event, p.ContentDelta):
            if self._answer_done:
                # A new response with text: the answer is the latest text.
                self._answer, self._answer_done = [], False
            self._answer.append(event.text)
        elif isinstance(event, p.ErrorEvent):
            self.errors.append(event.message)
        elif isinstance(event, p.Notice) and event.level == "warning":
            self.warnings.append(event.text)
        elif isinstance(event, p.ToolCallFinished):
            self.tool_calls += 1
            if isinstance(event.display, p.FileEdit) and event.status == "ok":
                self.edits.append(_edit_report(event.display.path, event.low_confidence))
            if isinstance(event.display, p.PatchApplied) and event.status == "ok":
                self.edits += _patch_reports(event.display, event.low_confidence)
            if isinstance(event.display, p.SubagentRun):
                self._child(event.display)
        elif isinstance(event, p.BackgroundTaskFinished):
            self._child(event.display)
        elif isinstance(event, p.UsageReport):
            self._usage(event)
        elif isinstance(event, p.BlockCommitted):
            self._blocks += 1
            self._steps += event.steps or 0
        elif isinstance(event, p.TurnFinished):
            self.requests += event.model_requests
            self._turn_status = event.status

    def _child(self, run: p.SubagentRun) -> None:
        """What one child agent cost (a task call's, or a background child's at its end)."""
        self.subagents.append(
            SubagentUsage.model_validate(run.model_dump(include=set(SubagentUsage.model_fields)))
        )

    def _usage(self, event: p.UsageReport) -> None:
        self._answer_done = True
        self._prompt_tokens = event.prompt_tokens
        self._completion_tokens += event.completion_tokens
        self._cached_tokens += event.cached_tokens
        self._context_window = event.context_window
        if event.tokens_per_second:
            self._timed_tokens += event.completion_tokens
            self._stream_seconds += event.completion_tokens / event.tokens_per_second
        if event.tokens_per_forward:
            self._forward_tokens += event.completion_tokens
            self._forwards += event.completion_tokens / event.tokens_per_forward

    @property
    def answer(self) -> str:
        """The text of the latest response that had any (the partial text when cut short)."""
        return "".join(self._answer)

    def last_error(self) -> str | None:
        """The error that ended the run, if one was reported."""
        return self.errors[-1] if self.errors else None

    def result(
        self,
        *,
        status: ResultStatus,
        exit_code: int,
        error: str | None,
        version: str,
        duration_s: float,
        final_text: str | None = None,
        reason: ExitReason | None = None,
        patch: str = "",
        files_changed: list[str] | None = None,
        structured_output: Any = None,
    ) -> TaskResult:
        """The run's result; errors other than the one that ended it become warnings."""
        others = [e for e in self.errors if e != error]
        usage = ResultUsage(
            prompt_tokens=self._prompt_tokens,
            completion_tokens=self._completion_tokens,
            context_window=self._context_window,
            tokens_per_second=(
                round(self._timed_tokens / self._stream_seconds, 2)
                if self._stream_seconds
                else None
            ),
            tokens_per_forward=(
                round(self._forward_tokens / self._forwards, 2) if self._forwards else None
            ),
            blocks=self._blocks,
            forwards=self._steps or None,
            cached_tokens=self._cached_tokens,
            cost=None if self.cost.total is None else round(self.cost.total, 8),
        )
        return TaskResult(
            status=status,
            exit_code=exit_code,
            result=self.answer if final_text is None else final_text,
            error=error,
            exit_reason=reason or self._reason(exit_code),
            warnings=[*self.warnings, *others],
            session_id=self.session_id,
            transcript=self.transcript,
            version=version,
            duration_s=duration_s,
            turns=self.requests,
            tool_calls=self.tool_calls,
            usage=usage,
            patch=patch,
            files_changed=files_changed or [],
            structured_output=structured_output,
            subagents=list(self.subagents),
            edits=list(self.edits),
        )

    def _reason(self, exit_code: int) -> ExitReason:
        if exit_code == 4 and self._turn_status in ("max_turns", "max_cost"):
            return self._turn_status
        return REASON_FOR_EXIT.get(exit_code, "agent_error")


def _edit_report(path: str, low: p.EditConfidence | None) -> EditReport:
    return EditReport(
        path=path,
        low_confidence_tokens=low.tokens if low else 0,
        low_confidence_lines=list(low.lines) if low else [],
        confidence_known=low is not None,
    )


def _patch_reports(patch: p.PatchApplied, low: p.EditConfidence | None) -> list[EditReport]:
    """One report per file a patch touched, each with its own share of the low-confidence
    tokens (a file whose added lines were not rated, or that lost lines only, has none)."""
    if low is None or not low.files:
        return [_edit_report(path, low if len(patch.paths) == 1 else None) for path in patch.paths]
    out: list[EditReport] = []
    for path in patch.paths:
        share = low.files.get(path)
        out.append(
            EditReport(
                path=path,
                low_confidence_tokens=share.tokens if share else 0,
                low_confidence_lines=list(share.lines) if share else [],
                confidence_known=True,
            )
        )
    return out
