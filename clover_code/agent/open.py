"""The one way a front end opens a session: ``open_session``.

A front end says how it wants the session in one ``SessionOptions``. The
factory selects the engine (lending one loaded local checkpoint to every
session of the process through ``Engines``), opens the sandbox, the
transcript, checkpoints, MCP servers and the repo map, and builds the
``Session`` whole. Each step is small and named (``open_steps``); when a
later one fails, everything an earlier one started is released again before
the error goes up. Front ends plug their own adapters in (ACP: the editor's
file system and terminal) instead of importing the engine or the tools.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clover_code import protocol as p
from clover_code.agent import open_steps as step
from clover_code.agent.checkpoints.session import open_checkpoints
from clover_code.agent.checkpoints.workspace_check import refuse_workspace, workspace_refusal
from clover_code.agent.engines import Engines
from clover_code.agent.extensions.agent_defs import agents_prompt
from clover_code.agent.extensions.commands import CustomCommand
from clover_code.agent.extensions.host_programs import HostPrograms
from clover_code.agent.extensions.skills import skills_prompt
from clover_code.agent.extensions.subagents import SubagentRunner
from clover_code.agent.open_steps import without_secrets
from clover_code.agent.permissions.approval import (
    ApprovalRequest,
    Approver,
    Decision,
    QueueApprover,
    RefuseApprover,
    verdict,
)
from clover_code.agent.session import Session
from clover_code.agent.session_repo_map import repo_map_for
from clover_code.agent.steps import Steps
from clover_code.agent.transcript import INTERRUPTED, LoadedSession, find_session, load
from clover_code.agent.turn.cost import unpriced_budget
from clover_code.agent.turn.instructions import system_prompt
from clover_code.agent.turn.loop import Agent
from clover_code.agent.turn.options import TurnLimits
from clover_code.config.sections import HookConfig, HookEvent
from clover_code.config.settings import (
    ApprovalMode,
    Settings,
    user_config_path,
    user_data_dir,
    worktrees_dir,
)
from clover_code.engine.base import Backend
from clover_code.errors import ConfigError
from clover_code.fs.workspace_root import find_root
from clover_code.plugins.active import active_plugins
from clover_code.tools.base import Tool, ToolContext
from clover_code.tools.fileio import FileAccess, LocalFiles
from clover_code.tools.sandbox.base import Sandbox
from clover_code.tools.sandbox.select import SandboxChoice
from clover_code.tools.spill import OutputSpill
from clover_code.tools.workspace import Workspace

if TYPE_CHECKING:
    from clover_code.agent.checkpoints.run_patch import RunPatch
    from clover_code.agent.export import EXPORT_FORMATS, ExportFormat, format_for, write_export
    from clover_code.agent.extensions.hook_functions import HookFunction, HookReply
    from clover_code.agent.extensions.hook_process import HookRun
    from clover_code.agent.fork import fork_session
    from clover_code.agent.session_list import SessionInfo, iter_infos, list_sessions

__all__ = [
    "EXPORT_FORMATS",
    "INTERRUPTED",
    "ApprovalRequest",
    "Approver",
    "CustomCommand",
    "Decision",
    "Engines",
    "ExportFormat",
    "FileAccess",
    "HookFunction",
    "HookReply",
    "HookRun",
    "LoadedSession",
    "RefuseApprover",
    "RunPatch",
    "Sandbox",
    "Session",
    "SessionInfo",
    "SessionOptions",
    "find_session",
    "fork_session",
    "format_for",
    "host_command",
    "iter_infos",
    "list_sessions",
    "load",
    "open_session",
    "plugin_statusline",
    "verdict",
    "without_secrets",
    "workspace_refusal",
    "write_export",
]
# Besides the factory, the few core functions front ends need: the workspace root,
# stored sessions (listed, found, loaded, exported) and the types of the adapters they
# plug in.

_LATER = {
    "RunPatch": "clover_code.agent.checkpoints.run_patch",
    "HookFunction": "clover_code.agent.extensions.hook_functions",
    "HookReply": "clover_code.agent.extensions.hook_functions",
    "HookRun": "clover_code.agent.extensions.hook_process",
    "EXPORT_FORMATS": "clover_code.agent.export",
    "ExportFormat": "clover_code.agent.export",
    "format_for": "clover_code.agent.export",
    "write_export": "clover_code.agent.export",
    "fork_session": "clover_code.agent.fork",
    "SessionInfo": "clover_code.agent.session_list",
    "iter_infos": "clover_code.agent.session_list",
    "list_sessions": "clover_code.agent.session_list",
}
"""The names above that a session never needs, imported when a front end first asks (the
run's patch: only the headless runner reports it; hook functions: only a program that
embeds the agent gives them)."""


def __getattr__(name: str) -> Any:
    home = _LATER.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


@dataclass(frozen=True, kw_only=True)
class SessionOptions:
    """How a front end wants its session opened; only ``emit`` is required."""

    emit: p.Emit
    """Where the session's events go."""
    approver: Approver | None = None
    """Who answers approval requests; None: the front end answers the
    ``ApprovalRequested`` events with ``ApprovalDecision`` ops (the app)."""
    approval_mode: ApprovalMode = "ask"
    resume: Path | None = None
    """The transcript of a session to continue."""
    deadline: float | None = None
    """The loop-clock time the session's turns must end by."""
    files: FileAccess | None = None
    """How the file tools read and write (default: the local disk; ACP: the editor's
    buffers)."""
    backend: Backend | None = None
    """An engine the caller opened, and closes if the start fails; None: the one
    ``settings`` choose is opened for the session (and released if the start fails)."""
    engines: Engines | None = None
    """The process's loaded local engines: the session borrows one instead of
    loading the checkpoint again."""
    loading: Callable[[str], None] | None = None
    """Hears that a local checkpoint is loading (and what it says once loaded)."""
    engine_notices: bool = False
    """Without ``loading``, what a local engine says once it is loaded (its decoder
    choice) is still said, as notices."""
    confidence_notice: bool = False
    """The front end's output carries fill confidences: a warning says once when the
    engine reports none (the app says it itself, when its confidence view is on)."""
    strict_sandbox: bool = False
    """A ``docker`` or ``bwrap`` sandbox asked for explicitly is opened before the
    engine, and ``SandboxUnavailable`` (exit 3) is raised when it cannot run,
    instead of going on without a shell tool."""
    terminal: Sandbox | None = None
    """Replaces the sandbox (ACP's editor terminal); ``terminal_notice`` is said."""
    terminal_notice: str | None = None
    tools: Sequence[Tool[Any]] = ()
    """The front end's own tools, offered beside the built-in ones (an embedding
    program's Python functions); approvals and rules apply to them by their kind."""
    hooks: Mapping[HookEvent, Sequence[HookFunction]] = field(default_factory=dict)
    """The front end's own hooks (Python functions), run after the configured ones."""
    wait_for_background: bool = False
    """No turn ends with a final answer while a background child agent still runs: the
    turn waits for it and the model hears its report first (headless)."""


