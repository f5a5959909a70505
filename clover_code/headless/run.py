"""Headless mode (``--task``): one task, rendered as text, JSON or a JSONL event stream.

Contracts (documented in the README's headless section and docs/json-output.md):

- the exit code says how the run ended (0, 1, 2, 3, 4, 130, 143);
- SIGTERM is handled as Ctrl+C is (the transcript saved, the one result
  printed, status ``interrupted``) but exits 143;
- ``json`` prints one ``TaskResult`` (``clover_code/outcome/result.py``, written by
  ``ending``), the same shape for success, failure, a limit and an interruption;
- ``stream-json`` prints each protocol event once, text only in the deltas,
  and the same ``TaskResult`` as its last line;
- ``--timeout`` bounds the whole run, connecting to the server included.
"""

from __future__ import annotations

import asyncio
import sys
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from clover_code import __version__
from clover_code import protocol as p
from clover_code.agent.open import RefuseApprover, RunPatch, Session, SessionOptions, open_session
from clover_code.config.settings import Settings
from clover_code.errors import CloverError, ExitCode, LimitReached
from clover_code.headless.embedding import Embedding
from clover_code.headless.ending import (
    STATUS_EXIT,
    finish_interrupted_early,
    report_error,
    seconds_since,
    turn_reason,
    write_result,
)
from clover_code.headless.record import RunRecord
from clover_code.headless.render import OutputFormat, StreamJsonRenderer, TextRenderer, renderer
from clover_code.headless.termination import Termination
from clover_code.outcome.result import STATUS_FOR_TURN, ExitReason
from clover_code.redact import redacting
from clover_code.telemetry.spans import TelemetrySink, telemetry_from_environment

if TYPE_CHECKING:
    from clover_code.outcome.output_schema import OutputSchema

__all__ = [
    "Embedding",
    "OutputFormat",
    "StreamJsonRenderer",
    "TextRenderer",
    "run_task",
]


async def run_task(
    settings: Settings,
    task: str,
    cwd: Path,
    *,
    output_format: OutputFormat = "text",
    resume: Path | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    started: float | None = None,
    output_schema: OutputSchema | None = None,
    own_process: bool = False,
    embedding: Embedding | None = None,
    images: tuple[p.ImageAttachment, ...] = (),
    confidence_notice: bool = False,
) -> int:
    """Run one task to its end and return the process exit code.

    ``own_process``: the task is the process's whole run, so SIGTERM ends it as
    Ctrl+C does (exit 143); a server running tasks leaves its signals alone.
    ``embedding``: what a program running the task in-process adds; ``images``:
    attached to the task (``--image``); ``confidence_notice``: the output carries
    fill confidences (the result's ``edits``), so a warning says once when the
    engine reports none."""
    # Every line of every format passes through redact: no secret reaches stdout or stderr.
    out = redacting(out or sys.stdout)
    err = redacting(err or sys.stderr)
    started = time.monotonic() if started is None else started
    record = RunRecord()
    render = renderer(output_format, out, err)

    def warn(text: str) -> None:
        err.write(f"clover-code: {text}\n")

    telemetry = telemetry_from_environment(warn, forced=settings.managed.forced_telemetry)
    try:
        with Termination(own_process) as termination:
            return await _run_task(
                settings,
                task,
                cwd,
                output_format,
                resume,
                out,
                err,
                started,
                output_schema,
                record,
                render,
                telemetry,
                termination,
                embedding or Embedding(),
                images,
                confidence_notice=confidence_notice,
            )
    except Exception as exc:  # a bug: still end with one result object, never a bare traceback
        traceback.print_exception(exc, file=err)
        internal = CloverError(
            f"internal error ({type(exc).__name__}: {exc}); the task stopped. "
            "Please report it with the lines above."
        )
        return report_error(internal, output_format, out, err, started=started, record=record)
    finally:
        if telemetry is not None:
            await asyncio.shield(asyncio.to_thread(_stop_telemetry, telemetry, err))


