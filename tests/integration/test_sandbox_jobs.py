"""Background jobs in the real sandboxes: a dev server started as a job answers a later
command, its output is read, and nothing of it is left once it is stopped or the
session ends. Real Docker and bubblewrap (``sandbox_fixtures``), a real headless run
against the scripted model server.

Every server serves its test's own workspace (``--directory``), whose unique path is
the mark that finds this test's processes on the machine (the container's processes
are the host's too)."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.outcome.result import parse_stream_line
from clover_code.tools.jobs import JobTable
from clover_code.tools.sandbox.base import Sandbox
from clover_code.tools.sandbox.bwrap import BwrapSandbox
from tests.integration.sandbox_fixtures import KINDS, Space
from tests.integration.sse_server import ScriptedServer, sse_response
from tests.integration.stream_shapes import SGLangStream
from tests.integration.test_headless_e2e import clover, run_clover, sglang
from tests.processes import marked
from tests.waiting import PATIENCE, async_wait_until, within

pytestmark = pytest.mark.integration

PORT = 8765


def serve(root: Path) -> str:
    """The dev server: ``root`` on the command line marks its process."""
    return f"exec python3 -m http.server {PORT} --bind 127.0.0.1 --directory {root}"


FETCH = (
    'python3 -c "import urllib.request; print(urllib.request.urlopen('
    f"'http://127.0.0.1:{PORT}/page.html', timeout=30).read().decode())\""
)
"""A later command that fetches the page (retried by the caller until the server is up)."""


async def fetch(box: Sandbox) -> str:
    """The page, fetched by a command of its own once the server answers."""
    answer = ""

    async def answered() -> bool:
        nonlocal answer
        result = await box.exec(FETCH, timeout=60)
        answer = result.output
        return result.exit_code == 0

    loop = asyncio.get_running_loop()
    deadline = loop.time() + PATIENCE
    while not await answered():  # polling: the server takes a moment to listen
        assert loop.time() < deadline, f"the server never answered a later command: {answer}"
        await asyncio.sleep(0.2)
    return answer


def page(space: Space) -> str:
    text = f"hello from {space.root.name}"
    (space.root / "page.html").write_text(text)
    os.chown(space.root / "page.html", space.uid, space.gid)
    return text


@pytest.mark.parametrize("kind", KINDS)
async def test_a_server_job_answers_later_commands_and_stops_whole(
    sandbox: Sandbox, space: Space
) -> None:
    text = page(space)
    jobs = JobTable(sandbox)
    job = await jobs.start(serve(space.root))
    assert job.running
    assert text in await fetch(sandbox)
    await async_wait_until(lambda: "GET /page.html" in job.take()[0], message="the request log")
    assert marked(str(space.root)), "the server is not among the machine's processes"
    assert await jobs.stop(job, "by the test")
    assert (job.state, job.reason) == ("stopped", "by the test")
    assert not marked(str(space.root)), "the stopped server is still running"
    result = await sandbox.exec("echo still-here", timeout=60)
    assert result.output == "still-here\n", "stopping the job broke the sandbox"


@pytest.mark.parametrize("kind", KINDS)
async def test_closing_the_sandbox_leaves_no_job_running(sandbox: Sandbox, space: Space) -> None:
    page(space)
    jobs = JobTable(sandbox)
    job = await jobs.start(serve(space.root))
    await fetch(sandbox)
    await sandbox.close()
    await async_wait_until(lambda: not marked(str(space.root)), message="the server to end")
    await async_wait_until(lambda: not job.running, message="the job's end to be seen")


@pytest.mark.parametrize("kind", KINDS)
async def test_a_job_that_ends_reports_its_exit_code(sandbox: Sandbox) -> None:
    jobs = JobTable(sandbox)
    job = await jobs.start("echo out; echo err >&2; exit 5")
    await jobs.wait(job, PATIENCE)
    assert (job.state, job.exit_code) == ("exited", 5)
    assert sorted(job.take()[0].split()) == ["err", "out"]


@pytest.mark.parametrize("kind", ["bwrap"])
async def test_bubblewrap_commands_share_a_loopback_only_network(sandbox: Sandbox) -> None:
    """One namespace for the session's commands, but still no way out."""
    first = await sandbox.exec("readlink /proc/self/ns/net", timeout=60)
    second = await sandbox.exec("readlink /proc/self/ns/net", timeout=60)
    assert first.exit_code == 0 and first.output == second.output
    devices = await sandbox.exec("tail -n +3 /proc/net/dev | cut -d: -f1", timeout=60)
    assert devices.output.split() == ["lo"]
    out = await sandbox.exec(
        "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), timeout=5)\"",
        timeout=60,
    )
    assert out.exit_code != 0 and "unreachable" in out.output.lower()


