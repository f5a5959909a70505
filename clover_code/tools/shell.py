"""The ``shell`` tool: run a bash command through the configured sandbox."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from clover_code.errors import ToolError
from clover_code.protocol import CommandRun
from clover_code.tools.arguments import COMMAND_LIMIT
from clover_code.tools.base import Tool, ToolContext, ToolKind, ToolResult
from clover_code.tools.job_tools import job_report, job_text
from clover_code.tools.sandbox.output import cap_head_tail

if TYPE_CHECKING:
    from clover_code.tools.sandbox.git_guard import GitGuard

__all__ = ["FIRST_OUTPUT_WAIT", "ShellArgs", "ShellTool"]

FIRST_OUTPUT_WAIT = 3.0
"""Longest a background start waits for the job's first output (less when it ends)."""
FIRST_OUTPUT_QUIET = 0.3
"""Once output came, the quiet in seconds that ends the wait for more."""


class ShellArgs(BaseModel):
    """Arguments of shell."""

    model_config = ConfigDict(defer_build=True)
    """Built when a call is first validated (the schema is kept: ``schema_cache``)."""

    command: str = Field(description="The bash command line to run.")
    timeout: float | None = Field(
        None,
        gt=0,
        description="Seconds before the command and its child processes are killed "
        "(default and maximum: the configured shell timeout).",
    )
    description: str | None = Field(
        None, description="A few words saying what the command does, shown to the user."
    )
    background: bool = Field(
        False,
        description="Start the command as a background job (a dev server, a watcher) and "
        "return at once with its id and first output. It runs until it ends, job_stop stops "
        "it or the session ends; later commands reach a server it starts (curl "
        "localhost:PORT). Read its output with job_output. No timeout applies.",
    )


def _footer(exit_code: int | None, duration: float, timed_out: bool, timeout: float) -> str:
    if timed_out:
        return (
            f"timed out after {timeout:g} s; the command and its child processes were killed "
            f"({duration:.1f} s)"
        )
    if exit_code is None:
        return f"killed ({duration:.1f} s)"
    return f"exit code {exit_code} ({duration:.1f} s)"


def _capital(sentence: str) -> str:
    return sentence[:1].upper() + sentence[1:]


class ShellTool(Tool[ShellArgs]):
    """Runs a command in the sandbox."""

    name: ClassVar[str] = "shell"
    description: ClassVar[str] = (
        "Run a bash command (`bash -c`) in the workspace and return its output (stdout and "
        "stderr interleaved; long output keeps the start and the end) and exit code. The "
        "working directory persists between calls: a `cd` carries over to the next command. "
        "Environment variables, shell variables and aliases do not persist; set them in the "
        "same command that needs them. For a command that keeps running (a dev server, a "
        "watcher) pass background=true rather than `&`: it becomes a job the next commands "
        "can reach, read with job_output and stop with job_stop. Stdin is "
        "closed, so interactive programs will not work; pass flags like `--yes` instead. "
        "In the Docker and bubblewrap sandboxes `.git` is read-only: git commands that read "
        "work, those that write (commit, add, config) fail; leave commits to the user. "
        "Use the file tools to read, search and edit files."
    )
    kind: ClassVar[ToolKind] = "execute"
    Args = ShellArgs
    argument_limits: ClassVar[Mapping[str, int]] = {"command": COMMAND_LIMIT}

    def summary(self, args: ShellArgs) -> str:
        """The description if given, else the command."""
        return (args.description or args.command)[:120]

    async def run(self, args: ShellArgs, ctx: ToolContext) -> ToolResult:
        """Run the command and report its output, exit code and duration."""
        if ctx.sandbox is None:
            raise ToolError(
                "the shell tool is unavailable because no sandbox is configured; "
                "`--sandbox none` runs commands on the host instead"
            )
        if args.background:
            return await self._start_job(args, ctx)
        timeout = ctx.shell_timeout
        if args.timeout is not None:
            timeout = min(args.timeout, ctx.shell_timeout)
        # Every sandbox (the host and the editor's terminal too) passes here: .git is
        # checked after each command, and put back if the command changed it.
        guard = await asyncio.to_thread(_git_guard().before_command, ctx.workspace.root)
        try:
            result = await ctx.sandbox.exec(args.command, timeout=timeout, on_output=ctx.on_output)
        except ToolError as exc:
            restored = await asyncio.to_thread(guard.check)
            if restored is None:
                raise
            raise ToolError(f"{exc} {_capital(restored)}") from None
        except BaseException:  # cancelled: .git is still put back before the call ends
            await asyncio.shield(asyncio.to_thread(guard.check))
            raise
        restored = await asyncio.to_thread(guard.check)
        output, cut = cap_head_tail(result.output, ctx.output_limit)
        footer = _footer(result.exit_code, result.duration, result.timed_out, timeout)
        body = output if output.strip() else "(no output)\n"
        text = body + ("" if body.endswith("\n") else "\n") + footer
        notices: list[str] = []
        if restored is not None:
            notice = _capital(restored)
            text += f"\n{notice}"
            notices.append(notice)
        display = CommandRun(
            command=args.command,
            description=args.description,
            exit_code=result.exit_code,
            duration=result.duration,
            timed_out=result.timed_out,
            truncated=result.truncated or cut,
            sandbox=ctx.sandbox.kind,
        )
        return ToolResult(text, is_error=result.timed_out, display=display, notices=notices)

    async def _start_job(self, args: ShellArgs, ctx: ToolContext) -> ToolResult:
        """Start the command as a background job; report its id and first output."""
        if ctx.jobs is None:
            raise ToolError(
                "background jobs are not available in this session; run the command "
                "without background=true"
            )
        guard = await asyncio.to_thread(_git_guard().before_command, ctx.workspace.root)
        try:
            job = await ctx.jobs.start(args.command)
            await ctx.jobs.settle(job, FIRST_OUTPUT_WAIT, FIRST_OUTPUT_QUIET)
        finally:
            restored = await asyncio.shield(asyncio.to_thread(guard.check))
        if job.running:
            heading = (
                f"started background job {job.id}: {args.command}\n"
                f'It keeps running: read its output with job_output(id="{job.id}"), stop it '
                f'with job_stop(id="{job.id}"). First output:'
            )
        else:
            heading = f"background job {job.id} already {job.status()}: {args.command}\nOutput:"
        text = job_text(job, heading)
        notices: list[str] = []
        if restored is not None:
            notice = _capital(restored)
            text += f"{notice}\n"
            notices.append(notice)
        failed = job.state == "exited" and job.exit_code != 0
        return ToolResult(text, is_error=failed, display=job_report(job, ctx), notices=notices)


def _git_guard() -> type[GitGuard]:
    """The guard of ``.git``, loaded with the first command (a run may have none)."""
    from clover_code.tools.sandbox.git_guard import GitGuard

    return GitGuard
