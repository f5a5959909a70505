"""Child agents started by the ``task`` tool: their own context, a narrower tool set.

A child is an ``Agent`` with an empty conversation that shares the parent's
engine, workspace, sandbox, permission policy (with what the user allowed this
session), approver and tool hooks; it gets the parent's tools filtered by its
definition (``agent_defs``), never the task tools themselves, so children
cannot start children. Its conversation is not written to the transcript;
each of its events reaches the parent's front ends wrapped in a
``SubagentEvent`` that carries the parent's call id. The SubagentStart and
SubagentStop hooks run at the start and end of a child's run
(``hook_calls.child_run``).

Several children run at once (bounded by ``max_subagents``), and their
requests go to the engine at the same time: a remote server serves them
concurrently, and a local engine decides itself how it serves concurrent
requests (SGLang batches them; the in-process torch engine batches or takes
turns). Interrupting the parent cancels the children it waits for; a
background child (``background``: ``agents/extensions/background.py``) runs
on as a peer. A child that fails, hits a limit (``subagent_max_turns``,
``subagent_timeout``, ``subagent_max_tokens``) or is refused becomes a failed
tool result, never a failed session.

A child that may write can work in a git worktree of its own (``isolation:
worktree``, from its definition or the call; ``isolation.py``): its changes
come back as one merge into the parent's workspace when it ends, or are
reported as conflicting hunks, never applied half.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from clover_code import protocol as p
from clover_code.agent.extensions.agent_defs import READ_KINDS, AgentDefinition, Isolation
from clover_code.agent.extensions.background import BackgroundChildren
from clover_code.agent.turn.options import TurnLimits
from clover_code.config.settings import ApprovalMode, Settings
from clover_code.engine.base import Backend, ChatRequest
from clover_code.engine.events import EngineEvent
from clover_code.errors import CloverError, EngineError
from clover_code.protocol import TASK_TOOL
from clover_code.tools.base import Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from clover_code.agent.extensions.isolation import ChildWorktree
    from clover_code.agent.extensions.subagent_report import ChildOutcome, SubagentStats
    from clover_code.agent.turn.loop import Agent

__all__ = [
    "TASK_RESULT_TOOL",
    "TASK_STOP_TOOL",
    "TASK_TOOL",
    "ModelChoice",
    "ParentEngine",
    "SubagentRunner",
]

TASK_RESULT_TOOL = "task_result"
TASK_STOP_TOOL = "task_stop"
_TASK_TOOLS = frozenset({TASK_TOOL, TASK_RESULT_TOOL, TASK_STOP_TOOL})
"""Tools a child never gets: children cannot start (or stop) children."""
WRITE_KINDS = frozenset({"edit", "execute"})

SERVES_MANY_MODELS = frozenset({"remote"})
"""Backends (by name) that can be asked for another model per request."""


class ParentEngine:
    """A child's view of the parent's engine, which the parent owns and closes. Its
    requests go to the engine as they come, beside the parent's and other children's."""

    def __init__(self, inner: Backend, model: str | None = None) -> None:
        self.inner = inner
        self.name, self.block_size = inner.name, inner.block_size
        self.model = model or inner.model

    @property
    def notices(self) -> Sequence[str]:
        """The inner backend's."""
        return self.inner.notices

    @property
    def failure(self) -> EngineError | None:
        """The inner backend's last failure (a child's counts as the session's)."""
        return self.inner.failure

    async def stream(self, request: ChatRequest) -> AsyncGenerator[EngineEvent, None]:
        """The inner stream."""
        async with aclosing(self.inner.stream(request)) as events:
            async for event in events:
                yield event

    async def check(self) -> None:
        """The inner backend's check."""
        await self.inner.check()

    async def aclose(self) -> None:
        """Nothing: the parent owns the engine."""


class ModelChoice(ParentEngine):
    """A remote backend whose requests ask for another model the server serves."""

    def stream(self, request: ChatRequest) -> AsyncGenerator[EngineEvent, None]:
        """The inner stream, for this backend's model."""
        return self.inner.stream(replace(request, model=self.model))


