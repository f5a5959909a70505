"""Plugins end to end: installed with ``clover-code plugin install`` from a folder, a
``file://`` git repository and a real wheel, then used by a headless run: the
namespaced command expands, the skill and agent are offered, the hook runs and
blocks, the MCP server's tool answers. A plugin whose files changed is skipped
with one sentence and the run goes on; the sandbox cannot write a plugin's files;
``install`` on a terminal asks and does nothing on a no."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clover_code import protocol as p
from clover_code.outcome.result import TaskResult, parse_stream_line
from tests.integration.sdk_model import failing_project, prompt_and_results
from tests.integration.sse_server import (
    CHAT_PATH,
    MODELS_PATH,
    RecordedRequest,
    ScriptedServer,
    json_response,
    sse_response,
)
from tests.integration.stream_shapes import SGLangStream
from tests.integration.test_headless_e2e import run_clover
from tests.plugin_files import build_wheel, git_repository, make_plugin
from tests.waiting import read_until, within

pytestmark = pytest.mark.integration

ECHO = "mcp__lint-kit_echo__echo"


def linter(request: RecordedRequest) -> object:
    """The model: the plugin's command asks for a fix; it tries a command the plugin's
    hook refuses, then calls the plugin's MCP tool, then reports both."""
    if request.path == MODELS_PATH:
        return json_response({"object": "list", "data": [{"id": "m", "object": "model"}]})
    assert request.path == CHAT_PATH
    body = request.json()
    prompt, results = prompt_and_results(body)
    stream = SGLangStream()
    offered = {tool["function"]["name"] for tool in body.get("tools", [])}
    if not prompt.startswith("Fix the lint errors in calc.py"):
        stream.content(f"unexpected prompt: {prompt[:60]}")
    elif not results:
        stream.tool_call("shell", {"command": "echo forbidden"})
    elif len(results) == 1 and ECHO in offered:
        stream.tool_call(ECHO, {"text": "lint", "times": 2})
    else:
        stream.content(" | ".join(results))
    return sse_response(stream.chunks())


async def plugin_cli(home: Path, *args: str) -> tuple[int, str, str]:
    return await run_clover(home, "plugin", *args, home=home)


def events_of(out: str) -> tuple[list[Any], TaskResult]:
    *events, result = [parse_stream_line(line) for line in out.splitlines()]
    assert isinstance(result, TaskResult)
    return events, result


async def lint(
    server: ScriptedServer, project: Path, home: Path, *more: str
) -> tuple[list[Any], TaskResult]:
    server.responder = linter  # type: ignore[assignment]
    code, out, err = await run_clover(
        project,
        *("--task", "/lint-kit:fix calc.py", "--base-url", server.base_url),
        *("--approval", "full-auto", "--output-format", "stream-json", *more),
        home=home,
    )
    events, result = events_of(out)
    assert code == result.exit_code, err
    return events, result


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


async def test_a_folder_plugin_is_installed_and_each_part_is_used(
    scripted_server: ScriptedServer, tmp_path: Path, home: Path
) -> None:
    source = make_plugin(tmp_path / "src")
    code, out, err = await plugin_cli(home, "install", str(source), "--yes")
    assert code == 0, err
    installed = home / "data" / "clover-code" / "plugins" / "lint-kit"
    assert f"hook PreToolUse (shell): {installed / 'bin' / 'check'}" in out
    project = failing_project(tmp_path)
    events, result = await lint(scripted_server, project, home, "--sandbox", "none")
    assert result.status == "success", result
    assert result.result == (
        "refused by a PreToolUse hook: the lint-kit hook refuses forbidden commands | lintlint"
    )
    (hook,) = [e for e in events if isinstance(e, p.HookRan)]
    assert hook.outcome == "blocked" and hook.command == str(installed / "bin" / "check")
    first = scripted_server.chat_requests[0].json()
    assert first["messages"][-1]["content"] == "Fix the lint errors in calc.py."
    system = first["messages"][0]["content"]
    assert "- lint-kit:style: The house style for Python" in system
    assert "- lint-kit:linter: Reads code and lists lint errors" in system


