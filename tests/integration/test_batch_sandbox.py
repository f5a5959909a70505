"""``clover-code batch``: setup and tests run in the task's sandbox, and a task that
writes past ``--max-output`` is stopped and recorded as such while the batch goes on.

Real headless processes against the scripted server, real bubblewrap.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clover_code.outcome.result import TaskResult
from tests.integration.sse_server import (
    MODELS_PATH,
    RecordedRequest,
    ScriptedResponse,
    ScriptedServer,
)
from tests.integration.test_batch import (
    answer,
    lines,
    project,
    run_batch,
    start_batch,
    write_tasks,
)
from tests.integration.test_headless_e2e import sglang
from tests.waiting import async_wait_until, within

pytestmark = pytest.mark.integration

__all__ = ["project"]  # the fixture, shared with test_batch.py

PLANT_HOOK = "printf '#!/bin/sh\\ntouch pwned\\n' > .git/hooks/post-checkout"
FIXED = "python3 -c 'from calc import add; assert add(2, 3) == 5'"


def spam_or_answer(request: RecordedRequest) -> ScriptedResponse:
    """A task that says SPAM gets an answer of about 2 MB, in 2,000 blocks."""
    if request.path == MODELS_PATH:
        return answer(request)
    messages: list[dict[str, Any]] = request.json()["messages"]
    if any("SPAM" in str(m.get("content")) for m in messages if m["role"] == "user"):
        return sglang(lambda s: s.content(*["spam " * 200] * 2000))
    return answer(request)


async def batch(
    server: ScriptedServer, tmp_path: Path, tasks: Path, *flags: str, sandbox: str = "none"
) -> str:
    out = tmp_path / "out"
    code, err = await run_batch(
        server, tmp_path, tasks, out, "--jobs", "2", *flags, sandbox=sandbox
    )
    assert code == 0, err
    return err


async def test_setup_and_tests_run_in_the_sandbox(
    scripted_server: ScriptedServer,
    project: tuple[Path, str],
    tmp_path: Path,
    bwrap_works: None,
) -> None:
    repo, _ = project
    scripted_server.responder = answer
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [
            {
                "id": "fix",
                "repo": str(repo),
                "task": "fix add",
                "setup": "echo ready > from-setup.txt",
                "test_command": f"test -e from-setup.txt && {FIXED}",
            },
            # the tests run code the agent could have written: they cannot touch .git
            {"id": "plant", "repo": str(repo), "task": "say hello", "test_command": PLANT_HOOK},
        ],
    )
    err = await batch(scripted_server, tmp_path, tasks, sandbox="bwrap")
    records = {r["id"]: r for r in lines(tmp_path / "out" / "results.jsonl")}
    assert records["fix"]["outcome"] == "completed" and records["fix"]["tests_passed"] is True
    assert records["plant"]["tests_passed"] is False
    workspaces = tmp_path / "out" / "workspaces"
    assert not (workspaces / "plant" / ".git" / "hooks" / "post-checkout").exists()
    log = (tmp_path / "out" / "logs" / "plant.log").read_text()
    assert f"$ {PLANT_HOOK}" in log and "Read-only file system" in log
    assert "tests passed           1/2" in err


async def test_without_a_sandbox_the_git_check_still_runs_around_the_tests(
    scripted_server: ScriptedServer, project: tuple[Path, str], tmp_path: Path
) -> None:
    repo, _ = project
    scripted_server.responder = answer
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [{"id": "plant", "repo": str(repo), "task": "say hello", "test_command": PLANT_HOOK}],
    )
    await batch(scripted_server, tmp_path, tasks)
    assert not (tmp_path / "out/workspaces/plant/.git/hooks/post-checkout").exists()
    assert "clover-code put it back" in (tmp_path / "out/logs/plant.log").read_text()


async def test_a_task_past_its_output_limit_is_stopped_and_the_batch_goes_on(
    scripted_server: ScriptedServer, project: tuple[Path, str], tmp_path: Path
) -> None:
    repo, _ = project
    scripted_server.responder = spam_or_answer
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [
            {"id": "spam", "repo": str(repo), "task": "SPAM please"},
            {"id": "fine", "repo": str(repo), "task": "say hello"},
        ],
    )
    err = await batch(scripted_server, tmp_path, tasks, "--max-output", "0.25")
    records = {r["id"]: r for r in lines(tmp_path / "out" / "results.jsonl")}
    assert records["spam"]["outcome"] == "output_limit"
    assert "more than 262,144 bytes" in records["spam"]["error"]
    stopped = TaskResult.model_validate(records["spam"]["result"])
    assert (stopped.status, stopped.exit_code, stopped.exit_reason) == ("limit", 4, "output_limit")
    assert stopped.error == records["spam"]["error"]
    assert records["fine"]["outcome"] == "completed"
    transcript = (tmp_path / "out" / records["spam"]["transcript"]).read_bytes()
    assert 0 < len(transcript) <= 262_144
    assert all(json.loads(line) for line in transcript.splitlines())  # no torn last line
    assert "output limit           1" in err


async def test_a_batch_killed_outright_takes_its_running_tasks_with_it(
    scripted_server: ScriptedServer, project: tuple[Path, str], tmp_path: Path
) -> None:
    # SIGKILL leaves the batch no chance to stop its tasks: each headless run asked
    # Linux for SIGINT when its parent dies, so it stops as on Ctrl+C.
    repo, _ = project
    scripted_server.responder = answer
    tasks = write_tasks(
        tmp_path / "tasks.jsonl", [{"id": "stuck", "repo": str(repo), "task": "HANG-FOREVER"}]
    )
    proc = await start_batch(scripted_server, tmp_path, tasks, tmp_path / "out")
    await async_wait_until(
        lambda: any("HANG-FOREVER" in r.body.decode() for r in scripted_server.chat_requests),
        message="the task to ask the model",
    )
    proc.kill()
    await within(proc.wait(), message="the batch to die")
    assert await scripted_server.wait_for_disconnect()
    prompt = str(tmp_path / "out" / "tasks" / "stuck.md")
    await async_wait_until(lambda: not running_with(prompt), message="the orphaned run to stop")


def running_with(argument: str) -> list[int]:
    """Pids of live processes with ``argument`` on their command line."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if argument.encode() in argv and state != "Z":
            found.append(int(entry.name))
    return found
