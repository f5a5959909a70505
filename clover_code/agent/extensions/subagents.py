"""Child agents started by the ``task`` tool: their own context, a narrower tool set.

A child is an ``Agent`` with an empty conversation that shares the parent's
engine, workspace, sandbox, permission policy (with what the user allowed this
session), approver and tool hooks; it gets the parent's tools filtered by its
definition (``agent_defs``), never the ``task`` tool itself, so children cannot
start children. Its conversation is not written to the transcript; each of its
events reaches the parent's front ends wrapped in a ``SubagentEvent`` that
carries the parent's call id.

Several children run at once (bounded by ``max_subagents``). A remote server
takes their requests concurrently; a local engine (HF, SGLang in process)
holds one model state, so the children's requests go through ``QueuedBackend``
and take turns. Interrupting the parent cancels its children; a child that
fails, hits a limit (``subagent_max_turns``, ``subagent_timeout``,
``subagent_max_tokens``) or is refused becomes a failed tool result, never a
failed session.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from clover_code import protocol as p
from clover_code.agent.extensions.agent_defs import READ_KINDS, AgentDefinition
from clover_code.agent.turn.options import TurnLimits
from clover_code.config.settings import ApprovalMode, Settings
from clover_code.engine.base import Backend, ChatRequest
from clover_code.engine.events import EngineEvent
from clover_code.errors import EngineError
from clover_code.protocol import TASK_TOOL
from clover_code.tools.base import Tool, ToolResult

if TYPE_CHECKING:
    from clover_code.agent.turn.loop import Agent

__all__ = [
    "TASK_TOOL",
    "ModelChoice",
    "QueuedBackend",
    "SubagentRunner",
    "SubagentStats",
    "serves_concurrently",
]

CONCURRENT_ENGINES = frozenset({"remote"})
"""Backends (by name) that serve several requests at once without sharing state."""


def serves_concurrently(backend: Backend) -> bool:
    """Whether ``backend`` may stream several requests at the same time."""
    return backend.name in CONCURRENT_ENGINES


class _ParentEngine:
    """A child's view of the parent's engine, which the parent owns and closes."""

    def __init__(self, inner: Backend, model: str) -> None:
        self.inner = inner
        self.name, self.model, self.block_size = inner.name, model, inner.block_size

    @property
    def notices(self) -> Sequence[str]:
        """The inner backend's."""
        return self.inner.notices

    @property
    def failure(self) -> EngineError | None:
        """The inner backend's last failure (a child's counts as the session's)."""
        return self.inner.failure

    async def check(self) -> None:
        """The inner backend's check."""
        await self.inner.check()

    async def aclose(self) -> None:
        """Nothing: the parent owns the engine."""


class QueuedBackend(_ParentEngine):
    """A backend whose requests take turns on ``lock`` (a local engine's one model state)."""

    def __init__(self, inner: Backend, lock: asyncio.Lock) -> None:
        super().__init__(inner, inner.model)
        self._lock = lock

    async def stream(self, request: ChatRequest) -> AsyncGenerator[EngineEvent, None]:
        """The inner stream, once no other child's request is being served."""
        async with self._lock, aclosing(self.inner.stream(request)) as events:
            async for event in events:
                yield event


class ModelChoice(_ParentEngine):
    """A remote backend whose requests ask for another model the server serves."""

    def stream(self, request: ChatRequest) -> AsyncGenerator[EngineEvent, None]:
        """The inner stream, for this backend's model."""
        return self.inner.stream(replace(request, model=self.model))


@dataclass(slots=True)
class SubagentStats:
    """What one child cost: for ``/cost`` and the headless result."""

    call_id: str
    agent: str
    tokens: int
    """Tokens the child generated, over all its requests."""
    duration_s: float
    status: p.TurnStatus

    def as_display(self, changed: list[str]) -> p.SubagentRun:
        """The stats (and the files the child changed) as the task call's display."""
        return p.SubagentRun(
            call_id=self.call_id,
            agent=self.agent,
            tokens=self.tokens,
            duration_s=round(self.duration_s, 3),
            status=self.status,
            changed_files=changed,
        )


