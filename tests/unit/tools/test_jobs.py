"""Background jobs on the host sandbox, with real processes: the shell tool's
``background``, ``job_output``, ``job_stop``, the job table's limits and its stops.

Each test marks its processes (a unique ``sleep`` length, or the pids they print) so
the checks that nothing is left running see this run's processes only."""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.errors import ToolError
from clover_code.tools.base import ToolContext
from clover_code.tools.job_tools import JobOutputArgs, JobOutputTool, JobStopArgs, JobStopTool
from clover_code.tools.jobs import JobTable
from clover_code.tools.read_output import ReadOutputArgs, ReadOutputTool
from clover_code.tools.sandbox.host import HostSandbox
from clover_code.tools.shell import ShellArgs, ShellTool
from clover_code.tools.spill import OutputSpill
from clover_code.tools.workspace import Workspace
from tests.processes import alive, marked
from tests.waiting import PATIENCE, async_wait_until

_RUN = os.getpid() % 100_000


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
async def box(root: Path) -> AsyncIterator[HostSandbox]:
    sandbox = HostSandbox(root, kill_grace=0.5)
    yield sandbox
    await sandbox.close()


@pytest.fixture
def changes() -> list[list[p.JobInfo]]:
    return []


@pytest.fixture
async def table(
    box: HostSandbox, tmp_path: Path, changes: list[list[p.JobInfo]]
) -> AsyncIterator[JobTable]:
    spill = OutputSpill(tmp_path / "outputs", 30_000)
    jobs = JobTable(box, max_jobs=2, output_limit=2_000, spill=spill, on_change=changes.append)
    yield jobs
    await jobs.stop_all("the test ended", closing=True)


@pytest.fixture
def ctx(root: Path, box: HostSandbox, table: JobTable) -> ToolContext:
    return ToolContext(workspace=Workspace(root), sandbox=box, jobs=table, shell_timeout=PATIENCE)


async def test_a_background_command_returns_at_once_with_its_first_output(
    ctx: ToolContext, changes: list[list[p.JobInfo]]
) -> None:
    mark = f"{_RUN}1"
    command = f"echo ready; sleep {mark}"
    result = await ShellTool().run(ShellArgs(command=command, background=True), ctx)
    assert result.text.startswith(f"started background job 1: {command}\n")
    assert "ready\n" in result.text
    assert result.display == p.JobReport(
        job_id="1", command=command, state="running", sandbox="host"
    )
    assert marked(f"sleep {mark}"), "the job is not running after the call returned"
    assert [[job.state for job in infos] for infos in changes] == [["running"]]


async def test_job_output_gives_new_output_then_the_exit_code(ctx: ToolContext, root: Path) -> None:
    command = "echo one; until [ -e go ]; do sleep 0.05; done; echo two; exit 3"
    await ShellTool().run(ShellArgs(command=command, background=True), ctx)
    first = await JobOutputTool().run(JobOutputArgs(id=1), ctx)
    assert first.text == f"job 1 is running: {command}\n(no new output)\n", "output given again"
    (root / "go").touch()
    ended = await JobOutputTool().run(JobOutputArgs(id="job 1", wait_seconds=PATIENCE), ctx)
    assert ended.text.splitlines()[:2] == [f"job 1 is exited with code 3: {command}", "two"]
    assert ended.is_error
    assert isinstance(ended.display, p.JobReport) and ended.display.exit_code == 3
    again = await JobOutputTool().run(JobOutputArgs(id="1"), ctx)
    assert "(no new output)" in again.text


async def test_job_stop_ends_the_whole_process_group(ctx: ToolContext) -> None:
    mark = f"{_RUN}2"
    command = f"sleep {mark} & echo child=$!; sleep {mark}"
    started = await ShellTool().run(ShellArgs(command=command, background=True), ctx)
    child = int(re.search(r"child=(\d+)", started.text).group(1))  # type: ignore[union-attr]
    assert alive(child)
    stopped = await JobStopTool().run(JobStopArgs(id=1), ctx)
    assert stopped.text.startswith(f"stopped job 1: {command}")
    assert isinstance(stopped.display, p.JobReport) and stopped.display.state == "stopped"
    await async_wait_until(lambda: not marked(f"sleep {mark}"), message="the job's processes")
    assert not alive(child)
    again = await JobStopTool().run(JobStopArgs(id=1), ctx)
    assert again.text.startswith("job 1 had already ended (stopped (by job_stop))")