async def test_from_a_git_repository_and_from_a_wheel(
    scripted_server: ScriptedServer, tmp_path: Path, home: Path
) -> None:
    url = git_repository(make_plugin(tmp_path / "src", "git-kit", mcp=False, hooks=False))
    code, _, err = await plugin_cli(home, "install", url, "--yes")
    assert code == 0, err
    wheel = build_wheel(tmp_path / "wheel")
    code, out, err = await plugin_cli(home, "install", str(wheel), "--yes")
    assert code == 0, err
    assert out.startswith(f"Plugin lint-kit 1.2.0 from {wheel} (package)")
    plugins = home / "data" / "clover-code" / "plugins"
    assert (plugins / "lint-kit" / "lint_kit_plugin" / "plugin.toml").is_file()
    assert (plugins / "lint-kit" / "lint_kit_plugin-1.2.0.dist-info").is_dir()
    code, listing, _ = await plugin_cli(home, "list")
    assert "git-kit 1.2.0 (enabled) from file://" in listing
    assert f"lint-kit 1.2.0 (enabled) from {wheel}" in listing
    assert "not usable" not in listing
    project = failing_project(tmp_path)
    events, result = await lint(scripted_server, project, home, "--sandbox", "none")
    assert result.status == "success"
    assert not [w for w in result.warnings if w.startswith("plugin ")]  # none was skipped
    hooks = [e for e in events if isinstance(e, p.HookRan)]
    assert [(h.outcome, Path(h.command).parts[-4]) for h in hooks] == [("blocked", "lint-kit")]
    assert "the lint-kit hook refuses forbidden commands" in result.result


async def test_a_changed_plugin_is_skipped_and_the_run_goes_on(
    scripted_server: ScriptedServer, tmp_path: Path, home: Path
) -> None:
    code, _, err = await plugin_cli(home, "install", str(make_plugin(tmp_path / "src")), "--yes")
    assert code == 0, err
    hook = home / "data" / "clover-code" / "plugins" / "lint-kit" / "bin" / "check"
    hook.write_text("#!/bin/sh\nexit 0\n")
    project = failing_project(tmp_path)
    events, result = await lint(scripted_server, project, home, "--sandbox", "none")
    assert result.exit_code == 0
    skipped = [w for w in result.warnings if w.startswith("plugin lint-kit was skipped: ")]
    assert len(skipped) == 1 and "changed since you installed it" in skipped[0]
    assert not [e for e in events if isinstance(e, p.HookRan)]
    # Its command is not there either: the prompt went to the model as typed.
    assert scripted_server.chat_requests[0].json()["messages"][-1]["content"] == (
        "/lint-kit:fix calc.py"
    )


async def test_the_sandbox_cannot_write_a_plugins_files(
    scripted_server: ScriptedServer, tmp_path: Path, home: Path, bwrap_works: None
) -> None:
    code, _, err = await plugin_cli(home, "install", str(make_plugin(tmp_path / "src")), "--yes")
    assert code == 0, err
    status = home / "data" / "clover-code" / "plugins" / "lint-kit" / "bin" / "status"
    before = status.read_bytes()
    attack = f"echo 'echo pwned' > {status}; echo wrote"
    stream = SGLangStream()
    stream.tool_call("shell", {"command": attack})
    scripted_server.enqueue(sse_response(stream.chunks()))
    scripted_server.enqueue(sse_response(SGLangStream().content("done").chunks()))
    project = failing_project(tmp_path)
    code, _, err = await run_clover(
        project,
        *("--task", "go", "--base-url", scripted_server.base_url, "--sandbox", "bwrap"),
        *("--approval", "full-auto", "--output-format", "stream-json"),
        home=home,
    )
    assert code == 0, err
    assert status.read_bytes() == before
    code, listing, _ = await plugin_cli(home, "list")
    assert "not usable" not in listing


async def answer_install(source: Path, home: Path, answer: bytes) -> None:
    """``plugin install`` on a terminal: read up to its question, answer it."""
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOVER_")}
    env.update(XDG_DATA_HOME=str(home / "data"), XDG_CONFIG_HOME=str(home / "config"))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "clover_code", "plugin", "install", str(source),
        stdin=slave, stdout=slave, stderr=slave, env=env, cwd=home,
    )  # fmt: skip
    os.close(slave)
    reader = asyncio.StreamReader()
    protocol = asyncio.StreamReaderProtocol(reader)
    loop = asyncio.get_running_loop()
    transport, _ = await loop.connect_read_pipe(lambda: protocol, os.fdopen(master, "rb", 0))
    try:
        shown = await read_until(reader, b"[y/N] ", message="the install question")
        assert b"hook PreToolUse (shell)" in shown
        os.write(master, answer)
        assert await within(proc.wait(), message="install to end") == 0
    finally:
        transport.close()


async def test_install_on_a_terminal_asks(tmp_path: Path, home: Path) -> None:
    source = make_plugin(tmp_path / "src")
    record = home / "data" / "clover-code" / "plugins" / "installed.json"
    await answer_install(source, home, b"n\n")
    assert not record.exists()
    assert list((home / "data" / "clover-code" / "plugins").iterdir()) == []
    await answer_install(source, home, b"y\n")
    assert "lint-kit" in json.loads(record.read_text())["plugins"]


def test_the_wheel_is_a_real_package(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    listing = subprocess.run(
        [sys.executable, "-m", "zipfile", "-l", str(wheel)], capture_output=True, text=True
    ).stdout
    assert "lint_kit_plugin/plugin.toml" in listing and "entry_points.txt" in listing
