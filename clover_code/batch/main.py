"""``clover-code batch TASKS.jsonl --out DIR [--jobs N]``: the command line and its report."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections import Counter
from pathlib import Path

from clover_code.batch.progress import Progress
from clover_code.batch.runner import BatchOptions, BatchRecord, finished_ids, run_batch
from clover_code.batch.tasks import BatchTask, read_tasks
from clover_code.errors import CloverError, ExitCode, UsageError

_FORWARDED = ("engine", "base_url", "model", "model_path", "block_size", "sandbox")
"""Flags passed on to each run (the API key goes in its environment, not its argv)."""


def build_parser() -> argparse.ArgumentParser:
    """The batch command's interface."""
    from clover_code.config.flags import add_engine_arguments

    parser = argparse.ArgumentParser(
        prog="clover-code batch",
        description="Run many tasks headless, each in its own clone of its repository, "
        "N at a time. Writes DIR/results.jsonl (one result per task), DIR/predictions.jsonl "
        "(SWE-bench format) and DIR/transcripts/ID.jsonl; a rerun skips finished ids.",
    )
    parser.add_argument("tasks", type=Path, metavar="TASKS.jsonl", help="one task a line")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder")
    parser.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help="tasks at a time (local: 1; ray: the cluster's CPU count)",
    )
    parser.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="where tasks run: this machine, or an existing Ray cluster (local)",
    )
    parser.add_argument(
        "--ray-address",
        metavar="HOST:PORT",
        help="the Ray cluster's head node (default: RAY_ADDRESS); every node needs "
        "clover-code, a sandbox and the model server, and a path repo must exist on each",
    )
    parser.add_argument(
        "--task-timeout",
        type=float,
        default=1800.0,
        metavar="SECONDS",
        help="wall-clock limit per task (1800)",
    )
    parser.add_argument(
        "--model-name",
        default="clover-code",
        help="model_name_or_path written to predictions.jsonl",
    )
    parser.add_argument(
        "--approval",
        choices=("read-only", "ask", "auto-edit", "sandbox-auto", "full-auto"),
        help="approval mode of each run (default sandbox-auto: commands run without asking "
        "only in Docker or bubblewrap)",
    )
    parser.add_argument(
        "--max-turns",
        type=int,
        metavar="N",
        help="most model requests (each model response, tool rounds included) per task",
    )
    parser.add_argument(
        "--max-output",
        type=float,
        default=64.0,
        metavar="MB",
        help="output a task may write (transcript and log) before it is stopped (64)",
    )
    parser.add_argument(
        "--cold-start",
        action="store_true",
        help="start a new interpreter for each task's processes (default: fork them "
        "from one process that loaded clover-code once, which starts each task faster)",
    )
    add_engine_arguments(parser)
    return parser


def _headless_args(args: argparse.Namespace) -> list[str]:
    forwarded = ["--approval", args.approval] if args.approval else []
    if args.max_turns is not None:
        forwarded += ["--max-turns", str(args.max_turns)]
    if args.thinking is False:
        forwarded.append("--no-thinking")
    for name in _FORWARDED:
        value = getattr(args, name)
        if value is not None:
            forwarded += [f"--{name.replace('_', '-')}", str(value)]
    return forwarded


def _refuse_managed(args: argparse.Namespace) -> None:
    """Refuse, before any task starts, a flag an administrator's managed settings forbid
    (each run would refuse it)."""
    from clover_code.config.load import refuse_flags

    names = ("approval", "max_turns", "thinking", *_FORWARDED)
    refuse_flags({name: getattr(args, name) for name in names})


def summary(records: list[BatchRecord], skipped: int, stopped: int = 0) -> str:
    """The table printed at the end: ``skipped`` tasks were done by an earlier run,
    ``stopped`` ones were left unfinished by Ctrl+C (counted as interrupted)."""
    counts = Counter(r.outcome for r in records)
    tested = [r for r in records if r.tests_passed is not None]
    rows = [
        ("completed", counts["completed"]),
        ("failed", counts["failed"]),
        ("limit reached", counts["limit"]),
        ("output limit", counts["output_limit"]),
        ("timed out", counts["timeout"]),
        ("crashed", counts["crashed"]),
        ("interrupted", counts["interrupted"] + stopped),
        ("tests passed", f"{sum(1 for r in tested if r.tests_passed)}/{len(tested)}"),
        ("skipped (done before)", skipped),
    ]
    width = max(len(name) for name, _ in rows)
    return "".join(f"  {name:<{width}}  {value}\n" for name, value in rows)


def main(argv: list[str]) -> int:
    """Run the batch; 0 when every task was run (whatever its outcome), 2 on a usage error,
    130 when interrupted (finished tasks are kept)."""
    args = build_parser().parse_args(argv)
    try:
        if args.jobs is not None and args.jobs < 1:
            raise UsageError("--jobs must be at least 1.")
        if args.task_timeout <= 0 or args.max_output <= 0:
            raise UsageError("--task-timeout and --max-output must be more than 0.")
        if args.executor == "local" and args.ray_address is not None:
            raise UsageError("--ray-address goes with --executor ray; add that or drop it.")
        _refuse_managed(args)
        tasks = read_tasks(args.tasks)
        out: Path = args.out.resolve()
        out.mkdir(parents=True, exist_ok=True)
        jobs: int = args.jobs or 1
        if args.executor == "ray":
            from clover_code.batch import ray_executor

            ray_executor.connect(args.ray_address or os.environ.get("RAY_ADDRESS"))
            jobs = args.jobs or ray_executor.cluster_cpus()
    except (CloverError, OSError) as exc:
        sys.stderr.write(f"clover-code batch: {exc}\n")
        return int(ExitCode.USAGE)
    done = finished_ids(out)
    todo = [t for t in tasks if t.id not in done]
    options = BatchOptions(
        out=out,
        jobs=jobs,
        task_timeout=args.task_timeout,
        model_name=args.model_name,
        headless_args=_headless_args(args),
        base=args.tasks.resolve().parent,
        sandbox_args=["--sandbox", args.sandbox] if args.sandbox else [],
        max_output=int(args.max_output * 1024 * 1024),
        warm_start=not args.cold_start,
        env={"CLOVER_API_KEY": args.api_key} if args.api_key else {},
    )
    sys.stderr.write(f"{len(todo)} task(s) to run, {len(done & {t.id for t in tasks})} done\n")
    progress = Progress(len(todo), jobs, sys.stderr)
    try:
        if args.executor == "ray":
            try:
                ray_executor.run_batch_ray(todo, options, progress, tick=progress.draw)
            finally:
                progress.finish()
        else:
            asyncio.run(_run(todo, options, progress))
    except KeyboardInterrupt:
        sys.stderr.write(
            f"interrupted: {progress.done} finished task(s) are kept in {out}; "
            "run the same command again to go on.\n"
        )
        stopped = len(todo) - progress.done
        sys.stderr.write(summary(progress.records, len(tasks) - len(todo), stopped))
        return int(ExitCode.INTERRUPTED)
    sys.stderr.write(summary(progress.records, len(tasks) - len(todo)))
    return 0


async def _run(todo: list[BatchTask], options: BatchOptions, progress: Progress) -> None:
    async with progress.live():
        await run_batch(todo, options, progress)