class SubagentRunner:
    """Starts children for the parent agent it is attached to (``attach``)."""

    def __init__(self, agents: dict[str, AgentDefinition], settings: Settings) -> None:
        self.agents = agents
        self.settings = settings
        self._slots = asyncio.Semaphore(settings.max_subagents)
        self._merging = asyncio.Lock()
        """One merge into the parent's workspace at a time."""
        self.parent: Agent | None = None
        self.stats: list[SubagentStats] = []
        """Every child this session started, in the order they ended."""
        self.background = BackgroundChildren(
            self._emit, self._merging, settings.subagent_max_tokens
        )
        """The children started with ``background``: the loop's ``BackgroundWork``."""

    def attach(self, parent: Agent) -> None:
        """The agent whose engine, tools and approvals children share."""
        self.parent = parent

    def _emit(self, event: p.Event) -> None:
        if self.parent is not None:
            self.parent.emit(event)

    def tools_for(
        self, definition: AgentDefinition, allowed: frozenset[str] | None = None
    ) -> list[Tool[Any]]:
        """The parent's tools a child of ``definition`` gets (never the task tools); of
        them only the ``allowed`` ones (the parent's turn's: a custom command's)."""
        assert self.parent is not None
        parent_tools = [
            t
            for t in self.parent.dispatch.tools.values()
            if t.name not in _TASK_TOOLS and (allowed is None or t.name in allowed)
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

    def isolated(
        self,
        definition: AgentDefinition,
        asked: Isolation | None,
        allowed: frozenset[str] | None = None,
    ) -> bool:
        """Whether a child gets a worktree: asked for (by the call, else its definition)
        and able to write (a read-only child works in the parent's workspace)."""
        if (asked or definition.isolation) != "worktree" or definition.read_only:
            return False
        return any(t.kind in WRITE_KINDS for t in self.tools_for(definition, allowed))

    async def run(
        self,
        call_id: str,
        agent: str,
        description: str,
        prompt: str,
        allowed: frozenset[str] | None = None,
        *,
        background: bool = False,
        isolation: Isolation | None = None,
    ) -> ToolResult:
        """Run one child to its end (its answer, or why it failed, is the tool result),
        or with ``background`` start it and return at once.
        ``allowed``: the tools the parent's turn allows (None: every tool)."""
        definition = self.agents.get(agent)
        if definition is None:
            known = ", ".join(sorted(self.agents))
            return ToolResult(f"error: there is no agent '{agent}'; use one of: {known}.", True)
        if self.parent is None:
            return ToolResult("error: subagents are not available in this session.", True)
        worktree = None
        if self.isolated(definition, isolation, allowed):
            try:
                worktree = await self._worktree()
            except CloverError as exc:
                return ToolResult(f"error: {exc}", True)
        if background:
            return self._start_background(
                call_id, definition, description, prompt, allowed, worktree
            )
        try:
            async with self._slots:
                outcome, _ = await self._run_child(
                    call_id, definition, description, prompt, allowed, worktree
                )
        except asyncio.CancelledError:
            if worktree is not None:  # cancelled before it could start: nothing to keep
                await asyncio.shield(worktree.keep_if_changed())
            raise
        from clover_code.agent.extensions.subagent_report import report

        if worktree is None:
            return report(outcome)
        if not outcome.succeeded:
            return report(outcome, worktree_note=await worktree.keep_if_changed())
        async with self._merging:
            merged, note = await worktree.merge(definition.name)
        return report(outcome, merge=merged, worktree_note=note)

    async def _worktree(self) -> ChildWorktree:
        # Imported here: worktrees (and what they need of git and the sandbox) are only
        # for a child that asks for one.
        from clover_code.agent.extensions.isolation import ChildWorktree

        assert self.parent is not None
        context = self.parent.dispatch.context
        return await ChildWorktree.create(context.workspace.root, self.settings, context.sandbox)

    def _start_background(
        self,
        call_id: str,
        definition: AgentDefinition,
        description: str,
        prompt: str,
        allowed: frozenset[str] | None,
        worktree: ChildWorktree | None,
    ) -> ToolResult:
        async def run(
            task_id: str, on_turn: Callable[[asyncio.Task[p.TurnFinished]], None]
        ) -> tuple[ChildOutcome, ChildWorktree | None]:
            try:
                async with self._slots:
                    return await self._run_child(
                        call_id, definition, description, prompt, allowed, worktree, on_turn
                    )
            except asyncio.CancelledError:
                if worktree is not None:
                    await asyncio.shield(worktree.keep_if_changed())
                raise

        task_id = self.background.start(
            call_id, definition, description, run, isolated=worktree is not None
        )
        where = " in a worktree of its own" if worktree is not None else ""
        return ToolResult(
            f"Started the {definition.name} agent in the background{where} as {task_id}; go on "
            "with your work. When it ends, its answer and the files it changed come to you by "
            f'themselves with your next request. task_result(task_id="{task_id}", '
            "wait_seconds=...) waits for it; task_stop stops it.",
            display=p.BackgroundTask(
                task_id=task_id,
                agent=definition.name,
                isolation="worktree" if worktree is not None else "shared",
            ),
        )

    def _backend(self, definition: AgentDefinition) -> Backend:
        assert self.parent is not None
        backend = self.parent.backend
        if not definition.model or definition.model == backend.model:
            return ParentEngine(backend)
        if backend.name in SERVES_MANY_MODELS:
            return ModelChoice(backend, definition.model)
        self.parent.emit(
            p.Notice(
                text=f"agent '{definition.name}' asks for the model {definition.model}; "
                f"the local engine serves only {backend.model}, so it runs on that."
            )
        )
        return ParentEngine(backend)

    async def _run_child(
        self,
        call_id: str,
        definition: AgentDefinition,
        description: str,
        prompt: str,
        allowed: frozenset[str] | None,
        worktree: ChildWorktree | None,
        on_turn: Callable[[asyncio.Task[p.TurnFinished]], None] | None = None,
    ) -> tuple[ChildOutcome, ChildWorktree | None]:
        from clover_code.agent.extensions.subagent_report import ChildOutcome, ChildWatch
        from clover_code.agent.turn.loop import (
            Agent,  # the loop imports the tools, which import this
        )

        parent = self.parent
        assert parent is not None
        tools = self.tools_for(definition, allowed)
        context, policy = parent.dispatch.context, parent.dispatch.policy
        if worktree is not None:
            context, policy = worktree.context(context, self.settings), worktree.policy(policy)
            if worktree.sandbox is None:  # no sandbox of the parent's kind opens there
                tools = [t for t in tools if t.kind != "execute"]
        watch = ChildWatch(self.settings.subagent_max_tokens)
        child: Agent | None = None

        def emit(event: p.Event) -> None:
            watch.see(event)
            if watch.over_limit is not None and child is not None and child.stopped is None:
                child.stop(watch.over_limit)
            parent.emit(p.SubagentEvent(parent_call_id=call_id, agent=definition.name, event=event))

        child = Agent(
            backend=self._backend(definition),
            tools=tools,
            context=context,
            settings=parent.settings,
            limits=TurnLimits(
                max_requests=self.settings.subagent_max_turns,
                timeout=self.settings.subagent_timeout,
            ),
            approver=parent.approver,
            approval_mode=self.approval_mode_for(definition),
            system_prompt=self._system_prompt(definition, description, tools, context),
            emit=emit,
            record_message=lambda message: None,
            record_history=lambda history: None,
            spill=parent.dispatch.spill,
            count_text=parent.counter.count_text,
            spend=parent.spend,  # the session's budget counts its children
        )
        # What the user allowed this session, and their tool hooks, hold for children too;
        # the lifecycle hooks (prompt, stop, session) stay the parent's.
        child.dispatch.policy = policy
        child.dispatch.edits = parent.dispatch.edits
        child.dispatch.hooks = parent.dispatch.hooks
        started = time.monotonic()
        # Its own task: a child's turn handles its own interruption, and must not
        # swallow the parent's (the parent's cancel goes on up after the child stops).
        from clover_code.agent.extensions.hook_calls import child_run

        run = child_run(
            child.run_turn,
            prompt,
            parent.dispatch.hooks,  # SubagentStart before its turn, SubagentStop after
            agent_id=call_id,
            agent_type=definition.name,
            max_requests=self.settings.subagent_max_turns,
        )
        turn = asyncio.create_task(run)
        if on_turn is not None:
            on_turn(turn)
        try:
            finished = await asyncio.shield(turn)
        except asyncio.CancelledError:
            turn.cancel()
            await asyncio.gather(turn, return_exceptions=True)
            outcome = ChildOutcome(call_id, definition, "interrupted", "", watch, started)
            outcome.kept_branch = worktree.branch if worktree else None
            self.stats.append(outcome.stats())
            if worktree is not None:
                note = await asyncio.shield(worktree.keep_if_changed())
                if note:
                    parent.emit(p.Notice(level="warning", text=f"{definition.name}: {note}"))
            raise
        outcome = ChildOutcome(
            call_id, definition, finished.status, finished.final_text, watch, started
        )
        outcome.kept_branch = worktree.branch if worktree else None
        self.stats.append(outcome.stats())
        return outcome, worktree

    def _system_prompt(
        self,
        definition: AgentDefinition,
        description: str,
        tools: list[Tool[Any]],
        context: ToolContext,
    ) -> str:
        root = context.workspace.root
        names = ", ".join(t.name for t in tools) or "none"
        return (
            f"{definition.prompt}\n\nEnvironment:\n- Repository root: {root}\n"
            f"- Tools: {names}\n- Your task, as the other agent named it: {description}"
        )

    async def close(self) -> list[str]:
        """Stop the background children that still run (the session ends); sentences
        saying what was stopped and which unmerged work was kept."""
        return await self.background.close()
