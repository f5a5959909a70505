"""Child agents started with ``task(background=true)``: they run on, the parent goes on.

``BackgroundChildren`` keeps them by id (``task-1``, ``task-2``...). Each
runs in a task of its own, so interrupting the parent's turn does not stop
it: a background child is a peer that runs until it ends, the model stops it
(``task_stop``) or the session closes (which says so). When one ends, a
``BackgroundTaskFinished`` event tells the front ends; the parent model gets
its report (answer, files changed) before its next request, exactly once,
as a user message the transcript records (``BackgroundWork``, which the turn
loop calls), or earlier through ``task_result``. A child that worked in its
own worktree has its changes merged back then, inside the parent's turn, so
undoing that turn undoes them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from clover_code import protocol as p
from clover_code.agent.extensions.agent_defs import AgentDefinition
from clover_code.tools.base import ToolResult

if TYPE_CHECKING:
    # A child's record and report are loaded when the first child runs (``subagents``).
    from clover_code.agent.extensions.isolation import ChildWorktree
    from clover_code.agent.extensions.subagent_report import ChildOutcome

__all__ = ["BackgroundChildren", "ChildRun"]

log = logging.getLogger(__name__)

ChildRun: TypeAlias = Callable[
    [str, Callable[["asyncio.Task[p.TurnFinished]"], None]],
    Coroutine[Any, Any, "tuple[ChildOutcome, ChildWorktree | None]"],
]
"""Runs one child to its end: given its task id and a hook that receives the child's
turn task (to stop it), returns how it ended and its worktree, if it had one."""

_State = Literal["running", "ended", "ready", "delivered"]


@dataclass(slots=True)
class _Child:
    task_id: str
    call_id: str
    definition: AgentDefinition
    description: str
    started: float
    isolated: bool
    task: asyncio.Task[tuple[ChildOutcome, ChildWorktree | None]] | None = None
    turn: asyncio.Task[p.TurnFinished] | None = None
    outcome: ChildOutcome | None = None
    worktree: ChildWorktree | None = None
    result: ToolResult | None = None
    state: _State = "running"


class BackgroundChildren:
    """The background children of one session; the turn loop's ``BackgroundWork``."""

    def __init__(
        self, emit: Callable[[p.Event], None], merging: asyncio.Lock, token_limit: int
    ) -> None:
        self._emit = emit
        self._merging = merging
        self._token_limit = token_limit
        self._children: dict[str, _Child] = {}
        self._count = 0

    # ------------------------------------------------------------ starting

    def start(
        self,
        call_id: str,
        definition: AgentDefinition,
        description: str,
        run: ChildRun,
        *,
        isolated: bool,
    ) -> str:
        """Start a child (``run``) in a task of its own; returns its id."""
        self._count += 1
        task_id = f"task-{self._count}"
        child = _Child(task_id, call_id, definition, description, time.monotonic(), isolated)

        def turn_started(turn: asyncio.Task[p.TurnFinished]) -> None:
            child.turn = turn

        child.task = asyncio.create_task(run(task_id, turn_started))
        child.task.add_done_callback(lambda _: self._settle(child))
        self._children[task_id] = child
        return task_id

    def running(self) -> list[tuple[str, str, str]]:
        """The children still running: (id, agent, description) each."""
        return [
            (c.task_id, c.definition.name, c.description)
            for c in self._children.values()
            if c.state == "running"
        ]

    # ------------------------------------------------------------ ending

    def _settle(self, child: _Child) -> None:
        """Note that ``child`` ended (idempotent) and tell the front ends."""
        from clover_code.agent.extensions.subagent_report import ChildOutcome, ChildWatch, report

        task = child.task
        if child.state != "running" or task is None or not task.done():
            return
        if not task.cancelled() and task.exception() is None:
            child.outcome, child.worktree = task.result()
        else:
            error = None if task.cancelled() else task.exception()
            if error is not None:  # a bug: the child is a failed one, the session goes on
                log.debug("background child %s failed", child.task_id, exc_info=error)
            why = type(error).__name__ if error is not None else ""
            watch = ChildWatch(self._token_limit, last_error=why or None)
            status: p.TurnStatus = "interrupted" if task.cancelled() else "failed"
            child.outcome = ChildOutcome(
                child.call_id, child.definition, status, "", watch, child.started
            )
        child.outcome.task_id = child.task_id
        child.state = "ended"
        preview = report(child.outcome)
        if child.isolated and child.worktree is not None and child.outcome.succeeded:
            preview.text += (
                "\n\nIt worked in its own worktree; its changes are merged into the "
                "workspace before the agent's next model request."
            )
        display = preview.display
        assert isinstance(display, p.SubagentRun)
        if child.isolated:
            display = display.model_copy(update={"isolation": "worktree"})
        status_of = "cancelled" if child.outcome.status == "interrupted" else "error"
        self._emit(
            p.BackgroundTaskFinished(
                call_id=child.call_id,
                task_id=child.task_id,
                agent=child.definition.name,
                status="ok" if not preview.is_error else status_of,
                result=preview.text,
                display=display,
            )
        )

    async def _ready(self, child: _Child) -> None:
        """Make ``child``'s report (merging its worktree's changes when it succeeded)."""
        from clover_code.agent.extensions.subagent_report import report

        if child.state != "ended":
            return
        async with self._merging:
            if child.state != "ended":
                return
            outcome, worktree = child.outcome, child.worktree
            assert outcome is not None
            if worktree is None:
                child.result = report(outcome)
            elif outcome.succeeded:
                merged, note = await worktree.merge(child.task_id)
                child.result = report(outcome, merge=merged, worktree_note=note)
                self._merged_notice(child, merged.applied, merged.files)
            else:
                note = await worktree.keep_if_changed()
                child.result = report(outcome, worktree_note=note)
            child.state = "ready"

    def _merged_notice(self, child: _Child, applied: bool, files: list[str]) -> None:
        if not files:
            return
        names = ", ".join(files)
        if applied:
            text = f"merged the changes of {child.task_id} ({child.definition.name}): {names}."
            self._emit(p.Notice(text=text))
        else:
            who = f"{child.task_id} ({child.definition.name})"
            text = f"the changes of {who} to {names} were not merged."
            self._emit(p.Notice(level="warning", text=text))

    def _text(self, child: _Child) -> str:
        assert child.result is not None and child.outcome is not None
        status = child.outcome.stats().status
        seconds = child.outcome.ended - child.outcome.started
        return (
            f"[Background task {child.task_id} ended ({status}, {seconds:.0f} s): the "
            f'{child.definition.name} agent you started for "{child.description}"]\n\n'
            + child.result.text
        )

    # ------------------------------------------------------------ BackgroundWork

    def pending(self) -> bool:
        """Whether a child runs, or ended and was not reported yet."""
        return any(c.state != "delivered" for c in self._children.values())

    async def prepare(self) -> None:
        """Make the reports of the children that ended (worktree merges happen now)."""
        for child in list(self._children.values()):
            self._settle(child)
            await self._ready(child)

    def take(self) -> list[str]:
        """The ready reports, each given out once."""
        found = []
        for child in self._children.values():
            if child.state == "ready":
                child.state = "delivered"
                found.append(self._text(child))
        return found

    async def wait(self) -> None:
        """Until a child ends (at once when one ended and was not reported)."""
        while True:
            for child in self._children.values():
                self._settle(child)
            if any(c.state in ("ended", "ready") for c in self._children.values()):
                return
            tasks = [c.task for c in self._children.values() if c.state == "running" and c.task]
            if not tasks:
                return
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)

    # ------------------------------------------------------------ the model's tools

    def _find(self, task_id: str) -> _Child | ToolResult:
        child = self._children.get(task_id.strip())
        if child is not None:
            return child
        known = ", ".join(self._children) or "none has been started in this session"
        return ToolResult(f"error: there is no background task '{task_id}'; known: {known}.", True)

    async def result(self, task_id: str, wait_seconds: float) -> ToolResult:
        """A child's report, waiting up to ``wait_seconds`` for it to end."""
        child = self._find(task_id)
        if isinstance(child, ToolResult):
            return child
        if child.task is not None and not child.task.done() and wait_seconds > 0:
            await asyncio.wait([child.task], timeout=wait_seconds)  # never cancels the child
        self._settle(child)
        if child.state == "running":
            seconds = time.monotonic() - child.started
            return ToolResult(
                f"{child.task_id} ({child.definition.name}: {child.description}) is still "
                f"running ({seconds:.0f} s so far). Its report comes to you by itself when "
                "it ends; call task_result again with wait_seconds to wait for it, or "
                "task_stop to stop it."
            )
        await self._ready(child)
        again = child.state == "delivered"
        child.state = "delivered"
        assert child.result is not None
        text = self._text(child) + ("\n\n(You were given this report before.)" if again else "")
        # No display: what it cost was reported once, with BackgroundTaskFinished.
        return ToolResult(text, is_error=child.result.is_error)

    async def stop(self, task_id: str) -> ToolResult:
        """Stop a running child; its report (what it did so far) is the result."""
        child = self._find(task_id)
        if isinstance(child, ToolResult):
            return child
        if child.state == "running" and child.task is not None:
            target = child.turn if child.turn is not None and not child.turn.done() else child.task
            target.cancel()
            await asyncio.wait([child.task])
        return await self.result(task_id, 0)

    async def close(self) -> list[str]:
        """Stop every child still running (the session ends); sentences saying what was
        stopped and which unmerged work was kept."""
        running = [c for c in self._children.values() if c.state == "running" and c.task]
        notes: list[str] = []
        if running:
            for child in running:
                assert child.task is not None
                child.task.cancel()
            await asyncio.gather(*(c.task for c in running if c.task), return_exceptions=True)
            names = ", ".join(
                f"{c.task_id} ({c.definition.name}: {c.description})" for c in running
            )
            notes.append(
                f"the session ended while background agents still ran; they were stopped: {names}."
            )
        for child in self._children.values():
            self._settle(child)
            if child.state == "ended" and child.worktree is not None:
                note = await child.worktree.keep_if_changed()
                if note:
                    notes.append(f"{child.task_id} was not merged. {note}")
                child.state = "delivered"
        return notes
