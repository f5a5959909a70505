"""Notifications as a real terminal receives them: the app runs in a pty (and once inside
a real tmux), against the scripted model server, and every byte it writes is read.

The terminal's focus reports are written to the pty as a terminal writes them
(``CSI O``: focus lost); the Notification hook is a real program in the
user's config, and what it read on stdin is checked field by field.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.integration.sse_server import ScriptedResponse, ScriptedServer, Until, sse_response
from tests.integration.stream_shapes import SGLangStream
from tests.ui.pty_app import FOCUS_OUT, ROOT, PtyApp
from tests.waiting import async_wait_until, missing

pytestmark = [pytest.mark.integration, pytest.mark.slow]

HOOK = """\
import sys
open(sys.argv[1], "a").write(sys.stdin.read() + "\\n")
"""
_OSC = re.compile(rb"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


def user_config(tmp_path: Path, text: str) -> dict[str, str]:
    """The environment of an app whose user config is ``text`` (plus a logging
    Notification hook writing to ``tmp_path / "hook.jsonl"``)."""
    (tmp_path / "hook.py").write_text(HOOK)
    hook = shlex.join([sys.executable, str(tmp_path / "hook.py"), str(tmp_path / "hook.jsonl")])
    folder = tmp_path / "config" / "clover-code"
    folder.mkdir(parents=True)
    (folder / "config.toml").write_text(
        f"{text}\n[[hooks.Notification]]\ncommand = {json.dumps(hook)}\n"
    )
    return {
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "HOME": str(tmp_path),
        "PATH": os.environ.get("PATH", os.defpath),
        "TERM": "xterm-256color",
    }


def hook_inputs(tmp_path: Path) -> list[dict[str, object]]:
    log = tmp_path / "hook.jsonl"
    lines = log.read_text().splitlines() if log.exists() else []
    return [json.loads(line) for line in lines if line.strip()]


def answer(text: str) -> ScriptedResponse:
    stream = SGLangStream()
    stream.content(text)
    return sse_response(stream.chunks())


async def test_a_turn_that_ends_while_the_terminal_is_away_sends_osc_9(
    repo: Path, tmp_path: Path
) -> None:
    server = ScriptedServer()
    await server.start()
    away = threading.Event()
    held = answer("All done.")
    assert held.steps is not None
    held.steps.insert(0, Until(away.is_set, 60))  # the answer comes once the user is away
    server.enqueue(held)
    env = user_config(tmp_path, "notify_after = 600")  # never by the clock in this test
    argv = ["-C", str(repo), "--base-url", server.base_url, "--sandbox", "none"]
    app = PtyApp(argv, {**env, "TERM_PROGRAM": "WezTerm"}, (100, 30))
    try:
        await app.read_until(b"Session", message="the session to open")
        app.write(b"fix add")
        await app.read_until(b"fix add", message="the prompt to show what was typed")
        app.write(b"\r")
        await async_wait_until(lambda: bool(server.chat_requests), message="the request")
        assert b"\x1b[?1004h" in app.output  # the app asked for focus reports
        app.write(FOCUS_OUT)  # the user switched to another window
        away.set()
        out = await app.read_until(b"\x1b]9;", message="the desktop notification")
        start = out.index(b"\x1b]9;")
        sequence = out[start : out.index(b"\x07", start) + 1]
        assert sequence == (
            b"\x1b]9;clover-code: The turn finished; clover-code is waiting for your input.\x07"
        )
        await async_wait_until(lambda: bool(hook_inputs(tmp_path)), message="the hook to run")
    finally:
        app.close()
        await server.stop()
    (seen,) = hook_inputs(tmp_path)
    assert seen["hook_event_name"] == "Notification"
    assert seen["notification_type"] == "idle_prompt" and seen["title"] == "clover-code"
    assert seen["message"] == "The turn finished; clover-code is waiting for your input."
    assert seen["cwd"] == str(repo) and str(seen["session_id"])
    assert Path(str(seen["transcript_path"])).name == f"{seen['session_id']}.jsonl"


async def test_an_approval_that_waits_rings_the_bell_where_osc_is_unknown(
    repo: Path, tmp_path: Path
) -> None:
    server = ScriptedServer()
    await server.start()
    stream = SGLangStream()
    stream.tool_call("shell", {"command": "make wheel"})
    server.enqueue(sse_response(stream.chunks()), answer("Built."))
    # A plain xterm: no desktop notifications, so the bell; notify_after = 0: at once.
    env = user_config(tmp_path, "notify_after = 0")
    argv = ["-C", str(repo), "--base-url", server.base_url, "--sandbox", "none"]
    app = PtyApp([*argv, "--approval", "ask"], env, (100, 30))
    try:
        await app.read_until(b"Session", message="the session to open")
        app.write(b"build a wheel")
        await app.read_until(b"build a wheel", message="the prompt to show what was typed")
        before = len(app.output)
        app.write(b"\r")
        await app.read_until(b"Allow once", message="the approval dialog")
        await async_wait_until(
            lambda: b"\x07" in _OSC.sub(b"", app.output[before:]), message="the bell"
        )
        await async_wait_until(lambda: bool(hook_inputs(tmp_path)), message="the hook to run")
        assert b"\x1b]9;" not in app.output and b"\x1b]777;" not in app.output
        app.write(b"n")  # deny: the wait is over
    finally:
        app.close()
        await server.stop()
    (seen,) = hook_inputs(tmp_path)
    assert seen["notification_type"] == "permission_prompt"
    assert seen["message"] == "clover-code needs your permission to use shell."


async def test_inside_tmux_the_notification_passes_through_to_the_terminal(
    repo: Path, tmp_path: Path
) -> None:
    if shutil.which("tmux") is None:
        missing(
            "tmux is not installed (scripts/install-system installs it)",
            "CI must run the real-terminal tests",
        )
    server = ScriptedServer()
    await server.start()
    server.enqueue(answer("All done."))
    env = user_config(tmp_path, "notify_after = 0")
    conf = tmp_path / "tmux.conf"
    conf.write_text("set -g allow-passthrough on\nset -g status off\n")
    socket = str(tmp_path / "tmux.sock")
    inner = shlex.join(
        [
            "env",
            f"PYTHONPATH={ROOT}",
            sys.executable,
            "-m",
            "clover_code",
            "-C",
            str(repo),
            "--base-url",
            server.base_url,
            "--sandbox",
            "none",
        ]
    )
    # The outer terminal is kitty; tmux runs in it, and the app in tmux.
    tmux = ["tmux", "-S", socket, "-f", str(conf), "new-session", inner]
    app = PtyApp(tmux, {**env, "KITTY_WINDOW_ID": "1"}, (100, 30), program=[])
    try:
        await app.read_until(b"Session", message="the session to open")
        app.write(b"hello")
        await app.read_until(b"hello", message="the prompt to show what was typed")
        app.write(b"\r")
        out = await app.read_until(b"\x1b]99;", message="kitty's notification, unwrapped")
        start = out.index(b"\x1b]99;")
        assert out[start:].startswith(
            b"\x1b]99;i=clover:d=0;clover-code\x1b\\"
            b"\x1b]99;i=clover:p=body;The turn finished; clover-code is waiting for your input."
            b"\x1b\\"
        )
        assert b"\x1bPtmux;" not in out  # tmux took the wrapping off
    finally:
        subprocess.run(["tmux", "-S", socket, "kill-server"], capture_output=True, check=False)
        app.close()
        await server.stop()
