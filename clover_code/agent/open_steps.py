"""The steps ``open_session`` (``agent/open.py``) takes, each small and named.

A step that opens something adds how to release it to the start's ``Steps``
(``opened``); ``open_session`` rolls them all back, newest first, when a later
step fails. Steps that find things the user should know add a sentence to
``notices``, said once the session is announced.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clover_code import protocol as p
from clover_code.agent.engines import Engines
from clover_code.agent.extensions.agent_defs import AgentDefinition, load_agents
from clover_code.agent.extensions.commands import CustomCommand, load_commands
from clover_code.agent.extensions.hooks import AnyHook, HookRunner
from clover_code.agent.extensions.host_programs import (
    HostPrograms,
    Prepared,
    checked_servers,
)
from clover_code.agent.extensions.skills import Skill, load_skills
from clover_code.agent.extensions.subagents import SubagentRunner
from clover_code.agent.extensions.task_tool import task_tools
from clover_code.agent.permissions.approval import Approver
from clover_code.agent.session_events import NOT_RECORDED, bulky_child_event, caused
from clover_code.agent.steps import Steps
from clover_code.agent.transcript import Transcript, new_session_id
from clover_code.config.settings import HookEvent, Settings, trust_store, user_config_path
from clover_code.engine.base import Backend, EngineWarning, Message
from clover_code.engine.select import open_backend
from clover_code.errors import ConfigError, SandboxUnavailable
from clover_code.fs.named_files import on_path
from clover_code.plugins.active import ActivePlugins
from clover_code.redact import redact
from clover_code.repomap import RepoMap
from clover_code.tools.base import Tool
from clover_code.tools.jobs import JobTable
from clover_code.tools.lsp.manager import HostCheck, LanguageServers
from clover_code.tools.lsp.servers import server_specs
from clover_code.tools.lsp.tool import DiagnosticsTool
from clover_code.tools.mcp_config import DeclaredServer, declared_servers
from clover_code.tools.registry import default_tools
from clover_code.tools.sandbox.base import Sandbox
from clover_code.tools.sandbox.select import SandboxChoice, choose_from_settings
from clover_code.tools.skill import SkillTool
from clover_code.tools.spill import OutputSpill

if TYPE_CHECKING:
    from clover_code.tools.mcp import McpManager

__all__ = [
    "Found",
    "Record",
    "engine",
    "extensions",
    "hooks",
    "jobs",
    "language_servers",
    "mcp_servers",
    "recorded",
    "sandbox",
    "sandbox_before_engine",
    "tools",
    "transcript",
    "without_secrets",
]


@dataclass(slots=True)
class Record:
    """The session's transcript and what it holds (a resumed session's history)."""

    transcript: Transcript
    session_id: str
    messages: list[Message]
    notices: list[str]
    """What the user should know about it (a session resumed in another directory)."""
    model: str | None = None
    """The model a resumed session had switched to (None: it never switched)."""


@dataclass(slots=True)
class Found:
    """What the workspace and the user's config dir define for the session."""

    skills: list[Skill]
    commands: list[CustomCommand]
    agents: dict[str, AgentDefinition]


async def sandbox_before_engine(
    settings: Settings,
    root: Path,
    emit: p.Emit,
    *,
    terminal: Sandbox | None,
    terminal_notice: str | None,
    strict: bool,
    opened: Steps,
) -> SandboxChoice | None:
    """The editor's ``terminal``, or, when ``strict``, a docker or bwrap sandbox asked
    for explicitly (``SandboxUnavailable`` when it cannot run, before the engine
    loads); else None: the sandbox opens after the engine."""
    if terminal is not None:
        opened.add("editor terminal", terminal.close)
        return SandboxChoice(terminal, terminal_notice, warning=True)
    if not strict or settings.sandbox not in ("docker", "bwrap"):
        return None
    choice = await sandbox(settings, root, emit, opened)
    if choice.unavailable is not None:
        raise SandboxUnavailable(choice.unavailable)
    return choice


async def engine(
    settings: Settings,
    emit: p.Emit,
    *,
    engines: Engines | None,
    loading: Callable[[str], None] | None,
    notices: bool,
    opened: Steps,
) -> Backend:
    """A loan of the process's loaded engine (``engines``), or one opened for this
    session alone; ``notices``: what a local engine says once loaded is said even
    without ``loading``."""
    if engines is not None:
        backend = await engines.open(settings, loading)
    else:
        backend = await open_backend(settings, loading)
    opened.add("engine", backend.aclose)
    if notices and loading is None:
        for line in backend.notices:  # a local engine's, said once
            emit(p.Notice(level=EngineWarning.level_of(line), text=line))
    return backend


