"""The warm start of batch runs: each task's ``clover-code`` is a fork of one process
that loaded clover-code once. Real processes throughout: the exit status, the
output (pipes or a log file), signals to the copy's group, the fall back to a cold
start when the warm process is gone, and ``--cold-start``.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from clover_code.batch.launch import WarmLauncher
from clover_code.batch.main import _headless_args, build_parser
from tests.integration.sse_server import ScriptedServer
from tests.integration.test_batch import answer, lines, project, run_batch, write_tasks
from tests.waiting import async_wait_until, within

pytestmark = pytest.mark.integration

__all__ = ["project"]  # the fixture, shared with test_batch.py


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


async def test_copies_of_the_warm_process_run_clover_code(tmp_path: Path) -> None:
    warm = await WarmLauncher.open()
    assert warm is not None
    try:
        # `sandbox run` is the copy; the shell it starts prints the copy's own parent.
        line = "echo ok; awk '{print $4}' /proc/$PPID/stat; exit 7"
        proc = await warm.start(["sandbox", "run", "--sandbox", "none", "-c", line], tmp_path, None)
        assert proc.stdout is not None and proc.stderr is not None
        out, _ = await within(
            asyncio.gather(proc.stdout.read(), proc.stderr.read()), message="its output"
        )
        assert await within(proc.wait(), message="it to end") == 7
        assert out.decode().split() == ["ok", str(warm._server.pid)]

        log = tmp_path / "log"
        with log.open("wb") as sink:
            proc = await warm.start(["--version"], tmp_path, sink)
            assert await within(proc.wait(), message="--version") == 0
        assert log.read_text().startswith("clover-code ")

        # its own session: the batch stops it (and what it started) through its group
        proc = await warm.start(
            ["sandbox", "run", "--sandbox", "none", "-c", "sleep 60"], tmp_path, None
        )
        assert os.getpgid(proc.pid) == proc.pid
        await async_wait_until(
            lambda: any(
                b"sleep\x0060" in p.joinpath("cmdline").read_bytes()
                for p in Path("/proc").glob("[0-9]*")
                if p.joinpath("cmdline").exists()
            ),
            message="the command to run",
        )
        os.killpg(proc.pid, signal.SIGINT)
        assert await within(proc.wait(), message="the copy to stop") == 130
    finally:
        await warm.aclose()
    assert warm._server.returncode is not None


async def test_when_the_warm_process_is_gone_tasks_start_cold(tmp_path: Path) -> None:
    warm = await WarmLauncher.open()
    assert warm is not None
    try:
        running = await warm.start(
            ["sandbox", "run", "--sandbox", "none", "-c", "sleep 60"], tmp_path, None
        )
        warm._server.kill()
        # its copies stop with it (they asked for SIGINT when it dies)
        assert await within(running.wait(), message="the copy to end") != 0
        proc = await warm.start(["--version"], tmp_path, None)
        assert parent_of(proc.pid) == os.getpid()  # a cold start: our own child
        assert await within(proc.wait(), message="--version") == 0
    finally:
        await warm.aclose()


async def test_cold_start_gives_the_same_results_and_the_key_stays_off_argv(
    scripted_server: ScriptedServer, project: tuple[Path, str], tmp_path: Path
) -> None:
    repo, _ = project
    scripted_server.responder = answer
    fixed = "python3 -c 'from calc import add; assert add(2, 3) == 5'"
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [{"id": "fix", "repo": str(repo), "task": "fix add", "test_command": fixed}],
    )
    results = {}
    for how in ("warm", "cold"):
        out = tmp_path / how
        flags = ["--cold-start"] if how == "cold" else []
        code, err = await run_batch(
            scripted_server, tmp_path, tasks, out, "--api-key", "s3cret-key", *flags
        )
        assert code == 0, err
        # the key reached the server through each run's environment, not its argv
        asked = [r for r in scripted_server.chat_requests if r.headers]
        assert asked and all(r.headers.get("authorization") == "Bearer s3cret-key" for r in asked)
        scripted_server.chat_requests.clear()
        (record,) = lines(out / "results.jsonl")
        results[how] = (record["outcome"], record["tests_passed"], record["result"]["patch"])
    assert results["warm"] == results["cold"] == ("completed", True, results["cold"][2])
    assert "+    return a + b" in results["cold"][2]
    args = build_parser().parse_args(["t.jsonl", "--out", "o", "--api-key", "s3cret-key"])
    assert "s3cret-key" not in _headless_args(args)
