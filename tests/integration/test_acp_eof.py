"""``clover-code acp``: every request still open when stdin closes gets an answer.

A real agent subprocess over real stdio, a scripted model server that keeps
its streams open (a model still working). Two prompts are mid-turn and a
``session/new`` waits on a server that does not answer when the editor
closes the agent's input: before the agent's output ends, both prompts
answer ``cancelled`` and the ``session/new`` gets a JSON-RPC error.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.sse_server import (
    MODELS_PATH,
    Hold,
    ScriptedResponse,
    ScriptedServer,
    sse_response,
)
from tests.integration.stream_shapes import SGLangStream
from tests.integration.test_acp_bad_input import RawClient
from tests.integration.test_acp_harness import agent_env

pytestmark = pytest.mark.integration


def _held_answer(text: str) -> ScriptedResponse:
    return sse_response(SGLangStream().content(text).chunks()[:-2], hold=True)


async def test_requests_in_flight_at_end_of_input_are_answered(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    scripted_server.enqueue(_held_answer("Working on one"), _held_answer("Working on two"))
    log = tmp_path / "agent-stderr.log"
    with log.open("wb") as stderr:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "clover_code.acp",
            "--base-url",
            scripted_server.base_url,
            "--sandbox",
            "none",
            cwd=repo,
            env=agent_env(tmp_path),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
        client = RawClient(proc)
        try:
            await client.call(1, "initialize", {"protocolVersion": 1})
            new = {"cwd": str(repo), "mcpServers": []}
            sessions = [
                (await client.call(n, "session/new", new))["result"]["sessionId"] for n in (2, 3)
            ]
            for request_id, session_id in zip((10, 11), sessions, strict=True):
                prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}
                await client.send(
                    {
                        "jsonrpc": "2.0",
                        "id": request_id,
                        "method": "session/prompt",
                        "params": prompt,
                    }
                )
            # A session/new that waits on a server that never lists its models.
            scripted_server.enqueue(
                ScriptedResponse(steps=[Hold(120.0)], content_type="application/json"),
                path=MODELS_PATH,
            )
            await client.send({"jsonrpc": "2.0", "id": 12, "method": "session/new", "params": new})
            async with asyncio.timeout(30):
                while len(_streamed(client.notifications)) < 2:
                    line = await client.stdout.readline()
                    assert line, "the agent closed its output before the turns streamed"
                    client.notifications.append(json.loads(line))
                while scripted_server.pending(MODELS_PATH):
                    await asyncio.sleep(0.05)  # polling: the server has taken the request
            assert _streamed(client.notifications) == set(sessions)

            client.stdin.close()
            replies: dict[Any, dict[str, Any]] = {}
            async with asyncio.timeout(60):
                while line := await client.stdout.readline():
                    message = json.loads(line)
                    if "id" in message and "method" not in message:
                        replies[message["id"]] = message
            code = await asyncio.wait_for(proc.wait(), 30)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    assert code == 0, log.read_text()
    assert sorted(replies) == [10, 11, 12], replies
    assert replies[10]["result"] == {"stopReason": "cancelled"}
    assert replies[11]["result"] == {"stopReason": "cancelled"}
    error = replies[12]["error"]
    assert error["code"] == -32800
    assert error["message"] == (
        "session/new was not completed: the editor closed the agent's input (end of input)."
    )


def _streamed(notifications: list[dict[str, Any]]) -> set[str]:
    """The sessions whose turn has streamed some answer text."""
    return {
        n["params"]["sessionId"]
        for n in notifications
        if n.get("method") == "session/update"
        and n["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    }
