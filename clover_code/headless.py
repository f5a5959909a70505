"""Headless mode (``--task``): one task, rendered as text, JSON or a JSONL event stream."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Literal, TextIO

from clover_code import protocol as p
from clover_code.agent.approval import RefuseApprover
from clover_code.agent.checkpoints import CheckpointError
from clover_code.agent.session import Session, find_root
from clover_code.config import Settings
from clover_code.engine.select import open_backend
from clover_code.errors import CloverError, ExitCode, SandboxUnavailable
from clover_code.tools.sandbox.select import SandboxChoice, choose_from_settings

OutputFormat = Literal["text", "json", "stream-json"]

_STATUS_EXIT = {
    "completed": ExitCode.OK,
    "failed": ExitCode.AGENT_ERROR,
    "max_turns": ExitCode.LIMIT_REACHED,
    "timeout": ExitCode.LIMIT_REACHED,
    "interrupted": ExitCode.INTERRUPTED,
}


class TextRenderer:
    """Answer text to stdout as blocks arrive; progress and problems to stderr."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out, self.err = out, err
        self._ends_with_newline = True

    def __call__(self, event: p.Event) -> None:
        if isinstance(event, p.ContentDelta):
            self.out.write(event.text)
            self.out.flush()
            self._ends_with_newline = event.text.endswith("\n")
        elif isinstance(event, p.ToolCallStarted) and event.kind != "other":
            self._break_line()
            self.err.write(f"» {event.name} {event.summary}\n")
        elif isinstance(event, p.ToolCallFinished) and event.status != "ok":
            first = event.result.strip().splitlines()[0] if event.result.strip() else ""
            self.err.write(f"  {event.status}: {first[:200]}\n")
        elif isinstance(event, p.Notice):
            self.err.write(f"{event.level}: {event.text}\n")
        elif isinstance(event, p.ErrorEvent):
            self._break_line()
            self.err.write(f"error: {event.message}\n")
        elif isinstance(event, p.TurnFinished):
            self._break_line()
        self.err.flush()

    def _break_line(self) -> None:
        if not self._ends_with_newline:
            self.out.write("\n")
            self.out.flush()
            self._ends_with_newline = True


class StreamJsonRenderer:
    """Every protocol event as one JSON line on stdout."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def __call__(self, event: p.Event) -> None:
        self.out.write(event.model_dump_json() + "\n")
        self.out.flush()


class JsonCollector:
    """Collects what the single JSON result object needs."""

    def __init__(self) -> None:
        self.session_id = ""
        self.transcript = ""
        self.errors: list[str] = []
        self.tool_calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def __call__(self, event: p.Event) -> None:
        if isinstance(event, p.SessionStarted):
            self.session_id, self.transcript = event.session_id, event.transcript
        elif isinstance(event, p.ErrorEvent):
            self.errors.append(event.message)
        elif isinstance(event, p.ToolCallFinished):
            self.tool_calls += 1
        elif isinstance(event, p.UsageReport):
            self.prompt_tokens = event.prompt_tokens
            self.completion_tokens += event.completion_tokens


def report_error(error: CloverError, output_format: OutputFormat, out: TextIO, err: TextIO) -> int:
    """Tell the user about an error that stopped the run, in the chosen format."""
    err.write(f"clover-code: {error}\n")
    if output_format == "stream-json":
        out.write(p.ErrorEvent(message=str(error), fatal=True).model_dump_json() + "\n")
    elif output_format == "json":
        out.write(
            json.dumps({"status": "error", "error": str(error), "exit_code": error.exit_code})
        )
        out.write("\n")
    return int(error.exit_code)


async def run_task(
    settings: Settings,
    task: str,
    cwd: Path,
    *,
    output_format: OutputFormat = "text",
    resume: Path | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Run one task to its end and return the process exit code."""
    out = out or sys.stdout
    err = err or sys.stderr
    collector = JsonCollector()
    if output_format == "stream-json":
        render: TextRenderer | StreamJsonRenderer | JsonCollector = StreamJsonRenderer(out)
    elif output_format == "json":
        render = collector
    else:
        render = TextRenderer(out, err)

    def emit(event: p.Event) -> None:
        if render is not collector:
            collector(event)
        render(event)

    choice: SandboxChoice | None = None
    try:
        choice = await _explicit_sandbox(settings, cwd, emit)
        backend = await open_backend(settings)
        for line in getattr(backend, "notices", ()):  # what a local engine does, said once
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
    except CloverError as exc:
        if choice is not None and choice.sandbox is not None:
            await choice.sandbox.close()
        return report_error(exc, output_format, out, err)
    try:
        finished = await session.run_turn(task)
        if settings.auto_commit and finished.status == "completed":
            await _auto_commit(session, task, emit)
    finally:
        await asyncio.shield(session.close())
    code = _STATUS_EXIT[finished.status]
    if finished.status == "interrupted":
        err.write(
            f"clover-code: interrupted; the transcript is saved. "
            f"Resume with: clover-code --resume {session.id} --task ...\n"
        )
    if output_format == "json":
        result = {
            "status": finished.status,
            "exit_code": int(code),
            "result": finished.final_text,
            "session_id": collector.session_id,
            "transcript": collector.transcript,
            "model_requests": finished.model_requests,
            "tool_calls": collector.tool_calls,
            "usage": {
                "prompt_tokens": collector.prompt_tokens,
                "completion_tokens": collector.completion_tokens,
            },
            "errors": collector.errors,
        }
        out.write(json.dumps(result, ensure_ascii=False) + "\n")
    out.flush()
    return int(code)


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
