"""A session: one conversation in one workspace, with its engine, tools and transcript.

Front ends talk to it only through protocol ``Op``s (``submit``) and
``Event``s (the ``emit`` callback they pass in).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clover_code import protocol as p
from clover_code.agent.agent_defs import agents_prompt, load_agents
from clover_code.agent.approval import Approver, QueueApprover
from clover_code.agent.checkpoints import CheckpointError, CheckpointStore
from clover_code.agent.commands import (
    CustomCommand,
    ExpandedPrompt,
    load_commands,
    prepare,
    read_rule,
)
from clover_code.agent.hooks import HookRunner
from clover_code.agent.instructions import system_prompt
from clover_code.agent.loop import Agent
from clover_code.agent.session_checkpoints import (
    checkpoints_answer,
    held_notice,
    show_diff,
    undo,
)
from clover_code.agent.skills import Skill, load_skills, skills_prompt
from clover_code.agent.subagents import SubagentRunner
from clover_code.agent.task_tool import TaskTool
from clover_code.agent.transcript import Transcript, TranscriptError, load, new_session_id
from clover_code.agent.workspace_check import snapshot_warning
from clover_code.config import ApprovalMode, Settings, user_config_path, user_data_dir
from clover_code.engine.base import Backend
from clover_code.errors import CloverError
from clover_code.repomap import RepoMap
from clover_code.tools.base import ToolContext
from clover_code.tools.fileio import FileAccess, LocalFiles
from clover_code.tools.mcp_config import declared_servers
from clover_code.tools.registry import default_tools
from clover_code.tools.sandbox.base import Sandbox
from clover_code.tools.sandbox.select import SandboxChoice, choose_from_settings
from clover_code.tools.skill import SkillTool
from clover_code.tools.spill import OutputSpill
from clover_code.tools.workspace import Workspace

if TYPE_CHECKING:
    from clover_code.tools.mcp import McpManager

# Events too frequent or too bulky to be worth a durable line each.
# Committed blocks are left out too: their text is in the assistant message, and
# a durable write per block (up to ~200 a second) would hold up the front end.
_NOT_RECORDED = frozenset(
    {"block_draft", "block_committed", "tool_output", "content_delta", "reasoning_delta"}
)


def _bulky_child_event(event: p.Event) -> bool:
    """A child agent's event of a kind that is not recorded for the parent either."""
    return isinstance(event, p.SubagentEvent) and event.event.type in _NOT_RECORDED


