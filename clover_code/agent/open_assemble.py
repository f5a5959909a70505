"""The steps of ``open_session`` in order, and the session they build announced.

Each step is one of ``open_steps`` (or a module's own opener); what a step opens
is registered with the ``Steps`` it is given, so ``open_session`` can release it
again when a later one fails. The session, once whole, says ``SessionStarted``
and what the user should know about this start.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from clover_code import protocol as p
from clover_code.agent import open_steps as step
from clover_code.agent.checkpoints.session import open_checkpoints
from clover_code.agent.extensions.agent_defs import agents_prompt
from clover_code.agent.extensions.host_programs import HostPrograms
from clover_code.agent.extensions.skills import skills_prompt
from clover_code.agent.extensions.subagents import SubagentRunner
from clover_code.agent.permissions.approval import QueueApprover
from clover_code.agent.session import Session
from clover_code.agent.session_options import SessionOptions
from clover_code.agent.session_repo_map import repo_map_for
from clover_code.agent.steps import Steps
from clover_code.agent.turn.cost import unpriced_budget
from clover_code.agent.turn.instructions import system_prompt
from clover_code.agent.turn.loop import Agent
from clover_code.agent.turn.options import TurnLimits
from clover_code.config.settings import Settings, user_config_path, user_data_dir, worktrees_dir
from clover_code.errors import ConfigError
from clover_code.plugins.active import active_plugins
from clover_code.tools.base import ToolContext
from clover_code.tools.fileio import LocalFiles
from clover_code.tools.sandbox.select import SandboxChoice
from clover_code.tools.spill import OutputSpill
from clover_code.tools.workspace import Workspace


async def assemble(
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
