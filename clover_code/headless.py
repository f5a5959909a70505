"""Headless mode (``--task``): one task, rendered as text, JSON or a JSONL event stream.

Contracts (documented in the README's headless section):

- the exit code says how the run ended (0, 1, 2, 3, 4, 130);
- ``json`` prints one ``TaskResult`` (``clover_code/result.py``), the same
  shape for success, failure, a limit and an interruption;
- ``stream-json`` prints each protocol event once, text only in the deltas,
  and the same ``TaskResult`` as its last line;
- ``--timeout`` bounds the whole run, connecting to the server included.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from pathlib import Path
from typing import TextIO

from clover_code import __version__
from clover_code import protocol as p
from clover_code.agent.approval import RefuseApprover
from clover_code.agent.checkpoints import CheckpointError
from clover_code.agent.session import Session, find_root
from clover_code.config import Settings
from clover_code.engine.base import Backend, ChatRequest
from clover_code.engine.events import EngineEvent, Failed
from clover_code.engine.select import open_backend
from clover_code.errors import (
    CloverError,
    EngineError,
    ExitCode,
    LimitReached,
    SandboxUnavailable,
)
from clover_code.headless_record import RunRecord
from clover_code.headless_render import OutputFormat, StreamJsonRenderer, TextRenderer, renderer
from clover_code.output_schema import MAX_RETRIES, OutputSchema, answer_to_schema
from clover_code.result import STATUS_FOR_TURN, ExitReason, ResultStatus, TaskResult
from clover_code.result_patch import RunPatch, run_patch
from clover_code.telemetry import TelemetrySink, telemetry_from_environment
from clover_code.tools.sandbox.select import SandboxChoice, choose_from_settings

__all__ = [
    "OutputFormat",
    "StreamJsonRenderer",
    "TextRenderer",
    "report_error",
    "run_task",
]

_STATUS_EXIT: dict[ResultStatus, ExitCode] = {
    "success": ExitCode.OK,
    "error": ExitCode.AGENT_ERROR,
    "limit": ExitCode.LIMIT_REACHED,
    "interrupted": ExitCode.INTERRUPTED,
}


class _WatchedBackend:
    """The session's backend, remembering the last engine error a response ended with.

    A turn that fails reports only a sentence; headless needs the error's kind
    too, so that a key refused mid-task exits 3 like one refused at start.
    """

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        # Wrapped after ``check()``, when the model is known and no longer changes.
        self.name, self.model, self.block_size = inner.name, inner.model, inner.block_size
        self.failure: EngineError | None = None

    async def stream(self, request: ChatRequest) -> AsyncGenerator[EngineEvent, None]:
        """The inner backend's stream, unchanged."""
        async with aclosing(self.inner.stream(request)) as events:
            async for event in events:
                if isinstance(event, Failed):
                    self.failure = event.error
                yield event

    async def check(self) -> None:
        """The inner backend's check."""
        await self.inner.check()

    async def aclose(self) -> None:
        """Close the inner backend."""
        await self.inner.aclose()


def report_error(
    error: CloverError,
    output_format: OutputFormat,
    out: TextIO,
    err: TextIO,
    *,
    started: float | None = None,
    record: RunRecord | None = None,
) -> int:
    """Tell the user about an error that stopped the run, in the chosen format."""
    err.write(f"clover-code: {error}\n")
    err.flush()
    if output_format == "stream-json":
        out.write(p.ErrorEvent(message=str(error), fatal=True).model_dump_json() + "\n")
    code = int(error.exit_code)
    status: ResultStatus = "limit" if code == ExitCode.LIMIT_REACHED else "error"
    _write_result(
        output_format,
        out,
        (record or RunRecord()).result(
            status=status,
            exit_code=code,
            error=str(error),
            version=__version__,
            duration_s=_since(started),
        ),
    )
    return code


def _write_result(output_format: OutputFormat, out: TextIO, result: TaskResult) -> None:
    if output_format != "text":
        out.write(result.model_dump_json() + "\n")
    out.flush()