def find_root(cwd: Path) -> tuple[Path, bool]:
    """The workspace root (the git top level, else ``cwd``) and whether it is a git repo."""
    import git

    try:
        repo = git.Repo(cwd, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return cwd.resolve(), False
    top = repo.working_tree_dir
    return (Path(top).resolve(), True) if top else (cwd.resolve(), False)


REPO_MAP_WAIT = 10.0
"""Seconds a session start waits for the repo map; a cold map of a large repo
goes on building (and caching) in the background instead of holding up the start."""


async def _repo_map(root: Path, budget: int) -> tuple[RepoMap | None, str, list[str]]:
    """The shared repo map, its text for the system prompt, and notes."""
    if budget <= 0:
        return None, "", []
    repo_map = RepoMap(root, user_data_dir() / "repomap.sqlite3")
    build = asyncio.ensure_future(asyncio.to_thread(repo_map.render, budget))
    try:
        text = await asyncio.wait_for(asyncio.shield(build), REPO_MAP_WAIT)
    except TimeoutError:
        return (
            repo_map,
            "",
            [
                "the repository map is still being built; it is left out of this session's "
                "prompt (the repo_map tool will have it)."
            ],
        )
    return repo_map, text, []


class Session:
    """Everything one conversation needs; build it with ``Session.open``."""

    def __init__(
        self,
        *,
        settings: Settings,
        session_id: str,
        transcript: Transcript,
        backend: Backend,
        sandbox: Sandbox | None,
        agent: Agent,
        emit: Callable[[p.Event], None],
        checkpoints: CheckpointStore | None = None,
        mcp: McpManager | None = None,
    ) -> None:
        self.settings = settings
        self.id = session_id
        self.transcript = transcript
        self.backend = backend
        self.sandbox = sandbox
        self.agent = agent
        self._emit = emit
        self._turn: asyncio.Task[p.TurnFinished] | None = None
        self.checkpoints = checkpoints
        self._ending = False
        self.checkpoints_held: str | None = None
        """Why snapshots wait for the user's yes (``AllowCheckpoints``), if they do."""
        self.mcp = mcp
        self.skills: list[Skill] = []
        """The skills this session offers (for a ``/skills`` listing)."""
        self.commands: list[CustomCommand] = []
        """Custom commands (``/name args`` prompts expand; for completion and ACP)."""
        self.subagents: SubagentRunner | None = None
        """Starts the task tool's child agents (and keeps what each cost)."""

    @classmethod
    async def open(
        cls,
        settings: Settings,
        backend: Backend,
        cwd: Path,
        *,
        emit: Callable[[p.Event], None],
        approver: Approver | None = None,
        approval_mode: ApprovalMode = "ask",
        resume: Path | None = None,
        sandbox: SandboxChoice | None = None,
        files: FileAccess | None = None,
    ) -> Session:
        """Set up the workspace, sandbox, tools and transcript, and announce the session.

        ``sandbox`` replaces the choice ``settings.sandbox`` would make (the ACP
        front end passes the editor's terminal); ``files`` is how the file tools
        read and write (default: the local disk; ACP: the editor's buffers)."""
        root, is_git = find_root(cwd)
        loop = asyncio.get_running_loop()

        def progress(line: str) -> None:
            # The image build runs in a worker thread; events go out on the loop.
            loop.call_soon_threadsafe(emit, p.Notice(text=f"sandbox: {line}"))

        if sandbox is not None:
            choice = sandbox
        else:
            choice = await asyncio.to_thread(choose_from_settings, settings, root, progress)
        messages: list[dict[str, Any]] = []
        if resume is not None:
            loaded = load(resume)
            session_id = str(loaded.meta["id"])
            messages = loaded.messages
            transcript = Transcript.reopen(resume)
        else:
            session_id = new_session_id()
            transcript = Transcript.create(
                settings.resolved_sessions_dir(),
                {"id": session_id, "cwd": str(root), "model": backend.model, "pid": os.getpid()},
            )

        spill = OutputSpill(transcript.path.with_suffix(".outputs"), settings.output_limit)
        startup_notices: list[str] = []
        checkpoints: CheckpointStore | None = None
        try:
            checkpoints = await asyncio.to_thread(
                CheckpointStore, root, user_data_dir(), session_id
            )
        except CheckpointError as exc:
            startup_notices.append(f"{exc} Undo and diff are off for this session.")
        trust_notice = settings.project_trust.notice() if settings.project_trust else None
        startup_notices += [trust_notice] if trust_notice else []
        held = await asyncio.to_thread(snapshot_warning, root) if checkpoints else None
        if held and approver is not None:  # a front end that cannot be asked: go on, say so
            startup_notices.append(f"{held} Snapshotting it anyway.")
            held = None
        servers, mcp_notices = declared_servers(settings, root)
        startup_notices += mcp_notices
        mcp: McpManager | None = None
        if servers:
            from clover_code.tools.mcp import McpManager  # the SDK takes a second to import

            mcp = McpManager(
                servers,
                root=root,
                call_timeout=settings.mcp_timeout,
                project_policy=settings.mcp_project,
            )
            startup_notices += await mcp.start()
        repo_map, map_text, map_notes = await _repo_map(root, settings.repo_map_tokens)
        startup_notices += map_notes
        tools = default_tools(
            shell=choice.sandbox is not None, spill=spill, repo_map=repo_map, settings=settings
        )
        tools += mcp.tools if mcp is not None else []

        def record_and_emit(event: p.Event) -> None:
            if event.type not in _NOT_RECORDED and not _bulky_child_event(event):
                transcript.event(event.model_dump(mode="json"))
            emit(event)

        hooks = HookRunner.create(
            settings.hooks, root, session_id, transcript.path, record_and_emit
        )
        skills, skill_notes = load_skills(root, user_config_path().parent)
        startup_notices += skill_notes
        commands = load_commands(root, config_dir=user_config_path().parent, notes=startup_notices)
        tools += [SkillTool(skills)] if skills else []
        agents, agent_notes = load_agents(root, user_config_path().parent)
        startup_notices += agent_notes
        subagents = SubagentRunner(agents, settings)
        tools.append(TaskTool(subagents))
        agent = Agent(
            backend=backend,
            hooks=hooks,
            tools=tools,
            context=ToolContext(
                workspace=Workspace(root),
                sandbox=choice.sandbox,
                shell_timeout=settings.shell_timeout,
                output_limit=settings.output_limit,
                files=files or LocalFiles(),
            ),
            settings=settings,
            approver=approver or QueueApprover(record_and_emit),
            approval_mode=approval_mode,
            system_prompt=system_prompt(
                root,
                is_git=is_git,
                shell=choice.sandbox.kind if choice.sandbox else None,
                tools=[t.name for t in tools],
                repo_map=map_text,
                config_dir=user_config_path().parent,
                extra=[skills_prompt(skills), agents_prompt(agents)],
            ),
            emit=record_and_emit,
            record_message=transcript.message,
            record_history=transcript.history,
            spill=spill,
            messages=messages,
        )
        session = cls(
            settings=settings,
            session_id=session_id,
            transcript=transcript,
            backend=backend,
            sandbox=choice.sandbox,
            agent=agent,
            emit=record_and_emit,
            checkpoints=checkpoints,
            mcp=mcp,
        )
        transcript.on_failure = session._transcript_failed
        subagents.attach(agent)
        session.subagents = subagents
        session.checkpoints_held = held
        record_and_emit(
            p.SessionStarted(
                session_id=session_id,
                cwd=str(root),
                engine=backend.name,
                model=backend.model,
                sandbox=choice.sandbox.kind if choice.sandbox else "off",
                approval=approval_mode,
                transcript=str(transcript.path),
                resumed=resume is not None,
                checkpoint_warning=held,
            )
        )
        if choice.notice:
            level = "warning" if choice.warning else "info"
            record_and_emit(p.Notice(level=level, text=choice.notice))
        for text in startup_notices:
            record_and_emit(p.Notice(level="warning", text=text))
        if not is_git:
            record_and_emit(
                p.Notice(
                    text=f"{root} is not a git repository: the agent works and undo uses "
                    "clover-code's own checkpoints, but --auto-commit needs git "
                    "(run `git init` to enable it)."
                )
            )
        if hooks is not None:
            agent.system_prompt += await hooks.session_start(resume is not None)
        session.skills, session.commands = skills, commands
        return session

    def _transcript_failed(self, error: TranscriptError) -> None:
        """A transcript write failed: say so once, and let no turn go on unrecorded."""
        self._emit(p.ErrorEvent(message=str(error), fatal=True))
        self.agent.stop(str(error))

    async def run_turn(self, text: str) -> p.TurnFinished:
        """Run one turn to its end (Interrupt ops cancel it)."""
        self._turn = asyncio.current_task()
        try:
            return await self._checkpointed_turn(text)
        finally:
            self._turn = None

    async def _checkpointed_turn(self, text: str) -> p.TurnFinished:
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
            self.agent.dispatch.allowed_tools = command.allowed_tools if command else None
            return await self.agent.run_turn(command.text if command else text)
        finally:
            self.agent.dispatch.allowed_tools = None
            self._ending = True  # TurnFinished is out; only the checkpoint is left
            if store is not None:
                with contextlib.suppress(CheckpointError):
                    await asyncio.shield(asyncio.to_thread(store.end_turn, turn))

    def _command(self, text: str) -> ExpandedPrompt | None:
        """``text`` expanded when it runs a custom command (``/name args``)."""
        may_read = read_rule(self.agent.dispatch.policy, self.agent.approval_mode)
        root = self.agent.dispatch.context.workspace.root
        expanded = prepare(text, self.commands, root, may_read=may_read)
        for note in expanded.notes if expanded else ():
            self._emit(p.Notice(level="warning", text=note))
        return expanded

    async def submit(self, op: p.Op) -> None:
        """Act on an op from a front end."""
        if not isinstance(op, p.Interrupt | p.ApprovalDecision):
            await self._wind_down()
        if isinstance(op, p.UserInput):
            if self._busy():
                return
            self._ending = False
            self._turn = asyncio.create_task(self._checkpointed_turn(op.text))
            self._turn.add_done_callback(lambda _: setattr(self, "_turn", None))
        elif isinstance(op, p.Interrupt):
            if self._turn is not None:
                self._turn.cancel()
        elif isinstance(op, p.ApprovalDecision):
            approver = self.agent.approver
            if not isinstance(approver, QueueApprover) or not approver.resolve(op):
                self._emit(p.ErrorEvent(message=f"no approval is waiting as '{op.request_id}'."))
        elif isinstance(op, p.SetApprovalMode):
            self.agent.approval_mode = op.mode
            self._emit(p.Notice(text=f"approval mode is now {op.mode}."))
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

    async def close(self) -> None:
        """Stop any running turn, release the engine and sandbox, close the transcript."""
        if self._turn is not None and self._turn is not asyncio.current_task():
            self._turn.cancel()
            await asyncio.gather(self._turn, return_exceptions=True)
        hooks = self.agent.hooks
        if hooks is not None and hooks.has("SessionEnd"):
            await hooks.run("SessionEnd", {"reason": "exit"})
        if self.mcp is not None:
            await self.mcp.aclose()
        if self.sandbox is not None:
            await self.sandbox.close()
        await self.backend.aclose()
        self._emit(p.SessionEnded(session_id=self.id))
        self.transcript.close()
