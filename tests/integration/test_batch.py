"""End to end: `clover-code batch` with the local executor, against the scripted server.

Tasks in the project's format and in SWE-bench's, each run in its own clone by
a real headless process, two at a time: results, predictions, transcripts,
test verdicts, a task whose repository is missing, one that hangs past its
time limit, and a rerun that skips what is done.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from clover_code.outcome.result import TaskResult
from tests.integration.sse_server import (
    MODELS_PATH,
    Hold,
    RecordedRequest,
    ScriptedResponse,
    ScriptedServer,
    json_response,
)
from tests.integration.test_headless_e2e import clover, run_clover, sglang
from tests.waiting import async_wait_until, within

pytestmark = pytest.mark.integration

BUGGY = "def add(a, b):\n    return a - b\n"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, str]:
    """A repository whose first commit has the bug and whose second renames nothing."""
    root = tmp_path / "project"
    root.mkdir()
    git(root, "init", "-q")
    (root / "calc.py").write_text(BUGGY)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "buggy add")
    base = git(root, "rev-parse", "HEAD")
    (root / "README").write_text("later\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "later")
    return root, base


def answer(request: RecordedRequest) -> ScriptedResponse:
    """Answers by the task in the request, so tasks may run in any order."""
    if request.path == MODELS_PATH:
        return json_response({"object": "list", "data": [{"id": "test-model"}]})
    messages: list[dict[str, Any]] = request.json()["messages"]
    task = next(m["content"] for m in messages if m["role"] == "user")
    if "HANG-FOREVER" in task:
        return ScriptedResponse(steps=[Hold(120)], content_type="text/event-stream")
    if "fix add" in task and messages[-1]["role"] != "tool":
        return sglang(
            lambda s: s.tool_call(
                "edit_file",
                {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"},
            )
        )
    return sglang(lambda s: s.content("done"))


def write_tasks(path: Path, tasks: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return path


def batch_args(
    server: ScriptedServer, tasks: Path, out: Path, *flags: str, sandbox: str = "none"
) -> list[str]:
    """``clover-code batch`` on ``tasks`` into ``out`` against the scripted ``server``."""
    base = ["batch", str(tasks), "--out", str(out), "--base-url", server.base_url]
    return [*base, "--sandbox", sandbox, *flags]


async def run_batch(
    server: ScriptedServer, home: Path, tasks: Path, out: Path, *flags: str, sandbox: str = "none"
) -> tuple[int, str]:
    """Run a batch to its end (from ``home``, which is also its user dirs): (exit code,
    stderr)."""
    argv = batch_args(server, tasks, out, *flags, sandbox=sandbox)
    code, _, err = await run_clover(home, *argv, home=home)
    return code, err


async def start_batch(
    server: ScriptedServer, home: Path, tasks: Path, out: Path, *flags: str
) -> asyncio.subprocess.Process:
    """Start a batch and leave it running."""
    return await clover(home, *batch_args(server, tasks, out, *flags), home=home)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_batch_runs_each_task_in_its_own_clone_and_resumes(
    scripted_server: ScriptedServer, project: tuple[Path, str], tmp_path: Path
) -> None:
    repo, base = project
    scripted_server.responder = answer
    check = "python3 -c 'from calc import add; assert add(2, 3) == 5'"
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [
            {"id": "fix", "repo": str(repo), "task": "fix add", "test_command": check},
            {
                # SWE-bench's fields, with a path relative to the task file
                "instance_id": "owner__project-1",
                "repo": "project",
                "base_commit": base,
                "problem_statement": "say hello",
                "test_command": "test ! -e README",
                "FAIL_TO_PASS": "[]",
            },
            {"id": "plain", "repo": str(repo), "task": "say hello", "test_command": check},
            {"id": "gone", "repo": str(tmp_path / "no-such-repo"), "task": "x"},
        ],
    )
    out = tmp_path / "out"
    code, err = await run_batch(scripted_server, tmp_path, tasks, out, "--jobs", "2")
    assert code == 0, err
    records = {r["id"]: r for r in lines(out / "results.jsonl")}
    assert set(records) == {"fix", "owner__project-1", "plain", "gone"}
    assert records["fix"]["outcome"] == "completed" and records["fix"]["tests_passed"] is True
    swe = records["owner__project-1"]
    assert swe["outcome"] == "completed" and swe["tests_passed"] is True  # at base_commit
    assert records["plain"]["tests_passed"] is False
    assert records["gone"]["outcome"] == "crashed" and "cannot clone" in records["gone"]["error"]
    fixed = TaskResult.model_validate(records["fix"]["result"])
    assert fixed.files_changed == ["calc.py"] and "+    return a + b" in fixed.patch
    predictions = {p["instance_id"]: p for p in lines(out / "predictions.jsonl")}
    assert predictions["fix"]["model_patch"] == fixed.patch
    assert predictions["fix"]["model_name_or_path"] == "clover-code"
    assert predictions["plain"]["model_patch"] == ""
    transcript = out / records["fix"]["transcript"]
    assert json.loads(transcript.read_text().splitlines()[0])["type"] == "session_started"
    # the original repository is untouched: each task worked in its own clone
    assert (repo / "calc.py").read_text() == BUGGY and git(repo, "status", "--short") == ""
    assert "tests passed           2/3" in err
    requests = len(scripted_server.chat_requests)

    code, err = await run_batch(scripted_server, tmp_path, tasks, out)
    assert code == 0, err
    assert len(lines(out / "results.jsonl")) == 4
    assert len(scripted_server.chat_requests) == requests
    assert "0 task(s) to run, 4 done" in err


async def test_a_task_that_hangs_hits_its_limit_and_the_batch_goes_on(
    scripted_server: ScriptedServer, project: tuple[Path, str], tmp_path: Path
) -> None:
    repo, _ = project
    scripted_server.responder = answer
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [
            {"id": "stuck", "repo": str(repo), "task": "HANG-FOREVER"},
            {"id": "after", "repo": str(repo), "task": "say hello"},
        ],
    )
    out = tmp_path / "out"
    code, err = await run_batch(scripted_server, tmp_path, tasks, out, "--task-timeout", "15")
    assert code == 0, err
    records = {r["id"]: r for r in lines(out / "results.jsonl")}
    assert records["stuck"]["outcome"] == "limit"
    assert records["stuck"]["result"]["exit_reason"] == "timeout"
    assert records["after"]["outcome"] == "completed"


async def test_a_bad_task_line_is_a_usage_error(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", [{"id": "a", "repo": "."}])
    code, _, err = await run_clover(
        tmp_path, "batch", str(tasks), "--out", str(tmp_path / "out"), home=tmp_path
    )
    assert code == 2
    assert "line 1 lacks or has a bad problem_statement or task" in err
    assert "Traceback" not in err


async def test_an_id_naming_the_folder_above_deletes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("the user's own\n")
    (out / "results.jsonl").write_text('{"id": "done"}\n')
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [{"id": "fine", "repo": ".", "task": "x"}, {"id": "..", "repo": ".", "task": "x"}],
    )
    code, _, err = await run_clover(tmp_path, "batch", str(tasks), "--out", str(out), home=tmp_path)
    assert code == 2, err
    assert "line 2 has the id '..', which names a folder above the task's own" in err
    assert "Traceback" not in err
    assert (out / "notes.txt").read_text() == "the user's own\n"
    assert (out / "results.jsonl").read_text() == '{"id": "done"}\n'


async def interrupt_a_batch(server: ScriptedServer, repo: Path, tmp_path: Path, *flags: str) -> str:
    """Start a batch of a quick task and one that hangs, Ctrl+C it once the first is
    recorded and the second asks the model; checks what every executor must do, and
    returns the batch's stderr."""
    server.responder = answer
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [
            {"id": "quick", "repo": str(repo), "task": "say hello"},
            {"id": "stuck", "repo": str(repo), "task": "HANG-FOREVER"},
        ],
    )
    out = tmp_path / "out"
    proc = await start_batch(server, tmp_path, tasks, out, *flags)
    results = out / "results.jsonl"
    await async_wait_until(
        lambda: results.exists() and "quick" in results.read_text(),
        message="the first task to be recorded",
    )
    await async_wait_until(
        lambda: any("HANG-FOREVER" in r.body.decode() for r in server.chat_requests),
        message="the second task to ask the model",
    )
    proc.send_signal(signal.SIGINT)
    _, err = await within(proc.communicate(), message="the batch to stop")
    assert proc.returncode == 130, err.decode()
    assert [r["id"] for r in lines(results)] == ["quick"]
    assert "run the same command again" in err.decode()
    # the summary counts the stopped task as interrupted, none as done before
    assert re.search(r"^ +interrupted +1$", err.decode(), re.M), err.decode()
    assert re.search(r"^ +skipped \(done before\) +0$", err.decode(), re.M), err.decode()
    # the stopped task's headless process went away with it
    assert await server.wait_for_disconnect()
    return err.decode()


async def test_ctrl_c_keeps_finished_tasks_and_stops_the_running_one(
    scripted_server: ScriptedServer, project: tuple[Path, str], tmp_path: Path
) -> None:
    await interrupt_a_batch(scripted_server, project[0], tmp_path)
