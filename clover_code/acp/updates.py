"""Protocol events -> ACP session updates, with no I/O (so it is tested alone).

``EventMapper.feed`` takes each ``Event`` a session emits and returns the
ACP updates to send, in order:

- reasoning and answer text are held until their block commits, then sent
  as one ``agent_thought_chunk`` / ``agent_message_chunk`` per block (Clover
  commits ~21 blocks/s; per-token chunks would swamp an editor);
- ``tool_call`` when a call starts (``pending`` when it waits for approval,
  else ``in_progress``), ``tool_call_update`` for live command output
  (throttled) and when it ends (``completed`` / ``failed``), with edits as
  diff content and commands run in the editor's terminal as terminal content
  (how a call's card looks is ``tool_cards.py``);
- ``plan`` from the todo list, ``usage_update`` after each model response;
- errors and warnings of a turn as message text, so the user sees them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp import (
    plan_entry,
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    tool_terminal_ref,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
)
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AvailableCommandsUpdate,
    Cost,
    CurrentModeUpdate,
    PlanEntryStatus,
    StopReason,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallStatus,
    UsageUpdate,
    UserMessageChunk,
)

from clover_code import protocol as p
from clover_code.acp.tool_cards import (
    ToolContent,
    acp_kind,
    capped,
    diagnostics,
    fenced,
    tail,
    tool_title,
)
from clover_code.protocol.cost import CostTally

__all__ = ["TOKEN_LIMIT_NOTICE", "EventMapper", "Update", "stop_reason"]

Update = (
    AgentMessageChunk
    | AgentThoughtChunk
    | UserMessageChunk
    | ToolCallStart
    | ToolCallProgress
    | AgentPlanUpdate
    | UsageUpdate
    | CurrentModeUpdate
    | AvailableCommandsUpdate
)
"""The session updates this front end sends."""

TOKEN_LIMIT_NOTICE = "the response hit the token limit."
"""The loop's notice when a response stopped at ``max_tokens`` (see ``agent/turn/respond.py``)."""

OUTPUT_INTERVAL = 0.25
"""Seconds between live command-output updates of one call."""

_PLAN_STATUS: dict[str, PlanEntryStatus] = {
    "pending": "pending",
    "in_progress": "in_progress",
    "done": "completed",
}


def stop_reason(status: p.TurnStatus, hit_token_limit: bool) -> StopReason | None:
    """The ACP stop reason for how a turn ended; None when it failed (an error reply)."""
    if status == "completed":
        return "max_tokens" if hit_token_limit else "end_turn"
    if status == "interrupted":
        return "cancelled"
    if status in ("max_turns", "timeout", "max_cost"):
        return "max_turn_requests"
    return None


