"""``clover-code acp`` against a misbehaving client, over real stdio.

Raw lines are written (an SDK client cannot send broken JSON): an unknown
method, invalid JSON, JSON that is no JSON-RPC message, requests for a
session that does not exist and a bad mode each get a JSON-RPC error and
the agent keeps serving; then the client closes stdin in the middle of a
turn, and the agent must exit cleanly with the transcript complete.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.sse_server import ScriptedServer, sse_response
from tests.integration.stream_shapes import SGLangStream
from tests.integration.test_acp_harness import agent_env
from tests.waiting import PATIENCE, within

pytestmark = pytest.mark.integration


class RawClient:
    """Writes lines to the agent and reads its replies (notifications kept aside)."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc = proc
        self.stdin = proc.stdin
        self.stdout = proc.stdout
        self.notifications: list[dict[str, Any]] = []

    async def send(self, message: dict[str, Any] | bytes) -> None:
        line = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.stdin.write(line + b"\n")
        await self.stdin.drain()

    async def reply(self, request_id: int | None) -> dict[str, Any]:
        """The next reply with ``request_id`` (None: a reply to an unreadable line)."""
        async with asyncio.timeout(PATIENCE):
            while True:
                line = await self.stdout.readline()
                assert line, "the agent closed its output"
                message = json.loads(line)
                if "method" in message and "id" not in message:
                    self.notifications.append(message)
                elif message.get("id") == request_id:
                    return dict(message)

    async def call(self, request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        await self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return await self.reply(request_id)


async def test_bad_input_gets_errors_and_eof_mid_turn_exits_cleanly(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    stream = SGLangStream().content("Still ", "thinking")
    scripted_server.enqueue(sse_response(stream.chunks()[:-2], hold=True))
    stderr = (tmp_path / "agent-stderr.log").open("wb")
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
        unknown = await client.call(1, "session/teleport", {})
        assert unknown["error"]["code"] == -32601

        await client.send(b'{"jsonrpc": "2.0", "id": 2, "method": ')
        assert (await client.reply(None))["error"]["code"] == -32700
        await client.send(b"[1, 2, 3]")
        assert (await client.reply(None))["error"]["code"] == -32600

        init = await client.call(3, "initialize", {"protocolVersion": 1})
        assert init["result"]["protocolVersion"] == 1

        ghost = {"sessionId": "no-such-session", "prompt": [{"type": "text", "text": "hi"}]}
        missing = await client.call(4, "session/prompt", ghost)
        assert missing["error"]["code"] == -32602
        assert "no open session 'no-such-session'" in missing["error"]["message"]
        load = {"sessionId": "../../etc/passwd", "cwd": str(repo), "mcpServers": []}
        assert (await client.call(5, "session/load", load))["error"]["code"] == -32002
        relative = await client.call(6, "session/new", {"cwd": "repo", "mcpServers": []})
        assert "not an absolute path" in relative["error"]["message"]

        new = await client.call(7, "session/new", {"cwd": str(repo), "mcpServers": []})
        session_id = new["result"]["sessionId"]
        bad_mode = await client.call(
            8, "session/set_mode", {"sessionId": session_id, "modeId": "x"}
        )
        assert "there is no mode 'x'" in bad_mode["error"]["message"]
        empty = {"sessionId": session_id, "prompt": [{"type": "text", "text": "  "}]}
        assert (await client.call(9, "session/prompt", empty))["error"]["code"] == -32602

        # A turn starts streaming; then the editor goes away (stdin closes).
        prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}
        await client.send(
            {"jsonrpc": "2.0", "id": 10, "method": "session/prompt", "params": prompt}
        )
        async with asyncio.timeout(PATIENCE):
            while not any(
                n["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
                for n in client.notifications
            ):
                line = await client.stdout.readline()
                assert line, "the agent closed its output before the turn streamed"
                client.notifications.append(json.loads(line))
        client.stdin.close()
        code = await within(proc.wait(), message="the agent to exit once stdin closed")
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        stderr.close()
    assert code == 0, (tmp_path / "agent-stderr.log").read_text()
    transcript = tmp_path / "data" / "clover-code" / "sessions" / f"{session_id}.jsonl"
    events = [
        json.loads(line)["event"]
        for line in transcript.read_text().splitlines()
        if json.loads(line)["kind"] == "event"
    ]
    finished = [e for e in events if e["type"] == "turn_finished"]
    assert [e["status"] for e in finished] == ["interrupted"]
    assert events[-1]["type"] == "session_ended"
    messages = [
        json.loads(line)["message"]
        for line in transcript.read_text().splitlines()
        if json.loads(line)["kind"] == "message"
    ]
    assert messages[-1]["role"] == "assistant"
    assert messages[-1]["content"].startswith("Still thinking")