async def sandbox(settings: Settings, root: Path, emit: p.Emit, opened: Steps) -> SandboxChoice:
    """The sandbox ``settings.sandbox`` names (its image build reports as notices)."""
    loop = asyncio.get_running_loop()

    def progress(line: str) -> None:
        # The image build runs in a worker thread; events go out on the loop.
        loop.call_soon_threadsafe(emit, p.Notice(text=f"sandbox: {line}"))

    choice = await asyncio.to_thread(choose_from_settings, settings, root, progress)
    if choice.sandbox is not None:
        opened.add("sandbox", choice.sandbox.close)
    return choice


def transcript(
    settings: Settings, root: Path, model: str, resume: Path | None, opened: Steps
) -> Record:
    """A new transcript, or the ``resume``d one (locked first: nobody appends while it
    loads) with its history."""
    if resume is None:
        session_id = new_session_id()
        created = Transcript.create(
            settings.resolved_sessions_dir(),
            {"id": session_id, "cwd": str(root), "model": model, "pid": os.getpid()},
        )
        opened.add("transcript", created.close)
        return Record(created, session_id, [], [])
    reopened = Transcript.reopen(resume)
    opened.add("transcript", reopened.close)
    loaded = reopened.loaded
    assert loaded is not None  # reopen reads the session it reopens
    session_id = str(loaded.meta["id"])
    notices = []
    started_in = loaded.meta.get("cwd")
    if isinstance(started_in, str) and Path(started_in) != root:
        # Its files and commands now act on this directory, not the one it began in.
        notices.append(f"session {session_id} began in {started_in}; it continues here, in {root}.")
    if loaded.interrupted:
        reopened.history(loaded.messages)  # the calls' "interrupted" results, for good
    return Record(reopened, session_id, loaded.messages, notices, loaded.model)


async def mcp_servers(
    settings: Settings,
    root: Path,
    programs: HostPrograms,
    notices: list[str],
    opened: Steps,
    plugins: ActivePlugins,
) -> McpManager | None:
    """The MCP servers the settings, the plugins and the project declare, started
    (None: none)."""
    extra = [
        DeclaredServer(name, config, f"plugin {plugin}")
        for name, config, plugin in plugins.mcp_servers()
    ]
    servers, declared_notices = declared_servers(settings, root, extra)
    notices += declared_notices
    servers = checked_servers(servers, programs, root, notices)
    if not servers:
        return None
    from clover_code.tools.mcp import McpManager  # the SDK takes a second to import

    mcp = McpManager(
        servers,
        root=root,
        call_timeout=settings.mcp_timeout,
        project_policy=settings.mcp_project,
        read_only=settings.mcp_read_only,
    )
    opened.add("MCP servers", mcp.aclose)
    notices += await mcp.start()
    return mcp


def without_secrets(event: p.Event) -> p.Event:
    """``event`` with the secrets masked in the sentences it carries (notices, errors)."""
    if isinstance(event, p.Notice):
        return event.model_copy(update={"text": redact(event.text)})
    if isinstance(event, p.ErrorEvent):
        return event.model_copy(update={"message": redact(event.message)})
    return event


def recorded(record: Transcript, emit: p.Emit) -> p.Emit:
    """``emit`` for the session's events: each caused by the op at hand, without
    secrets, and written to ``record`` unless too frequent or bulky."""

    def record_and_emit(event: p.Event) -> None:
        event = without_secrets(caused(event))
        if event.type not in NOT_RECORDED and not bulky_child_event(event):
            record.event(event.model_dump(mode="json"))
        emit(event)

    return record_and_emit


def hooks(
    settings: Settings,
    root: Path,
    record: Record,
    emit: p.Emit,
    programs: HostPrograms,
    approver: Approver,
    *,
    can_ask: bool,
    more: Sequence[Mapping[HookEvent, Sequence[AnyHook]]] = (),
) -> HookRunner | None:
    """The configured hooks, then those ``more`` adds (the plugins', the front end's
    functions), in that order (None: none); when the front end ``can_ask`` (the app),
    a trusted hook script that changed is asked about again before it runs."""
    joined: dict[HookEvent, list[AnyHook]] = {e: list(h) for e, h in settings.hooks.items()}
    for table in more:
        for event, added in table.items():
            joined.setdefault(event, []).extend(added)
    if not any(joined.values()):
        return None  # no hook: no script to snapshot for the question either
    retrust = None
    report = settings.project_trust
    if can_ask and report is not None:
        from clover_code.agent.extensions.script_retrust import ScriptRetrust, snapshot_bytes

        retrust = ScriptRetrust(
            root, report, trust_store(), approver, programs, snapshot_bytes(root, programs.trusted)
        ).ask
    return HookRunner.create(
        joined, root, record.session_id, record.transcript.path, emit, programs, retrust
    )