@dataclass(slots=True)
class _Watch:
    """Follows a child's events: tokens, files it changed, its last error."""

    token_limit: int
    tokens: int = 0
    changed: list[str] = field(default_factory=list)
    last_error: str | None = None
    over_limit: str | None = None
    _edits: dict[str, list[str]] = field(default_factory=dict)

    def see(self, event: p.Event) -> None:
        if isinstance(event, p.UsageReport):
            self.tokens += event.completion_tokens
            if self.tokens > self.token_limit and self.over_limit is None:
                self.over_limit = (
                    f"it generated {self.tokens:,} tokens, more than its limit of "
                    f"{self.token_limit:,} (subagent_max_tokens)"
                )
        elif isinstance(event, p.ErrorEvent):
            self.last_error = event.message
        elif isinstance(event, p.ToolCallFinished) and event.status == "ok":
            shown = event.display
            found: list[str] = []
            if isinstance(shown, p.FileEdit) and shown.diff:
                found = [shown.path]
            elif isinstance(shown, p.PatchApplied):
                found = list(shown.paths)
            self.changed += [path for path in found if path not in self.changed]


class SubagentRunner:
    """Starts children for the parent agent it is attached to (``attach``)."""

    def __init__(self, agents: dict[str, AgentDefinition], settings: Settings) -> None:
        self.agents = agents
        self.settings = settings
        self._slots = asyncio.Semaphore(settings.max_subagents)
        self._engine = asyncio.Lock()
        self.parent: Agent | None = None
        self.stats: list[SubagentStats] = []
        """Every child this session started, in the order they ended."""

    def attach(self, parent: Agent) -> None:
        """The agent whose engine, tools and approvals children share."""
        self.parent = parent

    def tools_for(
        self, definition: AgentDefinition, allowed: frozenset[str] | None = None
    ) -> list[Tool[Any]]:
        """The parent's tools a child of ``definition`` gets (never the task tool); of
        them only the ``allowed`` ones (the parent's turn's: a custom command's)."""
        assert self.parent is not None
        parent_tools = [
            t
            for t in self.parent.dispatch.tools.values()
            if t.name != TASK_TOOL and (allowed is None or t.name in allowed)
        ]
        if definition.tools is not None:
            return [t for t in parent_tools if t.name in definition.tools]
        if definition.read_only:
            return [t for t in parent_tools if t.kind in READ_KINDS]
        return parent_tools

    def approval_mode_for(self, definition: AgentDefinition) -> ApprovalMode:
        """The parent's approval mode now, or read-only for a read-only definition."""
        assert self.parent is not None
        return "read-only" if definition.read_only else self.parent.approval_mode

    async def run(
        self,
        call_id: str,
        agent: str,
        description: str,
        prompt: str,
        allowed: frozenset[str] | None = None,
    ) -> ToolResult:
        """Run one child to its end; its answer (or why it failed) is the tool result.
        ``allowed``: the tools the parent's turn allows (None: every tool)."""
        definition = self.agents.get(agent)
        if definition is None:
            known = ", ".join(sorted(self.agents))
            return ToolResult(f"error: there is no agent '{agent}'; use one of: {known}.", True)
        if self.parent is None:
            return ToolResult("error: subagents are not available in this session.", True)
        async with self._slots:
            return await self._run(call_id, definition, description, prompt, allowed)

    async def _run(
        self,
        call_id: str,
        definition: AgentDefinition,
        description: str,
        prompt: str,
        allowed: frozenset[str] | None,
    ) -> ToolResult:
        from clover_code.agent.turn.loop import (
            Agent,  # the loop imports the tools, which import this
        )

        parent = self.parent
        assert parent is not None
        tools = self.tools_for(definition, allowed)
        backend: Backend = parent.backend
        if not serves_concurrently(backend):
            backend = QueuedBackend(backend, self._engine)
            if definition.model and definition.model != backend.model:
                parent.emit(
                    p.Notice(
                        text=f"agent '{definition.name}' asks for the model {definition.model}; "
                        f"the local engine serves only {backend.model}, so it runs on that."
                    )
                )
        elif definition.model:
            backend = ModelChoice(backend, definition.model)
        watch = _Watch(self.settings.subagent_max_tokens)
        child: Agent | None = None

        def emit(event: p.Event) -> None:
            watch.see(event)
            if watch.over_limit is not None and child is not None and child.stopped is None:
                child.stop(watch.over_limit)
            parent.emit(p.SubagentEvent(parent_call_id=call_id, agent=definition.name, event=event))

        child = Agent(
            backend=backend,
            tools=tools,
            context=parent.dispatch.context,
            settings=parent.settings,
            limits=TurnLimits(
                max_requests=self.settings.subagent_max_turns,
                timeout=self.settings.subagent_timeout,
            ),
            approver=parent.approver,
            approval_mode=self.approval_mode_for(definition),
            system_prompt=self._system_prompt(definition, description, tools),
            emit=emit,
            record_message=lambda message: None,
            record_history=lambda history: None,
            spill=parent.dispatch.spill,
            count_text=parent.counter.count_text,
        )
        # What the user allowed this session, and their tool hooks, hold for children too;
        # the lifecycle hooks (prompt, stop, session) stay the parent's.
        child.dispatch.policy = parent.dispatch.policy
        child.dispatch.edits = parent.dispatch.edits
        child.dispatch.hooks = parent.dispatch.hooks
        started = time.monotonic()
        # Its own task: a child's turn handles its own interruption, and must not
        # swallow the parent's (the parent's cancel goes on up after the child stops).
        turn = asyncio.create_task(child.run_turn(prompt))
        try:
            finished = await asyncio.shield(turn)
        except asyncio.CancelledError:
            turn.cancel()
            await asyncio.gather(turn, return_exceptions=True)
            self._keep(call_id, definition, watch, started, "interrupted")
            raise
        stats = self._keep(call_id, definition, watch, started, finished.status)
        return self._result(definition, finished, watch, stats)

    def _keep(
        self,
        call_id: str,
        definition: AgentDefinition,
        watch: _Watch,
        started: float,
        status: p.TurnStatus,
    ) -> SubagentStats:
        stats = SubagentStats(
            call_id, definition.name, watch.tokens, time.monotonic() - started, status
        )
        self.stats.append(stats)
        return stats

    @staticmethod
    def _result(
        definition: AgentDefinition, finished: p.TurnFinished, watch: _Watch, stats: SubagentStats
    ) -> ToolResult:
        display = stats.as_display(list(watch.changed))
        changed = "\n\nFiles it changed: " + ", ".join(watch.changed) if watch.changed else ""
        if finished.status == "completed" and watch.over_limit is None:
            answer = finished.final_text.strip() or "(the agent gave no answer)"
            return ToolResult(answer + changed, display=display)
        why = {
            "max_turns": "stopped at its request limit (subagent_max_turns)",
            "timeout": "hit its time limit (subagent_timeout)",
            "interrupted": "was interrupted",
        }.get(finished.status, "failed")
        detail = watch.over_limit or watch.last_error
        text = f"error: the {definition.name} agent {why}" + (f": {detail}" if detail else ".")
        return ToolResult(text + changed, is_error=True, display=display)

    def _system_prompt(
        self, definition: AgentDefinition, description: str, tools: list[Tool[Any]]
    ) -> str:
        assert self.parent is not None
        root = self.parent.dispatch.context.workspace.root
        names = ", ".join(t.name for t in tools) or "none"
        return (
            f"{definition.prompt}\n\nEnvironment:\n- Repository root: {root}\n"
            f"- Tools: {names}\n- Your task, as the other agent named it: {description}"
        )