async def open_session(settings: Settings, cwd: Path, options: SessionOptions) -> Session:
    """Open (or, with ``options.resume``, reopen) a session in ``cwd``'s workspace.

    When a step fails, what the earlier steps opened is released, newest
    first, before the error is raised.
    """
    root, is_git = find_root(cwd)
    refuse_workspace(root, settings)
    settings.managed.refuse_start(
        options.approval_mode, on_host_terminal=options.terminal is not None
    )
    hooks_off = settings.managed.feature_clause("hooks")
    if hooks_off is not None and any(options.hooks.values()):
        raise ConfigError(f"the program's hook functions are refused because {hooks_off}.")
    opened = Steps()
    try:
        return await _assemble(settings, root, is_git, options, opened)
    except BaseException:
        await asyncio.shield(opened.rollback())
        raise


async def _assemble(
    settings: Settings, root: Path, is_git: bool, options: SessionOptions, opened: Steps
) -> Session:
    """The steps of ``open_session``, in order, and the session announced."""
    choice = await step.sandbox_before_engine(
        settings,
        root,
        options.emit,
        terminal=options.terminal,
        terminal_notice=options.terminal_notice,
        strict=options.strict_sandbox,
        opened=opened,
    )
    backend = options.backend  # the caller's, released by the caller
    if backend is None:
        backend = await step.engine(
            settings,
            options.emit,
            engines=options.engines,
            loading=options.loading,
            notices=options.engine_notices,
            opened=opened,
        )
    unpriced = unpriced_budget(settings.pricing, settings.max_cost, backend.name, backend.model)
    if unpriced is not None:
        raise ConfigError(unpriced)
    if choice is None:
        choice = await step.sandbox(settings, root, options.emit, opened)
    # The model's own settings: its [models] entry's window and tool-call reading.
    current = settings.for_model(backend.model) if backend.model else settings
    record = step.transcript(settings, root, backend.model, options.resume, opened)
    notices = record.notices
    checkpoints, held, notes = await asyncio.to_thread(
        open_checkpoints,
        root,
        user_data_dir(),
        record.session_id,
        (settings.checkpoint_max_files, settings.checkpoint_max_bytes),
        can_ask=options.approver is None,
    )
    notices += notes
    trust_notice = settings.project_trust.notice() if settings.project_trust else None
    notices += [trust_notice] if trust_notice else []
    programs = HostPrograms(
        root,
        trusted=settings.project_trust.trusted_scripts() if settings.project_trust else {},
        user_dir=user_config_path().parent,
    )
    plugins = await asyncio.to_thread(active_plugins, settings, root)
    notices += plugins.notices
    mcp = await step.mcp_servers(settings, root, programs, notices, opened, plugins)
    servers = step.language_servers(settings, root, choice, programs, opened)
    repo_map, map_text, map_notes = await repo_map_for(root, settings.repo_map_tokens)
    notices += map_notes
    emit = step.recorded(record.transcript, options.emit)
    approver = options.approver or QueueApprover(emit)
    can_ask = options.approver is None
    hooks = step.hooks(
        settings,
        root,
        record,
        emit,
        programs,
        approver,
        can_ask=can_ask,
        more=[plugins.hooks(), options.hooks],
    )
    found = step.extensions(root, notices, plugins)
    subagents = SubagentRunner(found.agents, settings)
    spill = OutputSpill(record.transcript.path.with_suffix(".outputs"), settings.output_limit)
    tools = step.tools(
        settings, choice, spill, repo_map, mcp, found.skills, subagents, options.tools, servers
    )
    agent = Agent(
        backend=backend,
        hooks=hooks,
        tools=tools,
        context=ToolContext(
            workspace=Workspace(root, protected=settings.own_dirs(), exempt=(worktrees_dir(),)),
            sandbox=choice.sandbox,
            shell_timeout=settings.shell_timeout,
            output_limit=settings.output_limit,
            files=options.files or LocalFiles(),
            jobs=step.jobs(settings, choice.sandbox, spill, emit),
            diagnostics=servers,
        ),
        settings=current,
        limits=TurnLimits(settings.max_turns, settings.timeout, options.deadline),
        approver=approver,
        approval_mode=options.approval_mode,
        system_prompt=system_prompt(
            root,
            is_git=is_git,
            shell=choice.sandbox.kind if choice.sandbox else None,
            tools=[t.name for t in tools],
            repo_map=map_text,
            config_dir=user_config_path().parent,
            extra=[skills_prompt(found.skills), agents_prompt(found.agents)],
        ),
        emit=emit,
        record_message=record.transcript.message,
        record_history=record.transcript.history,
        commit=record.transcript.commit,
        spill=spill,
        messages=record.messages,
        background=subagents.background,
        confidence_notice=options.confidence_notice,
    )
    subagents.attach(agent)
    session = Session(
        settings=current,
        opened_with=settings,
        session_id=record.session_id,
        transcript=record.transcript,
        backend=backend,
        sandbox=choice.sandbox,
        agent=agent,
        emit=emit,
        checkpoints=checkpoints,
        checkpoints_held=held,
        mcp=mcp,
        skills=found.skills,
        commands=found.commands,
        subagents=subagents,
        plugin_skills=plugins.parts("skills"),
        language_servers=servers,
        wait_for_background=options.wait_for_background,
    )
    _announce(session, root, is_git, options, choice, notices)
    if record.model is not None and record.model != backend.model:
        await session.model.resume(agent, record.model)  # where the session had switched to
    if hooks is not None:
        agent.system_prompt += await hooks.session_start(options.resume is not None)
    return session


