"""The local executor of ``clover-code batch``: each task in its own clone and its own
headless ``clover-code`` process, N at a time.

A task's process writes its stream-json events (the task's transcript) to
``DIR/transcripts/ID.jsonl``; its last line is the ``TaskResult``. Each finished
task is appended at once to ``DIR/results.jsonl`` and ``DIR/predictions.jsonl``
(SWE-bench's format), so an interruption keeps every finished task and a rerun
skips them.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from clover_code import __version__
from clover_code.batch.launch import ColdLauncher, Launcher, WarmLauncher
from clover_code.batch.output import OutputBudget
from clover_code.batch.tasks import BatchTask
from clover_code.batch.workspace import (
    TIMED_OUT,
    WorkspaceError,
    prepare,
    run_sandboxed,
    stop_group,
)
from clover_code.outcome.result import ResultStatus, ResultUsage, TaskResult

Outcome = Literal[
    "completed", "failed", "limit", "output_limit", "timeout", "crashed", "interrupted"
]

_OUTCOME: dict[ResultStatus, Outcome] = {
    "success": "completed",
    "error": "failed",
    "limit": "limit",
    "interrupted": "interrupted",
}

KILL_GRACE_S = 30.0
"""How long past its own ``--timeout`` a task's process may take before it is killed."""


class BatchRecord(BaseModel):
    """One line of ``DIR/results.jsonl``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    outcome: Outcome
    """completed, failed, limit (--max-turns or the task's time limit), output_limit
    (stopped when its transcript and log passed ``--max-output``), timeout (killed after
    it ignored its time limit), crashed (no result: the process died, or the workspace or
    its setup failed) or interrupted."""
    tests_passed: bool | None
    """The test command's verdict (null: none given, or the agent's run did not finish)."""
    duration_s: float
    error: str | None
    transcript: str
    """The task's stream-json events, relative to DIR."""
    result: TaskResult | None
    """The headless run's result, as ``--output-format json`` prints it."""
    node: str | None = None
    """Where it ran, for executors that spread tasks over machines (Ray: host/node id)."""


@dataclass(slots=True)
class BatchOptions:
    """How to run the tasks."""

    out: Path
    jobs: int = 1
    task_timeout: float = 1800.0
    model_name: str = "clover-code"
    headless_args: list[str] = field(default_factory=list)
    """Flags passed on to each headless run (engine, sandbox, approval, limits)."""
    base: Path = Path()
    """Relative ``repo`` paths are relative to this (the task file's directory)."""
    sandbox_args: list[str] = field(default_factory=list)
    """Flags for ``clover-code sandbox run``, which runs each task's setup and tests."""
    max_output: int = 64 * 1024 * 1024
    """Bytes a task's headless run may write (transcript and log) before it is stopped."""
    warm_start: bool = True
    """Fork each task's processes from one process that loaded clover-code once."""
    env: dict[str, str] = field(default_factory=dict)
    """Added to the environment of each task's processes (the API key: never in argv)."""


def finished_ids(out: Path) -> set[str]:
    """Ids already recorded in ``DIR/results.jsonl`` (a torn last line is ignored)."""
    path = out / "results.jsonl"
    if not path.exists():
        return set()
    ids = set()
    for line in path.read_text("utf-8").splitlines():
        try:
            ids.add(json.loads(line)["id"])
        except (json.JSONDecodeError, KeyError, TypeError):
            continue
    return ids


async def run_batch(
    tasks: list[BatchTask],
    options: BatchOptions,
    progress: Callable[[BatchRecord], None],
) -> list[BatchRecord]:
    """Run ``tasks`` ``options.jobs`` at a time; records each as it finishes."""
    for sub in ("workspaces", "transcripts", "logs", "tasks"):
        (options.out / sub).mkdir(parents=True, exist_ok=True)
    gate = asyncio.Semaphore(max(1, options.jobs))
    records: list[BatchRecord] = []
    warm = await WarmLauncher.open(options.env) if options.warm_start and tasks else None

    async def one(task: BatchTask) -> None:
        async with gate:
            record = await run_one(task, options, warm)
        record_finished(options, task, record)
        records.append(record)
        progress(record)

    try:
        async with asyncio.TaskGroup() as group:
            for task in tasks:
                group.create_task(one(task))
    finally:
        if warm is not None:
            await asyncio.shield(warm.aclose())
    return records


def record_finished(options: BatchOptions, task: BatchTask, record: BatchRecord) -> None:
    """Append a finished task to ``DIR/results.jsonl`` and ``DIR/predictions.jsonl``."""
    with (options.out / "results.jsonl").open("a", encoding="utf-8") as results:
        results.write(record.model_dump_json() + "\n")
    prediction = {
        "instance_id": task.id,
        "model_name_or_path": options.model_name,
        "model_patch": record.result.patch if record.result is not None else "",
    }
    with (options.out / "predictions.jsonl").open("a", encoding="utf-8") as predictions:
        predictions.write(json.dumps(prediction) + "\n")


