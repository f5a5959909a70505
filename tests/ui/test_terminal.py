"""A real terminal: tmux runs the app against a loopback scripted model server, keys are
typed with send-keys and the screen is read with capture-pane."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration.sse_server import ScriptedServer, sse_response
from tests.integration.stream_shapes import SGLangStream
from tests.waiting import PATIENCE, async_wait_until, missing

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


def sglang(build: Callable[[SGLangStream], Any]) -> Any:
    stream = SGLangStream()
    build(stream)
    return sse_response(stream.chunks())


def tmux(*args: str) -> str:
    return subprocess.run(
        ["tmux", *args], capture_output=True, text=True, check=False, timeout=10
    ).stdout


async def screen_until(
    session: str, check: Callable[[str], bool], timeout: float = PATIENCE
) -> str:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        screen = tmux("capture-pane", "-p", "-t", session)
        if check(screen):
            return screen
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"the screen never showed what was expected:\n{screen}")
        await asyncio.sleep(0.2)


async def test_edit_in_a_real_terminal(repo: Path, tmp_path: Path) -> None:
    if shutil.which("tmux") is None:
        missing(
            "tmux is not installed (scripts/install-system installs it)",
            "CI must run the real-terminal test",
        )
    server = ScriptedServer()
    await server.start()
    edit = {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}
    server.enqueue(
        sglang(lambda s: (s.content("I'll fix the sign. "), s.tool_call("edit_file", edit))),
        sglang(lambda s: s.content("Fixed: add now adds.")),
    )
    session = f"clover-ui-{os.getpid()}"
    env = {
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PYTHONPATH": str(ROOT),
        "TERM": "xterm-256color",
    }
    exports = " ".join(f"{k}={v}" for k, v in env.items())
    command = (
        f"cd {ROOT} && env {exports} {sys.executable} -m clover_code -C {repo} "
        f"--base-url {server.base_url} --sandbox none --approval auto-edit"
    )
    tmux("new-session", "-d", "-s", session, "-x", "100", "-y", "30", command)
    try:
        await screen_until(session, lambda s: "Session " in s)
        tmux("send-keys", "-t", session, "-l", "fix add")
        tmux("send-keys", "-t", session, "Enter")
        # The answer can paint before the card's highlighted diff does: wait for both.
        screen = await screen_until(
            session, lambda s: "Fixed: add now adds." in s and "+    return a + b" in s
        )
        assert "edit_file" in screen
        assert "test-model" in screen  # status bar: the model the server lists
        tmux("send-keys", "-t", session, "-l", "/quit")
        tmux("send-keys", "-t", session, "Enter")
        await async_wait_until(
            lambda: session not in tmux("list-sessions", "-F", "#{session_name}"),
            message="the app to quit on /quit",
            interval=0.2,
        )
    finally:
        tmux("kill-session", "-t", session)
        await server.stop()
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    saved = list((tmp_path / "data" / "clover-code" / "sessions").glob("*.jsonl"))
    assert len(saved) == 1 and '"session_ended"' in saved[0].read_text()
