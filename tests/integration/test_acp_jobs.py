"""Background jobs in the editor's terminal (``clover-code acp --terminal``): a job is a
terminal the editor keeps running and shows under the call, read while it runs, killed
and released when stopped or when the editor cancels. Driven with the harness's
``EditorClient``, which runs terminals as real processes on this machine."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
from pathlib import Path

import pytest
from acp import text_block
from acp.schema import ClientCapabilities

from clover_code.acp.client import Outbox
from clover_code.acp.terminal import EditorTerminal
from clover_code.tools.jobs import JobTable
from tests.integration.sse_server import ScriptedServer, sse_response
from tests.integration.stream_shapes import SGLangStream
from tests.integration.test_acp_harness import EditorClient, spawn_acp
from tests.processes import marked
from tests.waiting import PATIENCE, async_wait_until

pytestmark = pytest.mark.integration


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def test_a_job_in_the_editor_terminal_serves_reads_and_stops(tmp_path: Path) -> None:
    client = EditorClient()
    box = Outbox(client)
    box.start("s1")
    shown: list[str] = []
    terminal = EditorTerminal(client, box, tmp_path, on_terminal=shown.append)
    (tmp_path / "page.html").write_text("editor page")
    port = free_port()
    jobs = JobTable(terminal)
    job = await jobs.start(f"exec python3 -m http.server {port} --bind 127.0.0.1 -d {tmp_path}")
    assert shown == ["term-1"], "the job's terminal was not shown under the call"
    fetch = f"curl -sf --retry 50 --retry-connrefused http://127.0.0.1:{port}/page.html"
    result = await terminal.exec(fetch, timeout=PATIENCE)
    assert (result.exit_code, result.output) == (0, "editor page")

    async def logged() -> bool:
        await jobs.refresh(job)
        return "GET /page.html" in job.take()[0]

    loop = asyncio.get_running_loop()
    deadline = loop.time() + PATIENCE
    while not await logged():  # polling the editor's terminal for the request log
        assert loop.time() < deadline, "the request never showed in the job's output"
        await asyncio.sleep(0.1)
    assert marked(str(tmp_path))
    await jobs.stop(job, "by the test")
    assert job.state == "stopped"
    await async_wait_until(lambda: not marked(str(tmp_path)), message="the server to end")
    await async_wait_until(lambda: "term-1" not in client._terminals, message="the release")


async def test_cancelling_in_the_editor_stops_its_terminal_jobs(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    mark = f"sleep {os.getpid() % 100_000}9"
    for build in (
        lambda s: s.tool_call("shell", {"command": f"echo up; {mark}", "background": True}),
        lambda s: s.content("Started."),
    ):
        stream = SGLangStream()
        build(stream)
        scripted_server.enqueue(sse_response(stream.chunks()))
    client = EditorClient()
    args = ("--base-url", scripted_server.base_url, "--terminal", "--approval", "full-auto")
    async with spawn_acp(client, repo, tmp_path, *args) as (conn, _proc):
        await conn.initialize(
            protocol_version=1, client_capabilities=ClientCapabilities(terminal=True)
        )
        new = await conn.new_session(cwd=str(repo), mcp_servers=[])
        done = await conn.prompt(session_id=new.session_id, prompt=[text_block("start it")])
        assert done.stop_reason == "end_turn"
        assert marked(mark), "the job did not outlive the turn"
        ends = [u for u in client.updates if u.session_update == "tool_call_update" and u.content]
        assert [c.type for c in ends[-1].content] == ["terminal"]
        result = scripted_server.chat_requests[1].json()["messages"][-1]["content"]
        assert result.startswith(f"started background job 1: echo up; {mark}")
        # The editor's stop button: session/cancel is the Interrupt op, which stops jobs.
        await conn.cancel(session_id=new.session_id)
        await async_wait_until(lambda: not marked(mark), message="the job to be killed")
        await async_wait_until(lambda: not client._terminals, message="its terminal's release")
