"""The one way a front end opens a session: ``open_session``.

It selects the engine (lending one loaded local checkpoint to every session
of the process through ``Engines``), opens the sandbox, the transcript,
checkpoints, MCP servers and the repo map, and builds the ``Session``. When
a later step fails, everything an earlier step started is released again
before the error goes up. Front ends plug their own adapters in (ACP: the
editor's file system and terminal) instead of importing the engine or the
tools.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clover_code import protocol as p
from clover_code.agent.checkpoints.run_patch import RunPatch
from clover_code.agent.checkpoints.session import open_checkpoints
from clover_code.agent.checkpoints.workspace_check import refuse_workspace, workspace_refusal
from clover_code.agent.engines import Engines, WatchedBackend
from clover_code.agent.extensions.agent_defs import agents_prompt, load_agents
from clover_code.agent.extensions.commands import CustomCommand, load_commands
from clover_code.agent.extensions.hooks import HookRunner, HostRun, run_host_program
from clover_code.agent.extensions.host_programs import HostPrograms, checked_servers
from clover_code.agent.extensions.script_retrust import ScriptRetrust, snapshot_bytes
from clover_code.agent.extensions.skills import load_skills, skills_prompt
from clover_code.agent.extensions.subagents import SubagentRunner
from clover_code.agent.extensions.task_tool import TaskTool
from clover_code.agent.fork import fork_session
from clover_code.agent.permissions.approval import (
    ApprovalRequest,
    Approver,
    Decision,
    QueueApprover,
    RefuseApprover,
    verdict,
)
from clover_code.agent.session import (
    NOT_RECORDED,
    Session,
    bulky_child_event,
    caused,
    repo_map_for,
)
from clover_code.agent.session_list import SessionInfo, iter_infos, list_sessions
from clover_code.agent.steps import Steps
from clover_code.agent.transcript import (
    INTERRUPTED,
    LoadedSession,
    Transcript,
    find_session,
    load,
    new_session_id,
)
from clover_code.agent.turn.instructions import system_prompt
from clover_code.agent.turn.loop import Agent
from clover_code.config.settings import (
    ApprovalMode,
    Settings,
    trust_store,
    user_config_path,
    user_data_dir,
    worktrees_dir,
)
from clover_code.engine.base import Backend
from clover_code.engine.select import open_backend
from clover_code.errors import SandboxUnavailable
from clover_code.fs.workspace_root import find_root
from clover_code.redact import redact
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

__all__ = [
    "INTERRUPTED",
    "ApprovalRequest",
    "Approver",
    "CustomCommand",
    "Decision",
    "Engines",
    "FileAccess",
    "HostRun",
    "LoadedSession",
    "RefuseApprover",
    "RunPatch",
    "Sandbox",
    "Session",
    "SessionInfo",
    "find_session",
    "fork_session",
    "host_command",
    "iter_infos",
    "list_sessions",
    "load",
    "open_session",
    "open_with_backend",
    "verdict",
    "workspace_refusal",
]
# Besides the factory, the few core functions front ends need: the workspace root,
# stored sessions (listed, found, loaded) and the types of the adapters they plug in.

Emit = Callable[[p.Event], None]


def without_secrets(event: p.Event) -> p.Event:
    """``event`` with the secrets masked in the sentences it carries (notices, errors)."""
    if isinstance(event, p.Notice):
        return event.model_copy(update={"text": redact(event.text)})
    if isinstance(event, p.ErrorEvent):
        return event.model_copy(update={"message": redact(event.message)})
    return event


async def open_session(
    settings: Settings,
    cwd: Path,
    *,
    emit: Emit,
    approver: Approver | None = None,
    approval_mode: ApprovalMode = "ask",
    resume: Path | None = None,
    engines: Engines | None = None,
    loading: Callable[[str], None] | None = None,
    strict_sandbox: bool = False,
    engine_notices: bool = False,
    terminal: Sandbox | None = None,
    terminal_notice: str | None = None,
    files: FileAccess | None = None,
    deadline: float | None = None,
) -> Session:
    """Open (or, with ``resume``, reopen) a session in ``cwd``'s workspace.

    - ``engines``: lend a loaded local engine (else the engine is opened for
      this session alone and closed with it); ``loading`` hears that a local
      checkpoint is loading; ``engine_notices``: without ``loading``, what a
      local engine says once it is loaded (its decoder choice) is still said.
    - ``strict_sandbox``: a ``docker`` or ``bwrap`` sandbox asked for
      explicitly is opened before the engine, and ``SandboxUnavailable``
      (exit 3) is raised when it cannot run, instead of going on without a
      shell tool.
    - ``terminal`` (with ``terminal_notice``) replaces the sandbox (ACP's
      editor terminal); ``files`` is how the file tools read and write
      (default: the local disk; ACP: the editor's buffers).
    - ``deadline``: the loop-clock time the session's turns must end by.

    When a step fails, what the earlier steps opened is released before the
    error is raised.
    """
    root, _ = find_root(cwd)
    refuse_workspace(root, settings)
    settings.managed.refuse_start(approval_mode, on_host_terminal=terminal is not None)
    opened = Steps()
    try:
        choice: SandboxChoice | None = None
        if terminal is not None:
            choice = SandboxChoice(terminal, terminal_notice, warning=True)
            opened.add("editor terminal", terminal.close)
        elif strict_sandbox and settings.sandbox in ("docker", "bwrap"):
            choice = await _open_sandbox(settings, root, emit, opened)
            if choice.unavailable is not None:
                raise SandboxUnavailable(choice.unavailable)
        if engines is not None:
            inner = await engines.open(settings, loading)
        else:
            inner = await open_backend(settings, loading)
        opened.add("engine", inner.aclose)
        if engine_notices and loading is None:
            for line in getattr(inner, "notices", ()):  # a local engine's, said once
                emit(p.Notice(text=line))
        session = await open_with_backend(
            settings,
            WatchedBackend(inner),
            cwd,
            emit=emit,
            approver=approver,
            approval_mode=approval_mode,
            resume=resume,
            sandbox=choice,
            files=files,
        )
    except BaseException:
        await asyncio.shield(opened.rollback())
        raise
    session.agent.deadline = deadline
    return session


async def open_with_backend(
    settings: Settings,
    backend: Backend,
    cwd: Path,
    *,
    emit: Emit,
    approver: Approver | None = None,
    approval_mode: ApprovalMode = "ask",
    resume: Path | None = None,
    sandbox: SandboxChoice | None = None,
    files: FileAccess | None = None,
) -> Session:
    """``open_session`` with an engine the caller opened (and closes, if this fails).

    ``sandbox`` replaces the choice ``settings.sandbox`` would make. What this
    opened itself is released again when a step fails.
    """
    refuse_workspace(find_root(cwd)[0], settings)
    settings.managed.refuse_start(approval_mode, on_host_terminal=False)
    opened = Steps()
    try:
        return await _assemble(
            settings,
            backend,
            cwd,
            emit=emit,
            approver=approver,
            approval_mode=approval_mode,
            resume=resume,
            choice=sandbox,
            files=files,
            opened=opened,
        )
    except BaseException:
        await asyncio.shield(opened.rollback())
        raise


async def _open_sandbox(settings: Settings, root: Path, emit: Emit, opened: Steps) -> SandboxChoice:
    """The sandbox ``settings.sandbox`` names (its image build reports as notices)."""
    loop = asyncio.get_running_loop()

    def progress(line: str) -> None:
        # The image build runs in a worker thread; events go out on the loop.
        loop.call_soon_threadsafe(emit, p.Notice(text=f"sandbox: {line}"))

    choice = await asyncio.to_thread(choose_from_settings, settings, root, progress)
    if choice.sandbox is not None:
        opened.add("sandbox", choice.sandbox.close)
    return choice


async def _assemble(
    settings: Settings,
    backend: Backend,
    cwd: Path,
    *,
    emit: Emit,
    approver: Approver | None,
    approval_mode: ApprovalMode,
    resume: Path | None,
    choice: SandboxChoice | None,
    files: FileAccess | None,
    opened: Steps,
) -> Session:
    """The sandbox (unless ``choice`` is one already), transcript, checkpoints, MCP
    servers, repo map and agent; the session announced."""
    root, is_git = find_root(cwd)
    if choice is None:
        choice = await _open_sandbox(settings, root, emit, opened)
    messages: list[dict[str, Any]] = []
    moved: str | None = None
    if resume is not None:
        transcript = Transcript.reopen(resume)  # locked first: nobody appends while it loads
        try:
            loaded = load(resume)
        except BaseException:
            transcript.close()
            raise
        session_id = str(loaded.meta["id"])
        started_in = loaded.meta.get("cwd")
        if isinstance(started_in, str) and Path(started_in) != root:
            # Its files and commands now act on this directory, not the one it began in.
            moved = f"session {session_id} began in {started_in}; it continues here, in {root}."
        messages = loaded.messages
        if loaded.interrupted:
            transcript.history(messages)  # the calls' "interrupted" results, for good
    else:
        session_id = new_session_id()
        transcript = Transcript.create(
            settings.resolved_sessions_dir(),
            {"id": session_id, "cwd": str(root), "model": backend.model, "pid": os.getpid()},
        )
    opened.add("transcript", transcript.close)

    spill = OutputSpill(transcript.path.with_suffix(".outputs"), settings.output_limit)
    startup_notices: list[str] = [moved] if moved else []
    checkpoints, held, notes = await asyncio.to_thread(
        open_checkpoints,
        root,
        user_data_dir(),
        session_id,
        (settings.checkpoint_max_files, settings.checkpoint_max_bytes),
        can_ask=approver is None,
    )
    startup_notices += notes
    trust_notice = settings.project_trust.notice() if settings.project_trust else None
    startup_notices += [trust_notice] if trust_notice else []
    programs = HostPrograms(
        root,
        trusted=settings.project_trust.trusted_scripts() if settings.project_trust else {},
        user_dir=user_config_path().parent,
    )
    servers, mcp_notices = declared_servers(settings, root)
    startup_notices += mcp_notices
    servers = checked_servers(servers, programs, root, startup_notices)
    mcp: McpManager | None = None
    if servers:
        from clover_code.tools.mcp import McpManager  # the SDK takes a second to import

        mcp = McpManager(
            servers,
            root=root,
            call_timeout=settings.mcp_timeout,
            project_policy=settings.mcp_project,
            read_only=settings.mcp_read_only,
        )
        opened.add("MCP servers", mcp.aclose)
        startup_notices += await mcp.start()
    repo_map, map_text, map_notes = await repo_map_for(root, settings.repo_map_tokens)
    startup_notices += map_notes
    tools = default_tools(
        shell=choice.sandbox is not None, spill=spill, repo_map=repo_map, settings=settings
    )
    tools += mcp.tools if mcp is not None else []

    def record_and_emit(event: p.Event) -> None:
        event = without_secrets(caused(event))
        if event.type not in NOT_RECORDED and not bulky_child_event(event):
            transcript.event(event.model_dump(mode="json"))
        emit(event)

    asker = approver or QueueApprover(record_and_emit)
    retrust = None
    report = settings.project_trust
    if approver is None and report is not None:  # a front end that can ask: the app
        retrust = ScriptRetrust(
            root, report, trust_store(), asker, programs, snapshot_bytes(root, programs.trusted)
        ).ask
    hooks = HookRunner.create(
        settings.hooks, root, session_id, transcript.path, record_and_emit, programs, retrust
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
            workspace=Workspace(root, protected=settings.own_dirs(), exempt=(worktrees_dir(),)),
            sandbox=choice.sandbox,
            shell_timeout=settings.shell_timeout,
            output_limit=settings.output_limit,
            files=files or LocalFiles(),
        ),
        settings=settings,
        approver=asker,
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
    session = Session(
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


def host_command(
    settings: Settings, cwd: Path, command: str, timeout: float
) -> Callable[[Mapping[str, Any]], Awaitable[HostRun]]:
    """A configured program the front end runs on the host (the app's status line),
    as a function of the JSON it gets on stdin: checked like a hook before every
    run (a workspace script only with the bytes the user trusted), run in the
    workspace, its process group killed after ``timeout`` seconds."""
    root, _ = find_root(cwd)
    programs = HostPrograms(  # as a session's hooks are checked
        root,
        trusted=settings.project_trust.trusted_scripts() if settings.project_trust else {},
        user_dir=user_config_path().parent,
    )

    async def run(payload: Mapping[str, Any]) -> HostRun:
        return await run_host_program(
            command, payload, programs=programs, root=root, timeout=timeout
        )

    return run