async def run_one(
    task: BatchTask, options: BatchOptions, launcher: Launcher | None = None
) -> BatchRecord:
    """Prepare the task's workspace, run the agent on it, then its tests (each
    ``clover-code`` process started by ``launcher``: cold when None)."""
    started = time.monotonic()
    launcher = launcher or ColdLauncher(options.env)
    out = options.out
    log = out / "logs" / f"{task.slug}.log"
    transcript = out / "transcripts" / f"{task.slug}.jsonl"
    log.unlink(missing_ok=True)

    def record(
        outcome: Outcome,
        error: str | None,
        result: TaskResult | None = None,
        tests: bool | None = None,
    ) -> BatchRecord:
        return BatchRecord(
            id=task.id,
            outcome=outcome,
            tests_passed=tests,
            duration_s=round(time.monotonic() - started, 3),
            error=error,
            transcript=str(transcript.relative_to(out)),
            result=result,
        )

    try:
        work = await asyncio.to_thread(
            prepare, task.source(options.base), task.base_commit, out / "workspaces", task.slug
        )
    except WorkspaceError as exc:
        return record("crashed", str(exc))
    if task.setup:
        # The setup installs what the project needs, so it may use the network.
        sandbox = [*options.sandbox_args, "--network"]
        setup = await run_sandboxed(task.setup, work, log, options.task_timeout, sandbox, launcher)
        if setup != 0:
            why = "ran past the task's time limit" if setup == TIMED_OUT else f"exited {setup}"
            return record("crashed", f"the setup command {why}; see {log.relative_to(out)}.")
    prompt = out / "tasks" / f"{task.slug}.md"
    prompt.write_text(task.task, encoding="utf-8")
    code, result, over = await _headless(prompt, work, transcript, log, options, launcher)
    if over:
        why = f"stopped after writing more than {options.max_output:,} bytes of output."
        if result is None:
            result = _stopped_result(why, transcript, time.monotonic() - started)
        return record("output_limit", why, result)
    if result is None:
        if code is None:
            return record("timeout", f"killed after {options.task_timeout:g} s without a result.")
        return record("crashed", f"the headless run exited {code} without a result.")
    outcome = _OUTCOME[result.status]
    tests: bool | None = None
    if task.test_command and outcome != "interrupted":
        # The tests run the code the agent wrote: in the sandbox, like its own commands.
        test_code = await run_sandboxed(
            task.test_command, work, log, options.task_timeout, options.sandbox_args, launcher
        )
        tests = test_code == 0
    return record(outcome, result.error, result, tests)


async def _headless(
    prompt: Path,
    work: Path,
    transcript: Path,
    log: Path,
    options: BatchOptions,
    launcher: Launcher,
) -> tuple[int | None, TaskResult | None, bool]:
    """One headless run: its exit code (None when killed past its time), its result if
    it wrote one, and whether it was stopped for writing more than ``max_output``."""
    argv = [
        "--task-file",
        str(prompt),
        "--output-format",
        "stream-json",
        "--timeout",
        f"{options.task_timeout:g}",
        "-C",
        str(work),
        *options.headless_args,
    ]
    proc = await launcher.start(argv, work, None)
    assert proc.stdout is not None and proc.stderr is not None
    budget = OutputBudget(options.max_output)
    with transcript.open("wb") as stdout, log.open("ab") as stderr:
        copies = [
            asyncio.ensure_future(budget.copy(proc.stdout, stdout)),
            asyncio.ensure_future(budget.copy(proc.stderr, stderr)),
        ]
        over = asyncio.ensure_future(budget.exceeded.wait())
        try:
            done, _ = await asyncio.wait(
                [asyncio.ensure_future(proc.wait()), over],
                timeout=options.task_timeout + KILL_GRACE_S,
                return_when=asyncio.FIRST_COMPLETED,
            )
            if over in done:
                await stop_group(proc)
            elif not done:
                await stop_group(proc, grace=0.0)
            await asyncio.gather(*copies)
        except asyncio.CancelledError:
            await asyncio.shield(stop_group(proc))
            raise
        finally:
            over.cancel()
            for copy in copies:
                copy.cancel()
    if budget.exceeded.is_set():
        budget.cut_torn_line(transcript)
    code = proc.returncode if done else None
    return code, _last_result(transcript), budget.exceeded.is_set()


def _stopped_result(error: str, transcript: Path, duration_s: float) -> TaskResult:
    """The result of a run the batch stopped before it printed its own."""
    return TaskResult(
        status="limit",
        exit_code=4,
        exit_reason="output_limit",
        result="",
        error=error,
        warnings=[],
        session_id=None,
        transcript=str(transcript),
        version=__version__,
        duration_s=round(duration_s, 3),
        turns=0,
        tool_calls=0,
        usage=ResultUsage(),
    )


def _last_result(transcript: Path) -> TaskResult | None:
    lines = transcript.read_bytes().splitlines()
    if not lines:
        return None
    try:
        data = json.loads(lines[-1])
        return TaskResult.model_validate(data) if data.get("type") == "result" else None
    except (json.JSONDecodeError, ValidationError, AttributeError):
        return None