async def test_at_most_max_jobs_run_and_ended_jobs_free_their_place(
    ctx: ToolContext, table: JobTable
) -> None:
    mark = f"{_RUN}3"
    for _ in range(2):
        await ShellTool().run(ShellArgs(command=f"sleep {mark}", background=True), ctx)
    with pytest.raises(ToolError, match=r"2 background jobs already run.*max_jobs = 2.*job 1"):
        await ShellTool().run(ShellArgs(command="true", background=True), ctx)
    await JobStopTool().run(JobStopArgs(id=2), ctx)
    third = await ShellTool().run(ShellArgs(command=f"sleep {mark}", background=True), ctx)
    assert third.text.startswith("started background job 3:")
    assert [job.id for job in table.running()] == ["1", "3"]


async def test_stop_all_stops_every_running_job_and_says_why(
    ctx: ToolContext, table: JobTable, changes: list[list[p.JobInfo]]
) -> None:
    mark = f"{_RUN}4"
    await ShellTool().run(ShellArgs(command="true", background=True), ctx)
    await ShellTool().run(ShellArgs(command=f"sleep {mark}", background=True), ctx)
    await async_wait_until(lambda: len(table.running()) == 1, message="the first job to end")
    stopped = await table.stop_all("interrupted", closing=True)
    assert [job.id for job in stopped] == ["2"]
    assert not marked(f"sleep {mark}")
    last = {job.id: (job.state, job.exit_code, job.reason) for job in changes[-1]}
    assert last == {"1": ("exited", 0, ""), "2": ("stopped", None, "interrupted")}
    with pytest.raises(ToolError, match="closing"):
        await table.start("true")


async def test_long_output_is_cut_and_saved_whole_for_read_output(
    ctx: ToolContext, tmp_path: Path, root: Path
) -> None:
    command = "until [ -e go ]; do sleep 0.05; done; seq 1 20000"
    await ShellTool().run(ShellArgs(command=command, background=True), ctx)
    (root / "go").touch()
    read = await JobOutputTool().run(JobOutputArgs(id=1, wait_seconds=PATIENCE), ctx)
    assert len(read.text) < 3_000
    assert "omitted" in read.text and read.text.rstrip().endswith(
        "read it with read_output(id='job-1', offset=LINE, limit=LINES)]"
    )
    spill = OutputSpill(tmp_path / "outputs", 30_000)
    spill.saved = ctx.jobs._spill.saved  # type: ignore[union-attr]
    part = await ReadOutputTool(spill).run(ReadOutputArgs(id="job-1", offset=9_999, limit=2), ctx)
    assert [line.split() for line in part.text.splitlines()[:2]] == [
        ["9999", "9999"],
        ["10000", "10000"],
    ]


async def test_unknown_job_and_no_table_are_one_sentence(root: Path, ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"no background job '7' in this session \(jobs: none\)"):
        await JobOutputTool().run(JobOutputArgs(id=7), ctx)
    bare = ToolContext(workspace=Workspace(root), sandbox=ctx.sandbox)
    with pytest.raises(ToolError, match="background jobs are not available"):
        await ShellTool().run(ShellArgs(command="true", background=True), bare)
    with pytest.raises(ToolError, match="background jobs are not available"):
        await JobStopTool().run(JobStopArgs(id=1), bare)


async def test_max_jobs_zero_turns_jobs_off(box: HostSandbox, root: Path) -> None:
    jobs = JobTable(box, max_jobs=0)
    ctx = ToolContext(workspace=Workspace(root), sandbox=box, jobs=jobs)
    with pytest.raises(ToolError, match=r"background jobs are off \(max_jobs = 0\)"):
        await ShellTool().run(ShellArgs(command="true", background=True), ctx)


async def test_closing_the_sandbox_kills_a_job_the_table_left(box: HostSandbox, root: Path) -> None:
    mark = f"{_RUN}5"
    jobs = JobTable(box)
    job = await jobs.start(f"sleep {mark}")
    assert job.running
    await box.close()
    assert not marked(f"sleep {mark}")
    await async_wait_until(lambda: not job.running, message="the job's end to be seen")


def test_job_ids_as_the_model_writes_them() -> None:
    for given in (1, "1", "job 1", "job-1", " #1 "):
        assert JobOutputArgs(id=given).id == 1  # type: ignore[arg-type]
    for bad in (True, "one", 0, 1.5):
        with pytest.raises(ValueError):
            JobOutputArgs(id=bad)  # type: ignore[arg-type]
