"""A session killed during a tool call resumes with a valid conversation; one opener at a time.

Real ``clover-code`` processes against a scripted model server: the first is
killed with SIGKILL while its shell command runs; a second ``--resume`` while
it lives is refused with one sentence; after the kill the lock it left is
taken over and the resumed conversation answers the unfinished call.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

import pytest

from clover_code.agent.transcript import INTERRUPTED
from tests.integration.sse_server import ScriptedServer
from tests.integration.test_headless_e2e import clover, run_clover, sglang
from tests.waiting import async_wait_until

pytestmark = pytest.mark.integration


async def test_a_killed_session_is_locked_while_alive_and_resumes_valid(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    pidfile = tmp_path / "tool.pid"
    command = f"echo $$ > {pidfile}.tmp && mv {pidfile}.tmp {pidfile} && exec sleep 120"
    scripted_server.enqueue(sglang(lambda s: s.tool_call("shell", {"command": command})))
    common = ["--base-url", scripted_server.base_url, "--sandbox", "none"]
    first = await clover(
        repo, "--task", "run it", *common, "--approval", "full-auto", home=tmp_path
    )
    try:
        await async_wait_until(pidfile.exists, message="the tool call to start")
        [transcript] = (tmp_path / "data" / "clover-code" / "sessions").glob("*.jsonl")
        session = transcript.stem

        code, _out, err = await run_clover(
            repo, "--resume", session, "--task", "x", *common, home=tmp_path
        )
        assert code != 0 and "Traceback" not in err, err
        assert f"session {session} is open in another clover-code (process {first.pid})" in err
        assert f"`clover-code --fork {session}`" in err
        assert len(scripted_server.chat_requests) == 1  # the refused opener asked nothing
    finally:
        first.send_signal(signal.SIGKILL)
        await first.wait()
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pidfile.read_text()), signal.SIGKILL)

    scripted_server.enqueue(sglang(lambda s: s.content("Went on.")))
    code, _out, err = await run_clover(
        repo, "--resume", session, "--task", "go on", *common, home=tmp_path
    )
    assert code == 0, err
    messages = scripted_server.chat_requests[-1].json()["messages"]
    [index] = [i for i, m in enumerate(messages) if m.get("tool_calls")]
    call_id = messages[index]["tool_calls"][0]["id"]
    answer = messages[index + 1]
    assert answer["role"] == "tool" and answer["tool_call_id"] == call_id, messages
    assert INTERRUPTED in str(answer["content"]), answer
    assert messages[index + 2]["role"] == "user", messages
