"""The one way a front end opens a session: ``open_session``.

A front end says how it wants the session in one ``SessionOptions``
(``session_options``). The factory selects the engine (lending one loaded
local checkpoint to every session of the process through ``Engines``), opens
the sandbox, the transcript, checkpoints, MCP servers and the repo map, and
builds the ``Session`` whole (``open_assemble``). Each step is small and named
(``open_steps``); when a later one fails, everything an earlier one started
is released again before the error goes up. Front ends plug their own
adapters in (ACP: the editor's file system and terminal) instead of importing
the engine or the tools.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clover_code.agent.checkpoints.workspace_check import refuse_workspace, workspace_refusal
from clover_code.agent.engines import Engines
from clover_code.agent.extensions.commands import CustomCommand
from clover_code.agent.extensions.host_programs import HostPrograms
from clover_code.agent.open_assemble import assemble
from clover_code.agent.open_steps import without_secrets
from clover_code.agent.permissions.approval import (
    ApprovalRequest,
    Approver,
    Decision,
    RefuseApprover,
    verdict,
)
from clover_code.agent.session import Session
from clover_code.agent.session_options import SessionOptions
from clover_code.agent.steps import Steps
from clover_code.agent.transcript import INTERRUPTED, LoadedSession, find_session, load
from clover_code.config.sections import HookConfig
from clover_code.config.settings import Settings, user_config_path
from clover_code.errors import ConfigError
from clover_code.fs.workspace_root import find_root
from clover_code.plugins.active import active_plugins
from clover_code.tools.fileio import FileAccess
from clover_code.tools.sandbox.base import Sandbox

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
        return await assemble(settings, root, is_git, options, opened)
    except BaseException:
        await asyncio.shield(opened.rollback())
        raise


def plugin_statusline(settings: Settings, cwd: Path) -> tuple[str | None, str | None]:
    """The status-line command the plugins of a session in ``cwd`` bring (for a front
    end whose user set none), and a note when several bring one."""
    root, _ = find_root(cwd)
    return active_plugins(settings, root).statusline_command()


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