def jobs(
    settings: Settings, sandbox: Sandbox | None, spill: OutputSpill, emit: p.Emit
) -> JobTable | None:
    """The session's background jobs (None without a sandbox: no shell tool); each change
    is reported as a ``JobsChanged`` event."""
    if sandbox is None:
        return None

    def changed(infos: list[p.JobInfo]) -> None:
        emit(p.JobsChanged(jobs=infos))

    return JobTable(
        sandbox,
        max_jobs=settings.max_jobs,
        # What a read returns stays under the limit with its heading, so it is not spilled.
        output_limit=max(1000, settings.output_limit - 1000),
        spill=spill,
        on_change=changed,
    )


def tools(
    settings: Settings,
    choice: SandboxChoice,
    spill: OutputSpill,
    repo_map: RepoMap | None,
    mcp: McpManager | None,
    skills: list[Skill],
    subagents: SubagentRunner,
    own: Sequence[Tool[Any]] = (),
    servers: LanguageServers | None = None,
) -> list[Tool[Any]]:
    """The session's tools: the built-in ones (the shell only with a sandbox), the MCP
    servers', the skill loader when there are skills, the task tool, diagnostics with
    language servers, and the front end's ``own`` (an embedding program's functions;
    ``ConfigError`` when one takes a name another tool has)."""
    found: list[Tool[Any]] = default_tools(
        shell=choice.sandbox is not None, spill=spill, repo_map=repo_map, settings=settings
    )
    found += [DiagnosticsTool()] if servers is not None and servers.usable else []
    found += mcp.tools if mcp is not None else []
    found += [SkillTool(skills)] if skills else []
    found += task_tools(subagents)
    taken = {tool.name for tool in found}
    for tool in own:
        if tool.name in taken:
            raise ConfigError(
                f"the tool name '{tool.name}' is taken by another tool of the session; "
                "give your tool another name."
            )
        taken.add(tool.name)
        found.append(tool)
    return found


def extensions(root: Path, notices: list[str], plugins: ActivePlugins) -> Found:
    """The skills, custom commands and agent definitions of the workspace, the user's
    config dir and the plugins; what is wrong with any goes to ``notices``."""
    config_dir = user_config_path().parent
    skills, skill_notes = load_skills(root, config_dir, plugins.parts("skills"))
    notices += skill_notes
    commands = load_commands(
        root, config_dir=config_dir, notes=notices, plugins=plugins.parts("commands")
    )
    agents, agent_notes = load_agents(root, config_dir, plugins.parts("agents"))
    notices += agent_notes
    return Found(skills, commands, agents)


HOST_UNTRUSTED = (
    "with --sandbox none its server would run on this machine and load the project's "
    "code, which needs a trusted project (trust its .clover/config.toml, or set "
    "trust_project_settings = true in your user config)"
)


def language_servers(
    settings: Settings, root: Path, choice: SandboxChoice, programs: HostPrograms, opened: Steps
) -> LanguageServers | None:
    """The session's language servers (none start yet: each starts with the first file
    of its language): in the sandbox, or on the host only for a trusted project and
    after the host-program check. None without a sandbox or a language to check."""
    sandbox = choice.sandbox
    if sandbox is None:
        return None
    specs, problems = server_specs(settings.lsp)
    if not specs:
        return None
    off: str | None = None
    host_check: HostCheck | None = None
    if sandbox.kind == "host":
        report = settings.project_trust
        if report is not None and report.project_trusted():
            host_check = _host_check(programs)
        else:
            off = HOST_UNTRUSTED
    servers = LanguageServers(
        sandbox,
        root,
        specs,
        severity=settings.lsp_severity,
        wait=settings.lsp_wait,
        host_check=host_check,
        off=off,
        notices=problems,
    )
    opened.add("language servers", servers.close)
    return servers


def _host_check(programs: HostPrograms) -> HostCheck:
    """A server's command line checked as any program the host runs for the user."""

    def check(argv: Sequence[str]) -> list[str] | str | None:
        program = argv[0]
        if "/" in program:
            if not Path(program).is_file():
                return None
        elif on_path(program, programs.path_env) is None:
            return None
        prepared = programs.prepare(list(argv))
        return prepared.argv if isinstance(prepared, Prepared) else prepared.reason

    return check
