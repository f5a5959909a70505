"""The MCP tools ``clover-code mcp-server`` offers: run a task, continue a session.

Each call is one headless run (``headless.run_task``): the same settings
layers (the project's loosening settings only once trusted), the same
approver that refuses what it cannot ask (so ``approval`` decides what runs;
anything that would need asking is refused and the model is told why), and
the same result. Calls on one workspace run one at a time (two agents
editing one tree at once would tangle their patches); calls on different
workspaces run side by side. Every call ends within the server's call
timeout, its wait for the workspace included, so one stuck call never holds
up the others for longer than that.

A call works only inside the folders the user gave (``roots.Roots``), and
never in a folder that can never be a workspace (``/``, the home directory,
clover-code's own directories: checked again when the session opens).

The caller is another agent, so what a call may ask for is capped by what
the user started the server with: an approval mode no looser than the
server's ``--approval`` (auto-edit unless given), and commands on the host
(``sandbox = "none"``) only when the server was started with ``--sandbox none``.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, Field

from clover_code import __version__
from clover_code.config.loosening import looser_approval
from clover_code.config.settings import Settings
from clover_code.errors import CloverError, ExitCode
from clover_code.mcp_server.patch import patch_between, tree_of
from clover_code.mcp_server.roots import Roots

__all__ = ["TaskOutcome", "build_server"]

Approval = Literal["read-only", "ask", "auto-edit", "full-auto"]
Sandbox = Literal["auto", "docker", "bwrap", "none"]


class TaskOutcome(BaseModel):
    """What one run ended with."""

    status: str = Field(description="success, error, limit or interrupted.")
    result: str = Field(description="The agent's final answer (partial text on a limit).")
    error: str | None = Field(description="Null on success; else one sentence on what went wrong.")
    patch: str | None = Field(
        description="The run's changes to the workspace as a git diff (null outside git)."
    )
    session_id: str | None = Field(description="Give it to continue_session to go on.")
    exit_code: int = Field(description="What `clover-code --task` would have exited with.")
    warnings: list[str] = Field(default_factory=list)


CALL_GRACE_S = 30.0
"""What a call may take past its task's time limit to close its session and make its patch."""


def build_server(
    base: Mapping[str, Any],
    ceiling: Approval = "auto-edit",
    *,
    roots: Roots,
    call_timeout: float = 1800.0,
) -> MCPServer:
    """The server, with ``base`` (engine flags) under every call's settings,
    ``ceiling`` the loosest approval mode a call may ask for, ``roots`` the
    folders calls may work in and ``call_timeout`` the seconds each call may take."""
    server = MCPServer(
        "clover-code",
        version=__version__,
        # INFO would put a line per model request (httpx) on the client's stderr.
        log_level="WARNING",
        instructions=(
            "clover-code is a coding agent. run_task gives it a task in a directory and "
            "returns its answer and the patch it made; continue_session goes on with a "
            "session. Nothing can be approved interactively: choose the approval mode."
        ),
    )
    locks: dict[Path, asyncio.Lock] = {}

    async def run(
        prompt: str,
        cwd: str,
        approval: Approval,
        sandbox: Sandbox | None,
        session_id: str | None,
    ) -> TaskOutcome:
        refused = _beyond_limits(base, ceiling, approval, sandbox)
        if refused is not None:
            return _failed(refused)
        started = asyncio.get_running_loop().time()
        flags = {**base, "approval": approval}
        if sandbox is not None:
            flags["sandbox"] = sandbox
        call = _prepare(flags, cwd, session_id, roots)
        if isinstance(call, TaskOutcome):
            return call
        lock = locks.setdefault(call.root, asyncio.Lock())
        try:
            async with asyncio.timeout(call_timeout):
                await lock.acquire()
        except TimeoutError:
            return _failed(
                f"another call worked in {call.root} for the whole call timeout of "
                f"{call_timeout:g} s; try again once it has finished."
            )
        try:
            left = call_timeout - (asyncio.get_running_loop().time() - started)
            return await _run(call, prompt, max(1.0, left))
        finally:
            lock.release()

    @server.tool()
    async def run_task(
        prompt: str,
        cwd: str,
        approval: Approval = "auto-edit",
        sandbox: Sandbox | None = None,
    ) -> TaskOutcome:
        """Run a coding task in the directory ``cwd`` (absolute) until the agent is done.

        approval: what may run without asking (read-only, ask, auto-edit, full-auto);
        anything that would need asking is refused, as in headless mode. sandbox:
        where commands run (auto, docker, bwrap, none = the host); unset = the config's.
        Returns the final answer, the patch (git diff of the workspace) and the session id.
        """
        return await run(prompt, cwd, approval, sandbox, None)

    @server.tool()
    async def continue_session(
        session_id: str,
        prompt: str,
        approval: Approval = "auto-edit",
        sandbox: Sandbox | None = None,
    ) -> TaskOutcome:
        """Continue an earlier session (from run_task's session_id) with another prompt,
        in that session's directory; same options and result as run_task."""
        return await run(prompt, "", approval, sandbox, session_id)

    return server


