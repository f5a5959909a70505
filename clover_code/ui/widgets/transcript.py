"""The conversation: user inputs, thinking, answers, tool cards and notes, in order.

It follows the newest output while the reader is at the bottom and stays
put when they scroll up. The live denoising view is always its last child.
The kinds of entry a turn adds (inputs, thinking, answers, cards, diffs) are
loaded by the first one: the app is shown before any (``CloverApp`` warms
them once it is).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widget import Widget

from clover_code import protocol as p
from clover_code.protocol.confidence import LOW_CONFIDENCE, decode_pieces
from clover_code.ui.css import sibling_css
from clover_code.ui.text import clean
from clover_code.ui.widgets.denoise import DenoiseView
from clover_code.ui.widgets.help_table import HelpTable, Section
from clover_code.ui.widgets.notice_line import Level, NoticeLine

if TYPE_CHECKING:
    from clover_code.ui.widgets.answer import Answer
    from clover_code.ui.widgets.reasoning import Reasoning
    from clover_code.ui.widgets.subagent_card import SubagentCard
    from clover_code.ui.widgets.tool_card import ToolCard


class Transcript(VerticalScroll, can_focus=False):
    """Renders the conversation; the app calls these methods as events arrive."""

    DEFAULT_CSS = sibling_css(__file__)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.denoise = DenoiseView(id="denoise")
        self.answer: Answer | None = None
        self.reasoning: Reasoning | None = None
        self.cards: dict[str, ToolCard] = {}
        self.background: dict[str, SubagentCard] = {}
        """Cards of the child agents running in the background, by their task call."""
        self.background_calls: set[str] = set()
        """The tool calls those children made (their approvals outlive the parent's turn)."""
        self._waiting: NoticeLine | None = None
        self.shading = False
        """The confidence view: answers and diffs shaded by fill confidence."""
        self.low_confidence = LOW_CONFIDENCE
        self.last_answer: Answer | None = None
        """The latest answer (the next ``answer_confidence`` is its)."""

    def on_mount(self) -> None:
        self.mount(self.denoise)
        self.anchor()

    def _add(self, widget: Widget) -> None:
        self.mount(widget, before=self.denoise)

    def add_user(self, text: str) -> None:
        """A user input starts a new exchange."""
        from clover_code.ui.widgets.user_message import UserMessage

        self._close_stream()
        self._add(UserMessage(text))

    def add_reasoning(self, text: str) -> None:
        """Thinking text (starts a thinking section when none is open)."""
        if self.reasoning is None:
            from clover_code.ui.widgets.reasoning import Reasoning

            self.reasoning = Reasoning()
            self._add(self.reasoning)
        self.reasoning.write(text)

    def add_answer(self, text: str) -> None:
        """Answer text (starts an answer when none is open)."""
        if self.reasoning is not None:
            self.reasoning.finish()
        if self.answer is None:
            from clover_code.ui.widgets.answer import Answer

            self.answer = self.last_answer = Answer()
            self._add(self.answer)
        self.answer.write(text)

    def add_past_answer(self, text: str, confidence: str | None) -> None:
        """A resumed session's earlier answer, whole, with its recorded fill confidences
        (the compact form; None or unreadable: not known)."""
        from clover_code.ui.widgets.answer import Answer

        self._close_stream()
        self.last_answer = Answer(text)
        self._add(self.last_answer)
        if confidence is not None:
            self.answer_confidence(p.AnswerConfidence(confidence=confidence))

    def add_tool(self, started: p.ToolCallStarted) -> None:
        """A tool call card (the answer so far is closed first)."""
        from clover_code.ui.widgets.subagent_card import SubagentCard
        from clover_code.ui.widgets.tool_card import ToolCard

        self._close_stream()
        card = SubagentCard(started) if started.name == p.TASK_TOOL else ToolCard(started)
        card.shaded = self.shading
        self.cards[started.call_id] = card
        self._add(card)

    def answer_confidence(self, event: p.AnswerConfidence | p.AnswerConfidenceDelta) -> bool:
        """Fill confidences of the latest answer's text: more of them as it streams (a
        delta), or all of the response's once it is over; False when they cannot be read."""
        answer = self.last_answer
        try:
            pieces = decode_pieces(event.confidence)
        except ValueError:
            return False
        if answer is None:
            return True
        if isinstance(event, p.AnswerConfidenceDelta):
            answer.add_confidence(pieces)
        else:
            answer.set_confidence(pieces)
        if self.shading and not answer.shaded:
            answer.shade(True, below=self.low_confidence)
        return True

    def response_ended(self) -> None:
        """A model response is over (the next one's confidences start after its text)."""
        if self.answer is not None:
            self.answer.response_ended()

    def shade(self, on: bool) -> None:
        """Turn the confidence view on or off for everything shown."""
        from clover_code.ui.widgets.answer import Answer
        from clover_code.ui.widgets.tool_card import ToolCard

        self.shading = on
        for answer in self.query(Answer):
            answer.shade(on, below=self.low_confidence)
        for card in self.query(ToolCard):
            card.shade(on)

    def tool_output(self, event: p.ToolOutput) -> None:
        """Live output for a running call."""
        card = self.cards.get(event.call_id)
        if card is not None:
            card.output(event.text)

    def subagent_event(self, event: p.SubagentEvent) -> None:
        """An event of a child agent, shown on its task call's card."""
        from clover_code.ui.widgets.subagent_card import SubagentCard

        card = self.cards.get(event.parent_call_id) or self.background.get(event.parent_call_id)
        if isinstance(card, SubagentCard):
            card.child(event.event)
        if event.parent_call_id in self.background and isinstance(event.event, p.ToolCallStarted):
            self.background_calls.add(event.event.call_id)

    def tool_finished(self, event: p.ToolCallFinished) -> None:
        """A call ended (a task call started in the background: its child goes on)."""
        from clover_code.ui.widgets.subagent_card import SubagentCard

        card = self.cards.pop(event.call_id, None)
        started = event.display
        if isinstance(card, SubagentCard) and isinstance(started, p.BackgroundTask):
            self.background[event.call_id] = card
            card.in_background(started.task_id)
            return
        if card is not None:
            card.finish(event)

    def background_finished(self, event: p.BackgroundTaskFinished) -> None:
        """A background child ended: its card shows its answer."""
        card = self.background.pop(event.call_id, None)
        if card is None:
            return
        status = (
            "ok"
            if event.status == "ok"
            else "cancelled"
            if event.status == "cancelled"
            else "error"
        )
        card.background_ended(
            p.ToolCallFinished(
                call_id=event.call_id,
                name=p.TASK_TOOL,
                status=status,
                result=event.result,
                display=event.display,
                duration=event.display.duration_s,
            )
        )

    def add_note(self, text: str, level: Level = "info") -> None:
        """A note line."""
        self._add(NoticeLine(text, level))

    def add_entry(self, widget: Widget) -> None:
        """Another kind of entry (a review's progress line, its findings)."""
        self._add(widget)

    def add_help(self, sections: list[Section]) -> None:
        """A note of titled two-column tables (/help)."""
        self._add(HelpTable(sections))

    def waiting_note(self, text: str) -> None:
        """A note about waiting for the server, replaced in place by the next one."""
        if self._waiting is not None and self._waiting.is_attached:
            self._waiting.text = text
            self._waiting.update(Text(f"⚠ {clean(text)}"))
            return
        self._waiting = NoticeLine(text, "warning")
        self._add(self._waiting)

    def waiting_done(self, text: str) -> None:
        """The wait is over: the waiting note says so and the next wait starts a new one."""
        if self._waiting is not None:
            self._waiting.text = text
            self._waiting.update(Text(f"• {clean(text)}"))
            self._waiting.set_classes("-info")
        self._waiting = None

    def add_diff(self, title: str, diff: str) -> None:
        """A diff with a title line (``/diff``)."""
        from clover_code.ui.widgets.diff_view import DiffView

        self._add(NoticeLine(title))
        if diff.strip():
            self._add(DiffView(diff, short_lines=200, classes="report"))

    def end_turn(self) -> None:
        """The turn finished: drop the live view, close sections."""
        self._close_stream()
        self.denoise.reset()
        for card in self.cards.values():
            card.finish(
                p.ToolCallFinished(
                    call_id=card.call_id, name=card.tool_name, status="cancelled", result=""
                )
            )
        self.cards.clear()

    def _close_stream(self) -> None:
        if self.reasoning is not None:
            self.reasoning.finish()
        self.reasoning = None
        self.answer = None

    async def clear(self) -> None:
        """Remove everything (``/clear``)."""
        self._close_stream()
        self.cards.clear()
        await self.query_children().exclude("#denoise").remove()