@pytest.fixture
def root_owned() -> Iterator[Path]:
    """A root-owned workspace (container CI), where bubblewrap commands are uid 65534."""
    base = Path(tempfile.mkdtemp(prefix="clover-root-jobs-", dir="/tmp"))
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.skipif(os.getuid() != 0, reason="needs clover-code as root on a root-owned workspace")
async def test_jobs_run_in_bubblewrap_for_a_root_owned_workspace(
    root_owned: Path, bwrap_works: None
) -> None:
    (root_owned / "page.html").write_text("root-owned page")
    box = BwrapSandbox(root_owned)
    try:
        jobs = JobTable(box)
        job = await jobs.start(serve(root_owned))
        assert "root-owned page" in await fetch(box)
        who = await box.exec("id -u", timeout=60)
        assert who.output.strip() == "65534"
        await jobs.stop(job, "by the test")
        assert not marked(str(root_owned))
    finally:
        await box.close()


@pytest.mark.parametrize("kind", KINDS)
async def test_headless_serves_fetches_and_stops_the_job_at_the_end(
    kind: str,
    space: Space,
    scripted_server: ScriptedServer,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    """The issue's case: start the dev server as a job, fetch the page from a later
    call, read the job's output; the session's end stops it and says so."""
    request.getfixturevalue("sandbox_image" if kind == "docker" else "bwrap_works")
    text = page(space)
    server = serve(space.root)
    fetch_retrying = f"for i in $(seq 1 100); do {FETCH} && break; sleep 0.2; done"
    scripted_server.enqueue(
        sglang(lambda s: s.tool_call("shell", {"command": server, "background": True})),
        sglang(lambda s: s.tool_call("shell", {"command": fetch_retrying})),
        sglang(lambda s: s.tool_call("job_output", {"id": 1})),
        sglang(lambda s: s.content("The page is served.")),
    )
    argv = ("--base-url", scripted_server.base_url, "--sandbox", kind, "--approval", "full-auto")
    code, out, err = await run_clover(
        space.root, "--task", "serve it", *argv, "--output-format", "stream-json", home=tmp_path
    )
    assert code == 0, err
    *events, _result = [parse_stream_line(line) for line in out.splitlines()]
    calls = [e for e in events if isinstance(e, p.ToolCallFinished)]
    assert [(c.name, c.status) for c in calls] == [
        ("shell", "ok"),
        ("shell", "ok"),
        ("job_output", "ok"),
    ]
    assert calls[0].result.startswith(f"started background job 1: {server}")
    assert text in calls[1].result
    assert "GET /page.html" in calls[2].result and calls[2].result.startswith("job 1 is running")
    notice = f"stopped a background job as the session ended (job 1: {server})."
    assert any(isinstance(e, p.Notice) and e.text == notice for e in events)
    states = [[j.state for j in e.jobs] for e in events if isinstance(e, p.JobsChanged)]
    assert states == [["running"], ["stopped"]]
    assert not marked(str(space.root)), "the server outlived the session"


@pytest.mark.parametrize("kind", KINDS)
async def test_sigterm_in_headless_stops_the_jobs_and_names_them(
    kind: str,
    space: Space,
    scripted_server: ScriptedServer,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    request.getfixturevalue("sandbox_image" if kind == "docker" else "bwrap_works")
    server = serve(space.root)
    hanging = SGLangStream()
    hanging.content("Checking the page. ", "Still checking. ")
    scripted_server.enqueue(
        sglang(lambda s: s.tool_call("shell", {"command": server, "background": True})),
        sse_response(hanging.chunks()[:3], hold=True),
    )
    argv = ("--base-url", scripted_server.base_url, "--sandbox", kind, "--approval", "full-auto")
    proc = await clover(space.root, "--task", "serve it", *argv, home=tmp_path)
    await async_wait_until(
        lambda: len(scripted_server.chat_requests) == 2, message="the request after the start"
    )
    await async_wait_until(lambda: bool(marked(str(space.root))), message="the server to run")
    proc.send_signal(signal.SIGTERM)
    _out, err = await within(proc.communicate(), message="clover-code to exit after SIGTERM")
    assert proc.returncode == 143, err
    notice = f"warning: stopped a background job as the session ended (job 1: {server})."
    assert notice in err.decode()
    assert not marked(str(space.root)), "the server outlived the run"
