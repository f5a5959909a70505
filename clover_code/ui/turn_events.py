"""Protocol events handed to the app's widgets: the transcript, the working line, the status bar.

``TurnEvents`` shows what the session reports, on the widgets the app gives
it: drafts and tool output coalesced per batch, turns starting and
finishing, approval questions, usage. Events that become a plain line in the
transcript are in ``reports.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clover_code import protocol as p
from clover_code.ui.clock import Clock
from clover_code.ui.host import TurnHost
from clover_code.ui.plan_question import ask_about_plan
from clover_code.ui.reports import Reports
from clover_code.ui.widgets.prompt_input import PromptInput
from clover_code.ui.widgets.queued import QueuedPrompts
from clover_code.ui.widgets.status_bar import StatusBar
from clover_code.ui.widgets.transcript import Transcript

if TYPE_CHECKING:
    from clover_code.ui.widgets.approval import ApprovalScreen
from clover_code.ui.widgets.working_line import WorkingLine

SPEED_EVERY = 0.25
"""Seconds between updates of the live speed in the status bar."""


class TurnEvents:
    """Shows the session's events in the widgets it is given; acts on the app as a ``TurnHost``."""

    def __init__(
        self,
        app: TurnHost,
        *,
        transcript: Transcript,
        working: WorkingLine,
        status_bar: StatusBar,
        queued: QueuedPrompts,
        prompt: PromptInput,
    ) -> None:
        self.app = app
        self.transcript = transcript
        self.working = working
        self.status_bar = status_bar
        self.queued = queued
        self.prompt = prompt
        """Where queued prompts go back after an interrupt."""
        self.reports = Reports(app, transcript=transcript, status_bar=status_bar, prompt=prompt)
        self._approvals: dict[ApprovalScreen, str] = {}
        """Open approval questions and the calls they are about."""
        self._speed_shown = -1e9

    def apply_events(self, events: list[p.Event]) -> None:
        """Hand a batch of events to the widgets (drafts and output coalesced)."""
        app = self.app
        draft: p.BlockDraft | None = None
        outputs: dict[str, list[str]] = {}
        seen: list[p.Event] = []  # the running turn's, for the working line: one redraw
        for event in events:
            if isinstance(event, p.BlockDraft):
                draft = event
            elif isinstance(event, p.ToolOutput):
                outputs.setdefault(event.call_id, []).append(event.text)
            else:
                if outputs:
                    self._flush_outputs(outputs)
                if isinstance(event, p.BlockCommitted):
                    if draft is not None and draft.block <= event.block:
                        draft = None
                    self.transcript.denoise.commit(event.block)
                    app.stats.committed(event)
                else:
                    self.apply_event(event)
            if app.turn_running:
                seen.append(event)
            elif seen:  # the turn ended in this batch
                seen.clear()
        self._flush_outputs(outputs)
        if draft is not None:
            self.transcript.denoise.show(draft)
        if seen:
            self.working.saw(*seen)
        now = Clock.now()
        if app.turn_running and now - self._speed_shown >= SPEED_EVERY:
            self._speed_shown = now
            self.status_bar.speed = app.stats.speed()

    def _flush_outputs(self, outputs: dict[str, list[str]]) -> None:
        for call_id, parts in outputs.items():
            self.transcript.tool_output(p.ToolOutput(call_id=call_id, text="".join(parts)))
        outputs.clear()

    def apply_event(self, event: p.Event) -> None:
        """Hand one event to the widgets that show it."""
        app = self.app
        t = self.transcript
        bar = self.status_bar
        app.stats.cost.see(event)
        bar.cost = app.stats.cost.total
        if isinstance(event, p.ContentDelta):
            t.add_answer(event.text)
        elif isinstance(event, p.ReasoningDelta):
            t.add_reasoning(event.text)
        elif isinstance(event, p.AnswerConfidence | p.AnswerConfidenceDelta):
            app.confidence_seen = t.answer_confidence(event) or app.confidence_seen
        elif isinstance(event, p.ToolCallStarted):
            t.add_tool(event)
        elif isinstance(event, p.SubagentEvent):
            t.subagent_event(event)
        elif isinstance(event, p.ToolCallFinished):
            t.tool_finished(event)
            bar.background = len(t.background)
            app.stats.finished_call(event)
            edit = event.display if isinstance(event.display, p.FileEdit) else None
            files = app.turn_files[-1] if app.turn_files else None
            if edit and event.status == "ok" and files is not None and edit.path not in files:
                files.append(edit.path)
        elif isinstance(event, p.BackgroundTaskFinished):
            t.background_finished(event)
            bar.background = len(t.background)
            app.stats.background_finished(event)
        elif isinstance(event, p.ApprovalRequested):
            from clover_code.ui.widgets.approval import ApprovalScreen

            screen = ApprovalScreen(event)
            self._approvals[screen] = event.call_id
            app.push_screen(screen, self._decided)
        elif isinstance(event, p.TurnStarted):
            app.turn_running = True
            bar.busy = True
            self.working.start()
            app.stats.reset()
            app.turn_files.append([])
            sent = [op for op in app.bridge.sent if isinstance(op, p.UserInput)]
            app.turn_prompts.append(sent[-1].text if sent else event.text)
        elif isinstance(event, p.TurnFinished):
            self._turn_finished(event)
            app.note_no_confidence()
        elif isinstance(event, p.UsageReport):  # a model response is over
            t.response_ended()
            app.stats.usage(event)
            bar.speed = app.stats.speed()
            bar.context_used = event.prompt_tokens + event.completion_tokens
            bar.context_window = event.context_window
        elif isinstance(event, p.SessionStarted):
            self.reports.session_started(event)
        else:
            self.reports.apply(event)

    def _turn_finished(self, event: p.TurnFinished) -> None:
        app = self.app
        t = self.transcript
        kept: dict[ApprovalScreen, str] = {}
        for screen in reversed(app.screen_stack):
            if screen not in self._approvals:
                continue
            call = self._approvals[screen]
            if call in t.background_calls:  # a background child asks: it goes on
                kept[screen] = call
            else:  # the turn ended (interrupted) while it asked
                screen.dismiss(None)
        self._approvals = kept
        app.turn_running = False
        self.status_bar.busy = False
        self.working.stop()
        t.end_turn()
        if event.status == "interrupted":
            t.add_note("Interrupted; what arrived is kept.", "warning")
            if self.queued.restore_all(self.prompt):  # not sent after an interrupt
                t.add_note("The queued prompts are back in the prompt.")
        elif event.status in ("max_turns", "timeout", "max_cost"):
            t.add_note(f"The turn stopped: {event.status}.", "warning")
        app.refresh_git()
        following = self.queued.take_next()
        if following is not None:
            app.call_after_refresh(app.send_text, following)
        elif self.status_bar.approval == "plan" and event.status == "completed":
            ask_about_plan(app, t, self.status_bar, event.final_text)

    def _decided(self, decision: p.ApprovalDecision | None) -> None:
        if decision is not None:
            self.app.send(decision)
