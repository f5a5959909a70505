"""Batch throughput and per-task overhead: ``clover-code batch`` against mini-swe-agent's runner.

    python bench/batch.py [--tasks 20] [--latency 0.5] [--jobs 1,4,8]
                          [--sandbox docker|none|both] [--quick] [--no-peer] [--tests]

Generates N small tasks (each its own git repository with a one-line bug, a
task text and a test command; ``bench/batch_tasks.py``) and a loopback
scripted model server (the integration tests' ``ScriptedServer``) that answers
every chat request after a fixed latency and solves each task in three
requests whichever agent asks: read the module (``cat``), fix it (``sed -i``),
finish (clover-code: a final answer, from which it takes the patch itself;
mini-swe-agent: its submit command with ``git diff``). Both agents run the same
two shell commands in the same kind of environment: with ``--sandbox docker``
clover-code's sandbox container and mini-swe-agent's docker environment on the
same image (clover-code's sandbox image), with ``none`` both on the host.

For each ``--jobs`` value it runs ``python -m clover_code batch`` and, as the
named peer, ``mini-extra swebench`` (mini-swe-agent 2.x, installed into its own
venv in the cache dir; ``bench/batch_mini.py``) on the same tasks with as
many workers, and prints tasks per minute for both; at ``--jobs 1`` the
per-task overhead (wall time minus the model's time, per task: everything
each tool does itself, its start-up included) and the ratio of the two. The
server's request times split that overhead into the part inside the agent
loop (between a task's first request and its last answer: tool calls and the
agent's own work) and the part around it (start, workspace, container,
patch). A task counts as fixed when its patch has the fix. mini-swe-agent's
runner runs no tests (SWE-bench's harness tests the patches later), so by
default clover-code's tasks have no test command either; ``--tests`` gives
them one, which ``clover-code batch`` runs in the task's sandbox after the
agent (a cost the peer does not pay). No target; a shared machine's load
moves every figure, so read the ratio of figures measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_ROOT))

from bench.batch_mini import mini_python, mini_version, run_mini, wait_for_containers  # noqa: E402
from bench.batch_mini import workdirs as mini_workdirs  # noqa: E402
from bench.batch_tasks import (  # noqa: E402
    FIXED,
    REQUESTS_PER_TASK,
    ScriptedModel,
    Task,
    make_tasks,
    write_clover_tasks,
)
from tests.integration.sse_server import ScriptedServer  # noqa: E402

CLOVER, MINI = "clover-code", "mini-swe-agent"


@dataclass(slots=True)
class Run:
    """One batch run of one agent."""

    agent: str
    sandbox: str
    jobs: int
    tasks: int
    wall: float
    fixed: int
    requests: int
    in_loop: float
    """Seconds per task between its first request and its last answer, less the model's time."""
    first_request: float
    """Seconds from the start of the run to the first chat request."""
    note: str = ""

    def tasks_per_min(self) -> float:
        """Throughput."""
        return self.tasks / self.wall * 60 if self.wall else 0.0

    def overhead(self, latency: float) -> float:
        """Per task, the wall time that was not the model's (meaningful at one job)."""
        return (self.wall - self.requests * latency) / self.tasks


def _measure(model: ScriptedModel, started: float) -> tuple[int, float, float]:
    arrivals = model.arrivals
    requests = sum(len(times) for times in arrivals.values())
    gaps = [
        times[-1] + model.latency - times[0] - len(times) * model.latency
        for times in arrivals.values()
    ]
    first = min((times[0] for times in arrivals.values()), default=started) - started
    return requests, sum(gaps) / max(1, len(gaps)), first


