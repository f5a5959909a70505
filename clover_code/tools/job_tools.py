"""``job_output`` and ``job_stop``: read and stop the session's background jobs.

The jobs are those the shell tool started with ``background: true``
(``tools/jobs.py``). Reading output changes nothing (a read tool, allowed in
every mode); stopping reaches only a job this session started, so it needs no
approval either.
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from clover_code import protocol as p
from clover_code.errors import ToolError
from clover_code.tools.base import Tool, ToolContext, ToolKind, ToolResult
from clover_code.tools.jobs import Job, JobTable, job_key

__all__ = ["JobOutputArgs", "JobOutputTool", "JobStopArgs", "JobStopTool", "job_report", "job_text"]

_ID = "The job's id, as the shell tool reported it (e.g. 1)."


def _job_number(value: object) -> object:
    """``"1"``, ``"job 1"`` and ``"job-1"`` as the number 1; a boolean refused."""
    if isinstance(value, bool):
        raise ValueError("a job id is a number such as 1")
    if isinstance(value, str) and job_key(value).isdigit():
        return int(job_key(value))
    return value


JobId = Annotated[int, BeforeValidator(_job_number), Field(ge=1, le=1_000_000)]
"""A job id as the model may write it: ``1``, ``"1"`` or ``"job 1"``."""


def _table(ctx: ToolContext) -> JobTable:
    if ctx.jobs is None:
        raise ToolError("background jobs are not available: this session has no shell tool.")
    return ctx.jobs


def job_report(job: Job, ctx: ToolContext) -> p.JobReport:
    """The typed details front ends show for a call about ``job``."""
    return p.JobReport(
        job_id=job.id,
        command=job.command,
        state=job.state,
        exit_code=job.exit_code,
        sandbox=ctx.sandbox.kind if ctx.sandbox is not None else "",
    )


def job_text(job: Job, heading: str) -> str:
    """``heading``, then the output not read yet (or a note that there is none), and
    where the whole output is saved when this was cut."""
    output, cut = job.take()
    body = output if output.strip() else "(no new output)\n"
    text = f"{heading}\n{body}" + ("" if body.endswith("\n") else "\n")
    if cut and job.log_path is not None:
        text += (
            f"[the output was cut; all of it so far is saved: read it with "
            f"read_output(id='job-{job.id}', offset=LINE, limit=LINES)]\n"
        )
    return text


class JobOutputArgs(BaseModel):
    """Arguments of job_output."""

    model_config = ConfigDict(defer_build=True)
    """Built when a call is first validated (the schema is kept: ``schema_cache``)."""

    id: JobId = Field(description=_ID)
    wait_seconds: float = Field(
        0,
        ge=0,
        description="Wait up to this many seconds for the job to end before reading "
        "(default 0: read at once; at most the shell timeout).",
    )


class JobOutputTool(Tool[JobOutputArgs]):
    """Reads what a background job printed since the last read, and how it stands."""

    name: ClassVar[str] = "job_output"
    description: ClassVar[str] = (
        "Read the output a background job (started with shell background=true) printed "
        "since the last read, and whether it is still running or exited with what code. "
        "wait_seconds waits for the job to end first, up to that long."
    )
    kind: ClassVar[ToolKind] = "read"
    Args = JobOutputArgs

    def summary(self, args: JobOutputArgs) -> str:
        """The job's id, and the wait when there is one."""
        wait = f", waiting up to {args.wait_seconds:g} s" if args.wait_seconds else ""
        return f"job {args.id}{wait}"

    async def run(self, args: JobOutputArgs, ctx: ToolContext) -> ToolResult:
        """Wait as asked, then report the job and its new output."""
        jobs = _table(ctx)
        job = jobs.get(str(args.id))
        await jobs.wait(job, min(args.wait_seconds, ctx.shell_timeout))
        await jobs.refresh(job)
        text = job_text(job, f"job {job.id} is {job.status()}: {job.command}")
        failed = job.state == "exited" and job.exit_code != 0
        return ToolResult(text, is_error=failed, display=job_report(job, ctx))


class JobStopArgs(BaseModel):
    """Arguments of job_stop."""

    model_config = ConfigDict(defer_build=True)
    """Built when a call is first validated (the schema is kept: ``schema_cache``)."""

    id: JobId = Field(description=_ID)


class JobStopTool(Tool[JobStopArgs]):
    """Stops a background job of this session (its whole process group)."""

    name: ClassVar[str] = "job_stop"
    description: ClassVar[str] = (
        "Stop a background job this session started (it and every process it started), "
        "and return the output it printed since the last read."
    )
    kind: ClassVar[ToolKind] = "other"
    Args = JobStopArgs

    def summary(self, args: JobStopArgs) -> str:
        """The job's id."""
        return f"job {args.id}"

    async def run(self, args: JobStopArgs, ctx: ToolContext) -> ToolResult:
        """Stop the job if it runs, and report how it ended."""
        jobs = _table(ctx)
        job = jobs.get(str(args.id))
        await jobs.refresh(job)
        if await jobs.stop(job, "by job_stop"):
            heading = f"stopped job {job.id}: {job.command}"
        else:
            heading = f"job {job.id} had already ended ({job.status()}): {job.command}"
        text = job_text(job, heading)
        return ToolResult(text, display=job_report(job, ctx))