async def _run_task(
    settings: Settings,
    task: str,
    cwd: Path,
    output_format: OutputFormat,
    resume: Path | None,
    out: TextIO,
    err: TextIO,
    started: float,
    output_schema: OutputSchema | None,
    record: RunRecord,
    render: p.Emit | None,
    telemetry: TelemetrySink | None,
    termination: Termination,
    embedding: Embedding,
    images: tuple[p.ImageAttachment, ...],
    *,
    confidence_notice: bool,
) -> int:
    def emit(event: p.Event) -> None:
        nonlocal telemetry
        record(event)
        if telemetry is not None:
            try:
                telemetry(event)
            except Exception as exc:  # any SDK or exporter fault: traces are not worth a task
                record(p.Notice(level="warning", text=f"telemetry stopped: {exc}"))
                telemetry = None
        if render is not None:
            render(event)

    # The default event loop's clock is time.monotonic: the deadline counts from the start.
    deadline = None if settings.timeout is None else started + settings.timeout
    try:
        async with asyncio.timeout_at(deadline):
            # A sandbox asked for explicitly opens before the engine: exit 3 at once if it
            # cannot run. What was opened is closed again by the factory if a step fails.
            session = await open_session(
                settings,
                cwd,
                SessionOptions(
                    emit=emit,
                    approver=embedding.approver or RefuseApprover(),
                    approval_mode=embedding.approval or settings.approval_or("sandbox-auto"),
                    tools=embedding.tools,
                    hooks=embedding.hooks,
                    resume=resume,
                    strict_sandbox=True,
                    engine_notices=True,
                    confidence_notice=confidence_notice,
                    # The time spent opening the session counts against the task's limit.
                    deadline=deadline,
                    # The final answer comes after every background child agent's report.
                    wait_for_background=True,
                ),
            )
    except TimeoutError:
        if settings.timeout is None:
            raise
        limit = LimitReached(
            f"the task hit its time limit of {settings.timeout:g} s before the session was "
            "ready (the model server or the sandbox did not answer in time); raise --timeout "
            "or check the server."
        )
        return report_error(limit, output_format, out, err, started=started, record=record)
    except CloverError as exc:
        return report_error(exc, output_format, out, err, started=started, record=record)
    except asyncio.CancelledError:
        _withdraw_cancel()
        code = termination.exit_code()
        return finish_interrupted_early(output_format, out, err, started, record, code)
    prompt = task if output_schema is None else task + output_schema.instructions()
    structured: object = None
    schema_problem: str | None = None
    changes = RunPatch()
    try:
        finished = await session.run_turn(p.UserInput(text=prompt, images=images))
        if output_schema is not None:
            from clover_code.outcome.output_schema import answer_to_schema

            outcome = await answer_to_schema(session, output_schema, finished)
            finished, structured, schema_problem = outcome.finished, outcome.value, outcome.problem
        if settings.auto_commit and finished.status == "completed" and schema_problem is None:
            await _auto_commit(session, task)
        changes = await asyncio.shield(session.patch())
        if changes.warning is not None:
            emit(p.Notice(level="warning", text=changes.warning))
    finally:
        await asyncio.shield(session.close())
    status = STATUS_FOR_TURN[finished.status]
    code = STATUS_EXIT[status]
    reason: ExitReason | None = None
    if schema_problem is not None:
        status, code, reason = "error", ExitCode.AGENT_ERROR, "output_schema"
    elif status == "success" and finished.token_limit:
        status, code, reason = "limit", ExitCode.LIMIT_REACHED, "max_tokens"
    elif finished.blocked:
        reason = "blocked"
    failure = session.engine_failure
    if status == "error" and failure is not None and failure.exit_code != ExitCode.AGENT_ERROR:
        # A refused key or a vanished model mid-task is "no engine", as at start.
        code = failure.exit_code
    if session.transcript_failure is not None:
        # Reported already, as a fatal error event: the run cannot be resumed as it is.
        status, code = "error", ExitCode.AGENT_ERROR
    error: str | None = None
    if status == "interrupted":
        code = termination.exit_code()
        how = "terminated (SIGTERM)" if termination.received else "interrupted"
        error = (
            f"{how}; the transcript is saved. "
            f"Resume with: clover-code --resume {session.id} --task ..."
        )
        err.write(f"clover-code: {error}\n")
    elif reason == "max_tokens":
        cap = f"--max-tokens {settings.max_tokens}" if settings.max_tokens else "max_tokens"
        error = f"the final answer was cut at the token limit ({cap}); raise it to go further."
        err.write(f"clover-code: {error}\n")
    elif schema_problem is not None:
        from clover_code.outcome.output_schema import MAX_RETRIES

        error = (
            f"the final answer never matched --output-schema "
            f"(after {MAX_RETRIES} retries): {schema_problem}."
        )
        err.write(f"clover-code: {error}\n")
    elif status != "success":
        error = record.last_error() or f"the task ended with status {finished.status}."
    return write_result(
        output_format,
        out,
        record.result(
            status=status,
            exit_code=int(code),
            error=error,
            version=__version__,
            duration_s=seconds_since(started),
            final_text=finished.final_text if status == "success" else None,
            reason=reason or turn_reason(finished.status, int(code)),
            patch=changes.patch,
            files_changed=changes.files,
            structured_output=structured,
        ),
    )


def _stop_telemetry(telemetry: TelemetrySink, err: TextIO) -> None:
    """Flush what telemetry holds; a collector that is down costs a warning, not the result."""
    try:
        telemetry.shutdown()
    except Exception as exc:  # any SDK or exporter fault
        err.write(f"clover-code: telemetry could not be sent: {exc}\n")


def _withdraw_cancel() -> None:
    """The interruption is handled here, so the task's cancel request is withdrawn."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()


async def _auto_commit(session: Session, task: str) -> None:
    """--auto-commit: commit what the agent changed, with the task as the subject."""
    first = next((line.strip() for line in task.splitlines() if line.strip()), "task")
    subject = f"clover-code: {first}"
    subject = subject if len(subject) <= 72 else subject[:71] + "…"
    await session.submit(p.AutoCommit(subject=subject))