@dataclass(slots=True)
class Bench:
    """What every run shares."""

    tasks: list[Task]
    model: ScriptedModel
    base_url: str
    work: Path
    cache_dir: Path
    image: str
    peer: Path | None
    """mini-swe-agent's ``mini-extra``, or None when it is not measured."""
    tests: bool = False
    """Give clover-code's tasks their test command (mini-swe-agent's runner runs none)."""

    def clover_env(self) -> dict[str, str]:
        """The environment of ``clover-code batch`` (and so of every task's process).

        Bytecode is cached (outside the source tree), as an installed package has it:
        a shell with PYTHONDONTWRITEBYTECODE would otherwise make every task's process
        compile clover-code's modules afresh, which the peer, installed by pip, never does.
        """
        env = {k: v for k, v in os.environ.items() if not k.startswith("CLOVER_")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.update(
            PYTHONPATH=str(_ROOT),
            PYTHONPYCACHEPREFIX=str(self.cache_dir / "pycache"),
            XDG_DATA_HOME=str(self.work / "home" / "data"),
            XDG_CONFIG_HOME=str(self.work / "home" / "config"),
        )
        return env


async def run_clover(bench: Bench, tasks: list[Task], jobs: int, sandbox: str, name: str) -> Run:
    """``python -m clover_code batch`` on ``tasks``, once."""
    out = bench.work / f"clover-{sandbox}-{name}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    tasks_file = out / "tasks.jsonl"
    write_clover_tasks(tasks, tasks_file, tests=bench.tests)
    argv = [sys.executable, "-m", "clover_code", "batch", str(tasks_file), "--out", str(out)]
    argv += ["--jobs", str(jobs), "--base-url", bench.base_url, "--model", "test-model"]
    # mini-swe-agent runs every command it is given: so does clover-code here, on the host too.
    argv += ["--sandbox", sandbox, "--approval", "full-auto"]
    await asyncio.to_thread(wait_for_containers)
    bench.model.reset()
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        *argv, env=bench.clover_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    _, err = await proc.communicate()
    wall = time.monotonic() - started
    results = out / "results.jsonl"
    lines = results.read_text().splitlines() if results.exists() else []
    records = [json.loads(line) for line in lines]
    fixed = sum(1 for r in records if _fixed(r, bench.tests))
    note = "" if proc.returncode == 0 else f"exit {proc.returncode}: {err.decode()[-300:]}"
    requests, in_loop, first = _measure(bench.model, started)
    return Run(CLOVER, sandbox, jobs, len(tasks), wall, fixed, requests, in_loop, first, note)


def _fixed(record: dict[str, Any], tests: bool) -> bool:
    patch = (record.get("result") or {}).get("patch") or ""
    return FIXED in patch and (not tests or record.get("tests_passed") is True)


async def run_peer(bench: Bench, tasks: list[Task], jobs: int, sandbox: str, name: str) -> Run:
    """``mini-extra swebench`` on the same tasks, once."""
    assert bench.peer is not None
    await asyncio.to_thread(wait_for_containers)
    here = bench.work / f"mini-{sandbox}-{name}"
    bench.model.reset(mini_workdirs(tasks, here, sandbox))
    started = time.monotonic()
    wall, fixed, tail = await asyncio.to_thread(
        run_mini,
        bench.peer,
        tasks,
        base_url=bench.base_url,
        jobs=jobs,
        sandbox=sandbox,
        image=bench.image,
        work=here,
    )
    requests, in_loop, first = _measure(bench.model, started)
    note = "" if fixed == len(tasks) else f"log tail: {tail[-600:]}"
    return Run(MINI, sandbox, jobs, len(tasks), wall, fixed, requests, in_loop, first, note)


async def _measure_all(bench: Bench, kinds: list[str], jobs_values: list[int]) -> list[Run]:
    runs: list[Run] = []
    for sandbox in kinds:
        # Not counted: fills bytecode and other first-use caches of both tools.
        await run_clover(bench, bench.tasks[:1], 1, sandbox, "warmup")
        if bench.peer is not None:
            await run_peer(bench, bench.tasks[:1], 1, sandbox, "warmup")
        for jobs in jobs_values:
            agents = [run_clover] if bench.peer is None else [run_clover, run_peer]
            for run_agent in agents:
                run = await run_agent(bench, bench.tasks, jobs, sandbox, str(jobs))
                runs.append(run)
                print(f"  ran {run.agent} {sandbox} --jobs {jobs}: {run.wall:.1f} s", flush=True)
    return runs


def _docker_problem(image: str) -> str | None:
    try:
        proc = subprocess.run(["docker", "image", "inspect", image], capture_output=True)
    except FileNotFoundError:
        return "no docker command"
    if proc.returncode != 0:
        return f"the sandbox image {image} is missing (clover-code sandbox build)"
    return None


def _print_table(runs: list[Run], latency: float) -> None:
    head = (
        f"{'sandbox':<8}{'agent':<16}{'jobs':>5}{'wall s':>9}{'tasks/min':>11}{'fixed':>8}"
        f"{'requests':>10}{'1st req s':>11}{'overhead/task s':>17}{'in loop':>9}{'around':>8}"
    )
    print(head)
    print("-" * len(head))
    for r in runs:
        per_task = r.overhead(latency)
        split = (
            f"{per_task:>17.2f}{r.in_loop:>9.2f}{per_task - r.in_loop:>8.2f}"
            if r.jobs == 1
            else f"{'-':>17}{r.in_loop:>9.2f}{'-':>8}"
        )
        print(
            f"{r.sandbox:<8}{r.agent:<16}{r.jobs:>5}{r.wall:>9.1f}{r.tasks_per_min():>11.1f}"
            f"{f'{r.fixed}/{r.tasks}':>8}{r.requests:>10}{r.first_request:>11.2f}{split}"
        )
    for r in runs:
        if r.note:
            print(f"note ({r.sandbox}, {r.agent}, --jobs {r.jobs}): {r.note}")


def _print_ratios(runs: list[Run], latency: float) -> dict[str, float]:
    ratios: dict[str, float] = {}
    pairs: dict[tuple[str, int], dict[str, Run]] = {}
    for r in runs:
        pairs.setdefault((r.sandbox, r.jobs), {})[r.agent] = r
    for (sandbox, jobs), pair in pairs.items():
        if CLOVER not in pair or MINI not in pair:
            continue
        ours, theirs = pair[CLOVER], pair[MINI]
        speed = ours.tasks_per_min() / theirs.tasks_per_min()
        ratios[f"{sandbox}_jobs{jobs}_tasks_per_min"] = round(speed, 2)
        line = f"{sandbox}, --jobs {jobs}: tasks/min clover-code/mini {speed:.2f}x"
        if jobs == 1:
            ratio = ours.overhead(latency) / theirs.overhead(latency)
            ratios[f"{sandbox}_overhead"] = round(ratio, 2)
            line += (
                f"; per-task overhead {ours.overhead(latency):.2f} s vs "
                f"{theirs.overhead(latency):.2f} s: clover-code/mini {ratio:.2f}x"
            )
        print(line)
    return ratios


async def _main(args: argparse.Namespace, work: Path) -> None:
    from clover_code.tools.sandbox.image import image_tag

    image = image_tag()
    kinds = ["docker", "none"] if args.sandbox == "both" else [args.sandbox]
    skipped: list[str] = []
    if "docker" in kinds and (why := _docker_problem(image)):
        kinds.remove("docker")
        skipped.append(f"docker: skipped ({why})")
    script, why = (None, "skipped (--no-peer)") if args.no_peer else mini_python(args.cache_dir)
    tasks = make_tasks(work / "repos", args.tasks)
    model = ScriptedModel(args.latency, {t.id: t for t in tasks})
    server = ScriptedServer()
    server.responder = model
    await server.start()
    bench = Bench(tasks, model, server.base_url, work, args.cache_dir, image, script, args.tests)
    peer = f"mini-swe-agent {mini_version(script)}" if script else f"mini-swe-agent: {why}"
    print(
        f"{args.tasks} tasks, {REQUESTS_PER_TASK} model requests each, {args.latency:g} s per "
        f"request; sandbox image {image}; peer {peer}"
        + ("; clover-code runs each task's test command" if args.tests else "")
    )
    try:
        runs = await _measure_all(bench, kinds, args.jobs)
    finally:
        await server.stop()
    print()
    _print_table(runs, args.latency)
    for line in skipped:
        print(line)
    print(
        "overhead/task: (wall - requests x latency) / tasks at --jobs 1, start-up included; "
        "in loop: from a task's first request to its last answer, less the model's time; "
        "around: the rest (start, workspace, container, patch, tests if any)"
    )
    ratios = _print_ratios(runs, args.latency)
    summary = {"tasks": args.tasks, "latency_s": args.latency, "jobs": args.jobs, **ratios}
    print(json.dumps(summary))


def main() -> None:
    """Run the benchmark from the command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, help="tasks to generate (20; 4 with --quick)")
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per model request")
    parser.add_argument("--jobs", help="comma-separated --jobs values (1,4,8; 1,2 with --quick)")
    parser.add_argument("--sandbox", choices=("docker", "none", "both"), default="docker")
    parser.add_argument("--quick", action="store_true", help="a smoke run: fewer tasks and jobs")
    parser.add_argument("--no-peer", action="store_true", help="measure clover-code only")
    parser.add_argument(
        "--tests",
        action="store_true",
        help="give clover-code's tasks a test command, run in its sandbox after the agent "
        "(mini-swe-agent's runner has none: SWE-bench tests its patches later)",
    )
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache/clover-bench")
    parser.add_argument("--work", type=Path, help="keep the tasks and outputs here")
    args = parser.parse_args()
    args.tasks = args.tasks or (4 if args.quick else 20)
    args.jobs = [int(j) for j in (args.jobs or ("1,2" if args.quick else "1,4,8")).split(",")]
    if args.work is not None:
        shutil.rmtree(args.work, ignore_errors=True)
        args.work.mkdir(parents=True)
        asyncio.run(_main(args, args.work.resolve()))
        return
    with tempfile.TemporaryDirectory(prefix="clover-bench-batch-") as tmp:
        asyncio.run(_main(args, Path(tmp)))


if __name__ == "__main__":
    main()
