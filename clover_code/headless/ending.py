"""How a headless run ends: the one ``TaskResult`` it prints and the exit code it states.

Every ending goes through ``write_result``: a finished task, an error that stopped
the run (``report_error``), an interruption before the session was ready. A
result that cannot be written as JSON becomes an error result saying so, never a
traceback; ``text`` prints no result object, only returns its exit code.
"""

from __future__ import annotations

import time
from typing import TextIO

from clover_code import __version__
from clover_code import protocol as p
from clover_code.errors import CloverError, ExitCode, SandboxUnavailable
from clover_code.headless.record import RunRecord
from clover_code.headless.render import OutputFormat
from clover_code.outcome.result import ExitReason, ResultStatus, TaskResult
from clover_code.redact import redacting

STATUS_EXIT: dict[ResultStatus, ExitCode] = {
    "success": ExitCode.OK,
    "error": ExitCode.AGENT_ERROR,
    "limit": ExitCode.LIMIT_REACHED,
    "interrupted": ExitCode.INTERRUPTED,
}
"""The exit code each result status states, unless the run's ending says more."""


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
    out, err = redacting(out), redacting(err)
    err.write(f"clover-code: {error}\n")
    err.flush()
    if output_format == "stream-json":
        out.write(p.ErrorEvent(message=str(error), fatal=True).model_dump_json() + "\n")
    code = int(error.exit_code)
    status: ResultStatus = "limit" if code == ExitCode.LIMIT_REACHED else "error"
    # Exit 3 is shared by "no engine" and "no sandbox"; the reason tells them apart.
    reason: ExitReason | None = "no_sandbox" if isinstance(error, SandboxUnavailable) else None
    return write_result(
        output_format,
        out,
        (record or RunRecord()).result(
            status=status,
            exit_code=code,
            error=str(error),
            version=__version__,
            duration_s=seconds_since(started),
            reason=reason,
        ),
    )


def write_result(output_format: OutputFormat, out: TextIO, result: TaskResult) -> int:
    """Print ``result`` (json and stream-json) and return the exit code it states."""
    written = _writable(result)
    if output_format != "text":
        out.write(written.model_dump_json() + "\n")
    out.flush()
    return written.exit_code


def _writable(result: TaskResult) -> TaskResult:
    """``result``, or if a field of it cannot be written as JSON, an error result saying so."""
    try:
        result.model_dump_json()
    except (ValueError, TypeError) as exc:  # pydantic's serialisation error is a ValueError
        return TaskResult(
            status="error",
            exit_code=int(ExitCode.AGENT_ERROR),
            exit_reason="agent_error",
            result="",
            error=(
                f"the run's result could not be written as JSON ({type(exc).__name__}); "
                "the session's transcript has what happened."
            ),
            warnings=[],
            session_id=result.session_id,
            transcript=result.transcript,
            version=result.version,
            duration_s=result.duration_s,
            turns=result.turns,
            tool_calls=result.tool_calls,
            usage=result.usage,
        )
    return result


def seconds_since(started: float | None) -> float:
    """Seconds since ``started`` (the loop clock), to the millisecond; 0 when not known."""
    return round(time.monotonic() - started, 3) if started is not None else 0.0


def turn_reason(status: p.TurnStatus, code: int) -> ExitReason | None:
    """The precise reason a turn's status gives (None: let the exit code say)."""
    if status in ("max_turns", "timeout", "max_cost"):
        return status
    if code in (ExitCode.INTERRUPTED, ExitCode.TERMINATED):
        return "interrupted"
    return None


def finish_interrupted_early(
    output_format: OutputFormat,
    out: TextIO,
    err: TextIO,
    started: float,
    record: RunRecord,
    code: ExitCode,
) -> int:
    """The result of a run interrupted before its session was ready."""
    error = "interrupted before the session was ready; nothing was done."
    err.write(f"clover-code: {error}\n")
    result = record.result(
        status="interrupted",
        exit_code=int(code),
        error=error,
        version=__version__,
        duration_s=seconds_since(started),
    )
    return write_result(output_format, out, result)