def _since(started: float | None) -> float:
    return round(time.monotonic() - started, 3) if started is not None else 0.0


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
) -> int:
    """Run one task to its end and return the process exit code."""
    out = out or sys.stdout
    err = err or sys.stderr
    started = time.monotonic() if started is None else started
    record = RunRecord()
    render = renderer(output_format, out, err)

    def warn(text: str) -> None:
        err.write(f"clover-code: {text}\n")

    telemetry = telemetry_from_environment(warn)
    try:
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
        )
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
    render: Callable[[p.Event], None] | None,
    telemetry: TelemetrySink | None,
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
    backend: _WatchedBackend | None = None
    choice: SandboxChoice | None = None

    async def close_started() -> None:
        if backend is not None:
            await asyncio.shield(backend.aclose())
        if choice is not None and choice.sandbox is not None:
            await asyncio.shield(choice.sandbox.close())

    try:
        async with asyncio.timeout_at(deadline):
            choice = await _explicit_sandbox(settings, cwd, emit)
            backend = _WatchedBackend(await open_backend(settings))
            for line in getattr(backend.inner, "notices", ()):  # a local engine's, said once
                emit(p.Notice(text=line))
            session = await Session.open(
                settings,
                backend,
                cwd,
                emit=emit,
                approver=RefuseApprover(),
                approval_mode=settings.approval or "auto-edit",
                resume=resume,
                sandbox=choice,
            )
    except TimeoutError:
        await close_started()
        if settings.timeout is None:
            raise
        limit = LimitReached(
            f"the task hit its time limit of {settings.timeout:g} s before the session was "
            "ready (the model server or the sandbox did not answer in time); raise --timeout "
            "or check the server."
        )
        return report_error(limit, output_format, out, err, started=started, record=record)
    except CloverError as exc:
        await close_started()
        return report_error(exc, output_format, out, err, started=started, record=record)
    except asyncio.CancelledError:
        _withdraw_cancel()
        await close_started()
        return _finish_interrupted_early(output_format, out, err, started, record)
    # The time spent opening the session counts against the task's limit.
    session.agent.deadline = deadline
    prompt = task if output_schema is None else task + output_schema.instructions()
    structured: object = None
    schema_problem: str | None = None
    changes = RunPatch()
    try:
        finished = await session.run_turn(prompt)
        if output_schema is not None:
            outcome = await answer_to_schema(session, output_schema, finished)
            finished, structured, schema_problem = outcome.finished, outcome.value, outcome.problem
        if settings.auto_commit and finished.status == "completed" and schema_problem is None:
            await _auto_commit(session, task, emit)
        changes = await asyncio.shield(run_patch(session.checkpoints))
        if changes.warning is not None:
            emit(p.Notice(level="warning", text=changes.warning))
    finally:
        await asyncio.shield(session.close())
    status = STATUS_FOR_TURN[finished.status]
    code = _STATUS_EXIT[status]
    reason: ExitReason | None = None
    if schema_problem is not None:
        status, code, reason = "error", ExitCode.AGENT_ERROR, "output_schema"
    failure = backend.failure
    if status == "error" and failure is not None and failure.exit_code != ExitCode.AGENT_ERROR:
        # A refused key or a vanished model mid-task is "no engine", as at start.
        code = failure.exit_code
    if session.transcript.failure is not None:
        # Reported already, as a fatal error event: the run cannot be resumed as it is.
        status, code = "error", ExitCode.AGENT_ERROR
    error: str | None = None
    if status == "interrupted":
        error = (
            f"interrupted; the transcript is saved. "
            f"Resume with: clover-code --resume {session.id} --task ..."
        )
        err.write(f"clover-code: {error}\n")
    elif schema_problem is not None:
        error = (
            f"the final answer never matched --output-schema "
            f"(after {MAX_RETRIES} retries): {schema_problem}."
        )
        err.write(f"clover-code: {error}\n")
    elif status != "success":
        error = record.last_error() or f"the task ended with status {finished.status}."
    _write_result(
        output_format,
        out,
        record.result(
            status=status,
            exit_code=int(code),
            error=error,
            version=__version__,
            duration_s=_since(started),
            final_text=finished.final_text if status == "success" else None,
            reason=reason or _turn_reason(finished.status, int(code)),
            patch=changes.patch,
            files_changed=changes.files,
            structured_output=structured,
        ),
    )
    return int(code)


def _turn_reason(status: p.TurnStatus, code: int) -> ExitReason | None:
    """The precise reason a turn's status gives (None: let the exit code say)."""
    if status in ("max_turns", "timeout"):
        return status
    if code == ExitCode.INTERRUPTED:
        return "interrupted"
    return None


def _stop_telemetry(telemetry: TelemetrySink, err: TextIO) -> None:
    """Flush what telemetry holds; a collector that is down costs a warning, not the result."""
    try:
        telemetry.shutdown()
    except Exception as exc:  # any SDK or exporter fault
        err.write(f"clover-code: telemetry could not be sent: {exc}\n")


async def _explicit_sandbox(
    settings: Settings, cwd: Path, emit: Callable[[p.Event], None]
) -> SandboxChoice | None:
    """Open the sandbox ``--sandbox docker|bwrap`` asks for, before the engine loads.

    Raises ``SandboxUnavailable`` (exit 3) when it cannot run: a task that asked
    for one must not go on without it. ``auto`` is left to the session.
    """
    if settings.sandbox not in ("docker", "bwrap"):
        return None
    loop = asyncio.get_running_loop()

    def progress(line: str) -> None:
        loop.call_soon_threadsafe(emit, p.Notice(text=f"sandbox: {line}"))

    root, _ = find_root(cwd)
    choice = await asyncio.to_thread(choose_from_settings, settings, root, progress)
    if choice.unavailable is not None:
        raise SandboxUnavailable(choice.unavailable)
    return choice


def _withdraw_cancel() -> None:
    """The interruption is handled here, so the task's cancel request is withdrawn."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()


def _finish_interrupted_early(
    output_format: OutputFormat, out: TextIO, err: TextIO, started: float, record: RunRecord
) -> int:
    error = "interrupted before the session was ready; nothing was done."
    err.write(f"clover-code: {error}\n")
    code = int(ExitCode.INTERRUPTED)
    result = record.result(
        status="interrupted",
        exit_code=code,
        error=error,
        version=__version__,
        duration_s=_since(started),
    )
    _write_result(output_format, out, result)
    return code


async def _auto_commit(session: Session, task: str, emit: Callable[[p.Event], None]) -> None:
    """--auto-commit: commit what the agent changed, with the task as the subject."""
    if session.checkpoints is None:
        emit(p.ErrorEvent(message="--auto-commit needs checkpoints, which are off."))
        return
    first = next((line.strip() for line in task.splitlines() if line.strip()), "task")
    subject = f"clover-code: {first}"
    subject = subject if len(subject) <= 72 else subject[:71] + "…"
    try:
        commit = await asyncio.to_thread(session.checkpoints.auto_commit, subject)
    except CheckpointError as exc:
        emit(p.ErrorEvent(message=str(exc)))
        return
    text = f"committed the agent's changes as {commit[:12]}." if commit else "nothing to commit."
    emit(p.Notice(text=text))