def plugin_statusline(settings: Settings, cwd: Path) -> tuple[str | None, str | None]:
    """The status-line command the plugins of a session in ``cwd`` bring (for a front
    end whose user set none), and a note when several bring one."""
    root, _ = find_root(cwd)
    return active_plugins(settings, root).statusline_command()


def _announce(
    session: Session,
    root: Path,
    is_git: bool,
    options: SessionOptions,
    choice: SandboxChoice,
    notices: list[str],
) -> None:
    """``SessionStarted``, then what the user should know about this start."""
    emit = session.agent.emit
    emit(
        p.SessionStarted(
            session_id=session.id,
            cwd=str(root),
            engine=session.backend.name,
            model=session.backend.model,
            sandbox=choice.sandbox.kind if choice.sandbox else "off",
            approval=options.approval_mode,
            transcript=str(session.transcript.path),
            resumed=options.resume is not None,
            checkpoint_warning=session.checkpoints_held,
        )
    )
    if choice.notice:
        emit(p.Notice(level="warning" if choice.warning else "info", text=choice.notice))
    for text in notices:
        emit(p.Notice(level="warning", text=text))
    if not is_git:
        emit(
            p.Notice(
                text=f"{root} is not a git repository: the agent works and undo uses "
                "clover-code's own checkpoints, but --auto-commit needs git "
                "(run `git init` to enable it)."
            )
        )


def host_command(
    settings: Settings, cwd: Path, command: str, timeout: float
) -> Callable[[Mapping[str, Any]], Awaitable[HookRun]]:
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

    async def run(payload: Mapping[str, Any]) -> HookRun:
        from clover_code.agent.extensions.hook_process import run_program

        config = HookConfig(command=command, timeout=timeout)  # run exactly as a hook is
        return await run_program(config, payload, root=root, programs=programs, retrust=None)

    return run
