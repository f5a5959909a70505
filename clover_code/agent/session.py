"""A session: one conversation in one workspace, with its engine, tools and transcript.

Front ends talk to it only through protocol ``Op``s (``submit``, or
``run_turn`` with a ``UserInput``) and ``Event``s (the ``emit`` callback they
pass in); each event an op causes carries the op's id as ``op_id``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from clover_code import protocol as p
from clover_code.agent.checkpoints.session import (
    auto_commit,
    checkpoints_answer,
    held_notice,
    show_diff,
    undo,
)
from clover_code.agent.checkpoints.store import CheckpointError, CheckpointStore
from clover_code.agent.extensions.commands import CustomCommand, ExpandedPrompt, prepare, read_rule
from clover_code.agent.extensions.hooks import notification_hooks
from clover_code.agent.extensions.skills import Skill, load_skills
from clover_code.agent.extensions.subagents import SubagentRunner
from clover_code.agent.permissions.approval import QueueApprover
from clover_code.agent.session_events import CAUSE
from clover_code.agent.session_model import SessionModel
from clover_code.agent.steps import Step, run_all
from clover_code.agent.transcript import Transcript, TranscriptError
from clover_code.agent.turn.loop import Agent
from clover_code.agent.turn.options import TurnOptions
from clover_code.config.settings import Settings, user_config_path
from clover_code.engine.base import Backend
from clover_code.errors import CloverError, EngineError
from clover_code.tools.jobs import JobTable
from clover_code.tools.lsp.manager import LanguageServers
from clover_code.tools.sandbox.base import Sandbox

if TYPE_CHECKING:
    from clover_code.agent.checkpoints.run_patch import RunPatch
    from clover_code.tools.mcp import McpManager

INTERRUPT_WAIT = 5.0
"""Seconds an interrupt waits for the cancelled turn to end before it stops the background
jobs (so that a job the turn was just starting is stopped with the others)."""


class Session:
    """Everything one conversation needs; front ends open one with
    ``clover_code.agent.open.open_session``, which builds it whole."""

    def __init__(
        self,
        *,
        settings: Settings,
        session_id: str,
        transcript: Transcript,
        backend: Backend,
        sandbox: Sandbox | None,
        agent: Agent,
        emit: p.Emit,
        checkpoints: CheckpointStore | None,
        checkpoints_held: str | None,
        mcp: McpManager | None,
        skills: list[Skill],
        commands: list[CustomCommand],
        subagents: SubagentRunner,
        plugin_skills: Sequence[tuple[str, Path]] = (),
        language_servers: LanguageServers | None = None,
        opened_with: Settings | None = None,
        wait_for_background: bool = False,
    ) -> None:
        self.id = session_id
        self.transcript = transcript
        self.sandbox = sandbox
        self.agent = agent
        self._emit = emit
        self._turn: asyncio.Task[p.TurnFinished] | None = None
        self.checkpoints = checkpoints
        self._ending = False
        self.checkpoints_held = checkpoints_held
        """Why snapshots wait for the user's yes (``AllowCheckpoints``), if they do."""
        self.mcp = mcp
        self.skills = skills
        """The skills this session offers (for a ``/skills`` listing)."""
        self.commands = commands
        """Custom commands (``/name args`` prompts expand; for completion and ACP)."""
        self.subagents = subagents
        """Starts the task tool's child agents (and keeps what each cost)."""
        self._plugin_skills = tuple(plugin_skills)
        self.language_servers = language_servers
        """The language servers the edit tools ask for diagnostics (stopped on close)."""
        self.model = SessionModel(opened_with or settings, backend.model, emit)
        """The model in use, as the user named it, and switching it."""
        self.wait_for_background = wait_for_background
        """Turns wait for background children before their final answer (headless)."""
        transcript.on_failure = self._transcript_failed
        self._notifying: set[asyncio.Task[None]] = set()
        """Notification hooks still running (a turn never waits for them)."""

    @property
    def settings(self) -> Settings:
        """The settings of the model in use (its window and tool-call reading)."""
        return self.agent.settings

    @property
    def backend(self) -> Backend:
        """The engine of the model in use."""
        return self.agent.backend

    def _transcript_failed(self, error: TranscriptError) -> None:
        """A transcript write failed: say so once, and let no turn go on unrecorded."""
        self._emit(p.ErrorEvent(message=str(error), fatal=True))
        self.agent.stop(str(error))

    @property
    def jobs(self) -> JobTable | None:
        """The session's background jobs (None: no shell tool)."""
        return self.agent.dispatch.context.jobs

    async def stop_jobs(self, reason: str, occasion: str, *, closing: bool = False) -> None:
        """Stop every running background job for ``reason`` (what each job records) and
        tell the user which, ``occasion`` saying when (``as the session ended``)."""
        jobs = self.jobs
        if jobs is None:
            return
        stopped = await jobs.stop_all(reason, closing=closing)
        if stopped:
            names = "; ".join(f"job {job.id}: {job.command}" for job in stopped)
            what = "a background job" if len(stopped) == 1 else f"{len(stopped)} background jobs"
            self._emit(p.Notice(level="warning", text=f"stopped {what} {occasion} ({names})."))

    @property
    def engine_failure(self) -> EngineError | None:
        """The engine error the last failed model response ended with, if any."""
        return self.backend.failure

    @property
    def transcript_failure(self) -> TranscriptError | None:
        """The transcript write failure that stopped recording, if one happened."""
        return self.transcript.failure

    async def patch(self) -> RunPatch:
        """What the agent changed in the workspace this session, as a patch (headless's
        result); empty when checkpoints are off."""
        from clover_code.agent.checkpoints.run_patch import run_patch

        return await run_patch(self.checkpoints, settled=self._settled())

    def _settled(self) -> bool:
        """Whether nothing the session started can have changed the workspace since its
        last turn ended: no turn, background job, MCP server or language server runs."""
        jobs = self.jobs
        servers = self.language_servers
        return (
            self._turn is None
            and (jobs is None or not jobs.running())
            and self.mcp is None
            and (servers is None or not servers.running)
        )

    async def run_turn(self, op: p.UserInput | str) -> p.TurnFinished:
        """Run one turn to its end (Interrupt ops cancel it); its events carry ``op.id``."""
        op = op if isinstance(op, p.UserInput) else p.UserInput(text=op)
        self._turn = asyncio.current_task()
        cause = CAUSE.set(op.id)
        try:
            return await self._checkpointed_turn(op.text, op.images)
        finally:
            CAUSE.reset(cause)
            self._turn = None

    async def models(self) -> tuple[list[p.ModelOption], str | None]:
        """The models the session could switch to (``SetModel``), the one in use
        marked, and a sentence when the server's list could not be had."""
        return await self.model.options(self.backend)

    async def _checkpointed_turn(
        self, text: str, images: Sequence[p.ImageAttachment] = ()
    ) -> p.TurnFinished:
        """One agent turn between a snapshot before it and one after it (for undo)."""
        turn = self.agent.turn + 1  # run_turn numbers the turn it starts like this
        store = self.checkpoints
        if store is not None and self.checkpoints_held:
            self._emit(p.Notice(level="warning", text=held_notice(self.checkpoints_held)))
            store = None
        if store is not None:
            try:
                await asyncio.to_thread(store.snapshot, turn)
            except CheckpointError as exc:
                self._emit(p.Notice(level="warning", text=f"{exc} This turn cannot be undone."))
                store = None
            for notice in store.take_notices() if store else []:
                self._emit(p.Notice(level="warning", text=notice))
        try:
            command = self._command(text)
            wait = self.wait_for_background
            if command is None:
                options = TurnOptions(wait_for_background=wait)
                return await self.agent.run_turn(text, options, images)
            options = TurnOptions(allowed_tools=command.allowed_tools, wait_for_background=wait)
            return await self.agent.run_turn(command.text, options, images)
        finally:
            self._ending = True  # TurnFinished is out; only the checkpoint is left
            if store is not None:
                with contextlib.suppress(CheckpointError):
                    await asyncio.shield(asyncio.to_thread(store.end_turn, turn))
            with contextlib.suppress(Exception):  # logged by run_all
                await asyncio.shield(self.model.close_retired())

    def skills_on_disk(self) -> list[Skill]:
        """The skills the workspace, the user's config dir and the session's plugins hold
        now: the ones this session offers and any added since it opened (the model sees
        those only from the next session, whose system prompt lists them)."""
        root = self.agent.dispatch.context.workspace.root
        return load_skills(root, user_config_path().parent, self._plugin_skills)[0]

    def _command(self, text: str) -> ExpandedPrompt | None:
        """``text`` expanded when it runs a custom command (``/name args``)."""
        may_read = read_rule(self.agent.dispatch.policy, self.agent.approval_mode)
        root = self.agent.dispatch.context.workspace.root
        expanded = prepare(text, self.commands, root, may_read=may_read)
        for note in expanded.notes if expanded else ():
            self._emit(p.Notice(level="warning", text=note))
        return expanded

    async def submit(self, op: p.Op) -> None:
        """Act on an op from a front end; the events it causes carry its id."""
        cause = CAUSE.set(op.id)
        try:
            await self._act(op)
        finally:
            CAUSE.reset(cause)

    async def _act(self, op: p.Op) -> None:
        if isinstance(op, p.Notify):  # while a turn waits on an approval, too
            self._notify(op)
            return
        if not isinstance(op, p.Interrupt | p.ApprovalDecision):
            await self._wind_down()
        if isinstance(op, p.UserInput):
            if self._busy():
                return
            self._ending = False
            self._turn = asyncio.create_task(self._checkpointed_turn(op.text, op.images))
            self._turn.add_done_callback(lambda _: setattr(self, "_turn", None))
        elif isinstance(op, p.Interrupt):
            turn = self._turn
            if turn is not None:
                turn.cancel()
                if turn is not asyncio.current_task():
                    await asyncio.wait({turn}, timeout=INTERRUPT_WAIT)
            await self.stop_jobs("interrupted", "on the interrupt")
        elif isinstance(op, p.ApprovalDecision):
            approver = self.agent.approver
            if not isinstance(approver, QueueApprover) or not approver.resolve(op):
                self._emit(p.ErrorEvent(message=f"no approval is waiting as '{op.request_id}'."))
        elif isinstance(op, p.SetApprovalMode):
            mode = self.agent.approval_mode
            refused = self.settings.managed.mode_change_refusal(op.mode, mode)
            if refused is not None:  # above an administrator's max_approval: the mode stays
                self._emit(p.ErrorEvent(message=refused))
                self._emit(p.ApprovalModeChanged(mode=mode))
                return
            self.agent.approval_mode = op.mode
            self._emit(p.ApprovalModeChanged(mode=op.mode))
            self._emit(p.Notice(text=f"approval mode is now {op.mode}."))
        elif isinstance(op, p.SetModel):
            running = self._turn is not None
            await self.model.switch(self.agent, op.model, self.transcript, turn_running=running)
        elif isinstance(op, p.AutoCommit):
            if not self._busy():
                await auto_commit(self.checkpoints, op.subject, self._emit)
        elif isinstance(op, p.Compact):
            if self._busy():
                return
            self._turn = asyncio.create_task(self._compact())
            self._turn.add_done_callback(lambda _: setattr(self, "_turn", None))
        elif isinstance(op, p.ClearHistory):
            if self._busy():
                return
            self.agent.clear()
            self._emit(p.Notice(text="the conversation was cleared; the old one stays saved."))
        elif isinstance(op, p.Undo):
            if not self._busy():
                agent = self.agent
                await undo(self.checkpoints, op, self._emit, agent.forget_from, agent.turn_back)
        elif isinstance(op, p.AllowCheckpoints):
            self.checkpoints_held = None
            self.checkpoints = self.checkpoints if op.allow else None
            self._emit(p.Notice(text=checkpoints_answer(op.allow)))
        elif isinstance(op, p.ShowDiff):
            if not self._busy():
                await show_diff(self.checkpoints, self._emit)
        elif isinstance(op, p.Shutdown):
            await self.close()

    def _notify(self, op: p.Notify) -> None:
        hooks = self.agent.hooks
        if hooks is None or not hooks.has("Notification"):
            return
        task = asyncio.create_task(
            notification_hooks(hooks, op.message, op.notification_type, op.title)
        )
        self._notifying.add(task)
        task.add_done_callback(self._notifying.discard)

    async def _wind_down(self) -> None:
        """A turn that already reported its end may still be saving its checkpoint: an op
        sent right after (a queued prompt, /undo) waits for that, instead of being refused."""
        turn = self._turn
        if turn is not None and self._ending:
            await asyncio.gather(asyncio.shield(turn), return_exceptions=True)
            if self._turn is turn:
                self._turn = None

    def _busy(self) -> bool:
        if self._turn is None:
            return False
        self._emit(p.ErrorEvent(message="the agent is busy; wait for the turn or interrupt it."))
        return True

    async def _compact(self) -> p.TurnFinished:
        try:
            await self.agent.compact()
        except CloverError as exc:
            self._emit(p.ErrorEvent(message=str(exc)))
        return p.TurnFinished(turn=self.agent.turn, status="completed")

    def background_running(self) -> list[tuple[str, str, str]]:
        """The background child agents still running: (id, agent, description) each."""
        return self.subagents.background.running()

    async def _stop_background(self) -> None:
        """Stop the background children still running and say so (the session ends)."""
        for note in await self.subagents.close():
            self._emit(p.Notice(level="warning", text=note))

    async def close(self) -> None:
        """Stop any running turn, the background child agents and background jobs
        (saying which), release the MCP servers, sandbox and engine, close the
        transcript. Every step runs even when one fails; the first failure is raised
        after."""
        if self._turn is not None and self._turn is not asyncio.current_task():
            self._turn.cancel()
            await asyncio.gather(self._turn, return_exceptions=True)
        for task in list(self._notifying):
            task.cancel()
        await asyncio.gather(*self._notifying, return_exceptions=True)
        steps: list[tuple[str, Step]] = [("background agents", self._stop_background)]
        if self.jobs is not None:
            ending = ("the session ended", "as the session ended")
            steps.append(("background jobs", lambda: self.stop_jobs(*ending, closing=True)))
        hooks = self.agent.hooks
        if hooks is not None and hooks.has("SessionEnd"):
            steps.append(("SessionEnd hook", lambda: hooks.run("SessionEnd", {"reason": "exit"})))
        if self.mcp is not None:
            steps.append(("MCP servers", self.mcp.aclose))
        if self.language_servers is not None:
            steps.append(("language servers", self.language_servers.close))
        if self.sandbox is not None:
            steps.append(("sandbox", self.sandbox.close))
        steps.append(("engine", self.backend.aclose))
        steps.append(("earlier engines", self.model.close_retired))
        steps.append(("end event", lambda: self._emit(p.SessionEnded(session_id=self.id))))
        steps.append(("transcript", self.transcript.close))
        await run_all(steps)
