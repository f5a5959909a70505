"""End to end: `clover-code batch --executor ray` on a real Ray cluster on this machine.

A head node without CPUs and two worker nodes of one CPU each, started with
``ray start``; the batch runs the same tasks as test_batch.py with the local
executor and then with Ray, and both give the same results. Then Ctrl+C on the
driver, a worker that dies under its task, and the command's bad inputs.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.ray_cluster import RayCluster, free_ports, need_ray, start_cluster
from tests.integration.sse_server import ScriptedServer
from tests.integration.test_batch import (
    BUGGY,
    answer,
    git,
    interrupt_a_batch,
    lines,
    project,
    run_batch,
    start_batch,
    write_tasks,
)
from tests.integration.test_headless_e2e import run_clover
from tests.waiting import async_wait_until, within

pytestmark = pytest.mark.integration

__all__ = ["project"]  # the fixture, shared with test_batch.py


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayCluster]:
    need_ray()
    running = start_cluster(workers=2, home=tmp_path_factory.mktemp("ray-home"))
    try:
        yield running
    finally:
        running.stop()


def outcomes(out: Path) -> dict[str, tuple[Any, ...]]:
    return {
        r["id"]: (r["outcome"], r["tests_passed"], (r["result"] or {}).get("patch"))
        for r in lines(out / "results.jsonl")
    }


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


async def test_ray_gives_the_local_executors_results_on_both_workers(
    cluster: RayCluster,
    scripted_server: ScriptedServer,
    project: tuple[Path, str],
    tmp_path: Path,
) -> None:
    repo, base = project
    scripted_server.responder = answer
    check = "python3 -c 'from calc import add; assert add(2, 3) == 5'"
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [
            {"id": "fix", "repo": str(repo), "task": "fix add", "test_command": check},
            {
                "instance_id": "owner__project-1",
                "repo": "project",  # relative to the task file, resolved by the driver
                "base_commit": base,
                "problem_statement": "say hello",
                "test_command": "test ! -e README",
            },
            {"id": "plain", "repo": str(repo), "task": "say hello", "test_command": check},
            {"id": "gone", "repo": str(tmp_path / "no-such-repo"), "task": "x"},
        ],
    )
    local, distributed = tmp_path / "local", tmp_path / "ray"
    code, err = await run_batch(scripted_server, tmp_path, tasks, local, "--jobs", "2")
    assert code == 0, err
    ray_args = ("--executor", "ray", "--ray-address", cluster.address, "--jobs", "2")
    code, err = await run_batch(scripted_server, tmp_path, tasks, distributed, *ray_args)
    assert code == 0, err

    assert outcomes(distributed) == outcomes(local)
    assert outcomes(distributed)["fix"][:2] == ("completed", True)
    assert "+    return a + b" in outcomes(distributed)["fix"][2]
    records = {r["id"]: r for r in lines(distributed / "results.jsonl")}
    assert "cannot clone" in records["gone"]["error"]
    assert len({r["node"] for r in records.values()}) == 2, records  # both workers ran tasks
    assert all(r["node"] is None for r in lines(local / "results.jsonl"))
    assert lines(distributed / "predictions.jsonl") and {
        p["instance_id"]: p["model_patch"] for p in lines(distributed / "predictions.jsonl")
    } == {p["instance_id"]: p["model_patch"] for p in lines(local / "predictions.jsonl")}
    for sub in ("transcripts", "logs", "tasks"):
        assert names(distributed / sub) == names(local / sub), sub
    transcript = distributed / records["fix"]["transcript"]
    assert json.loads(transcript.read_text().splitlines()[0])["type"] == "session_started"
    assert "tests passed           2/3" in err
    # the nodes removed their scratch folders; the original repository is untouched
    assert names(cluster.scratch) == []
    assert (repo / "calc.py").read_text() == BUGGY and git(repo, "status", "--short") == ""

    requests = len(scripted_server.chat_requests)
    code, err = await run_batch(scripted_server, tmp_path, tasks, distributed, *ray_args)
    assert code == 0, err
    assert "0 task(s) to run, 4 done" in err
    assert len(lines(distributed / "results.jsonl")) == 4
    assert len(scripted_server.chat_requests) == requests


async def test_ctrl_c_cancels_the_ray_tasks_and_keeps_finished_ones(
    cluster: RayCluster,
    scripted_server: ScriptedServer,
    project: tuple[Path, str],
    tmp_path: Path,
) -> None:
    ray_args = ("--executor", "ray", "--ray-address", cluster.address)
    err = await interrupt_a_batch(scripted_server, project[0], tmp_path, *ray_args)
    assert "Traceback" not in err
    # the cancelled task's scratch folder on its node is gone with it
    assert names(cluster.scratch) == []


def headless_pid(cluster: RayCluster, slug: str) -> int | None:
    """The headless process running the batch task ``slug`` on ``cluster``, if there is one."""
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--task-file" not in argv:
            continue
        prompt = Path(argv[argv.index(b"--task-file") + 1].decode())
        if prompt.is_relative_to(cluster.scratch) and prompt.name == f"{slug}.md":
            return int(entry.name)
    return None


def parent(pid: int) -> int:
    return int((Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])


async def test_a_task_whose_worker_dies_is_recorded_as_crashed(
    cluster: RayCluster,
    scripted_server: ScriptedServer,
    project: tuple[Path, str],
    tmp_path: Path,
) -> None:
    repo, _ = project
    scripted_server.responder = answer
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [
            {"id": "doomed", "repo": str(repo), "task": "HANG-FOREVER"},
            {"id": "after", "repo": str(repo), "task": "say hello"},
        ],
    )
    out = tmp_path / "out"
    args = ("--executor", "ray", "--ray-address", cluster.address, "--jobs", "1")
    proc = await start_batch(scripted_server, tmp_path, tasks, out, *args)
    await async_wait_until(
        lambda: any("HANG-FOREVER" in r.body.decode() for r in scripted_server.chat_requests),
        message="the doomed task to ask the model",
    )
    headless = headless_pid(cluster, "doomed")
    assert headless is not None
    os.kill(parent(headless), signal.SIGKILL)  # the Ray worker running the task
    try:
        _, err = await within(proc.communicate(), message="the batch to finish")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(headless, signal.SIGKILL)  # its worker is gone: nothing else stops it
    assert proc.returncode == 0, err.decode()
    records = {r["id"]: r for r in lines(out / "results.jsonl")}
    assert records["doomed"]["outcome"] == "crashed"
    assert records["doomed"]["error"].startswith("its Ray worker died before it finished")
    assert records["after"]["outcome"] == "completed"


async def test_a_local_batch_does_not_load_ray(tmp_path: Path) -> None:
    code = (
        "import sys, clover_code.batch.main, clover_code.cli.main; assert 'ray' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path, timeout=120)


async def bad(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> str:
    tasks = write_tasks(tmp_path / "tasks.jsonl", [{"id": "a", "repo": ".", "task": "x"}])
    code, _, err = await run_clover(
        tmp_path,
        "batch",
        str(tasks),
        "--out",
        str(tmp_path / "out"),
        *args,
        home=tmp_path,
        extra_env=env,
    )
    assert code == 2, err
    assert "Traceback" not in err
    return err


async def test_ray_without_an_address_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    need_ray()
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    err = await bad(tmp_path, "--executor", "ray")
    assert "--executor ray needs the cluster's address" in err
    err = await bad(tmp_path, "--executor", "ray", "--ray-address", "head-node")
    assert "the Ray address 'head-node' is not HOST:PORT" in err


async def test_an_address_nobody_answers_at_fails_at_once(tmp_path: Path) -> None:
    need_ray()
    address = f"127.0.0.1:{free_ports(1)[0]}"
    err = await bad(tmp_path, "--executor", "ray", "--ray-address", address)
    assert f"no Ray cluster answers at {address}" in err
    err = await bad(tmp_path, "--executor", "ray", env={"RAY_ADDRESS": address})
    assert f"no Ray cluster answers at {address}" in err


async def test_a_ray_address_with_the_local_executor_is_a_usage_error(tmp_path: Path) -> None:
    err = await bad(tmp_path, "--ray-address", "127.0.0.1:6379")
    assert "--ray-address goes with --executor ray" in err


async def test_ray_missing_is_one_sentence(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", [{"id": "a", "repo": ".", "task": "x"}])
    # this interpreter as it would be without Ray: its import fails
    code = (
        "import sys; sys.modules['ray'] = None; from clover_code.cli.main import main; "
        f"sys.argv[1:] = ['batch', {str(tasks)!r}, '--out', {str(tmp_path / 'out')!r}, "
        "'--executor', 'ray', '--ray-address', '127.0.0.1:6379']; main()"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert run.returncode == 2, run.stderr
    assert (
        run.stderr.strip()
        == "clover-code batch: Ray is not installed; install it with pip install "
        "'clover-code[ray]'."
    )