class EventMapper:
    """Turns one session's events into ACP updates.

    ``needs_approval(kind)`` says whether a call of that kind will wait for
    the user; ``take_edit(path)`` returns the (old, new) text of the last
    write to ``path`` when the file access recorded it; ``log`` receives
    what is worth knowing outside a turn (start-up notices).
    """

    def __init__(
        self,
        root: Path,
        *,
        needs_approval: Callable[[str], bool],
        take_edit: Callable[[Path], tuple[str | None, str] | None],
        log: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.root = root
        self._needs_approval = needs_approval
        self._take_edit = take_edit
        self._log = log
        self._clock = clock
        self._text: list[tuple[str, str]] = []
        self._kinds: dict[str, str] = {}
        self._output: dict[str, list[str]] = {}
        self._output_sent: dict[str, float] = {}
        self._terminals: dict[str, str] = {}
        self._acp_ids: dict[str, str] = {}
        self._used_ids: set[str] = set()
        self.running_execute: str | None = None
        """The command call now running (at most one runs at a time)."""
        self.in_turn = False
        self.hit_token_limit = False
        """Whether the last model response stopped at the token limit."""
        self.last_error: str | None = None
        self.cost = CostTally()
        """The session's spending so far, sent with each usage update when known."""

    def feed(self, event: p.Event) -> list[Update]:
        """The updates ``event`` calls for (often none until a block commits)."""
        self.cost.see(event)
        if isinstance(event, p.ReasoningDelta | p.ContentDelta):
            kind = "thought" if isinstance(event, p.ReasoningDelta) else "message"
            if self._text and self._text[-1][0] == kind:
                self._text[-1] = (kind, self._text[-1][1] + event.text)
            elif event.text:
                self._text.append((kind, event.text))
            return []
        if isinstance(event, p.BlockCommitted):
            return self._with_confidence(self.flush(), event)
        if isinstance(event, p.BlockDraft | p.AnswerConfidenceDelta):
            return []  # a block's confidences go with its last chunk (``_with_confidence``)
        if isinstance(event, p.SubagentEvent):
            return self._child(event)
        updates = self.flush()
        if isinstance(event, p.TurnStarted):
            self.in_turn, self.hit_token_limit, self.last_error = True, False, None
        elif isinstance(event, p.TurnFinished):
            self.in_turn = False
        elif isinstance(event, p.ToolCallStarted):
            self.hit_token_limit = False
            updates.append(self._started(event))
        elif isinstance(event, p.ToolOutput):
            updates += self._output_update(event)
        elif isinstance(event, p.ToolCallFinished):
            updates.append(self._finished(event))
        elif isinstance(event, p.BackgroundTaskFinished):
            updates.append(self._background_finished(event))
        elif isinstance(event, p.UsageReport):
            used = event.prompt_tokens + event.completion_tokens
            total = self.cost.total
            spent = None if total is None else Cost(amount=round(total, 8), currency="USD")
            updates.append(
                UsageUpdate(
                    session_update="usage_update",
                    used=used,
                    size=event.context_window,
                    cost=spent,
                )
            )
        elif isinstance(event, p.TodoUpdated):
            entries = [
                plan_entry(item.text, status=_PLAN_STATUS[item.status]) for item in event.items
            ]
            updates.append(update_plan(entries))
        elif isinstance(event, p.Notice):
            updates += self._notice(event)
        elif isinstance(event, p.ErrorEvent):
            self.last_error = event.message
            if self.in_turn:
                updates.append(update_agent_message_text(f"\n\n**Error:** {event.message}\n"))
            else:
                self._log(f"error: {event.message}")
        elif isinstance(event, p.Compacted):
            self._log(
                f"older turns were summarised ({event.tokens_before:,} -> "
                f"{event.tokens_after:,} tokens)."
            )
        return updates

    def flush(self) -> list[Update]:
        """Send the text held back so far."""
        updates: list[Update] = [
            update_agent_thought_text(text)
            if kind == "thought"
            else update_agent_message_text(text)
            for kind, text in self._text
        ]
        self._text = []
        return updates

    @staticmethod
    def _with_confidence(updates: list[Update], block: p.BlockCommitted) -> list[Update]:
        """The block's token confidences, as metadata on its last message chunk."""
        if block.confidence is None or not updates:
            return updates
        last = updates[-1]
        meta = {"clover": {"block": block.block, "confidence": block.confidence}}
        updates[-1] = last.model_copy(update={"field_meta": meta})
        return updates

    def acp_id(self, call_id: str) -> str:
        """The ACP id of a running call (unique in the session, unlike some servers' ids)."""
        return self._acp_ids.get(call_id, call_id)

    def attach_terminal(self, terminal_id: str) -> list[Update]:
        """The running command now shows in the editor's terminal ``terminal_id``."""
        call = self.running_execute
        if call is None:
            return []
        self._terminals[call] = terminal_id
        content: list[ToolContent] = [tool_terminal_ref(terminal_id)]
        return [update_tool_call(self.acp_id(call), status="in_progress", content=content)]

    # ------------------------------------------------------------ tool calls

    def _child(self, wrapped: p.SubagentEvent) -> list[Update]:
        """A child agent's tool calls, as tool calls of their own (titled with the
        agent's name); its text reaches the editor as the task call's result."""
        event = wrapped.event
        if not isinstance(event, p.ToolCallStarted | p.ToolOutput | p.ToolCallFinished):
            return []
        # Child call ids are only unique within the child: qualify them with the parent's.
        child = event.model_copy(update={"call_id": f"{wrapped.parent_call_id}/{event.call_id}"})
        if isinstance(child, p.ToolCallStarted):
            start = self._started(child)
            return [start.model_copy(update={"title": f"{wrapped.agent}: {start.title}"})]
        if isinstance(child, p.ToolOutput):
            return self._output_update(child)
        return [self._finished(child)]

    def _started(self, event: p.ToolCallStarted) -> ToolCallStart:
        # Servers without call ids get "call_0" in every response: keep ACP ids unique.
        acp_id, n = event.call_id, 1
        while acp_id in self._used_ids:
            n += 1
            acp_id = f"{event.call_id}-{n}"
        self._used_ids.add(acp_id)
        self._acp_ids[event.call_id] = acp_id
        self._kinds[event.call_id] = event.kind
        if event.kind == "execute":
            self.running_execute = event.call_id
        status: ToolCallStatus = "pending" if self._needs_approval(event.kind) else "in_progress"
        return start_tool_call(
            acp_id,
            tool_title(event.name, event.summary, event.arguments),
            kind=acp_kind(event.kind),
            status=status,
            locations=self._locations(event.arguments),
            raw_input=event.arguments,
        )

    def _locations(self, arguments: dict[str, Any]) -> list[ToolCallLocation] | None:
        path = arguments.get("path")
        if not isinstance(path, str) or not path or "\x00" in path:
            return None
        return [ToolCallLocation(path=os.path.normpath(self.root / path))]

    def _output_update(self, event: p.ToolOutput) -> list[Update]:
        chunks = self._output.setdefault(event.call_id, [])
        chunks.append(event.text)
        if event.call_id in self._terminals:
            return []
        now = self._clock()
        if now - self._output_sent.get(event.call_id, float("-inf")) < OUTPUT_INTERVAL:
            return []
        self._output_sent[event.call_id] = now
        text = fenced(tail("".join(chunks)))
        content: list[ToolContent] = [tool_content(text_block(text))]
        return [update_tool_call(self.acp_id(event.call_id), content=content)]

    def _finished(self, event: p.ToolCallFinished) -> ToolCallProgress:
        if isinstance(event.display, p.BackgroundTask):
            # The child goes on: the call stays in progress until its own end arrives.
            return update_tool_call(
                self.acp_id(event.call_id),
                status="in_progress",
                content=[tool_content(text_block(event.result))],
            )
        kind = self._kinds.pop(event.call_id, "other")
        self._output.pop(event.call_id, None)
        self._output_sent.pop(event.call_id, None)
        if self.running_execute == event.call_id:
            self.running_execute = None
        status: ToolCallStatus = "completed" if event.status == "ok" else "failed"
        content = self._content(event, kind)
        return update_tool_call(
            self._acp_ids.pop(event.call_id, event.call_id), status=status, content=content
        )

    def _background_finished(self, event: p.BackgroundTaskFinished) -> ToolCallProgress:
        """A background child ended: its task call finishes now, with its answer."""
        self._kinds.pop(event.call_id, None)
        status: ToolCallStatus = "completed" if event.status == "ok" else "failed"
        content = [tool_content(text_block(capped(event.result)))]
        acp_id = self._acp_ids.pop(event.call_id, event.call_id)
        return update_tool_call(acp_id, status=status, content=content)

    def _content(self, event: p.ToolCallFinished, kind: str) -> list[ToolContent]:
        terminal = self._terminals.pop(event.call_id, None)
        if terminal is not None:
            return [tool_terminal_ref(terminal)]
        done = event.display
        if event.status == "ok" and isinstance(done, p.FileEdit) and done.diff:
            path = Path(os.path.normpath(self.root / done.path))
            edit = self._take_edit(path)
            # The language server's findings follow the diff, as the model read them.
            found = [tool_content(text_block(diagnostics(done.diagnostics)))]
            found = found if done.diagnostics else []
            if edit is not None:
                old, new = edit
                return [tool_diff_content(str(path), new, old), *found]
            return [tool_content(text_block(fenced(done.diff, "diff"))), *found]
        text = capped(event.result)
        if event.status == "ok" and kind in ("read", "search", "execute"):
            text = fenced(text)
        return [tool_content(text_block(text))]

    def _notice(self, event: p.Notice) -> list[Update]:
        if event.text == TOKEN_LIMIT_NOTICE:
            self.hit_token_limit = True
            return []
        if self.in_turn and event.level == "warning":
            return [update_agent_message_text(f"\n\n**Warning:** {event.text}\n")]
        self._log(f"{event.level}: {event.text}")
        return []