@dataclass(frozen=True, slots=True)
class _Call:
    """What a call runs in: its settings, directory, workspace root and resumed session."""

    settings: Settings
    directory: Path
    root: Path
    resume: Path | None


def _prepare(
    flags: dict[str, Any], cwd: str, session_id: str | None, roots: Roots
) -> _Call | TaskOutcome:
    """The call's settings and workspace, or the outcome saying why it cannot run."""
    from clover_code.agent.open import find_session, load
    from clover_code.config.load import load_settings
    from clover_code.fs.workspace_root import find_root

    try:
        resume: Path | None = None
        if session_id is not None:
            # Where the session ran decides the settings and the workspace.
            sessions = load_settings(flags).resolved_sessions_dir()
            resume = find_session(sessions, session_id, Path.cwd())
            cwd = str(load(resume).meta.get("cwd") or "")
        directory = Path(cwd)
        if not directory.is_absolute() or not directory.is_dir():
            return _failed(f"cwd '{cwd}' is not an absolute path to a directory; give one.")
        root, _ = find_root(directory.resolve())
        outside = roots.refuse(directory, root)
        if outside is not None:
            return _failed(outside)
        settings = load_settings(flags, repo_root=root)
    except CloverError as exc:
        return _failed(str(exc), int(exc.exit_code))
    return _Call(settings, directory, root, resume)


async def _run(call: _Call, prompt: str, seconds: float) -> TaskOutcome:
    """Run the call's task, ending within ``seconds`` (its time limit, made shorter
    to leave room for closing the session and making the patch)."""
    from clover_code.headless.run import run_task
    from clover_code.outcome.result import TaskResult

    limit = max(1.0, seconds - CALL_GRACE_S) if seconds > 2 * CALL_GRACE_S else seconds / 2
    if call.settings.timeout is not None:
        limit = min(limit, call.settings.timeout)
    settings = call.settings.model_copy(update={"timeout": limit})
    out, err = io.StringIO(), io.StringIO()
    try:
        async with asyncio.timeout(seconds):
            before = await tree_of(call.root)
            code = await run_task(
                settings,
                prompt,
                call.directory,
                output_format="json",
                resume=call.resume,
                out=out,
                err=err,
            )
            after = await tree_of(call.root)
            patch = await patch_between(call.root, before, after)
    except TimeoutError:
        return _failed(
            f"the call did not finish within the server's call timeout of {seconds:g} s "
            "(--call-timeout).",
            int(ExitCode.LIMIT_REACHED),
        )
    lines = out.getvalue().strip().splitlines()
    if not lines:
        return _failed(err.getvalue().strip() or "the run ended without a result.", code)
    result = TaskResult.model_validate_json(lines[-1])
    return TaskOutcome(
        status=result.status,
        result=result.result,
        error=result.error,
        patch=patch,
        session_id=result.session_id,
        exit_code=result.exit_code,
        warnings=result.warnings,
    )


def _beyond_limits(
    base: Mapping[str, Any], ceiling: Approval, approval: Approval, sandbox: Sandbox | None
) -> str | None:
    """Why a call asks for more than the user started the server with, or None."""
    if looser_approval(approval, ceiling):
        return (
            f"approval '{approval}' is looser than this server allows ('{ceiling}'); the "
            f"user can start it with --approval {approval} to allow it."
        )
    if sandbox == "none" and base.get("sandbox") != "none":
        return (
            "sandbox 'none' runs commands on the host, which this server does not allow; "
            "the user can start it with --sandbox none to allow it."
        )
    return None


def _failed(message: str, code: int = 2) -> TaskOutcome:
    return TaskOutcome(
        status="error", result="", error=message, patch=None, session_id=None, exit_code=code
    )
